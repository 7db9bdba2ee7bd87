package names_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// railHost is a GPU node with three dual-port ConnectX-7 cards (PCI
// functions 0000:10:00.0/.1, 0000:20:00.0/.1, 0000:30:00.0/.1) and
// rdma-core's udev helper; the card at 0x30 sits on NUMA node 0, the
// others on node 1, so that rail order (NUMA node, then PCI address)
// differs from PCI order. mutate changes the state further.
func railHost(t *testing.T, mutate func(st *sim.State)) string {
	t.Helper()
	s, _ := simtest.New(t, "gpu-node", 3, func(st *sim.State) {
		for _, d := range st.Devices {
			d.NUMANode = 1
			if strings.HasPrefix(d.PCI, "0000:30:") {
				d.NUMANode = 0
			}
		}
		if mutate != nil {
			mutate(st)
		}
	})
	withRdmaRename(t, s.Dir)
	return s.Dir
}

// railTemplate is one spec for the class: every ConnectX-7 function
// gets rail names.
const railTemplate = `version: 1
devices:
  - match: {part_number: MCX755106AS-HEAT}
    names: {rdma: "rdma_rail{rail}", netdev: "rail{rail}"}
`

// wantRails: PCI function -> rail, NUMA node 0 first.
var wantRails = map[string]string{
	"0000:30:00.0": "0", "0000:30:00.1": "1",
	"0000:10:00.0": "2", "0000:10:00.1": "3",
	"0000:20:00.0": "4", "0000:20:00.1": "5",
}

// TestRailTemplate: a rail template names each of six functions by its
// rail (NUMA node, then PCI address); the plan shows each rename under
// the function's address at the template's line; apply, then plan is
// empty; the udev rules carry the expanded names; the audit passes; a
// reboot gives the kernel's names back and the rules rename them again,
// and the plan stays empty.
func TestRailTemplate(t *testing.T) {
	dir := railHost(t, nil)
	spec := clitest.WriteSpec(t, railTemplate)
	code, out := rf(t, "--sim", dir, "plan", "-f", spec)
	want(t, code, 2, out, "~ rdma_name[0000:30:00.0]", "name: mlx5_4 -> rdma_rail0", "host.yaml:4",
		"~ netdev_name[0000:10:00.1]", "name: ibp16s0f1 -> rail3", "+ udev_rules[59-rdmaform-names.rules]")
	code, out = rf(t, "--sim", dir, "apply", "--yes", "-f", spec)
	want(t, code, 0, out)
	code, out = rf(t, "--sim", dir, "plan", "-f", spec)
	want(t, code, 0, out, "No changes")
	check := func(when string) {
		t.Helper()
		st := state(t, dir)
		for _, d := range st.Devices {
			rail, ok := wantRails[d.PCI]
			if !ok {
				t.Fatalf("%s: unexpected function %s", when, d.PCI)
			}
			if d.Name != "rdma_rail"+rail {
				t.Errorf("%s: %s is %s, want rdma_rail%s", when, d.PCI, d.Name, rail)
			}
			if n := d.Ports[0].NetdevIB; n != "rail"+rail {
				t.Errorf("%s: %s's netdev is %s, want rail%s", when, d.PCI, n, rail)
			}
		}
	}
	check("after apply")
	b, err := os.ReadFile(filepath.Join(dir, "etc/udev/rules.d/59-rdmaform-names.rules"))
	if err != nil {
		t.Fatal(err)
	}
	for pci, rail := range wantRails {
		for _, line := range []string{
			`KERNELS=="` + pci + `", ATTR{type}=="32", ATTR{dev_port}=="0", NAME="rail` + rail + `"`,
			`KERNELS=="` + pci + `", PROGRAM="rdma_rename %k NAME_FIXED rdma_rail` + rail + `"`,
		} {
			if !strings.Contains(string(b), line) {
				t.Fatalf("rules lack %s:\n%s", line, b)
			}
		}
	}
	code, out = rf(t, "--sim", dir, "audit", "-o", "json", "-f", spec)
	want(t, code, 0, out, `"rdma_name[0000:30:00.0]"`, `"netdev_name[0000:20:00.1]"`)
	code, out = rf(t, "--sim", dir, "show")
	want(t, code, 0, out, "rdma_rail0", "rail5")

	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reboot(); err != nil {
		t.Fatal(err)
	}
	check("after a reboot")
	code, out = rf(t, "--sim", dir, "plan", "-f", spec)
	want(t, code, 0, out, "No changes")
}

