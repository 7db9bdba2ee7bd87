package rxe

import (
	"fmt"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// outcome is the part of a proposal a table compares.
type outcome struct {
	Changes  []string // "action address attrs evict=..."
	Deferred []string
	Errors   []string
}

func summarize(p plan.Proposal) outcome {
	var o outcome
	for _, c := range p.Changes {
		s := fmt.Sprintf("%s %s", c.Action, c.Address)
		for _, a := range c.Attributes {
			s += fmt.Sprintf(" %s=%q->%q", a.Name, a.Before, a.After)
		}
		if pl := c.Payload.(*payload); len(pl.evict) > 0 || pl.deleteFirst {
			s += fmt.Sprintf(" deleteFirst=%v evict=%v", pl.deleteFirst, pl.evict)
		}
		o.Changes = append(o.Changes, s)
	}
	for _, d := range p.Deferred {
		o.Deferred = append(o.Deferred, d.Address.String()+": "+d.Reason)
	}
	for _, f := range p.Errors {
		o.Errors = append(o.Errors, f.String())
	}
	return o
}

func TestDiff(t *testing.T) {
	eth := map[string]host.Link{
		"enp1s0": {Name: "enp1s0", Type: "device"},
		"enp2s0": {Name: "enp2s0", Type: "device"},
		"ib0":    {Name: "ib0", Type: "ipoib"},
	}
	links := func(ls ...host.RdmaLink) map[string]host.RdmaLink {
		m := map[string]host.RdmaLink{}
		for _, l := range ls {
			m[l.Name] = l
		}
		return m
	}
	noRDMA := fmt.Errorf("%w: %w", host.ErrNoRDMA, syscall.EPROTONOSUPPORT)
	cx := &inventory.Inventory{Devices: []*inventory.Device{{Name: "mlx5_0", PCI: "0000:81:00.0",
		Ports: []*inventory.Port{{Num: 1, LinkLayer: "InfiniBand", Netdevs: []string{"ib0"}}}}}}

	tests := []struct {
		name   string
		spec   string
		obs    Observed
		inv    *inventory.Inventory
		staged []plan.LinkChange
		want   outcome
	}{{
		name: "present, missing: created",
		spec: "  - name: rxe0\n    netdev: enp1s0\n",
		obs:  Observed{Links: links(), Netdevs: eth},
		want: outcome{Changes: []string{`create rxe[rxe0] netdev=""->"enp1s0"`}},
	}, {
		name: "present on its netdev: nothing to do",
		spec: "  - name: rxe0\n    netdev: enp1s0\n    state: present\n",
		obs:  Observed{Links: links(host.RdmaLink{Name: "rxe0", Netdev: "enp1s0"}), Netdevs: eth},
	}, {
		name: "bound to another netdev: replaced",
		spec: "  - name: rxe0\n    netdev: enp1s0\n",
		obs:  Observed{Links: links(host.RdmaLink{Name: "rxe0", Netdev: "enp2s0"}), Netdevs: eth},
		want: outcome{Changes: []string{`update rxe[rxe0] netdev="enp2s0"->"enp1s0" deleteFirst=true evict=[]`}},
	}, {
		name: "absent and present: deleted",
		spec: "  - name: rxe0\n    netdev: enp1s0\n    state: absent\n",
		obs:  Observed{Links: links(host.RdmaLink{Name: "rxe0", Netdev: "enp1s0"})},
		want: outcome{Changes: []string{`delete rxe[rxe0] netdev="enp1s0"->""`}},
	}, {
		name: "absent and absent: nothing to do, even without RDMA",
		spec: "  - name: rxe0\n    netdev: enp1s0\n    state: absent\n",
		obs:  Observed{Links: links(), NoRDMA: noRDMA},
	}, {
		name: "a hardware device's name: a finding",
		spec: "  - name: mlx5_0\n    netdev: enp1s0\n",
		obs:  Observed{Links: links(host.RdmaLink{Name: "mlx5_0"}), Netdevs: eth},
		want: outcome{Errors: []string{"host.yaml:3:11: error: $.rxe[0].name: mlx5_0 is a hardware RDMA device, not a Soft-RoCE link; choose another name"}},
	}, {
		name: "missing netdev: a finding at netdev",
		spec: "  - name: rxe0\n    netdev: enp9s0\n",
		obs:  Observed{Links: links(), Netdevs: eth},
		want: outcome{Errors: []string{"host.yaml:4:13: error: $.rxe[0].netdev: no network interface enp9s0 on this host"}},
	}, {
		name:   "missing netdev, a port becomes Ethernet at next boot: deferred",
		spec:   "  - name: rxe0\n    netdev: ens1f0np0\n",
		obs:    Observed{Links: links(), Netdevs: eth},
		inv:    cx,
		staged: []plan.LinkChange{{Device: "0000:81:00.0", Port: 1, To: "Ethernet", Setting: "LINK_TYPE_P1=ETH", When: plan.NextBoot}},
		want:   outcome{Deferred: []string{"rxe[rxe0]: netdev ens1f0np0 does not exist yet; waits for LINK_TYPE_P1=ETH on 0000:81:00.0 (reboot)"}},
	}, {
		name: "IPoIB netdev: a finding",
		spec: "  - name: rxe0\n    netdev: ib0\n",
		obs:  Observed{Links: links(), Netdevs: eth},
		want: outcome{Errors: []string{"host.yaml:4:13: error: $.rxe[0].netdev: ib0 is an IPoIB interface; Soft-RoCE needs an Ethernet netdev"}},
	}, {
		name: "no RDMA netlink and no module planned: says what to install and load",
		spec: "  - name: rxe0\n    netdev: enp1s0\n",
		obs:  Observed{Links: links(), NoRDMA: noRDMA, Netdevs: eth},
		want: outcome{Errors: []string{"host.yaml:3:5: error: $.rxe[0]: cannot create Soft-RoCE link rxe0: " + host.ErrNoRDMA.Error() + ": protocol not supported"}},
	}, {
		name: "netdev held by a link the spec does not manage: a finding",
		spec: "  - name: rxe0\n    netdev: enp1s0\n",
		obs:  Observed{Links: links(host.RdmaLink{Name: "rxe9", Netdev: "enp1s0"}), Netdevs: eth},
		want: outcome{Errors: []string{"host.yaml:4:13: error: $.rxe[0].netdev: netdev enp1s0 already carries Soft-RoCE link rxe9 (one per netdev); list rxe9 with state: absent to remove it"}},
	}, {
		name: "netdev held by a link the spec removes: evicted first, whatever the order",
		spec: "  - name: rxe0\n    netdev: enp1s0\n  - name: rxe9\n    netdev: enp1s0\n    state: absent\n",
		obs:  Observed{Links: links(host.RdmaLink{Name: "rxe9", Netdev: "enp1s0"}), Netdevs: eth},
		want: outcome{Changes: []string{
			`create rxe[rxe0] netdev=""->"enp1s0" deleteFirst=false evict=[rxe9]`,
			`delete rxe[rxe9] netdev="enp1s0"->""`,
		}},
	}, {
		name: "two links swap netdevs",
		spec: "  - name: rxe0\n    netdev: enp1s0\n  - name: rxe1\n    netdev: enp2s0\n",
		obs:  Observed{Links: links(host.RdmaLink{Name: "rxe0", Netdev: "enp2s0"}, host.RdmaLink{Name: "rxe1", Netdev: "enp1s0"}), Netdevs: eth},
		want: outcome{Changes: []string{
			`update rxe[rxe0] netdev="enp2s0"->"enp1s0" deleteFirst=true evict=[rxe1]`,
			`update rxe[rxe1] netdev="enp1s0"->"enp2s0" deleteFirst=true evict=[rxe0]`,
		}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, rep := schema.Parse("host.yaml", []byte("version: 1\nrxe:\n"+tt.spec))
			if len(rep) > 0 {
				t.Fatalf("spec: %v", rep)
			}
			inv := tt.inv
			if inv == nil {
				inv = &inventory.Inventory{}
			}
			facts := plan.NewFacts()
			for _, s := range tt.staged {
				facts.ChangeLink(s)
			}
			obs := tt.obs
			got := summarize(diff(&plan.Request{Spec: spec, Inv: inv}, &obs, facts))
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("diff (-want +got):\n%s", d)
			}
		})
	}
}
