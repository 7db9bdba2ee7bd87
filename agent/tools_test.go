package agent_test

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmaform/rdmaform/agent"
	"github.com/rdmaform/rdmaform/api/v1alpha1"
)

// TestToolMissingDegraded: a node whose host has no firmware
// configuration tool (mlxconfig removed from the simulated host's PATH;
// the profile, NVIDIA MFT's tools, has no mstconfig) and a config that sets firmware
// parameters: the state says Degraded, reason ToolMissing, naming both
// tools and the spec item; nothing is applied (the host is as it was,
// the module in the same spec not loaded either); the agent stays up and
// keeps checking (its reconciles succeed, none fails, no crash loop) and
// writes the condition once. When mlxconfig appears, the condition
// clears, the firmware is applied and activated (mlxfwreset), and the
// host plans empty.
func TestToolMissingDegraded(t *testing.T) {
	k := newCluster(t)
	n := k.nodeWith("tools-1", map[string]string{"rail": "tools"}, "mlxconfig")
	before := readSim(t, n)
	rec, m := &recorder{}, agent.NewMetrics()
	k.startRecorded(rec, m, quietInterval, n)
	cfg := k.config("tools", "rail", "tools", firmwareSpec, policy(v1alpha1.ModeApply, v1alpha1.ActivationFWReset, 1))
	st := k.waitState(n.name, condIs(v1alpha1.ConditionDegraded, metav1.ConditionTrue, agent.ReasonToolMissing, cfg.Generation))
	msg := meta.FindStatusCondition(st.Status.Conditions, v1alpha1.ConditionDegraded).Message
	if want := "neither mlxconfig nor mstconfig is on PATH: $.devices[0].firmware needs one (firmware parameters, tool auto)"; !strings.Contains(msg, want) {
		t.Errorf("Degraded message:\n%s\nwant it to contain\n%s", msg, want)
	}
	if c := meta.FindStatusCondition(st.Status.Conditions, v1alpha1.ConditionInSync); c == nil || c.Status != metav1.ConditionFalse || c.Reason != agent.ReasonToolMissing {
		t.Errorf("InSync: %+v, want False, ToolMissing", c)
	}
	// It stays up and looks again, quietly.
	steady(t, "a tool missing", rec, m)
	if !bytes.Equal(readSim(t, n), before) {
		t.Error("the simulated host changed while a tool was missing")
	}

	k.install(n, "mlxconfig")
	st = k.waitState(n.name, condIs(v1alpha1.ConditionInSync, metav1.ConditionTrue, "InSync", cfg.Generation))
	if c := meta.FindStatusCondition(st.Status.Conditions, v1alpha1.ConditionDegraded); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Degraded after mlxconfig appeared: %+v, want False", c)
	}
	if code := planExit(t, n, firmwareSpec); code != 0 {
		t.Errorf("plan after the tool appeared: exit %d, want 0", code)
	}
}