// TestRailTemplateTwoClasses: two classes of cards, each with its own
// template entry: with the same rail numbers they ask one name twice (a
// plan error naming both functions and both lines, nothing changed);
// first_rail moves the second class after the first, and apply, then
// plan is empty.
func TestRailTemplateTwoClasses(t *testing.T) {
	dir := railHost(t, func(st *sim.State) {
		for _, d := range st.Devices {
			if strings.HasPrefix(d.PCI, "0000:30:") {
				d.PartNumber = "MCX75310AAS-NEAT"
			}
		}
	})
	const two = `version: 1
devices:
  - match: {part_number: MCX755106AS-HEAT}
    names: {netdev: "rail{rail}"}
  - match: {part_number: MCX75310AAS-NEAT}
    names: {netdev: "rail{rail}"%s}
`
	code, out := rf(t, "--sim", dir, "apply", "--yes", "-f", clitest.WriteSpec(t, strings.ReplaceAll(two, "%s", "")))
	want(t, code, 1, out, "host.yaml:6:21: error: $.devices[6].names.netdev: netdev name rail0 is asked for 0000:30:00.0 here and for 0000:10:00.0 by $.devices[2].names.netdev at ",
		"host.yaml:4:21: one name, one device", "netdev name rail1 is asked for 0000:30:00.1 here and for 0000:10:00.1")
	if st := state(t, dir); st.Netdev("ibp48s0f0") == nil || st.Netdev("ibp16s0f0") == nil {
		t.Fatal("a refused plan renamed")
	}
	spec := clitest.WriteSpec(t, strings.ReplaceAll(two, "%s", ", first_rail: 4"))
	code, out = rf(t, "--sim", dir, "apply", "--yes", "-f", spec)
	want(t, code, 0, out, "name: ibp48s0f1 -> rail5", "name: ibp32s0f1 -> rail3")
	code, out = rf(t, "--sim", dir, "plan", "-f", spec)
	want(t, code, 0, out, "No changes")
}

// TestRailTemplateLimits: the expanded names at the kernel's limits are
// taken and one past them are plan errors at the template's line naming
// the rail and the function: with first_rail 5, rails 5-9 give a
// 15-byte netdev name and a 63-byte RDMA name, rail 10 one byte more.
func TestRailTemplateLimits(t *testing.T) {
	dir := railHost(t, nil)
	rdma := strings.Repeat("r", 62)
	spec := clitest.WriteSpec(t, "version: 1\ndevices:\n  - match: {part_number: MCX755106AS-HEAT}\n    names: {rdma: \""+rdma+"{rail}\", netdev: \"abcdefghijklmn{rail}\", first_rail: 5}\n")
	code, out := rf(t, "--sim", dir, "apply", "--yes", "-f", spec)
	want(t, code, 1, out,
		`host.yaml:4:99: error: $.devices[0].names.netdev: rail 10 (mlx5_3 at 0000:20:00.1): "abcdefghijklmn10" is longer than the kernel's 15-byte interface name limit`,
		`host.yaml:4:19: error: $.devices[0].names.rdma: rail 10 (mlx5_3 at 0000:20:00.1): "`+rdma[:40]+`..." is longer than 63 bytes`)
	if strings.Contains(out, "rail 9 ") {
		t.Fatalf("a name at the limit was refused:\n%s", out)
	}
	if st := state(t, dir); st.Netdev("ibp48s0f0") == nil {
		t.Fatal("a refused plan renamed")
	}
	// Four functions (rails 5-8... of one card less): every name fits.
	dir = railHost(t, func(st *sim.State) {
		for _, d := range st.Devices {
			if strings.HasPrefix(d.PCI, "0000:20:") {
				d.PartNumber = "MCX75310AAS-NEAT"
			}
		}
	})
	code, out = rf(t, "--sim", dir, "apply", "--yes", "-f", spec)
	want(t, code, 0, out, "-> abcdefghijklmn8", "-> "+rdma+"8")
	code, out = rf(t, "--sim", dir, "plan", "-f", spec)
	want(t, code, 0, out, "No changes")
}

