package ipoib

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/ipoib/nmcli"
	"github.com/rdmaform/rdmaform/schema"
)

// testInv is a ConnectX-6 with ib0 on an InfiniBand port and a second
// adapter whose port runs Ethernet (ens2f0np0).
func testInv() *inventory.Inventory {
	return &inventory.Inventory{Devices: []*inventory.Device{
		{Name: "mlx5_0", PCI: "0000:3b:00.0", Ports: []*inventory.Port{{Num: 1, LinkLayer: "InfiniBand", Netdevs: []string{"ib0", "ib0.8002"}}}},
		{Name: "mlx5_1", PCI: "0000:3b:00.1", Ports: []*inventory.Port{{Num: 1, LinkLayer: "Ethernet", Netdevs: []string{"ens2f0np0"}}}},
	}}
}

// testObs is the host with ib0 in datagram mode at 2044 (a 2K IB MTU),
// enhanced IPoIB, P_Key table 0xffff, 0x0003 (limited) and 0x8002.
func testObs(profiles ...nmcli.Profile) *Observed {
	return &Observed{
		Profiles: profiles,
		Links: map[string]inventory.Netdev{
			"ib0":       {Name: "ib0", Type: 32, MTU: 2044, Mode: "datagram", Flags: 0x00},
			"ens2f0np0": {Name: "ens2f0np0", Type: 1, MTU: 1500, Flags: -1},
		},
		PKeys: map[string][]int{"mlx5_0/1": {0x0003, 0x8002, 0xffff}},
	}
}

func parseSpec(t *testing.T, y string) *schema.Spec {
	t.Helper()
	spec, rep := schema.Parse("host.yaml", []byte("version: 1\n"+y))
	if len(rep) > 0 {
		t.Fatalf("spec: %v", rep)
	}
	return spec
}

// storage is the profile NetworkManager holds after rdmaform created
// ib0-storage from storageSpec, active.
func storage() nmcli.Profile {
	return nmcli.Profile{Name: "ib0-storage", UUID: "u-1", InterfaceName: "ib0.8002", Parent: "ib0", PKey: 0x8002,
		Mode: nmcli.Datagram, MTU: 2000, Active: true, Device: "ib0.8002",
		IPv4: nmcli.IPConfig{Method: "manual", Addresses: []string{"192.0.2.1/24"}, Gateway: "192.0.2.254", DNS: []string{"192.0.2.253"}},
		IPv6: nmcli.IPConfig{Method: "manual", Addresses: []string{"2001:db8:1::1/64"}}}
}

const storageSpec = `ipoib:
  - name: ib0-storage
    parent: ib0
    pkey: 0x8002
    mtu: 2000
    ipv4: {addresses: [192.0.2.1/24], gateway: 192.0.2.254, dns: [192.0.2.253]}
    ipv6: {addresses: ["2001:db8:1::1/64"]}
`

// outcome is a proposal in comparable form.
type outcome struct {
	Changes  []string // "ACTION ADDRESS name=before->after ..."
	Deferred []string
	Errors   []string // "path: message"
}

func summarize(p plan.Proposal) outcome {
	var o outcome
	for _, c := range p.Changes {
		s := c.Action.String() + " " + c.Address.String()
		for _, a := range c.Attributes {
			s += fmt.Sprintf(" %s=%s->%s", a.Name, a.Before, a.After)
		}
		o.Changes = append(o.Changes, s)
	}
	for _, d := range p.Deferred {
		o.Deferred = append(o.Deferred, d.Address.String()+": "+d.Reason)
	}
	for _, e := range p.Errors {
		o.Errors = append(o.Errors, e.Path+": "+e.Message)
	}
	return o
}

