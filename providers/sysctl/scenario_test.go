package sysctl_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

const conf = "etc/sysctl.d/90-rdmaform.conf"

const header = "# Managed by rdmaform: the spec's sysctl settings, applied at boot by systemd-sysctl.\n" +
	"# The spec's sysctl: section is the source; edits here are overwritten.\n"

// procSys reads a simulated /proc/sys file.
func procSys(t *testing.T, dir, key string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "proc/sys", key))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func readConf(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, conf))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

const rails = `version: 1
persistence: boot-unit
sysctl:
  numa_balancing: false
  interfaces:
    - name: ens1f0np0
      arp_ignore: 1
      arp_announce: 2
      rp_filter: 2
      accept_local: true
    - name: ens1f1np1
      disable_ipv6: false
      accept_ra: 0
      autoconf: false
`

// TestScenario: the settings are written now and to rdmaform's sysctl.d
// file, the next plan is empty; after a reboot systemd-sysctl's file
// gives them back and the plan is empty; a setting dropped from the spec
// leaves the file and keeps its value now.
func TestScenario(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	spec := clitest.WriteSpec(t, rails)
	out := clitest.Converge(t, dir, spec)
	for _, want := range []string{
		"~ sysctl[kernel.numa_balancing]", "value: 1 -> 0", "at_boot: (absent) -> 0",
		"~ sysctl[net.ipv4.conf.ens1f0np0.arp_ignore]", "~ sysctl[net.ipv6.conf.ens1f1np1.accept_ra]",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	if _, rest, _ := strings.Cut(out, "disable_ipv6]"); !strings.HasPrefix(strings.SplitN(rest, "\n", 2)[1], "      at_boot: (absent) -> 0\n  ") {
		t.Errorf("disable_ipv6 is already 0: its change is the file's line only:\n%s", out)
	}
	for key, want := range map[string]string{
		"kernel/numa_balancing": "0", "net/ipv4/conf/ens1f0np0/arp_ignore": "1", "net/ipv4/conf/ens1f0np0/arp_announce": "2",
		"net/ipv4/conf/ens1f0np0/rp_filter": "2", "net/ipv4/conf/ens1f0np0/accept_local": "1",
		"net/ipv6/conf/ens1f1np1/accept_ra": "0", "net/ipv6/conf/ens1f1np1/autoconf": "0", "net/ipv6/conf/ens1f1np1/disable_ipv6": "0",
		"net/ipv4/conf/ens1f1np1/arp_ignore": "0", // the other rail is untouched
	} {
		if got := procSys(t, dir, key); got != want {
			t.Errorf("%s = %s, want %s", key, got, want)
		}
	}
	wantConf := header + "kernel.numa_balancing = 0\n" +
		"net.ipv4.conf.ens1f0np0.accept_local = 1\nnet.ipv4.conf.ens1f0np0.arp_announce = 2\nnet.ipv4.conf.ens1f0np0.arp_ignore = 1\nnet.ipv4.conf.ens1f0np0.rp_filter = 2\n" +
		"net.ipv6.conf.ens1f1np1.accept_ra = 0\nnet.ipv6.conf.ens1f1np1.autoconf = 0\nnet.ipv6.conf.ens1f1np1.disable_ipv6 = 0\n"
	if got := readConf(t, dir); got != wantConf {
		t.Errorf("%s:\n%s\nwant:\n%s", conf, got, wantConf)
	}
	clitest.MustRun(t, 0, "sim", "reboot", dir)
	if got := procSys(t, dir, "net/ipv4/conf/ens1f0np0/rp_filter"); got != "2" {
		t.Errorf("after the reboot rp_filter = %s", got)
	}
	clitest.MustRun(t, 0, "--sim", dir, "plan", "-f", spec)

	// Dropping the second netdev: its lines leave the file, its values stay.
	fewer := clitest.WriteSpec(t, strings.SplitN(rails, "    - name: ens1f1np1", 2)[0])
	out = clitest.Converge(t, dir, fewer)
	if !strings.Contains(out, "- sysctl[net.ipv6.conf.ens1f1np1.accept_ra]") || !strings.Contains(out, "at_boot: 0 -> (none)") {
		t.Errorf("plan of the dropped netdev:\n%s", out)
	}
	if got := procSys(t, dir, "net/ipv6/conf/ens1f1np1/accept_ra"); got != "0" {
		t.Errorf("a dropped setting changed now: accept_ra = %s", got)
	}
	if strings.Contains(readConf(t, dir), "ens1f1np1") {
		t.Errorf("the dropped netdev is still in the file:\n%s", readConf(t, dir))
	}
}

// TestBootUnitSetsLateNetdevs: a setting systemd-sysctl could not apply
// at boot (the simulated boot's sysctl.d pass found its value changed
// since, as for a VF made later) is a runtime change that the boot
// unit's apply --only runtime makes.
func TestBootUnitSetsLateNetdevs(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	spec := clitest.WriteSpec(t, rails)
	clitest.Converge(t, dir, spec)
	clitest.MustRun(t, 0, "sim", "reboot", dir, "--no-boot-unit")
	// An operator's echo after the boot, as a late netdev's default.
	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Host()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.FS.WriteAttr("/proc/sys/net/ipv4/conf/ens1f0np0/arp_ignore", []byte("0\n")); err != nil {
		t.Fatal(err)
	}
	out := clitest.MustRun(t, 2, "--sim", dir, "plan", "-f", spec)
	if !strings.Contains(out, "~ sysctl[net.ipv4.conf.ens1f0np0.arp_ignore]") || !strings.Contains(out, "not persistent") || strings.Contains(out, "at_boot") {
		t.Errorf("a value changed now only is a runtime change:\n%s", out)
	}
	clitest.MustRun(t, 2, "--sim", dir, "audit", "-f", spec)
	clitest.MustRun(t, 0, "--sim", dir, "apply", "--yes", "--only", "runtime", "-f", spec)
	clitest.MustRun(t, 0, "--sim", dir, "plan", "-f", spec)
}

// TestLimits: each range at its ends and one past them; arp_ignore's
// reserved 4-7; netdev names that would break out of /proc/sys or a
// sysctl.d line; a netdev not on the host. A refused spec changes nothing.
func TestLimits(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	iface := func(kv string) string {
		return clitest.WriteSpec(t, "version: 1\nsysctl:\n  interfaces:\n    - {name: ens1f0np0, "+kv+"}\n")
	}
	for _, ok := range []string{"arp_ignore: 0", "arp_ignore: 8", "arp_ignore: 3", "arp_announce: 2", "arp_announce: 0", "rp_filter: 2", "rp_filter: 0", "accept_ra: 2", "accept_ra: 0"} {
		clitest.Converge(t, dir, iface(ok))
	}
	for _, c := range []struct{ kv, want string }{
		{"arp_ignore: 9", "$.sysctl.interfaces[0].arp_ignore: 9 is above the maximum 8"},
		{"arp_ignore: 4", "$.sysctl.interfaces[0].arp_ignore: 4 is reserved: 0, 1, 2, 3 or 8"},
		{"arp_ignore: 7", "$.sysctl.interfaces[0].arp_ignore: 7 is reserved"},
		{"arp_ignore: -1", "$.sysctl.interfaces[0].arp_ignore: -1 is below the minimum 0"},
		{"arp_announce: 3", "$.sysctl.interfaces[0].arp_announce: 3 is above the maximum 2"},
		{"rp_filter: 3", "$.sysctl.interfaces[0].rp_filter: 3 is above the maximum 2"},
		{"accept_ra: 3", "$.sysctl.interfaces[0].accept_ra: 3 is above the maximum 2"},
		{"accept_ra: -1", "$.sysctl.interfaces[0].accept_ra: -1 is below the minimum 0"},
	} {
		out := clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "-f", iface(c.kv))
		if !strings.Contains(out, c.want) {
			t.Errorf("%s: want %q:\n%s", c.kv, c.want, out)
		}
	}
	if got := procSys(t, dir, "net/ipv4/conf/ens1f0np0/arp_ignore"); got != "3" {
		t.Errorf("a refused spec changed arp_ignore: %s", got)
	}
	named := func(name string) string {
		return clitest.WriteSpec(t, "version: 1\nsysctl:\n  interfaces:\n    - {name: "+name+", rp_filter: 1}\n")
	}
	for _, c := range []struct{ name, want string }{
		{"abcdefghijklmnop", "longer than the kernel's 15-byte interface name limit"},
		{`".."`, `$.sysctl.interfaces[0].name: ".." is not a valid name`},
		{`"a=b"`, `"a=b": a netdev whose settings go in sysctl.d has a name of letters, digits, _ . -`},
		{`"a#b"`, `a netdev whose settings go in sysctl.d`},
		{`"a/b"`, "must not contain '/'"},
	} {
		out := clitest.MustRun(t, 1, "--sim", dir, "plan", "-f", named(c.name))
		if !strings.Contains(out, c.want) {
			t.Errorf("%s: want %q:\n%s", c.name, c.want, out)
		}
	}
	// 15 bytes is a valid name: a netdev not there yet is planned, and
	// apply fails naming it after a bounded wait.
	out := clitest.MustRun(t, 2, "--sim", dir, "plan", "-f", named("abcdefghijklmno"))
	if !strings.Contains(out, "value: (no netdev abcdefghijklmno yet) -> 1") {
		t.Errorf("plan of a netdev not there:\n%s", out)
	}
	out = clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "-f", named("abcdefghijklmno"))
	if !strings.Contains(out, "net.ipv4.conf.abcdefghijklmno.rp_filter: netdev abcdefghijklmno does not exist (waited 5s for /proc/sys/net/ipv4/conf/abcdefghijklmno/rp_filter)") {
		t.Errorf("apply of a netdev not there:\n%s", out)
	}
	out = clitest.MustRun(t, 1, "--sim", dir, "plan", "-f", clitest.WriteSpec(t, "version: 1\nsysctl:\n  interfaces:\n    - {name: ens1f0np0, rp_filter: 1}\n    - {name: ens1f0np0, rp_filter: 2}\n    - {name: ens1f1np1}\n"))
	for _, want := range []string{"$.sysctl.interfaces[1].name: netdev ens1f0np0 is listed twice", "$.sysctl.interfaces[2]: give at least one setting"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q:\n%s", want, out)
		}
	}
}

