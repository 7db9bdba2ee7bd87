package cli_test

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli/clitest"
)

// freshHost makes a simulated host with 'sim new' and its arguments.
func freshHost(t *testing.T, args ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "h")
	if code, out := rdmaform(t, append([]string{"sim", "new", dir}, args...)...); code != 0 {
		t.Fatalf("sim new %v: exit %d\n%s", args, code, out)
	}
	return dir
}

// TestExamplesOnFreshProfiles: every spec of examples/ runs on a host
// 'sim new' makes of the profile its "# host:" line names (not only on
// the copy kept there): the plan has changes, apply converges, and the
// plan after it is empty.
func TestExamplesOnFreshProfiles(t *testing.T) {
	specs, _ := filepath.Glob("../examples/*.yaml")
	for _, spec := range specs {
		t.Run(filepath.Base(spec), func(t *testing.T) {
			dir := freshHost(t, "--profile", filepath.Base(exampleHost(t, spec)))
			if code, out := rdmaform(t, "--sim", dir, "plan", "-f", spec); code != 2 {
				t.Fatalf("plan on a fresh host: exit %d, want 2:\n%s", code, out)
			}
			converge(t, dir, spec, exampleFlags(t, spec))
		})
	}
}

// readmeNames is the README's names example ("RDMA netns mode and device
// names"), which failed on every profile with "install rdma-core".
const readmeNames = `version: 1
rdma:
  netns_mode: exclusive
devices:
  - pci: 0000:5e:00.0
    names: {rdma: rail0, netdev: rail0eth}
  - pci: 0000:5e:00.1
    names: {rdma: rail1, netdev: rail1eth}
`

// readmeSubnetManager is the README's subnet_manager example; no profile
// had opensm or sminfo.
const readmeSubnetManager = `version: 1
subnet_manager:
  priority: 10
  options: {part_enforce: both}
  partitions:
    - {name: Default, pkey: 0x7fff, ipoib: true, members: [{guid: all, membership: full}]}
    - name: storage
      pkey: 0x8002
      ipoib: {mtu: 4096}
      members:
        - {guid: self, membership: full}
        - {guid: 0x0002c903000a1b2c, membership: full}
        - {guid: all_cas, membership: limited}
`

// TestREADMEExamplesOnFreshProfiles: the names example on a fresh
// cx5-roce and the rail template on a fresh gpu-node (rdma-core's rdma_rename installed, as with the package its
// RDMA stack comes from), the subnet_manager example on a fresh
// cx6-vpi-sm (Debian's opensm installed, not running; sminfo): each
// plans, applies, and plans nothing after. The subnet manager's plan says
// it starts opensm.
func TestREADMEExamplesOnFreshProfiles(t *testing.T) {
	for _, tc := range []struct {
		name, profile, spec, plans string
	}{
		{"names", "cx5-roce", readmeNames, "rdma_name[0000:5e:00.0]"},
		{"subnet_manager", "cx6-vpi-sm", readmeSubnetManager, "opensm: started (opensm.service"},
		{"rail template", "gpu-node", "version: 1\ndevices:\n  - match: {part_number: MCX755106AS-HEAT}\n    names: {rdma: \"rdma_rail{rail}\", netdev: \"rail{rail}\"}\n", "rdma_name[0000:80:00.1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := freshHost(t, "--profile", tc.profile)
			spec := clitest.WriteSpec(t, tc.spec)
			code, out := rdmaform(t, "--sim", dir, "plan", "-f", spec)
			if code != 2 || !strings.Contains(strings.ReplaceAll(out, "→", "->"), tc.plans) {
				t.Fatalf("plan on a fresh %s: exit %d, want 2 naming %q:\n%s", tc.profile, code, tc.plans, out)
			}
			converge(t, dir, spec, []string{"--allow-mgmt"})
		})
	}
}

// TestSimAdapters: 'sim new --adapters N' gives the profiles of one card
// model N dual-port cards (2N PCI functions, each with its own address
// and netdev), at 1 and at the limit; one past the limit, 0, and the
// profiles with a fixed hardware (cx3-mlx4's one card, vm-soft's none)
// are refused by name. A spec of the second card of a cx5-roce applies,
// and plans nothing after.
func TestSimAdapters(t *testing.T) {
	for _, tc := range []struct {
		profile string
		n       int
	}{{"cx5-roce", 1}, {"cx5-roce", 4}, {"cx6-vpi-ib", 2}, {"cx6-vpi-sm", 4}, {"cx6dx-ofed", 4}, {"gpu-node", 2}} {
		dir := freshHost(t, "--profile", tc.profile, "--adapters", strconv.Itoa(tc.n))
		code, out := rdmaform(t, "--sim", dir, "facts", "-o", "json")
		if code != 0 {
			t.Fatalf("facts: %d\n%s", code, out)
		}
		var facts struct {
			Devices []struct {
				PCI string `json:"pci"`
			} `json:"devices"`
		}
		if err := json.Unmarshal([]byte(out), &facts); err != nil {
			t.Fatal(err, out)
		}
		seen := map[string]bool{}
		for _, d := range facts.Devices {
			seen[d.PCI] = true
		}
		if len(facts.Devices) != 2*tc.n || len(seen) != 2*tc.n {
			t.Errorf("%s --adapters %d: %d functions (%d addresses), want %d", tc.profile, tc.n, len(facts.Devices), len(seen), 2*tc.n)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--profile", "cx5-roce", "--adapters", "5"}, "cx5-roce has at most 4 cards"},
		{[]string{"--profile", "gpu-node", "--adapters", "65"}, "at most 64 adapters"},
		{[]string{"--profile", "cx5-roce", "--adapters", "0"}, "at least 1 adapter"},
		{[]string{"--profile", "vm-soft", "--adapters", "1"}, "--adapters does not apply to vm-soft"},
		{[]string{"--profile", "cx3-mlx4", "--adapters", "2"}, "--adapters does not apply to cx3-mlx4"},
		{[]string{"--profile", "gpu-switch", "--adapters", "1"}, "--adapters does not apply to gpu-switch"},
		{[]string{"--profile", "gpu-grace", "--adapters", "1"}, "--adapters does not apply to gpu-grace"},
	} {
		dir := filepath.Join(t.TempDir(), "h")
		if code, out := rdmaform(t, append([]string{"sim", "new", dir}, tc.args...)...); code != 1 || !strings.Contains(out, tc.want) {
			t.Errorf("sim new %v: exit %d, want 1 and %q\n%s", tc.args, code, tc.want, out)
		}
	}
	dir := freshHost(t, "--profile", "cx5-roce", "--adapters", "2")
	spec := clitest.WriteSpec(t, "version: 1\ninterfaces:\n  - name: ens2f1np1\n    mtu: 9000\ndevices:\n  - pci: \"0000:6e:00.0\"\n    ports:\n      - port: 1\n        roce: {mode: v2, tos: 106}\n")
	if code, out := rdmaform(t, "--sim", dir, "plan", "-f", spec); code != 2 {
		t.Fatalf("plan of the second card: exit %d\n%s", code, out)
	}
	converge(t, dir, spec, nil)
}
