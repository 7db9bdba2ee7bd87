package qos

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// steps words compare's writes.
func steps(c compared) []string {
	var out []string
	for _, s := range c.steps {
		out = append(out, s.String())
	}
	return out
}

// TestCompareAppTable: trust pcp flushes a table of one DSCP entry too;
// a DSCP that maps to two priorities (a generic APP table) is written
// again with the one the spec wants, as is a missing one.
func TestCompareAppTable(t *testing.T) {
	one := &Port{Netdev: "ens1", DCBXHost: true, App: map[int][]int{26: {3}}}
	if got := steps(compare(wantOf(&schema.QoS{Trust: "pcp"}), one)); !cmp.Equal(got, []string{"dcb app flush dev ens1 dscp-prio"}) {
		t.Errorf("trust pcp over one entry: %q", got)
	}
	full := map[int][]int{}
	for d := 0; d < 64; d++ {
		full[d] = []int{d >> 3}
	}
	full[26] = []int{3, 5}
	two := &Port{Netdev: "ens1", DCBXHost: true, App: full}
	if got := steps(compare(wantOf(&schema.QoS{Trust: "dscp"}), two)); !cmp.Equal(got, []string{"dcb app replace dev ens1 dscp-prio 26:3"}) {
		t.Errorf("trust dscp over 26 -> 3 and 5: %q", got)
	}
}

// TestComparePauseEachDirection: pause off where only tx is on is a
// change.
func TestComparePauseEachDirection(t *testing.T) {
	off := false
	c := compare(wantOf(&schema.QoS{Pause: &off}), &Port{Netdev: "ens1", PauseTX: true})
	if got := steps(c); !cmp.Equal(got, []string{"ethtool -A ens1 rx off tx off"}) {
		t.Errorf("pause rx off, tx on -> off: %q", got)
	}
}

// TestCompareDCBXDefaultsToHost: a qos block that sets DCB without
// naming dcbx takes a firmware-owned port for the host first (static
// settings in a firmware-owned port are the switch's to overwrite).
func TestCompareDCBXDefaultsToHost(t *testing.T) {
	pfc := []int{3}
	c := compare(wantOf(&schema.QoS{PFC: &pfc}), &Port{Netdev: "ens1"})
	want := []string{"dcb dcbx set dev ens1 host cee ieee", "dcb pfc set dev ens1 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off"}
	if got := steps(c); !cmp.Equal(got, want) {
		t.Errorf("steps (-want +got):\n%s", cmp.Diff(want, got))
	}
}

// TestMakeWritesNothingTheHostCannotTake: a port that lost what the
// change needs between plan and apply (here global pause) fails the
// change before any write: the PFC the same change asks for stays off.
func TestMakeWritesNothingTheHostCannotTake(t *testing.T) {
	s, h := simtest.New(t, "cx5-roce", 0, func(st *sim.State) { st.Netdevs[0].Pause = nil })
	pfc, off := []int{3}, false
	pl := &payload{netdev: "ens1f0np0", want: wantOf(&schema.QoS{PFC: &pfc, Pause: &off})}
	err := (&Provider{}).Make(context.Background(), h, &plan.Change{Address: Address("mlx5_0", 1)}, pl)
	if err == nil || !strings.Contains(err.Error(), "global pause of ens1f0np0 cannot be read") {
		t.Fatalf("Make: %v, want the pause problem", err)
	}
	if s.State().Netdev("ens1f0np0").DCB.PFC[3] {
		t.Errorf("PFC on priority 3 was written before the problem stopped the change")
	}
}

