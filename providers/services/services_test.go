package services

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

func request(t *testing.T, src string, inv *inventory.Inventory) *plan.Request {
	t.Helper()
	spec, rep := schema.Parse("spec.yaml", []byte(src))
	if len(rep) > 0 {
		t.Fatalf("spec: %v", rep)
	}
	return &plan.Request{Spec: spec, Inv: inv}
}

func ibInv() *inventory.Inventory {
	return &inventory.Inventory{Devices: []*inventory.Device{{Name: "mlx5_0", PCI: "0000:3b:00.0",
		Ports: []*inventory.Port{{Num: 1, LinkLayer: "InfiniBand", State: "ACTIVE", SMLID: 1}}}}}
}

func ethInv() *inventory.Inventory {
	return &inventory.Inventory{Devices: []*inventory.Device{{Name: "mlx5_0", PCI: "0000:5e:00.0",
		Ports: []*inventory.Port{{Num: 1, LinkLayer: "Ethernet", State: "ACTIVE"}}}}}
}

var (
	disabledInactive = host.UnitState{LoadState: "loaded", ActiveState: "inactive", UnitFileState: "disabled"}
	enabledActive    = host.UnitState{LoadState: "loaded", ActiveState: "active", UnitFileState: "enabled"}
)

// outcome is the comparable part of a proposal.
type outcome struct {
	Changes  []string // "address action: attr before->after, ..."
	Payloads []payload
	Deferred []string
	Errors   []string
}

func summarize(p plan.Proposal) outcome {
	var o outcome
	for _, c := range p.Changes {
		s := c.Address.String() + " " + c.Action.String() + " " + c.Activation.String() + ":"
		for _, a := range c.Attributes {
			s += " " + a.Name + " " + a.Before + "->" + a.After
		}
		o.Changes = append(o.Changes, s)
		o.Payloads = append(o.Payloads, *c.Payload.(*payload))
	}
	for _, d := range p.Deferred {
		o.Deferred = append(o.Deferred, d.Address.String()+" "+d.Reason)
	}
	for _, e := range p.Errors {
		o.Errors = append(o.Errors, e.String())
	}
	return o
}

func ptr(b bool) *bool { return &b }