// TestRevertShowAudit: an unconfirmed apply puts the values and the file
// back; show captures the file's settings and the capture plans empty; a
// value changed behind rdmaform's back is drift that apply repairs.
func TestRevertShowAudit(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	spec := clitest.WriteSpec(t, rails)
	out := clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "--confirm-timeout", "1s", "-f", spec)
	if !strings.Contains(out, "sysctl[kernel.numa_balancing]") || !strings.Contains(out, "Reverted") {
		t.Fatalf("unconfirmed apply:\n%s", out)
	}
	if got := procSys(t, dir, "kernel/numa_balancing"); got != "1" {
		t.Errorf("after the rollback numa_balancing = %s, want 1", got)
	}
	if got := procSys(t, dir, "net/ipv6/conf/ens1f1np1/accept_ra"); got != "1" {
		t.Errorf("after the rollback accept_ra = %s, want 1", got)
	}
	if got := readConf(t, dir); got != "" {
		t.Errorf("after the rollback the file is still there:\n%s", got)
	}
	clitest.Converge(t, dir, spec)
	capture := clitest.MustRun(t, 0, "--sim", dir, "show")
	for _, want := range []string{"numa_balancing: false", "name: ens1f0np0", "arp_ignore: 1", "accept_ra: 0", "autoconf: false"} {
		if !strings.Contains(capture, want) {
			t.Errorf("show lacks %q:\n%s", want, capture)
		}
	}
	clitest.MustRun(t, 0, "--sim", dir, "plan", "-f", clitest.WriteSpec(t, capture))
	clitest.MustRun(t, 0, "--sim", dir, "audit", "-f", spec)
	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Host()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.FS.WriteAttr("/proc/sys/kernel/numa_balancing", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if out := clitest.MustRun(t, 2, "--sim", dir, "audit", "-f", spec); !strings.Contains(out, "sysctl[kernel.numa_balancing]") {
		t.Errorf("audit does not report the drift:\n%s", out)
	}
	clitest.Converge(t, dir, spec)
}

