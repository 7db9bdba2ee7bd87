package agent

import (
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/internal/testlab/promcheck"
)

// TestMetricFamilies: after a reconcile of each result, a slot and an
// activation of each result, /metrics (without an audit yet) has exactly
// the families of MetricFamilies (docs/reference/metrics.md), in order,
// with the table's HELP, TYPE and labels.
func TestMetricFamilies(t *testing.T) {
	m := NewMetrics()
	m.reconciled(nil, time.Unix(1772366400, 0))
	m.reconciled(errors.New("no"), time.Unix(1772366460, 0))
	m.slotTaken()
	m.activated(true)
	m.activated(false)
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, p := range promcheck.Families(rec.Body.String(), MetricFamilies) {
		t.Error(p)
	}
}