func TestDiff(t *testing.T) {
	tests := []struct {
		name   string
		spec   string
		inv    *inventory.Inventory
		obs    *Observed
		staged []plan.LinkChange
		want   outcome
	}{
		{
			name: "enable and start",
			spec: "version: 1\nservices:\n  - name: opensm\n    enabled: true\n    active: true\n",
			inv:  ibInv(),
			obs:  &Observed{Units: map[string]host.UnitState{"opensm.service": disabledInactive}},
			want: outcome{
				Changes:  []string{"service[opensm.service] update now: enabled false->true active false->true"},
				Payloads: []payload{{unit: "opensm.service", enable: ptr(true), start: ptr(true)}},
			},
		},
		{
			name: "already as wanted",
			spec: "version: 1\nservices:\n  - name: opensm.service\n    enabled: true\n    active: true\n",
			inv:  ibInv(),
			obs:  &Observed{Units: map[string]host.UnitState{"opensm.service": enabledActive}},
			want: outcome{},
		},
		{
			name: "disable and stop; unmanaged keys left alone",
			spec: "version: 1\nservices:\n  - name: ibacm\n    active: false\n  - name: srp_daemon\n    enabled: false\n",
			inv:  ethInv(),
			obs: &Observed{Units: map[string]host.UnitState{
				"ibacm.service":      {LoadState: "loaded", ActiveState: "active", UnitFileState: "disabled"},
				"srp_daemon.service": {LoadState: "loaded", ActiveState: "inactive", UnitFileState: "enabled"},
			}},
			want: outcome{
				Changes: []string{
					"service[ibacm.service] update now: active true->false",
					"service[srp_daemon.service] update now: enabled true->false",
				},
				Payloads: []payload{{unit: "ibacm.service", start: ptr(false)}, {unit: "srp_daemon.service", enable: ptr(false)}},
			},
		},
		{
			name: "failed unit is started again; enabled-runtime is enabled for good",
			spec: "version: 1\nservices:\n  - name: ibacm\n    enabled: true\n    active: true\n",
			inv:  ethInv(),
			obs:  &Observed{Units: map[string]host.UnitState{"ibacm.service": {LoadState: "loaded", ActiveState: "failed", UnitFileState: "enabled-runtime"}}},
			want: outcome{
				Changes:  []string{"service[ibacm.service] update now: enabled false->true active false->true"},
				Payloads: []payload{{unit: "ibacm.service", enable: ptr(true), start: ptr(true)}},
			},
		},
		{
			name: "opensm on a host without InfiniBand",
			spec: "version: 1\nservices:\n  - name: opensm\n    enabled: true\n    active: true\n",
			inv:  ethInv(),
			obs:  &Observed{Units: map[string]host.UnitState{"opensm.service": disabledInactive}},
			want: outcome{Errors: []string{"spec.yaml:5:13: error: $.services[0].active: opensm is a subnet manager for InfiniBand fabrics, and this host has no InfiniBand port (mlx5_0/1: Ethernet)"}},
		},
		{
			name: "opensm instance on a host with no RDMA device",
			spec: "version: 1\nservices:\n  - name: opensm@0x0002c903000c1234\n    active: true\n",
			inv:  &inventory.Inventory{},
			obs:  &Observed{Units: map[string]host.UnitState{"opensm@0x0002c903000c1234.service": disabledInactive}},
			want: outcome{Errors: []string{"spec.yaml:4:13: error: $.services[0].active: opensm is a subnet manager for InfiniBand fabrics, and this host has no InfiniBand port (no RDMA devices)"}},
		},
		{
			name:   "opensm waits for firmware turning a port to InfiniBand",
			spec:   "version: 1\nservices:\n  - name: opensm\n    active: true\n",
			inv:    ethInv(),
			obs:    &Observed{Units: map[string]host.UnitState{"opensm.service": disabledInactive}},
			staged: []plan.LinkChange{{Device: "0000:5e:00.0", Port: 1, To: "InfiniBand", Setting: "LINK_TYPE_P1=IB", When: plan.NextBoot}},
			want:   outcome{Deferred: []string{"service[opensm.service] waits for LINK_TYPE_P1=IB on 0000:5e:00.0 (reboot)"}},
		},
		{
			name: "opensm stopped on an Ethernet host is fine",
			spec: "version: 1\nservices:\n  - name: opensm\n    enabled: false\n    active: false\n",
			inv:  ethInv(),
			obs:  &Observed{Units: map[string]host.UnitState{"opensm.service": enabledActive}},
			want: outcome{
				Changes:  []string{"service[opensm.service] update now: enabled true->false active true->false"},
				Payloads: []payload{{unit: "opensm.service", enable: ptr(false), start: ptr(false)}},
			},
		},
		{
			name: "missing, masked, static and broken units",
			spec: "version: 1\nservices:\n  - name: nosuch\n    active: true\n  - name: ibacm\n    active: true\n  - name: rdma-ndd\n    enabled: true\n  - name: broken\n    active: true\n",
			inv:  ethInv(),
			obs: &Observed{Units: map[string]host.UnitState{
				"nosuch.service":   {LoadState: "not-found", ActiveState: "inactive"},
				"ibacm.service":    {LoadState: "masked", ActiveState: "inactive", UnitFileState: "masked"},
				"rdma-ndd.service": {LoadState: "loaded", ActiveState: "active", UnitFileState: "static"},
				"broken.service":   {LoadState: "bad-setting", ActiveState: "inactive", UnitFileState: "disabled"},
			}},
			want: outcome{Errors: []string{
				"spec.yaml:3:11: error: $.services[0].name: unit nosuch.service does not exist on this host (LoadState=not-found): install the package that provides it",
				"spec.yaml:5:11: error: $.services[1].name: unit ibacm.service is masked; rdmaform does not unmask units (systemctl unmask ibacm.service)",
				"spec.yaml:8:14: error: $.services[2].enabled: unit rdma-ndd.service cannot be enabled or disabled (UnitFileState=static): it has no [Install] section or is not a unit file of its own",
				"spec.yaml:9:11: error: $.services[3].name: unit broken.service failed to load (LoadState=bad-setting; see systemctl status broken.service)",
			}},
		},
		{
			name: "no systemd",
			spec: "version: 1\nservices:\n  - name: opensm\n    active: true\n",
			inv:  ibInv(),
			obs:  &Observed{NoSystemd: true},
			want: outcome{Errors: []string{"spec.yaml:3:3: error: $.services: no systemd runs on this host (no /run/systemd/system): services cannot be managed"}},
		},
		{
			name: "no services",
			spec: "version: 1\n",
			inv:  ibInv(),
			want: outcome{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			facts := plan.NewFacts()
			for _, s := range tt.staged {
				facts.ChangeLink(s)
			}
			got := summarize(diff(request(t, tt.spec, tt.inv), tt.obs, facts))
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(payload{})); diff != "" {
				t.Errorf("diff (-want +got):\n%s", diff)
			}
		})
	}
}