// TestAllIsLarger: arp_ignore, arp_announce and rp_filter take the larger
// of conf/all's value and the netdev's, so a netdev value below conf/all's
// is a finding naming both, and nothing is written; at conf/all's value
// it converges.
func TestAllIsLarger(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Host()
	if err != nil {
		t.Fatal(err)
	}
	// What systemd's 50-default.conf does on many distributions.
	if err := h.FS.WriteAttr("/proc/sys/net/ipv4/conf/all/rp_filter", []byte("2\n")); err != nil {
		t.Fatal(err)
	}
	one := clitest.WriteSpec(t, "version: 1\nsysctl:\n  interfaces:\n    - {name: ens1f0np0, rp_filter: 1}\n")
	out := clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "-f", one)
	if !strings.Contains(out, "$.sysctl.interfaces[0].rp_filter: net.ipv4.conf.all.rp_filter is 2, and the kernel uses the larger of it and net.ipv4.conf.ens1f0np0.rp_filter (ip-sysctl.rst): 1 would not take effect") {
		t.Errorf("apply:\n%s", out)
	}
	if got := procSys(t, dir, "net/ipv4/conf/ens1f0np0/rp_filter"); got != "0" {
		t.Errorf("a refused plan wrote rp_filter: %s", got)
	}
	clitest.Converge(t, dir, clitest.WriteSpec(t, "version: 1\nsysctl:\n  interfaces:\n    - {name: ens1f0np0, rp_filter: 2}\n"))
}

