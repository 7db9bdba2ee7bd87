package qos

import (
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// TestRevertPutsBackEachDirection: a port whose pause and ECN differed
// per direction (rx on, tx off; ECN on priority 3 at the reaction point
// only) gets exactly that back, not one value for both.
func TestRevertPutsBackEachDirection(t *testing.T) {
	before := &Port{Netdev: "ens1", PauseRX: true, ECNTree: true}
	before.ECNRP[3] = true
	off, ecn := false, []int{5}
	w := wantOf(&schema.QoS{Pause: &off, ECN: &ecn})
	c := &plan.Change{Address: plan.Addr("qos", "mlx5_0/1"), Attributes: compare(w, before).attrs,
		Payload: &payload{netdev: "ens1", want: w, before: before}}
	back, err := (&Provider{}).Revert(c)
	if err != nil || back == nil {
		t.Fatalf("revert: %v %v", back, err)
	}
	// After the change: pause off both ways, ECN on 5 at both points.
	after := &Port{Netdev: "ens1", ECNTree: true}
	after.ECNRP[5], after.ECNNP[5] = true, true
	got := compare(back.Payload.(*payload).want, after)
	var steps []string
	for _, s := range got.steps {
		steps = append(steps, s.String())
	}
	want := []string{
		"ethtool -A ens1 rx on tx off",
		"echo 1 > /sys/class/net/ens1/ecn/roce_rp/enable/3",
		"echo 0 > /sys/class/net/ens1/ecn/roce_rp/enable/5",
		"echo 0 > /sys/class/net/ens1/ecn/roce_np/enable/5",
	}
	if strings.Join(steps, "\n") != strings.Join(want, "\n") {
		t.Errorf("revert steps:\n%s\nwant:\n%s", strings.Join(steps, "\n"), strings.Join(want, "\n"))
	}
	if a := back.Attributes; len(a) != 2 || a[1].After != "rp 3, np none" {
		t.Errorf("revert attributes %+v", a)
	}
}