// TestBadRailTemplates: a template's mistakes are load errors at its
// line (file:line:col), and nothing changes.
func TestBadRailTemplates(t *testing.T) {
	dir := railHost(t, nil)
	for _, tc := range []struct{ name, names, msg string }{
		{"no placeholder", `{netdev: rail}`, `host.yaml:4:21: error: $.devices[0].names.netdev: "rail" has no {rail}`},
		{"twice", `{netdev: "r{rail}x{rail}"}`, `$.devices[0].names.netdev: "r{rail}x{rail}" holds {rail} 2 times: once`},
		{"unknown placeholder", `{rdma: "rail{rail}{numa}"}`, `host.yaml:4:19: error: $.devices[0].names.rdma: "rail{rail}{numa}" holds a placeholder other than {rail}, the only one`},
		{"stray brace", `{netdev: "rail{rail"}`, `has no {rail}`},
		{"invalid with the first rail", `{rdma: "rail {rail}"}`, `"rail 0" is not a valid RDMA device name`},
		{"too long with the first rail", `{netdev: "abcdefghijklmno{rail}"}`, `"abcdefghijklmno0" is longer than the kernel's 15-byte interface name limit`},
		{"a quote that would add a key to the udev rule", `{netdev: 'r{rail}",RUN+="x'}`, `host.yaml:4:21: error: $.devices[0].names.netdev: "r0\",RUN+=\"x" holds "\"", which udev reads in a rule's value`},
		{"udev's substitution", `{netdev: "$kernel{rail}"}`, `host.yaml:4:21: error: $.devices[0].names.netdev: "$kernel0" holds "$"`},
		{"first_rail one past", `{netdev: "rail{rail}", first_rail: 1000}`, `$.devices[0].names.first_rail`},
		{"first_rail below 0", `{netdev: "rail{rail}", first_rail: -1}`, `$.devices[0].names.first_rail`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := "version: 1\ndevices:\n  - match: {part_number: MCX755106AS-HEAT}\n    names: " + tc.names + "\n"
			code, out := rf(t, "--sim", dir, "apply", "--yes", "-f", clitest.WriteSpec(t, spec))
			want(t, code, 1, out, tc.msg)
			if st := state(t, dir); st.Netdev("ibp48s0f0") == nil || st.Device("mlx5_0") == nil {
				t.Fatal("a refused spec renamed")
			}
		})
	}
	for _, tc := range []struct{ name, spec, msg string }{
		{"a placeholder without match", "  - pci: 0000:10:00.0\n    names: {netdev: \"rail{rail}\"}\n", `host.yaml:4:21: error: $.devices[0].names.netdev: {rail} is for a rail template, the names of a device with match`},
		{"first_rail without match", "  - pci: 0000:10:00.0\n    names: {netdev: rail0, first_rail: 2}\n", "$.devices[0].names.first_rail: first_rail numbers the functions a match selects: it goes with match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := rf(t, "--sim", dir, "apply", "--yes", "-f", clitest.WriteSpec(t, "version: 1\ndevices:\n"+tc.spec))
			want(t, code, 1, out, tc.msg)
		})
	}
	// first_rail at its limit loads.
	code, out := rf(t, "--sim", dir, "plan", "-f", clitest.WriteSpec(t, "version: 1\ndevices:\n  - match: {part_number: MCX755106AS-HEAT}\n    names: {netdev: \"r{rail}\", first_rail: 999}\n"))
	want(t, code, 2, out, "-> r999", "-> r1004")
}
