package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/api/v1alpha1"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/schema"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// TestToolNeeds: for each spec item the programs its provider runs,
// checked on a simulated host whose PATH holds exactly the tools given:
// what is missing is named with the item, and a host with the tools
// (or a policy that does not activate) misses nothing.
func TestToolNeeds(t *testing.T) {
	fw := func(tool, image string) *schema.Spec {
		return &schema.Spec{Version: 1, Devices: []schema.Device{{PCI: "0000:3b:00.0", Firmware: &schema.Firmware{
			Tool: tool, Image: image, Params: schema.Params{{Name: "SRIOV_EN", Value: "true"}},
		}}}}
	}
	qos := func(q schema.QoS) *schema.Spec {
		return &schema.Spec{Version: 1, Devices: []schema.Device{{PCI: "0000:3b:00.0", Ports: []schema.Port{{Port: 1, QoS: &q}}}}}
	}
	yes := true
	audit := v1alpha1.Policy{Mode: v1alpha1.ModeAudit}
	reset := v1alpha1.Policy{Mode: v1alpha1.ModeApply, Activation: v1alpha1.ActivationFWReset}
	auditReset := v1alpha1.Policy{Mode: v1alpha1.ModeAudit, Activation: v1alpha1.ActivationFWReset}
	for _, c := range []struct {
		name  string
		tools []string
		spec  *schema.Spec
		p     v1alpha1.Policy
		want  string // the missing needs, one a line
	}{
		{"firmware auto, no tool", nil, fw("", ""), audit,
			"neither mlxconfig nor mstconfig is on PATH: $.devices[0].firmware needs one (firmware parameters, tool auto)"},
		{"firmware auto, mlxconfig", []string{"mlxconfig"}, fw("", ""), audit, ""},
		{"firmware auto, mstconfig", []string{"mstconfig"}, fw("auto", ""), audit, ""},
		{"firmware mstconfig, only mlxconfig", []string{"mlxconfig"}, fw("mstconfig", ""), audit,
			"mstconfig is not on PATH: $.devices[0].firmware needs it (firmware parameters, tool mstconfig)"},
		{"fw-reset, mstconfig without mstfwreset", []string{"mstconfig", "mlxfwreset"}, fw("", ""), reset,
			"mstfwreset is not on PATH: $.devices[0].firmware needs it (policy.activation fw-reset with mstconfig)"},
		{"fw-reset, auto takes mlxconfig", []string{"mlxconfig", "mstconfig", "mstfwreset"}, fw("", ""), reset,
			"mlxfwreset is not on PATH: $.devices[0].firmware needs it (policy.activation fw-reset with mlxconfig)"},
		{"fw-reset, both", []string{"mstconfig", "mstfwreset"}, fw("", ""), reset, ""},
		{"fw-reset in audit mode activates nothing", []string{"mstconfig"}, fw("", ""), auditReset, ""},
		{"image with mlxconfig", []string{"mlxconfig"}, fw("", "/srv/fw.bin"), audit,
			"neither flint nor mstflint is on PATH: $.devices[0].firmware needs one (burning a firmware image)"},
		{"image with mstconfig", []string{"mstconfig", "flint"}, fw("", "/srv/fw.bin"), audit,
			"mstflint is not on PATH: $.devices[0].firmware needs it (burning a firmware image)"},
		{"image with mlxconfig and mstflint", []string{"mlxconfig", "mstflint"}, fw("", "/srv/fw.bin"), audit, ""},
		{"modules", []string{"ip"}, &schema.Spec{Version: 1, Modules: []string{"rdma_ucm"}}, audit,
			"modprobe is not on PATH: $.modules needs it (loading modules)"},
		{"modules, modprobe", []string{"modprobe"}, &schema.Spec{Version: 1, Modules: []string{"rdma_ucm"}}, audit, ""},
		{"qos pfc", []string{"ethtool"}, qos(schema.QoS{PFC: &[]int{3}}), audit,
			"dcb is not on PATH: $.devices[0].ports[0].qos needs it (DCB settings)"},
		{"qos pause", []string{"dcb"}, qos(schema.QoS{Pause: &yes}), audit,
			"ethtool is not on PATH: $.devices[0].ports[0].qos.pause needs it (pause frames)"},
		{"qos trust and pause", nil, qos(schema.QoS{Trust: "dscp", Pause: &yes}), audit,
			"dcb is not on PATH: $.devices[0].ports[0].qos needs it (DCB settings)\n" +
				"ethtool is not on PATH: $.devices[0].ports[0].qos.pause needs it (pause frames)"},
		{"qos ecn only: sysfs", nil, qos(schema.QoS{ECN: &[]int{3}}), audit, ""},
		{"interfaces ethtool", []string{"ip"}, &schema.Spec{Version: 1, Interfaces: []schema.Interface{{Name: "ens1f0np0"}, {Name: "ens1f1np1", Ethtool: &schema.Ethtool{}}}}, audit,
			"ethtool is not on PATH: $.interfaces[1].ethtool needs it (rings and channels)"},
		{"subnet manager", []string{"ip"}, &schema.Spec{Version: 1, SubnetManager: &schema.SubnetManager{}}, audit,
			"sminfo is not on PATH: $.subnet_manager needs it (asking the fabric for its subnet manager)"},
		{"ipoib, NetworkManager stopped", []string{"ip"}, &schema.Spec{Version: 1, IPoIB: []schema.IPoIB{{Name: "ib0", Parent: "ib0"}}}, audit,
			"NetworkManager does not answer on the system bus (NetworkManager ListConnections: org.freedesktop.DBus.Error.ServiceUnknown: The name org.freedesktop.NetworkManager was not provided by any .service files): $.ipoib needs it (IPoIB connections)"},
		{"ipoib, NetworkManager running", []string{"nmcli"}, &schema.Spec{Version: 1, IPoIB: []schema.IPoIB{{Name: "ib0", Parent: "ib0"}}}, audit, ""},
		{"nothing that runs a tool", nil, &schema.Spec{Version: 1, Devices: []schema.Device{{PCI: "0000:3b:00.0"}}}, reset, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := simHost(t, func(st *sim.State) { st.Tools = c.tools })
			if g := missingText(h, c.spec, c.p); g != c.want {
				t.Errorf("missing:\n%s\nwant:\n%s", g, c.want)
			}
		})
	}
}