func TestDiff(t *testing.T) {
	inactive := storage()
	inactive.Active, inactive.Device = false, ""
	noAuto := storage()
	noAuto.NoAutoconnect = true
	other := nmcli.Profile{Name: "site-ib", UUID: "u-9", InterfaceName: "ib0", PKey: -1, Mode: nmcli.Connected, MTU: 65520, Active: true, Device: "ib0"}
	otherDown := other
	otherDown.Active, otherDown.Device = false, ""
	staticMTU := nmcli.Profile{Name: "ib0-base", UUID: "u-5", InterfaceName: "ib0", PKey: -1, Mode: nmcli.Datagram, MTU: 1500, Active: true, Device: "ib0"}
	toIB := plan.LinkChange{Device: "0000:3b:00.1", Port: 1, To: "InfiniBand", Setting: "LINK_TYPE_P1=IB", When: plan.NextBoot}
	toEth := plan.LinkChange{Device: "0000:3b:00.0", Port: 1, To: "Ethernet", Setting: "LINK_TYPE_P1=ETH", When: plan.NextBoot}

	tests := []struct {
		name     string
		spec     string
		profiles []nmcli.Profile
		staged   []plan.LinkChange
		links    map[string]inventory.Netdev // replaces testObs links when set
		want     outcome
	}{
		{
			name: "create a P_Key child with IPv4 and IPv6",
			spec: storageSpec,
			want: outcome{Changes: []string{"create ipoib[ib0-storage] interface=->ib0.8002 mode=->datagram mtu=->2000 parent=->ib0 pkey=->0x8002" +
				" ipv4.method=->manual ipv4.addresses=->192.0.2.1/24 ipv4.gateway=->192.0.2.254 ipv4.dns=->192.0.2.253" +
				" ipv6.method=->manual ipv6.addresses=->2001:db8:1::1/64 state=->up"}},
		},
		{
			name:     "matching active profile: nothing to do",
			spec:     storageSpec,
			profiles: []nmcli.Profile{storage()},
		},
		{
			name:     "MTU only: modify and re-activate",
			spec:     replace(storageSpec, "mtu: 2000", "mtu: 1500"),
			profiles: []nmcli.Profile{storage()},
			want:     outcome{Changes: []string{"update ipoib[ib0-storage] mtu=2000->1500 state=up->re-activate"}},
		},
		{
			name:     "MTU of an inactive profile: modify and activate",
			spec:     replace(storageSpec, "mtu: 2000", "mtu: 1500"),
			profiles: []nmcli.Profile{inactive},
			want:     outcome{Changes: []string{"update ipoib[ib0-storage] mtu=2000->1500 state=down->up"}},
		},
		{
			name:     "autoconnect alone does not re-activate",
			spec:     storageSpec,
			profiles: []nmcli.Profile{noAuto},
			want:     outcome{Changes: []string{"update ipoib[ib0-storage] autoconnect=false->true"}},
		},
		{
			name:     "fields the spec leaves out are not enforced",
			spec:     "ipoib:\n  - name: ib0-storage\n    parent: ib0\n    pkey: 0x8002\n",
			profiles: []nmcli.Profile{storage()},
		},
		{
			name:     "an empty ipv6 block disables IPv6",
			spec:     "ipoib:\n  - name: ib0-storage\n    parent: ib0\n    pkey: 0x8002\n    ipv6: {}\n",
			profiles: []nmcli.Profile{storage()},
			want:     outcome{Changes: []string{"update ipoib[ib0-storage] ipv6.method=manual->disabled ipv6.addresses=2001:db8:1::1/64-> state=up->re-activate"}},
		},
		{
			name:     "key 0x0002 with membership: full is the full member 0x8002",
			spec:     replace(storageSpec, "pkey: 0x8002", "pkey: 0x0002\n    membership: full"),
			profiles: []nmcli.Profile{storage()},
		},
		{
			name:     "membership: limited configures the limited key on its own child",
			spec:     replace(storageSpec, "pkey: 0x8002", "pkey: 0x0002\n    membership: limited"),
			profiles: []nmcli.Profile{storage()},
			want:     outcome{Changes: []string{"update ipoib[ib0-storage] interface=ib0.8002->ib0.0002 pkey=0x8002->0x0002 state=up->re-activate"}},
		},
		{
			name:     "state down: autoconnect off, then down",
			spec:     storageSpec + "    state: down\n",
			profiles: []nmcli.Profile{storage()},
			want:     outcome{Changes: []string{"update ipoib[ib0-storage] autoconnect=true->false state=up->down"}},
		},
		{
			name: "state down creates without activating",
			spec: "ipoib:\n  - name: ib0-base\n    parent: ib0\n    state: down\n",
			want: outcome{Changes: []string{"create ipoib[ib0-base] interface=->ib0 autoconnect=->false mode=->datagram mtu=->auto ipv4.method=->disabled ipv6.method=->disabled state=->down"}},
		},
		{
			name:     "absent deletes by UUID",
			spec:     storageSpec + "    state: absent\n",
			profiles: []nmcli.Profile{storage()},
			want:     outcome{Changes: []string{"delete ipoib[ib0-storage] uuid=u-1->"}},
		},
		{
			name: "absent and missing: nothing to do, no host checks",
			spec: "ipoib:\n  - name: gone\n    parent: ib7\n    state: absent\n",
		},
		{
			name:     "connections the spec does not name are never touched",
			spec:     storageSpec,
			profiles: []nmcli.Profile{storage(), otherDown, {Name: "ib1-lab", UUID: "u-7", InterfaceName: "ib1", PKey: -1, Active: true, Device: "ib1"}},
		},
		{
			name:     "several profiles with the name",
			spec:     storageSpec,
			profiles: []nmcli.Profile{storage(), func() nmcli.Profile { p := storage(); p.UUID = "u-2"; return p }()},
			want:     outcome{Errors: []string{`$.ipoib[0].name: 2 NetworkManager connections are named "ib0-storage" (uuid u-1, u-2); rdmaform manages one connection per name: delete the extra ones with nmcli connection delete uuid UUID`}},
		},
		{
			name:     "an unmanaged profile active on the interface",
			spec:     "ipoib:\n  - name: ib0-base\n    parent: ib0\n",
			profiles: []nmcli.Profile{other},
			want:     outcome{Errors: []string{`$.ipoib[0]: connection "site-ib" (uuid u-9), which the spec does not manage, is active on ib0; activating "ib0-base" would take the interface from it: delete or deactivate it, or list it in the spec with state: absent`}},
		},
		{
			name: "parent missing",
			spec: "ipoib:\n  - name: x\n    parent: ib5\n",
			want: outcome{Errors: []string{"$.ipoib[0].parent: netdev ib5 does not exist (IPoIB netdevs on this host: ib0, ib0.8002)"}},
		},
		{
			name:   "parent missing, a staged firmware change makes a port InfiniBand",
			spec:   "ipoib:\n  - name: x\n    parent: ib1\n",
			staged: []plan.LinkChange{toIB},
			want:   outcome{Deferred: []string{"ipoib[x]: waits for LINK_TYPE_P1=IB on 0000:3b:00.1 (reboot)"}},
		},
		{
			name: "parent on an Ethernet port",
			spec: "ipoib:\n  - name: x\n    parent: ens2f0np0\n",
			want: outcome{Errors: []string{"$.ipoib[0].parent: ens2f0np0 is on port 1 of mlx5_1, whose link layer is Ethernet; IPoIB needs an InfiniBand port (a VPI adapter switches with firmware LINK_TYPE_P2: IB)"}},
		},
		{
			name:   "parent on an Ethernet port that turns InfiniBand at the next boot",
			spec:   "ipoib:\n  - name: x\n    parent: ens2f0np0\n",
			staged: []plan.LinkChange{toIB},
			want:   outcome{Deferred: []string{"ipoib[x]: waits for LINK_TYPE_P1=IB on 0000:3b:00.1 (reboot)"}},
		},
		{
			name:   "port turns Ethernet at the next boot",
			spec:   storageSpec,
			staged: []plan.LinkChange{toEth},
			want:   outcome{Errors: []string{"$.ipoib[0].parent: port 1 of mlx5_0 becomes Ethernet at the next boot (LINK_TYPE_P1=ETH); ib0 and this connection would lose their port"}},
		},
		{
			name: "connected mode on enhanced IPoIB",
			spec: "ipoib:\n  - name: x\n    parent: ib0\n    mode: connected\n    mtu: 65520\n",
			want: outcome{Errors: []string{"$.ipoib[0].mode: ib0 runs enhanced IPoIB (hardware address flags 0x00, no connected-mode bit): ConnectX-4 and later run IPoIB in datagram mode only; use mode: datagram"}},
		},
		{
			name:  "connected mode where the adapter has the connected-mode flag",
			spec:  "ipoib:\n  - name: x\n    parent: ib0\n    mode: connected\n    mtu: 65520\n",
			links: map[string]inventory.Netdev{"ib0": {Name: "ib0", Type: 32, MTU: 2044, Mode: "datagram", Flags: 0x80}},
			want:  outcome{Changes: []string{"create ipoib[x] interface=->ib0 mode=->connected mtu=->65520 ipv4.method=->disabled ipv6.method=->disabled state=->up"}},
		},
		{
			name: "datagram MTU above the IB MTU - 4",
			spec: "ipoib:\n  - name: x\n    parent: ib0\n    mtu: 4092\n",
			want: outcome{Errors: []string{"$.ipoib[0].mtu: datagram MTU 4092 is above the IB MTU of port 1 of mlx5_0 - 4 = 2044 (ib0 runs datagram mode with MTU 2044, so the fabric's IB MTU is 2048); use mtu: 2044 or less (ib0 runs enhanced IPoIB: ConnectX-4 and later have no connected mode)"}},
		},
		{
			// Only an adapter with connected mode (the connected-mode flag:
			// ConnectX-3 and older) gets the connected-mode way out; on
			// enhanced IPoIB the same plan refuses it (the case above).
			name:  "datagram MTU above the IB MTU - 4 where the adapter has the connected-mode flag",
			spec:  "ipoib:\n  - name: x\n    parent: ib0\n    mtu: 4092\n",
			links: map[string]inventory.Netdev{"ib0": {Name: "ib0", Type: 32, MTU: 2044, Mode: "datagram", Flags: 0x80}},
			want:  outcome{Errors: []string{"$.ipoib[0].mtu: datagram MTU 4092 is above the IB MTU of port 1 of mlx5_0 - 4 = 2044 (ib0 runs datagram mode with MTU 2044, so the fabric's IB MTU is 2048); use mtu: 2044 or less, or mode: connected"}},
		},
		{
			name:  "datagram MTU on a 4K fabric",
			spec:  "ipoib:\n  - name: x\n    parent: ib0\n    mtu: 4092\n",
			links: map[string]inventory.Netdev{"ib0": {Name: "ib0", Type: 32, MTU: 4092, Mode: "datagram", Flags: 0x00}},
			want:  outcome{Changes: []string{"create ipoib[x] interface=->ib0 mode=->datagram mtu=->4092 ipv4.method=->disabled ipv6.method=->disabled state=->up"}},
		},
		{
			name:     "datagram MTU unknown while a profile sets the interface's MTU",
			spec:     "ipoib:\n  - name: ib0-base\n    parent: ib0\n    mtu: 4092\n",
			profiles: []nmcli.Profile{staticMTU},
			links:    map[string]inventory.Netdev{"ib0": {Name: "ib0", Type: 32, MTU: 1500, Mode: "datagram", Flags: 0x00}},
			want:     outcome{Changes: []string{"update ipoib[ib0-base] mtu=1500->4092 state=up->re-activate"}},
		},
		{
			name: "P_Key missing from the port's table",
			spec: replace(storageSpec, "pkey: 0x8002", "pkey: 0x8005"),
			want: outcome{Errors: []string{"$.ipoib[0].pkey: P_Key 0x8005 is not in the P_Key table of port 1 of mlx5_0 (0x0003, 0x8002, 0xffff): the subnet manager has not made this port a member of the partition"}},
		},
		{
			name: "the port is only a limited member, the spec asks for a full one",
			spec: "ipoib:\n  - name: x\n    parent: ib0\n    pkey: 0x8003\n",
			want: outcome{Errors: []string{"$.ipoib[0].pkey: the subnet manager made port 1 of mlx5_0 only a limited member of partition 0x8003 (its P_Key table: 0x0003, 0x8002, 0xffff): it talks only to full members. Add membership: limited (pkey: 0x0003) to say so, or make the port a full member in the subnet manager's partitions"}},
		},
		{
			name: "the port is only a limited member, and the spec says so",
			spec: "ipoib:\n  - name: x\n    parent: ib0\n    pkey: 0x0003\n    membership: limited\n",
			want: outcome{Changes: []string{"create ipoib[x] interface=->ib0.0003 mode=->datagram mtu=->auto parent=->ib0 pkey=->0x0003 ipv4.method=->disabled ipv6.method=->disabled state=->up"}},
		},
		{
			name: "a full member may configure the limited key",
			spec: "ipoib:\n  - name: x\n    parent: ib0\n    pkey: 0x0002\n    membership: limited\n",
			want: outcome{Changes: []string{"create ipoib[x] interface=->ib0.0002 mode=->datagram mtu=->auto parent=->ib0 pkey=->0x0002 ipv4.method=->disabled ipv6.method=->disabled state=->up"}},
		},
		{
			name: "every finding of an entry is reported",
			spec: "ipoib:\n  - name: x\n    parent: ib0\n    pkey: 0x8005\n    mode: connected\n",
			want: outcome{Errors: []string{
				"$.ipoib[0].mode: ib0 runs enhanced IPoIB (hardware address flags 0x00, no connected-mode bit): ConnectX-4 and later run IPoIB in datagram mode only; use mode: datagram",
				"$.ipoib[0].pkey: P_Key 0x8005 is not in the P_Key table of port 1 of mlx5_0 (0x0003, 0x8002, 0xffff): the subnet manager has not made this port a member of the partition",
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := parseSpec(t, tt.spec)
			req := &plan.Request{Spec: spec, Inv: testInv()}
			obs := testObs(tt.profiles...)
			if tt.links != nil {
				obs.Links = tt.links
			}
			facts := plan.NewFacts()
			for _, s := range tt.staged {
				facts.ChangeLink(s)
			}
			got := summarize((&Provider{}).Plan(req, obs, facts))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Diff (-want +got):\n%s", diff)
			}
		})
	}
}

