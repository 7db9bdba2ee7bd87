package agent

import (
	"fmt"
	"net/http"
	"sync"
	"time"

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

// ServeHTTP writes the Prometheus text exposition.
func (m *Metrics) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write(m.audit)
	v := version.Get()
	fmt.Fprintf(w, "# HELP rdmaform_agent_build_info The rdmaform-agent serving these metrics.\n# TYPE rdmaform_agent_build_info gauge\nrdmaform_agent_build_info{version=%q,commit=%q,goversion=%q} 1\n", v.Version, v.Commit, v.Go)
	fmt.Fprintf(w, "# HELP rdmaform_agent_reconciles_total Reconciles of the node by result.\n# TYPE rdmaform_agent_reconciles_total counter\nrdmaform_agent_reconciles_total{result=\"success\"} %d\nrdmaform_agent_reconciles_total{result=\"error\"} %d\n", m.ok, m.failed)
	fmt.Fprintf(w, "# HELP rdmaform_agent_activation_slots_taken_total Activation slots the node took.\n# TYPE rdmaform_agent_activation_slots_taken_total counter\nrdmaform_agent_activation_slots_taken_total %d\n", m.slots)
	fmt.Fprintf(w, "# HELP rdmaform_agent_activations_total Activations by result.\n# TYPE rdmaform_agent_activations_total counter\nrdmaform_agent_activations_total{result=\"success\"} %d\nrdmaform_agent_activations_total{result=\"failure\"} %d\n", m.activations[true], m.activations[false])
	if !m.last.IsZero() {
		fmt.Fprintf(w, "# HELP rdmaform_agent_last_reconcile_timestamp_seconds When the node was last reconciled.\n# TYPE rdmaform_agent_last_reconcile_timestamp_seconds gauge\nrdmaform_agent_last_reconcile_timestamp_seconds %d\n", m.last.Unix())
	}
}
