package mlx4port_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/mlx4port"
	"github.com/rdmaform/rdmaform/schema"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

func TestParseState(t *testing.T) {
	tests := []struct {
		in   string
		want mlx4port.State
	}{
		{"ib\n", mlx4port.State{Setting: "ib", Effective: "ib"}},
		{"eth\n", mlx4port.State{Setting: "eth", Effective: "eth"}},
		{"auto (ib)\n", mlx4port.State{Setting: "auto", Effective: "ib"}},
		{"auto (eth)\n", mlx4port.State{Setting: "auto", Effective: "eth"}},
		{"not detected\n", mlx4port.State{Setting: "auto"}},
		{"auto (not detected)\n", mlx4port.State{Setting: "auto"}},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSpace(tt.in), func(t *testing.T) {
			got, err := mlx4port.ParseState(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, err := mlx4port.ParseState("infiniband"); err == nil {
		t.Error("unknown text accepted")
	}
}

func setup(t *testing.T, profile string) (*sim.Sim, *host.Host) {
	t.Helper()
	return simtest.New(t, profile, 0, nil)
}

func build(t *testing.T, h *host.Host, y string) *plan.Plan {
	t.Helper()
	spec, rep := schema.Parse("host.yaml", []byte(y))
	if len(rep) > 0 {
		t.Fatalf("spec: %v", rep)
	}
	res, err := plan.Build(context.Background(), h, spec, []plan.Provider{mlx4port.New()})
	if err != nil {
		t.Fatal(err)
	}
	return res.Plan
}

func lines(p *plan.Plan) []string {
	var out []string
	for _, c := range p.Changes {
		for _, a := range c.Attributes {
			out = append(out, fmt.Sprintf("%s %s %s: %s -> %s", c.Address, c.Activation, a.Name, a.Before, a.After))
		}
	}
	for _, f := range p.Errors {
		out = append(out, f.String())
	}
	return out
}

func portFiles(t *testing.T, h *host.Host) []string {
	var out []string
	for n := 1; n <= 2; n++ {
		s, err := host.ReadAttr(h.FS, mlx4port.File("0000:81:00.0", n))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

const bothEth = `version: 1
devices:
  - name: mlx4_0
    ports:
      - port: 1
        type: eth
      - port: 2
        type: eth
`

// TestIBToEthBothPorts switches both ports of a ConnectX-3 to Ethernet:
// the driver refuses port 1 eth while port 2 is ib, so port 2 goes first.
// Apply, then plan is empty; a reboot brings back the boot type.
func TestIBToEthBothPorts(t *testing.T) {
	s, h := setup(t, "cx3-mlx4")
	p := build(t, h, bothEth)
	want := []string{
		"mlx4_port[0000:81:00.0/1] runtime type: auto (ib) -> eth",
		"mlx4_port[0000:81:00.0/2] runtime type: auto (ib) -> eth",
	}
	if diff := cmp.Diff(want, lines(p)); diff != "" {
		t.Fatalf("plan (-want +got):\n%s", diff)
	}
	out := apply.Run(context.Background(), h, p, []plan.Provider{mlx4port.New()}, apply.Options{})
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	if diff := cmp.Diff([]string{"eth", "eth"}, portFiles(t, h)); diff != "" {
		t.Errorf("mlx4_portN (-want +got):\n%s", diff)
	}
	var layers []string
	for _, pt := range s.State().Devices[0].Ports {
		layers = append(layers, pt.LinkLayer)
	}
	if diff := cmp.Diff([]string{"Ethernet", "Ethernet"}, layers); diff != "" {
		t.Errorf("link layers (-want +got):\n%s", diff)
	}
	if p := build(t, h, bothEth); !p.Empty() || p.ExitCode() != 0 {
		t.Errorf("plan after apply not empty: %v", lines(p))
	}
	if err := s.Reboot(); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, f := range portFiles(t, h) {
		st, err := mlx4port.ParseState(f)
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, st.Setting)
	}
	if diff := cmp.Diff([]string{"auto", "auto"}, types); diff != "" {
		t.Errorf("after reboot (-want +got):\n%s", diff)
	}
	if p := build(t, h, bothEth); len(p.Changes) != 2 {
		t.Errorf("after reboot the runtime setting is gone, want 2 changes: %v", lines(p))
	}
}

// TestEthToIBBothPorts goes back: port 1 first this time.
func TestEthToIBBothPorts(t *testing.T) {
	_, h := setup(t, "cx3-mlx4")
	ctx := context.Background()
	prov := []plan.Provider{mlx4port.New()}
	if out := apply.Run(ctx, h, build(t, h, bothEth), prov, apply.Options{}); out.Err != nil {
		t.Fatal(out.Err)
	}
	bothIB := strings.ReplaceAll(bothEth, "type: eth", "type: ib")
	if out := apply.Run(ctx, h, build(t, h, bothIB), prov, apply.Options{}); out.Err != nil {
		t.Fatal(out.Err)
	}
	if diff := cmp.Diff([]string{"ib", "ib"}, portFiles(t, h)); diff != "" {
		t.Errorf("mlx4_portN (-want +got):\n%s", diff)
	}
	if p := build(t, h, bothIB); !p.Empty() {
		t.Errorf("plan after apply not empty: %v", lines(p))
	}
}

func TestFindings(t *testing.T) {
	tests := []struct {
		name    string
		profile string
		spec    string
		want    []string
	}{
		{
			name: "port 1 eth with port 2 ib is refused by the driver", profile: "cx3-mlx4",
			spec: "version: 1\ndevices:\n  - name: mlx4_0\n    ports:\n      - port: 1\n        type: eth\n      - port: 2\n        type: ib\n",
			want: []string{
				"host.yaml:6:15: error: $.devices[0].ports[0].type: mlx4_0 would have port 1 eth and port 2 ib, which mlx4_core refuses; make port 2 eth too",
				"host.yaml:8:15: error: $.devices[0].ports[1].type: mlx4_0 would have port 1 eth and port 2 ib, which mlx4_core refuses; make port 2 eth too",
			},
		},
		{
			name: "mlx5 has no mlx4 port type", profile: "cx6-vpi-ib",
			spec: "version: 1\ndevices:\n  - name: mlx5_0\n    ports:\n      - port: 1\n        type: eth\n",
			want: []string{
				"host.yaml:6:15: error: $.devices[0].ports[0].type: mlx5_0 has no /sys/bus/pci/devices/0000:3b:00.0/mlx4_port1: type applies to mlx4 (ConnectX-3) ports only; on ConnectX-4 and later set firmware LINK_TYPE_P1",
			},
		},
		{
			// The second function of the card is its port 2: the hint names
			// the card's port, not the RDMA device's port 1.
			name: "mlx5 second function has no mlx4 port type", profile: "cx6-vpi-ib",
			spec: "version: 1\ndevices:\n  - name: mlx5_1\n    ports:\n      - port: 1\n        type: eth\n",
			want: []string{
				"host.yaml:6:15: error: $.devices[0].ports[0].type: mlx5_1 has no /sys/bus/pci/devices/0000:3b:00.1/mlx4_port1: type applies to mlx4 (ConnectX-3) ports only; on ConnectX-4 and later set firmware LINK_TYPE_P2",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, h := setup(t, tt.profile)
			if diff := cmp.Diff(tt.want, lines(build(t, h, tt.spec))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestFactsAndDisrupts: a type that changes the type a port runs
// re-registers the whole card: the change disrupts both ports' netdevs,
// and the plan publishes the link change and the RDMA device as made anew
// (by the first such change). A setting that keeps the running type (ib
// on a port auto runs as ib) publishes nothing and disrupts nothing.
func TestFactsAndDisrupts(t *testing.T) {
	_, h := setup(t, "cx3-mlx4")
	for _, tt := range []struct {
		name, spec string
		disrupts   map[string][]string
		links      []string
		anewBy     string
	}{{
		name:     "port 2 to eth",
		spec:     "version: 1\ndevices:\n  - name: mlx4_0\n    ports: [{port: 2, type: eth}]\n",
		disrupts: map[string][]string{"mlx4_port[0000:81:00.0/2]": {"ib0", "ib1"}},
		links:    []string{"0000:81:00.0/2 Ethernet by mlx4_port[0000:81:00.0/2]"},
		anewBy:   "mlx4_port[0000:81:00.0/2]",
	}, {
		name:     "both to eth",
		spec:     bothEth,
		disrupts: map[string][]string{"mlx4_port[0000:81:00.0/1]": {"ib0", "ib1"}, "mlx4_port[0000:81:00.0/2]": {"ib0", "ib1"}},
		links:    []string{"0000:81:00.0/1 Ethernet by mlx4_port[0000:81:00.0/1]", "0000:81:00.0/2 Ethernet by mlx4_port[0000:81:00.0/2]"},
		anewBy:   "mlx4_port[0000:81:00.0/1]",
	}, {
		name:     "ib on a port auto runs as ib",
		spec:     "version: 1\ndevices:\n  - name: mlx4_0\n    ports: [{port: 1, type: ib}]\n",
		disrupts: map[string][]string{"mlx4_port[0000:81:00.0/1]": nil},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			spec, rep := schema.Parse("host.yaml", []byte(tt.spec))
			if len(rep) > 0 {
				t.Fatalf("spec: %v", rep)
			}
			res, err := plan.Build(context.Background(), h, spec, []plan.Provider{mlx4port.New()})
			if err != nil {
				t.Fatal(err)
			}
			disrupts := map[string][]string{}
			for _, c := range res.Plan.Changes {
				disrupts[c.Address.String()] = c.Disrupts
			}
			if d := cmp.Diff(tt.disrupts, disrupts); d != "" {
				t.Errorf("disrupts (-want +got):\n%s", d)
			}
			var links []string
			for _, l := range res.Facts.LinkChanges() {
				links = append(links, fmt.Sprintf("%s/%d %s by %s", l.Device, l.Port, l.To, l.Cause))
			}
			if d := cmp.Diff(tt.links, links); d != "" {
				t.Errorf("link changes (-want +got):\n%s", d)
			}
			by, anew := res.Facts.DeviceCreated("mlx4_0")
			if anew != (tt.anewBy != "") || (anew && by.String() != tt.anewBy) {
				t.Errorf("mlx4_0 made anew: %v by %s, want by %q", anew, by, tt.anewBy)
			}
		})
	}
}