// TestVFs: the SLAAC case: a RoCE VF that sriov creates in the same apply
// gets its IPv6 settings in that apply; after a reboot systemd-sysctl
// finds no VF, and the boot unit's apply --only runtime, which creates
// the VFs, sets them; the plan is empty after each.
func TestVFs(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	fw := clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: \"0000:5e:00.0\"\n    firmware:\n      params: {SRIOV_EN: true, NUM_OF_VFS: 8}\n")
	clitest.MustRun(t, 3, "--sim", dir, "apply", "--yes", "-f", fw) // 3: a reboot finishes it
	clitest.MustRun(t, 0, "sim", "reboot", dir)
	spec := clitest.WriteSpec(t, `version: 1
persistence: boot-unit
devices:
  - pci: "0000:5e:00.0"
    sriov: {num_vfs: 2}
sysctl:
  interfaces:
    - {name: ens1f0v0, accept_ra: 0, autoconf: false}
    - {name: ens1f0v1, disable_ipv6: true}
`)
	out := clitest.Converge(t, dir, spec)
	if !strings.Contains(out, "value: (no netdev ens1f0v0 yet) -> 0") {
		t.Errorf("plan:\n%s", out)
	}
	for key, want := range map[string]string{"net/ipv6/conf/ens1f0v0/accept_ra": "0", "net/ipv6/conf/ens1f0v0/autoconf": "0", "net/ipv6/conf/ens1f0v1/disable_ipv6": "1"} {
		if got := procSys(t, dir, key); got != want {
			t.Errorf("%s = %s, want %s", key, got, want)
		}
	}
	clitest.MustRun(t, 0, "sim", "reboot", dir)
	clitest.MustRun(t, 0, "--sim", dir, "plan", "-f", spec)
	if got := procSys(t, dir, "net/ipv6/conf/ens1f0v0/accept_ra"); got != "0" {
		t.Errorf("after the reboot accept_ra = %s", got)
	}
	// VFs removed and made again have the kernel's defaults (new conf
	// directories), and the spec sets them again.
	vfs := func(n string) string {
		return clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: \"0000:5e:00.0\"\n    sriov: {num_vfs: "+n+"}\n")
	}
	clitest.MustRun(t, 0, "--sim", dir, "apply", "--yes", "-f", vfs("0"))
	clitest.MustRun(t, 0, "--sim", dir, "apply", "--yes", "-f", vfs("2"))
	if got := procSys(t, dir, "net/ipv6/conf/ens1f0v0/accept_ra"); got != "1" {
		t.Errorf("a VF made again has accept_ra = %s, want the kernel's 1", got)
	}
	out = clitest.Converge(t, dir, spec)
	if !strings.Contains(out, "sysctl[net.ipv6.conf.ens1f0v0.accept_ra]") || !strings.Contains(out, "value: 1 -> 0") {
		t.Errorf("plan for VFs made again:\n%s", out)
	}
}
