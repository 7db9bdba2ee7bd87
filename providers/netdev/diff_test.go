package netdev

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// outcome is the part of a proposal a table compares.
type outcome struct {
	Changes  map[string][]plan.Attr
	Deferred []string // "address: reason"
	Errors   []string // "line:col path: message"
	// DependsOn lists, by change, what it waits for, when anything.
	DependsOn map[string][]plan.Address
}

func summarize(p plan.Proposal) outcome {
	var o outcome
	for _, c := range p.Changes {
		if o.Changes == nil {
			o.Changes = map[string][]plan.Attr{}
		}
		o.Changes[c.Address.String()] = c.Attributes
		if len(c.DependsOn) > 0 {
			if o.DependsOn == nil {
				o.DependsOn = map[string][]plan.Address{}
			}
			o.DependsOn[c.Address.String()] = c.DependsOn
		}
	}
	for _, d := range p.Deferred {
		o.Deferred = append(o.Deferred, d.Address.String()+": "+d.Reason)
	}
	for _, f := range p.Errors {
		o.Errors = append(o.Errors, f.String())
	}
	return o
}

func addr(s string, global, dynamic bool) host.Addr {
	return host.Addr{Prefix: netip.MustParsePrefix(s), Global: global, Dynamic: dynamic}
}

func TestDiff(t *testing.T) {
	up1500 := host.Link{Name: "ens3", MTU: 1500, AdminUp: true}
	kernel := []host.Addr{
		addr("fe80::1/64", false, false),         // link-local, kernel-made
		addr("192.168.122.50/24", true, true),    // DHCP lease
		addr("2001:db8:ffff::50/64", true, true), // SLAAC
		addr("127.0.0.2/8", false, false),        // scope host
	}
	with := func(extra ...host.Addr) []host.Addr { return append(append([]host.Addr{}, kernel...), extra...) }
	cx := &inventory.Inventory{Devices: []*inventory.Device{{Name: "mlx5_0", PCI: "0000:81:00.0",
		Ports: []*inventory.Port{{Num: 1, LinkLayer: "InfiniBand", Netdevs: []string{"ib0"}}}}}}
	cx3 := &inventory.Inventory{Devices: []*inventory.Device{{Name: "mlx4_0", PCI: "0000:81:00.0",
		Ports: []*inventory.Port{{Num: 1, LinkLayer: "Ethernet", Netdevs: []string{"ens2"}}, {Num: 2, LinkLayer: "Ethernet", Netdevs: []string{"ens2d1"}}}}}}

	tests := []struct {
		name   string
		spec   string
		inv    *inventory.Inventory
		obs    map[string]*Iface
		staged []plan.LinkChange
		// anew are RDMA devices the plan registers anew, by the change
		// that does it.
		anew map[string]plan.Address
		want outcome
	}{{
		name: "matches: nothing to do, kernel and DHCP addresses ignored",
		spec: "  - name: ens3\n    state: up\n    mtu: 1500\n    addresses: [192.0.2.1/24, \"2001:db8::1/64\"]\n",
		obs:  map[string]*Iface{"ens3": {Link: up1500, Addrs: with(addr("192.0.2.1/24", true, false), addr("2001:db8::1/64", true, false))}},
	}, {
		name: "state, mtu and addresses: missing added, stray removed",
		spec: "  - name: ens3\n    state: up\n    mtu: 9000\n    addresses: [\"2001:db8::1/64\", 192.0.2.1/24]\n",
		obs:  map[string]*Iface{"ens3": {Link: host.Link{Name: "ens3", MTU: 1500}, Addrs: with(addr("10.0.0.1/8", true, false))}},
		want: outcome{Changes: map[string][]plan.Attr{"interface[ens3]": {
			{Name: "state", Before: "down", After: "up"},
			{Name: "mtu", Before: "1500", After: "9000"},
			{Name: "addresses", Before: "10.0.0.1/8", After: "192.0.2.1/24, 2001:db8::1/64"},
		}}},
	}, {
		name: "addresses absent: addresses unmanaged",
		spec: "  - name: ens3\n    state: down\n",
		obs:  map[string]*Iface{"ens3": {Link: up1500}},
		want: outcome{Changes: map[string][]plan.Attr{"interface[ens3]": {{Name: "state", Before: "up", After: "down"}}}},
	}, {
		name: "addresses []: every static one removed, nothing else",
		spec: "  - name: ens3\n    addresses: []\n",
		obs:  map[string]*Iface{"ens3": {Link: up1500, Addrs: with(addr("192.0.2.1/24", true, false), addr("192.0.2.2/24", true, false))}},
		want: outcome{Changes: map[string][]plan.Attr{"interface[ens3]": {{Name: "addresses", Before: "192.0.2.1/24, 192.0.2.2/24", After: ""}}}},
	}, {
		name: "addresses []: only kernel and DHCP addresses: nothing to do",
		spec: "  - name: ens3\n    addresses: []\n",
		obs:  map[string]*Iface{"ens3": {Link: up1500, Addrs: with()}},
	}, {
		name: "same address, other prefix length: replaced",
		spec: "  - name: ens3\n    addresses: [\"2001:db8::1/64\"]\n",
		obs:  map[string]*Iface{"ens3": {Link: up1500, Addrs: with(addr("2001:db8::1/48", true, false))}},
		want: outcome{Changes: map[string][]plan.Attr{"interface[ens3]": {{Name: "addresses", Before: "2001:db8::1/48", After: "2001:db8::1/64"}}}},
	}, {
		name: "an address DHCP holds is not taken over",
		spec: "  - name: ens3\n    addresses: [192.0.2.9/24, 192.168.122.50/24]\n",
		obs:  map[string]*Iface{"ens3": {Link: up1500, Addrs: with()}},
		want: outcome{Errors: []string{"host.yaml:4:31: error: $.interfaces[0].addresses[1]: 192.168.122.50/24 is on ens3 as a dynamic address (DHCP or SLAAC); rdmaform does not take over addresses the kernel or a DHCP client owns"}},
	}, {
		name: "missing netdev: a finding at its name",
		spec: "  - name: ens9\n    state: up\n",
		obs:  map[string]*Iface{},
		want: outcome{Errors: []string{"host.yaml:3:11: error: $.interfaces[0].name: no network interface ens9 on this host"}},
	}, {
		name:   "missing netdev while a port changes link layer at next boot: deferred",
		spec:   "  - name: ens1f0np0\n    mtu: 9000\n",
		inv:    cx,
		obs:    map[string]*Iface{},
		staged: []plan.LinkChange{{Device: "0000:81:00.0", Port: 1, To: "Ethernet", Setting: "LINK_TYPE_P1=ETH", When: plan.NextBoot}},
		want:   outcome{Deferred: []string{"interface[ens1f0np0]: netdev ens1f0np0 does not exist yet; waits for LINK_TYPE_P1=ETH on 0000:81:00.0 (reboot)"}},
	}, {
		name: "netdev of a card registered anew: everything set again after the port switch",
		spec: "  - name: ens2d1\n    mtu: 9000\n    addresses: [192.0.2.12/24]\n",
		inv:  cx3,
		obs:  map[string]*Iface{"ens2d1": {Link: host.Link{Name: "ens2d1", MTU: 9000, AdminUp: true}, Addrs: with(addr("192.0.2.12/24", true, false))}},
		staged: []plan.LinkChange{
			{Device: "0000:81:00.0", Port: 1, To: "InfiniBand", Setting: "type=ib", When: plan.Runtime, Cause: plan.Addr("mlx4_port", "0000:81:00.0/1")},
		},
		anew: map[string]plan.Address{"mlx4_0": plan.Addr("mlx4_port", "0000:81:00.0/1")},
		want: outcome{
			Changes:   map[string][]plan.Attr{"interface[ens2d1]": {{Name: "mtu", After: "9000"}, {Name: "addresses", After: "192.0.2.12/24"}}},
			DependsOn: map[string][]plan.Address{"interface[ens2d1]": {plan.Addr("mlx4_port", "0000:81:00.0/1")}},
		},
	}, {
		name: "netdev of a port that switches away in the same plan: a finding",
		spec: "  - name: ens2\n    mtu: 9000\n",
		inv:  cx3,
		obs:  map[string]*Iface{"ens2": {Link: host.Link{Name: "ens2", MTU: 1500, AdminUp: true}}},
		staged: []plan.LinkChange{
			{Device: "0000:81:00.0", Port: 1, To: "InfiniBand", Setting: "type=ib", When: plan.Runtime, Cause: plan.Addr("mlx4_port", "0000:81:00.0/1")},
		},
		anew: map[string]plan.Address{"mlx4_0": plan.Addr("mlx4_port", "0000:81:00.0/1")},
		want: outcome{Errors: []string{"host.yaml:3:11: error: $.interfaces[0].name: ens2 is the Ethernet netdev of port 1 of mlx4_0, which becomes InfiniBand in this plan (mlx4_port[0000:81:00.0/1]); it goes away"}},
	}, {
		name: "missing netdev while mlx4 ports switch now: set once they have, after both switches",
		spec: "  - name: ens2\n    mtu: 9000\n    addresses: [192.0.2.1/24]\n",
		obs:  map[string]*Iface{},
		staged: []plan.LinkChange{
			{Device: "0000:81:00.0", Port: 2, To: "Ethernet", Setting: "type=eth", When: plan.Runtime, Cause: plan.Addr("mlx4_port", "0000:81:00.0/2")},
			{Device: "0000:81:00.0", Port: 1, To: "Ethernet", Setting: "type=eth", When: plan.Runtime, Cause: plan.Addr("mlx4_port", "0000:81:00.0/1")},
		},
		want: outcome{
			Changes:   map[string][]plan.Attr{"interface[ens2]": {{Name: "mtu", After: "9000"}, {Name: "addresses", After: "192.0.2.1/24"}}},
			DependsOn: map[string][]plan.Address{"interface[ens2]": {plan.Addr("mlx4_port", "0000:81:00.0/1"), plan.Addr("mlx4_port", "0000:81:00.0/2")}},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, rep := schema.Parse("host.yaml", []byte("version: 1\ninterfaces:\n"+tt.spec))
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
			for dev, by := range tt.anew {
				facts.CreateDevice(dev, by)
			}
			req := &plan.Request{Spec: spec, Inv: inv}
			got := summarize(diff(req, &Observed{Ifaces: tt.obs}, facts))
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("diff (-want +got):\n%s", d)
			}
		})
	}
}