// TestToolNeedsSystemd: a spec with services needs systemd's manager: a
// simulated host with systemd answers; one without it (not booted with
// systemd) is a missing tool naming $.services.
func TestToolNeedsSystemd(t *testing.T) {
	yes := true
	spec := &schema.Spec{Version: 1, Services: []schema.Service{{Name: "opensm", Active: &yes}}}
	for _, off := range []bool{false, true} {
		h := simHost(t, func(st *sim.State) {
			if off {
				st.Systemd = &sim.SystemdState{Off: true}
			}
		})
		g := missingText(h, spec, v1alpha1.Policy{Mode: v1alpha1.ModeAudit})
		want := ""
		if off {
			want = "systemd does not answer on the system bus (the host was not booted with systemd, or its /run/systemd is not mounted): $.services needs it (unit states)"
		}
		if g != want {
			t.Errorf("systemd off %v: missing:\n%s\nwant:\n%s", off, g, want)
		}
	}
}

// missingText is missingTools' needs, one a line.
func missingText(h *host.Host, spec *schema.Spec, p v1alpha1.Policy) string {
	var got []string
	for _, m := range missingTools(context.Background(), h, spec, p) {
		got = append(got, m.String())
	}
	return strings.Join(got, "\n")
}

// simHost is a simulated cx6-vpi-ib host, its state changed by mutate.
func simHost(t *testing.T, mutate func(*sim.State)) *host.Host {
	t.Helper()
	_, h := simtest.New(t, "cx6-vpi-ib", 0, mutate)
	return h
}