func replace(s, old, repl string) string {
	out := s
	for i := 0; i+len(old) <= len(out); i++ {
		if out[i:i+len(old)] == old {
			return out[:i] + repl + out[i+len(old):]
		}
	}
	panic("replace: " + old + " not in spec")
}

func was(p nmcli.Profile) *nmcli.Profile { return &p }

// TestDiffPayload checks what Apply will run for each kind of change.
func TestDiffPayload(t *testing.T) {
	tests := []struct {
		name     string
		spec     string
		profiles []nmcli.Profile
		want     *payload
	}{
		{
			name: "create",
			spec: "ipoib:\n  - name: x\n    parent: ib0\n    pkey: 0x8002\n    ipv4: {addresses: [198.51.100.5/24]}\n",
			want: &payload{Op: opCreate, Name: "x", Up: true, Profile: nmcli.Profile{Name: "x", InterfaceName: "ib0.8002", Parent: "ib0", PKey: 0x8002, Mode: nmcli.Datagram,
				IPv4: nmcli.IPConfig{Method: "manual", Addresses: []string{"198.51.100.5/24"}}, IPv6: nmcli.IPConfig{Method: "disabled"}}},
		},
		{
			name:     "update: only the changed property, then re-activate",
			spec:     replace(storageSpec, "mtu: 2000", "mtu: 1500"),
			profiles: []nmcli.Profile{storage()},
			want:     &payload{Op: opUpdate, Name: "ib0-storage", UUID: "u-1", Settings: []nmcli.Setting{{Name: "infiniband.mtu", Value: "1500"}}, Up: true, Was: was(storage())},
		},
		{
			name:     "down",
			spec:     storageSpec + "    state: down\n",
			profiles: []nmcli.Profile{storage()},
			want:     &payload{Op: opUpdate, Name: "ib0-storage", UUID: "u-1", Settings: []nmcli.Setting{{Name: "connection.autoconnect", Value: "no"}}, Down: true, Was: was(storage())},
		},
		{
			name:     "delete",
			spec:     storageSpec + "    state: absent\n",
			profiles: []nmcli.Profile{storage()},
			want:     &payload{Op: opDelete, Name: "ib0-storage", UUID: "u-1", Was: was(storage())},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &plan.Request{Spec: parseSpec(t, tt.spec), Inv: testInv()}
			prop := (&Provider{}).Plan(req, testObs(tt.profiles...), plan.NewFacts())
			if len(prop.Changes) != 1 || len(prop.Errors) != 0 {
				t.Fatalf("want one change, got %+v", summarize(prop))
			}
			c := prop.Changes[0]
			if c.Activation != plan.Now || c.Source == nil || c.Source.Line != 3 {
				t.Errorf("activation %v source %v, want now, line 3", c.Activation, c.Source)
			}
			if diff := cmp.Diff(tt.want, c.Payload); diff != "" {
				t.Errorf("payload (-want +got):\n%s", diff)
			}
		})
	}
}
