package agent

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/rdmaform/rdmaform/audit"
	"github.com/rdmaform/rdmaform/version"
)

// Metrics is the agent's /metrics: the last audit's series as rdmaform
// audit -o prometheus writes them (the same code, run in process), the
// agent's build and its own counters. A nil *Metrics counts nothing.
type Metrics struct {
	mu          sync.Mutex
	audit       []byte
	ok, failed  uint64
	last        time.Time
	slots       uint64
	activations map[bool]uint64
}

// NewMetrics returns empty metrics.
func NewMetrics() *Metrics { return &Metrics{activations: map[bool]uint64{}} }

func (m *Metrics) reconciled(err error, now time.Time) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.failed++
	} else {
		m.ok++
	}
	m.last = now
}

func (m *Metrics) setAudit(b []byte) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.audit = append([]byte(nil), b...)
}

func (m *Metrics) slotTaken() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.slots++
}

func (m *Metrics) activated(ok bool) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.activations[ok]++
}

// The agent's own families, after the audit's (audit.MetricFamilies).
var (
	MetricBuildInfo     = audit.Metric{Name: "rdmaform_agent_build_info", Type: "gauge", Help: "The rdmaform-agent serving these metrics.", Labels: []string{"version", "commit", "goversion"}}
	MetricReconciles    = audit.Metric{Name: "rdmaform_agent_reconciles_total", Type: "counter", Help: "Reconciles of the node by result.", Labels: []string{"result"}, Note: "result: success or error"}
	MetricSlotsTaken    = audit.Metric{Name: "rdmaform_agent_activation_slots_taken_total", Type: "counter", Help: "Activation slots the node took."}
	MetricActivations   = audit.Metric{Name: "rdmaform_agent_activations_total", Type: "counter", Help: "Activations by result.", Labels: []string{"result"}, Note: "result: success or failure"}
	MetricLastReconcile = audit.Metric{Name: "rdmaform_agent_last_reconcile_timestamp_seconds", Type: "gauge", Help: "When the node was last reconciled.", Note: "only after the first reconcile"}
)

// MetricFamilies are the agent's own families, in the order /metrics
// writes them after the last audit's.
var MetricFamilies = []audit.Metric{MetricBuildInfo, MetricReconciles, MetricSlotsTaken, MetricActivations, MetricLastReconcile}

// ServeHTTP writes the Prometheus text exposition.
func (m *Metrics) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write(m.audit)
	v := version.Get()
	fmt.Fprintf(w, "%srdmaform_agent_build_info{version=%q,commit=%q,goversion=%q} 1\n", MetricBuildInfo.Header(), v.Version, v.Commit, v.Go)
	fmt.Fprintf(w, "%srdmaform_agent_reconciles_total{result=\"success\"} %d\nrdmaform_agent_reconciles_total{result=\"error\"} %d\n", MetricReconciles.Header(), m.ok, m.failed)
	fmt.Fprintf(w, "%srdmaform_agent_activation_slots_taken_total %d\n", MetricSlotsTaken.Header(), m.slots)
	fmt.Fprintf(w, "%srdmaform_agent_activations_total{result=\"success\"} %d\nrdmaform_agent_activations_total{result=\"failure\"} %d\n", MetricActivations.Header(), m.activations[true], m.activations[false])
	if !m.last.IsZero() {
		fmt.Fprintf(w, "%srdmaform_agent_last_reconcile_timestamp_seconds %d\n", MetricLastReconcile.Header(), m.last.Unix())
	}
}