// TestPlanFollowsTheLinkAtBoot: qos on an InfiniBand port that a staged
// LINK_TYPE makes Ethernet waits for the reboot; on an Ethernet port
// that becomes InfiniBand it is an error.
func TestPlanFollowsTheLinkAtBoot(t *testing.T) {
	for _, tc := range []struct {
		name    string
		now, to linklayer.LinkLayer
		want    string
	}{
		{"InfiniBand now, Ethernet at boot", linklayer.InfiniBand, linklayer.Ethernet, "deferred: waits for LINK_TYPE_P1=ETH on 0000:3b:00.0 (reboot)"},
		{"Ethernet now, InfiniBand at boot", linklayer.Ethernet, linklayer.InfiniBand, "error: port 1 of mlx5_0 becomes InfiniBand at the next boot (LINK_TYPE_P1=IB); qos (DCB) needs an Ethernet port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, rep := schema.Parse("host.yaml", []byte("version: 1\ndevices:\n  - name: mlx5_0\n    ports:\n      - port: 1\n        qos: {pfc: [3]}\n"))
			if len(rep) > 0 {
				t.Fatal(rep)
			}
			dev := &inventory.Device{Name: "mlx5_0", PCI: "0000:3b:00.0", Ports: []*inventory.Port{{Num: 1, LinkLayer: tc.now, Netdevs: []string{"ib0"}}}}
			req := &plan.Request{Spec: spec, Inv: &inventory.Inventory{Devices: []*inventory.Device{dev}}, Devices: []*inventory.Device{dev}}
			facts := plan.NewFacts()
			setting := "LINK_TYPE_P1=ETH"
			if tc.to == linklayer.InfiniBand {
				setting = "LINK_TYPE_P1=IB"
			}
			facts.ChangeLink(plan.LinkChange{Device: "0000:3b:00.0", Port: 1, To: tc.to, When: plan.NextBoot, Setting: setting})
			prop := (&Provider{}).Plan(req, &Observed{Ports: map[string]*Port{}}, facts)
			var got []string
			for _, d := range prop.Deferred {
				got = append(got, "deferred: "+d.Reason)
			}
			for _, e := range prop.Errors {
				got = append(got, "error: "+e.Message)
			}
			if !cmp.Equal(got, []string{tc.want}) || len(prop.Changes) != 0 {
				t.Errorf("got %q and %d changes, want %q", got, len(prop.Changes), tc.want)
			}
		})
	}
}

// TestWillingNamesTheCardPort: DCBX_WILLING_Pn is a firmware parameter
// of the card's physical port; on the second PCI function of a dual-port
// ConnectX-4+ (RDMA port 1) it is DCBX_WILLING_P2, both in the finding
// and in the spec's firmware params that answer it.
func TestWillingNamesTheCardPort(t *testing.T) {
	for _, tc := range []struct {
		name, params, want string
	}{
		{"willing", "", "DCBX_WILLING_P2 is True unless the device's firmware params set it false"},
		{"P1 set false: the other port", "    firmware: {params: {DCBX_WILLING_P1: false}}\n", "DCBX_WILLING_P2 is True unless the device's firmware params set it false"},
		{"P2 set false", "    firmware: {params: {DCBX_WILLING_P2: false}}\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, rep := schema.Parse("host.yaml", []byte("version: 1\ndevices:\n  - pci: \"0000:3b:00.1\"\n"+tc.params+"    ports:\n      - port: 1\n        qos: {dcbx: firmware, pfc: [3]}\n"))
			if len(rep) > 0 {
				t.Fatal(rep)
			}
			dev := &inventory.Device{Name: "mlx5_1", PCI: "0000:3b:00.1", Ports: []*inventory.Port{{Num: 1, LinkLayer: linklayer.Ethernet, Netdevs: []string{"ens1f1np1"}}}}
			req := &plan.Request{Spec: spec, Inv: &inventory.Inventory{Devices: []*inventory.Device{dev}}, Devices: []*inventory.Device{dev}}
			obs := &Observed{Ports: map[string]*Port{"mlx5_1/1": {Netdev: "ens1f1np1"}}, Errs: map[string]string{}}
			prop := (&Provider{}).Plan(req, obs, plan.NewFacts())
			var got []string
			for _, e := range prop.Errors {
				got = append(got, e.Message)
			}
			switch {
			case tc.want == "" && (len(got) != 0 || len(prop.Changes) != 1):
				t.Errorf("findings %q, %d changes; want the PFC change", got, len(prop.Changes))
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Errorf("findings %q, want one containing %q", got, tc.want)
			}
		})
	}
}
