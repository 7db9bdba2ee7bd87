package firmware_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/firmware"
	"github.com/rdmaform/rdmaform/schema"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/mlxemu"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// newSim creates a simulated host of a profile, with every firmware
// adapter printed in layout l and only tool (and mst) installed.
func newSim(t *testing.T, profile string, adapters int, l mlxemu.Layout, tool string) (*sim.Sim, *host.Host) {
	t.Helper()
	return simtest.New(t, profile, adapters, func(st *sim.State) {
		if l != mlxemu.LayoutUnknown {
			for _, a := range st.Firmware {
				a.Layout = l
			}
		}
		if tool != "" {
			st.Tools = []string{tool, "mst", "modprobe"}
		}
	})
}

func parse(t *testing.T, y string) *schema.Spec {
	t.Helper()
	spec, rep := schema.Parse("host.yaml", []byte(y))
	if len(rep) > 0 {
		t.Fatalf("spec: %v", rep)
	}
	return spec
}

func build(t *testing.T, h *host.Host, spec *schema.Spec) *plan.Plan {
	t.Helper()
	res, err := plan.Build(context.Background(), h, spec, []plan.Provider{firmware.New()})
	if err != nil {
		t.Fatal(err)
	}
	return res.Plan
}

// firmwareCalls returns the calls of a firmware tool, without the -v probe.
func firmwareCalls(calls []string) []string {
	var out []string
	for _, c := range calls {
		if (strings.HasPrefix(c, "mlxconfig ") || strings.HasPrefix(c, "mstconfig ")) && !strings.HasSuffix(c, " -v") {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

const twoCards = `version: 1
devices:
  - pci: "0000:10:00.0"
    firmware:
      tool: %s
      params:
        LINK_TYPE_P1: ETH
        LINK_TYPE_P2: eth
        SRIOV_EN: true
        NUM_OF_VFS: 8
  - pci: "0000:20:00.0"
    firmware:
      tool: %s
      params:
        LINK_TYPE_P1: 2
        NUM_OF_VFS: 8
`

// TestProviderOnEveryLayout drives the provider against the emulated tools
// in every layout family and with both tools: one query per adapter, one
// set per adapter with all its parameters, pending until a reboot, then an
// empty plan.
func TestProviderOnEveryLayout(t *testing.T) {
	for _, tool := range []string{firmware.MLXConfig, firmware.MSTConfig} {
		for _, l := range mlxemu.Layouts() {
			t.Run(tool+"/"+l.String(), func(t *testing.T) {
				ctx := context.Background()
				s, h := newSim(t, "gpu-node", 2, l, tool)
				spec := parse(t, fmt.Sprintf(twoCards, "auto", "auto"))

				p := build(t, h, spec)
				wantQueries := []string{
					tool + " -d 0000:10:00.0 -e q LINK_TYPE_P1 LINK_TYPE_P2 SRIOV_EN NUM_OF_VFS",
					tool + " -d 0000:20:00.0 -e q LINK_TYPE_P1 NUM_OF_VFS",
				}
				if diff := cmp.Diff(wantQueries, firmwareCalls(s.Calls())); diff != "" {
					t.Errorf("queries (-want +got):\n%s", diff)
				}
				var got []string
				for _, c := range p.Changes {
					for _, a := range c.Attributes {
						got = append(got, fmt.Sprintf("%s %s: %s -> %s", c.Address, a.Name, a.Before, a.After))
					}
				}
				want := []string{
					"firmware[0000:10:00.0] LINK_TYPE_P1: IB -> ETH",
					"firmware[0000:10:00.0] LINK_TYPE_P2: IB -> eth",
					"firmware[0000:10:00.0] SRIOV_EN: False -> true",
					"firmware[0000:10:00.0] NUM_OF_VFS: 0 -> 8",
					"firmware[0000:20:00.0] LINK_TYPE_P1: IB -> 2",
					"firmware[0000:20:00.0] NUM_OF_VFS: 0 -> 8",
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("changes (-want +got):\n%s", diff)
				}

				n := len(s.Calls())
				out := apply.Run(ctx, h, p, []plan.Provider{firmware.New()}, apply.Options{})
				if out.Err != nil {
					t.Fatal(out.Err)
				}
				wantSets := []string{
					tool + " -d 0000:10:00.0 -y set LINK_TYPE_P1=ETH LINK_TYPE_P2=eth SRIOV_EN=True NUM_OF_VFS=8",
					tool + " -d 0000:20:00.0 -y set LINK_TYPE_P1=2 NUM_OF_VFS=8",
				}
				if diff := cmp.Diff(wantSets, firmwareCalls(s.Calls()[n:])); diff != "" {
					t.Errorf("sets (-want +got):\n%s", diff)
				}

				p = build(t, h, spec)
				if len(p.Changes) != 0 || len(p.Pending) != 6 || p.ExitCode() != plan.ExitReboot {
					t.Fatalf("after apply: %d changes, %d pending, exit %d; want 0, 6, 3", len(p.Changes), len(p.Pending), p.ExitCode())
				}
				if err := s.Reboot(); err != nil {
					t.Fatal(err)
				}
				p = build(t, h, spec)
				if diff := cmp.Diff(0, p.ExitCode()); diff != "" {
					t.Errorf("after reboot, exit (-want +got):\n%s\nplan: %+v", diff, p)
				}
				st := s.State()
				var layers []string
				for _, d := range st.Devices {
					layers = append(layers, d.PCI+" "+d.Ports[0].LinkLayer)
				}
				wantLayers := []string{"0000:10:00.0 Ethernet", "0000:10:00.1 Ethernet", "0000:20:00.0 Ethernet", "0000:20:00.1 InfiniBand"}
				if diff := cmp.Diff(wantLayers, layers); diff != "" {
					t.Errorf("link layers after reboot (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestFailedSetOnOneAdapter: the tool refuses one adapter's set; the other
// adapter is still set, and the failure names the command and the tool's
// message.
func TestFailedSetOnOneAdapter(t *testing.T) {
	ctx := context.Background()
	st, err := sim.NewState("gpu-node", "node1", 2)
	if err != nil {
		t.Fatal(err)
	}
	st.Faults = []sim.Fault{{Tool: "mlxconfig", Match: "-d 0000:10:00.0 -y set", Exit: 3,
		Stdout: "\nApply new Configuration? (y/n) [n] : y\nApplying... Failed!\n-E- Failed to set configuration: Operation not permitted\n"}}
	s, err := sim.Create(t.TempDir(), st)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := s.Host()
	spec := parse(t, fmt.Sprintf(twoCards, "mlxconfig", "mlxconfig"))
	out := apply.Run(ctx, h, build(t, h, spec), []plan.Provider{firmware.New()}, apply.Options{})
	if diff := cmp.Diff([]plan.Address{plan.Addr("firmware", "0000:20:00.0")}, out.Applied); diff != "" {
		t.Errorf("applied (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]plan.Address{plan.Addr("firmware", "0000:10:00.0")}, out.Failed); diff != "" {
		t.Errorf("failed (-want +got):\n%s", diff)
	}
	wantErr := "firmware[0000:10:00.0]: mlxconfig -d 0000:10:00.0 -y set LINK_TYPE_P1=ETH LINK_TYPE_P2=eth SRIOV_EN=True NUM_OF_VFS=8: -E- Failed to set configuration: Operation not permitted"
	if diff := cmp.Diff(wantErr, fmt.Sprint(out.Err)); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
	p := build(t, h, spec)
	var pending, changes []string
	for _, pe := range p.Pending {
		pending = append(pending, pe.Address.String()+" "+pe.Attribute)
	}
	for _, c := range p.Changes {
		changes = append(changes, c.Address.String())
	}
	if diff := cmp.Diff([]string{"firmware[0000:20:00.0] LINK_TYPE_P1", "firmware[0000:20:00.0] NUM_OF_VFS"}, pending); diff != "" {
		t.Errorf("pending (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"firmware[0000:10:00.0]"}, changes); diff != "" {
		t.Errorf("still to change (-want +got):\n%s", diff)
	}
}

// TestSetRefusedNamesSpecLine: a value the tool refuses fails the apply
// with the parameter's spec position and the tool's -E- message.
func TestSetRefusedNamesSpecLine(t *testing.T) {
	s, h := newSim(t, "cx6-vpi-ib", 0, mlxemu.LayoutUnknown, "")
	spec := parse(t, "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params:\n        LINK_TYPE_P1: VPI\n")
	p := build(t, h, spec)
	out := apply.Run(context.Background(), h, p, []plan.Provider{firmware.New()}, apply.Options{})
	want := "firmware[0000:3b:00.0]: host.yaml:6:23: LINK_TYPE_P1: mlxconfig -d 0000:3b:00.0 -y set LINK_TYPE_P1=VPI: -E- Unknown value VPI"
	if diff := cmp.Diff(want, fmt.Sprint(out.Err)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if host.Exists(h.FS, firmware.RebootRequired) {
		t.Errorf("%s written although nothing was staged", firmware.RebootRequired)
	}
	_ = s
}

// TestUnknownParameters: the tool's refusal of unknown names becomes one
// finding per name, each at its spec line; the adapter is queried again
// without them, and its other parameters are still planned (the CLI's
// apply refuses a plan with errors).
func TestUnknownParameters(t *testing.T) {
	s, h := newSim(t, "cx5-roce", 0, mlxemu.LayoutUnknown, "")
	spec := parse(t, "version: 1\ndevices:\n  - pci: \"0000:5e:00.0\"\n    firmware:\n      params:\n        LINK_TYPE_P1: ETH\n        NUM_OF_VFS: 4\n        FOO_BAR: 1\n")
	p := build(t, h, spec)
	var got []string
	for _, f := range p.Errors {
		got = append(got, f.String())
	}
	want := []string{
		"host.yaml:6:23: error: $.devices[0].firmware.params.LINK_TYPE_P1: mstconfig does not know parameter LINK_TYPE_P1 on 0000:5e:00.0 (ConnectX5): -E- Unknown Parameter: LINK_TYPE_P1",
		"host.yaml:8:18: error: $.devices[0].firmware.params.FOO_BAR: mstconfig does not know parameter FOO_BAR on 0000:5e:00.0 (ConnectX5): -E- Unknown Parameter: FOO_BAR",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	if len(p.Changes) != 1 || p.Changes[0].Address != plan.Addr("firmware", "0000:5e:00.0") || len(p.Changes[0].Attributes) != 1 || p.Changes[0].Attributes[0].Name != "NUM_OF_VFS" {
		t.Errorf("changes: %v, want NUM_OF_VFS still planned", p.Changes)
	}
	wantCalls := []string{
		"mstconfig -d 0000:5e:00.0 -e q LINK_TYPE_P1 NUM_OF_VFS FOO_BAR",
		"mstconfig -d 0000:5e:00.0 -e q NUM_OF_VFS",
		"mstconfig -d 0000:5e:00.0 -e q NUM_OF_VFS FOO_BAR",
	}
	if diff := cmp.Diff(wantCalls, firmwareCalls(s.Calls())); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// TestNoTool: neither tool installed is a clear error naming both.
func TestNoTool(t *testing.T) {
	_, h := newSim(t, "cx6-vpi-ib", 0, mlxemu.LayoutUnknown, "modprobe")
	p := build(t, h, parse(t, "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params:\n        LINK_TYPE_P1: ETH\n"))
	var got []string
	for _, f := range p.Errors {
		got = append(got, f.Message)
	}
	want := []string{"reading firmware of 0000:3b:00.0: no firmware configuration tool: neither mlxconfig (NVIDIA MFT) nor mstconfig (package mstflint) is on PATH"}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestMSTFallback: when MFT cannot open the adapter by its PCI address,
// its /dev/mst node is used if mst has been started; rdmaform never runs
// 'mst start' itself (it loads kernel modules): without nodes, the plan
// error says what to do, and nothing was started or written.
func TestMSTFallback(t *testing.T) {
	for _, started := range []bool{false, true} {
		st, err := sim.NewState("cx6-vpi-ib", "node1", 0)
		if err != nil {
			t.Fatal(err)
		}
		st.MSTStarted = started
		st.Faults = []sim.Fault{{Tool: "mlxconfig", Match: "-d 0000:3b:00.0 ", Exit: 3, Stdout: "-E- Failed to open the device\n"}}
		s, err := sim.Create(t.TempDir(), st)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := s.Host()
		spec := parse(t, "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params:\n        LINK_TYPE_P1: ETH\n")
		ctx := context.Background()
		res, err := plan.Build(ctx, h, spec, []plan.Provider{firmware.New()})
		if err != nil {
			t.Fatal(err)
		}
		if !started {
			var got []string
			for _, f := range res.Plan.Errors {
				got = append(got, f.Message)
			}
			if len(got) != 1 || !strings.Contains(got[0], "run 'mst start' once") || !strings.Contains(got[0], "Failed to open the device") {
				t.Errorf("plan errors without /dev/mst nodes: %q", got)
			}
			if diff := cmp.Diff([]string{"mlxconfig -d 0000:3b:00.0 -e q LINK_TYPE_P1", "mst status -v"}, s.Calls()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			continue
		}
		out := apply.Run(ctx, h, res.Plan, []plan.Provider{firmware.New()}, apply.Options{})
		if out.Err != nil {
			t.Fatal(out.Err)
		}
		want := []string{
			"mlxconfig -d 0000:3b:00.0 -e q LINK_TYPE_P1",
			"mst status -v",
			"mlxconfig -d /dev/mst/mt4123_pciconf0 -e q LINK_TYPE_P1",
			"mlxconfig -d /dev/mst/mt4123_pciconf0 -y set LINK_TYPE_P1=ETH",
		}
		if diff := cmp.Diff(want, s.Calls()); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
	}
}

// TestDeviceDoesNotSupport: "-E- The Device doesn't support X parameter"
// (mstflint's message for a parameter the tool knows and this adapter
// lacks, exit 3) is an error on that parameter of that adapter at its
// spec line; the adapter's other parameters and the other adapters are
// still planned.
func TestDeviceDoesNotSupport(t *testing.T) {
	st, err := sim.NewState("gpu-node", "node1", 2)
	if err != nil {
		t.Fatal(err)
	}
	pcis := []string{st.Firmware[0].BDF, st.Firmware[2].BDF}
	st.Faults = []sim.Fault{{Tool: "mlxconfig", Match: "-d " + pcis[0] + " -e q SRIOV_EN INTERNAL_CPU_OFFLOAD_ENGINE", Exit: 3,
		Stdout: "-E- The Device doesn't support INTERNAL_CPU_OFFLOAD_ENGINE parameter\n"}}
	s, err := sim.Create(t.TempDir(), st)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := s.Host()
	spec := parse(t, fmt.Sprintf("version: 1\ndevices:\n  - pci: %q\n    firmware:\n      params:\n        SRIOV_EN: true\n        INTERNAL_CPU_OFFLOAD_ENGINE: DISABLED\n  - pci: %q\n    firmware:\n      params:\n        SRIOV_EN: true\n", pcis[0], pcis[1]))
	p := build(t, h, spec)
	var errs []string
	for _, f := range p.Errors {
		errs = append(errs, f.String())
	}
	want := []string{"host.yaml:7:38: error: $.devices[0].firmware.params.INTERNAL_CPU_OFFLOAD_ENGINE: mlxconfig does not know parameter INTERNAL_CPU_OFFLOAD_ENGINE on " + pcis[0] + " (" + st.Firmware[0].DeviceType + "): -E- The Device doesn't support INTERNAL_CPU_OFFLOAD_ENGINE parameter"}
	if diff := cmp.Diff(want, errs); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	var changes []string
	for _, c := range p.Changes {
		changes = append(changes, c.Address.String())
	}
	if diff := cmp.Diff([]string{"firmware[" + pcis[0] + "]", "firmware[" + pcis[1] + "]"}, changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}

// TestSetAboveMaximum: a NUM_OF_VFS above the card's maximum fails the way
// the real tool fails ("Applying... Failed!", then "-E- Parameter
// NUM_OF_VFS' value is larger than maximum allowed 127", exit 3): that
// adapter's change fails with the tool's message at the parameter's spec
// line, the other adapter's change is applied, and the next plan shows
// exactly what is left.
func TestSetAboveMaximum(t *testing.T) {
	_, h := newSim(t, "gpu-node", 2, mlxemu.LayoutUnknown, "")
	spec := parse(t, "version: 1\ndevices:\n  - pci: \"0000:10:00.0\"\n    firmware:\n      params:\n        NUM_OF_VFS: 200\n  - pci: \"0000:20:00.0\"\n    firmware:\n      params:\n        NUM_OF_VFS: 8\n")
	out := apply.Run(context.Background(), h, build(t, h, spec), []plan.Provider{firmware.New()}, apply.Options{})
	if diff := cmp.Diff([]plan.Address{plan.Addr("firmware", "0000:20:00.0")}, out.Applied); diff != "" {
		t.Errorf("applied (-want +got):\n%s", diff)
	}
	want := "firmware[0000:10:00.0]: host.yaml:6:21: NUM_OF_VFS: mlxconfig -d 0000:10:00.0 -y set NUM_OF_VFS=200: -E- Parameter NUM_OF_VFS' value is larger than maximum allowed 127"
	if diff := cmp.Diff(want, fmt.Sprint(out.Err)); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
	p := build(t, h, spec)
	var changes, pending []string
	for _, c := range p.Changes {
		changes = append(changes, c.Address.String())
	}
	for _, pe := range p.Pending {
		pending = append(pending, pe.Address.String()+" "+pe.Attribute)
	}
	if diff := cmp.Diff([]string{"firmware[0000:10:00.0]"}, changes); diff != "" {
		t.Errorf("left to change (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"firmware[0000:20:00.0] NUM_OF_VFS"}, pending); diff != "" {
		t.Errorf("pending (-want +got):\n%s", diff)
	}
}

// TestOneSetPerAdapter: the functions of one adapter are set in one tool
// run through the first when their parameters are card-wide; a
// per-host-function parameter (ROCE_CONTROL) goes through its own
// function; a joint set that fails is split, so the parameter at fault
// fails its own resource with the tool's message and the other function's
// change is made; every case ends with apply, then a plan with nothing to
// change.
func TestOneSetPerAdapter(t *testing.T) {
	for _, c := range []struct {
		name     string
		fn0, fn1 string
		sets     []string
		failed   []plan.Address
		err      string
		left     []string
	}{
		{
			name: "card-wide",
			fn0:  "LINK_TYPE_P1: ETH\n        SRIOV_EN: true",
			fn1:  "LINK_TYPE_P2: ETH",
			sets: []string{"mlxconfig -d 0000:10:00.0 -y set LINK_TYPE_P1=ETH SRIOV_EN=True LINK_TYPE_P2=ETH"},
		},
		{
			name: "per-function",
			fn0:  "LINK_TYPE_P1: ETH",
			fn1:  "LINK_TYPE_P2: ETH\n        ROCE_CONTROL: ROCE_DISABLE",
			sets: []string{
				"mlxconfig -d 0000:10:00.0 -y set LINK_TYPE_P1=ETH",
				"mlxconfig -d 0000:10:00.1 -y set LINK_TYPE_P2=ETH ROCE_CONTROL=ROCE_DISABLE",
			},
		},
		{
			name: "joint set fails",
			fn0:  "NUM_OF_VFS: 200",
			fn1:  "LINK_TYPE_P2: ETH",
			sets: []string{
				"mlxconfig -d 0000:10:00.0 -y set NUM_OF_VFS=200",
				"mlxconfig -d 0000:10:00.0 -y set NUM_OF_VFS=200 LINK_TYPE_P2=ETH",
				"mlxconfig -d 0000:10:00.1 -y set LINK_TYPE_P2=ETH",
			},
			failed: []plan.Address{plan.Addr("firmware", "0000:10:00.0")},
			err:    "firmware[0000:10:00.0]: host.yaml:6:21: NUM_OF_VFS: mlxconfig -d 0000:10:00.0 -y set NUM_OF_VFS=200: -E- Parameter NUM_OF_VFS' value is larger than maximum allowed 127",
			left:   []string{"firmware[0000:10:00.0]"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, h := newSim(t, "gpu-node", 1, mlxemu.LayoutUnknown, firmware.MLXConfig)
			spec := parse(t, fmt.Sprintf("version: 1\ndevices:\n  - pci: \"0000:10:00.0\"\n    firmware:\n      params:\n        %s\n  - pci: \"0000:10:00.1\"\n    firmware:\n      params:\n        %s\n", c.fn0, c.fn1))
			p := build(t, h, spec)
			if len(p.Changes) != 2 {
				t.Fatalf("%d changes, want one per function: %+v", len(p.Changes), p)
			}
			n := len(s.Calls())
			out := apply.Run(context.Background(), h, p, []plan.Provider{firmware.New()}, apply.Options{})
			if diff := cmp.Diff(c.sets, firmwareCalls(s.Calls()[n:])); diff != "" {
				t.Errorf("sets (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.failed, out.Failed); diff != "" {
				t.Errorf("failed (-want +got):\n%s", diff)
			}
			if c.err != "" || out.Err != nil {
				if diff := cmp.Diff(c.err, fmt.Sprint(out.Err)); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
			}
			p = build(t, h, spec)
			var left []string
			for _, ch := range p.Changes {
				left = append(left, ch.Address.String())
			}
			if diff := cmp.Diff(c.left, left); diff != "" {
				t.Errorf("left to change after apply (-want +got):\n%s", diff)
			}
			if c.left == nil && p.ExitCode() != plan.ExitReboot {
				t.Errorf("after apply: exit %d, want 3 (pending until a reboot)", p.ExitCode())
			}
		})
	}
}
