package bootunit_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/providers/bootunit"
	"github.com/rdmaform/rdmaform/sim"
)

// simHost drives a simulated host through the real command line.
type simHost struct {
	t   *testing.T
	dir string
}

func newSim(t *testing.T, profile string) *simHost {
	t.Helper()
	h := &simHost{t: t, dir: filepath.Join(t.TempDir(), "host")}
	h.run("", 0, "sim", "new", h.dir, "--profile", profile)
	return h
}

func newSimState(t *testing.T, profile string, edit func(*sim.State)) *simHost {
	t.Helper()
	st, err := sim.NewState(profile, "node1", 0)
	if err != nil {
		t.Fatal(err)
	}
	edit(st)
	h := &simHost{t: t, dir: filepath.Join(t.TempDir(), "host")}
	if _, err := sim.Create(h.dir, st); err != nil {
		t.Fatal(err)
	}
	return h
}

// run runs rdmaform with the spec on stdin, requires the exit code and
// returns stdout and stderr together.
func (h *simHost) run(spec string, want int, args ...string) string {
	h.t.Helper()
	var out, errb bytes.Buffer
	env := cli.Env{Stdin: strings.NewReader(spec), Stdout: &out, Stderr: &errb, Environ: []string{"NO_COLOR=1"}}
	if args[0] != "sim" {
		args = append([]string{"--sim", h.dir}, args...)
	}
	if got := cli.Run(args, env); got != want {
		h.t.Fatalf("rdmaform %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), got, want, out.String(), errb.String())
	}
	return out.String() + errb.String()
}

// change is the part of a JSON plan change the scenarios compare.
type change struct {
	Address    string `json:"address"`
	Action     string `json:"action"`
	Activation string `json:"activation"`
	Attributes []struct {
		Name string `json:"name"`
	} `json:"attributes"`
}

// changes plans the spec and returns "address action activation [attrs]"
// for each change, in plan order.
func (h *simHost) changes(spec string, want int) []string {
	h.t.Helper()
	out := h.run(spec, want, "plan", "-o", "json", "-f", "-")
	var p struct {
		Changes []change `json:"changes"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		h.t.Fatalf("plan -o json: %v\n%s", err, out)
	}
	var got []string
	for _, c := range p.Changes {
		var attrs []string
		for _, a := range c.Attributes {
			attrs = append(attrs, a.Name)
		}
		got = append(got, c.Address+" "+c.Action+" "+c.Activation+" "+strings.Join(attrs, ","))
	}
	return got
}

// applyThenEmpty applies the spec and requires the next plan to be empty.
func (h *simHost) applyThenEmpty(spec string, args ...string) string {
	h.t.Helper()
	out := h.run(spec, 0, append([]string{"apply", "--yes", "-f", "-"}, args...)...)
	if got := h.changes(spec, 0); len(got) != 0 {
		h.t.Fatalf("plan after apply is not empty: %v", got)
	}
	return out
}

func (h *simHost) read(name string) []byte {
	h.t.Helper()
	b, err := os.ReadFile(filepath.Join(h.dir, name))
	if err != nil {
		h.t.Fatal(err)
	}
	return b
}

func (h *simHost) unit(name string) sim.Unit {
	h.t.Helper()
	st := h.sim().State()
	if st.Systemd != nil {
		for _, u := range st.Systemd.Units {
			if u.Name == name {
				return *u
			}
		}
	}
	for _, u := range sim.DefaultUnits() {
		if u.Name == name {
			return *u
		}
	}
	return sim.Unit{Name: name}
}

func (h *simHost) sim() *sim.Sim {
	h.t.Helper()
	s, err := sim.Open(h.dir)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

const roceSpec = `version: 1
devices:
  - pci: "0000:5e:00.0"
    ports:
      - port: 1
        roce: {mode: v1, tos: 106}
services:
  - name: ibacm
    enabled: true
    active: true
persistence: boot-unit
`

// TestScenarioRoCEReboot: a RoCE host with runtime rdma_cm settings, a
// service and the boot unit: apply, plan empty; a reboot runs the boot
// unit, so the plan is empty after it too. A reboot without the boot unit
// (--no-boot-unit) loses only the runtime part, which apply --only
// runtime against the boot copy (what the unit runs) puts back; plan
// empty again, and a second --only runtime run changes nothing.
func TestScenarioRoCEReboot(t *testing.T) {
	h := newSim(t, "cx5-roce")
	want := []string{
		"rdma_cm[mlx5_0/1] update runtime mode,tos",
		"service[ibacm.service] update now enabled,active",
		"boot_unit[rdmaform.service] create now unit_file,boot_spec,enabled",
	}
	if diff := cmp.Diff(want, h.changes(roceSpec, 2)); diff != "" {
		t.Fatalf("first plan (-want +got):\n%s", diff)
	}
	h.applyThenEmpty(roceSpec)

	if diff := cmp.Diff(string(bootunit.UnitFile(bootunit.DefaultBinary)), string(h.read(bootunit.UnitPath))); diff != "" {
		t.Errorf("unit file (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(roceSpec, string(h.read(bootunit.SpecPath))); diff != "" {
		t.Errorf("boot spec copy (-want +got):\n%s", diff)
	}
	if link, err := os.Readlink(filepath.Join(h.dir, bootunit.WantsPath)); err != nil || link != bootunit.UnitPath {
		t.Errorf("enablement symlink: %q, %v; want %q", link, err, bootunit.UnitPath)
	}

	if out := h.run("", 0, "sim", "reboot", h.dir); !strings.Contains(out, "rdmaform.service: started") {
		t.Errorf("sim reboot did not run the boot unit:\n%s", out)
	}
	if u := h.unit("rdmaform.service"); !u.Active {
		t.Errorf("after reboot rdmaform.service is %+v, want active (enabled units start at boot)", u)
	}
	if got := h.changes(roceSpec, 0); len(got) != 0 {
		t.Fatalf("plan after a reboot that ran the boot unit is not empty: %v", got)
	}

	h.run("", 0, "sim", "reboot", h.dir, "--no-boot-unit")
	want = []string{"rdma_cm[mlx5_0/1] update runtime mode,tos"}
	if diff := cmp.Diff(want, h.changes(roceSpec, 2)); diff != "" {
		t.Fatalf("plan after reboot (-want +got):\n%s", diff)
	}

	boot := filepath.Join(h.dir, bootunit.SpecPath)
	out := h.run("", 0, "apply", "--yes", "--only", "runtime", "-f", boot)
	if !strings.Contains(out, "Apply: 1 applied, 0 failed, 0 skipped.") {
		t.Errorf("apply --only runtime after reboot:\n%s", out)
	}
	if got := h.changes(roceSpec, 0); len(got) != 0 {
		t.Fatalf("plan after the boot apply is not empty: %v", got)
	}
	before := h.sim().State()
	h.run("", 0, "apply", "--yes", "--only", "runtime", "-f", boot)
	if diff := cmp.Diff(before, h.sim().State()); diff != "" {
		t.Errorf("a second apply --only runtime changed the host (-before +after):\n%s", diff)
	}
}

// TestApplyOnlyRuntime: on a fresh host with runtime, service and boot unit
// changes, --only runtime makes exactly the runtime ones; the rest is still
// planned afterwards, and a second run is a no-op.
func TestApplyOnlyRuntime(t *testing.T) {
	h := newSim(t, "cx5-roce")
	// The changes --only runtime leaves are still work to do: exit 2.
	if out := h.run(roceSpec, 2, "apply", "--yes", "--only", "runtime", "-f", "-"); !strings.Contains(out, "Left for an apply without --only: 2 changes (now: service[ibacm.service], boot_unit[rdmaform.service]).") {
		t.Errorf("apply --only runtime does not name what it left:\n%s", out)
	}
	want := []string{
		"service[ibacm.service] update now enabled,active",
		"boot_unit[rdmaform.service] create now unit_file,boot_spec,enabled",
	}
	if diff := cmp.Diff(want, h.changes(roceSpec, 2)); diff != "" {
		t.Fatalf("plan after apply --only runtime (-want +got):\n%s", diff)
	}
	if u := h.unit("ibacm.service"); u.Active || u.File != "disabled" {
		t.Errorf("ibacm.service is %+v after --only runtime, want untouched (disabled, inactive)", u)
	}
	if _, err := os.Lstat(filepath.Join(h.dir, bootunit.UnitPath)); err == nil {
		t.Errorf("--only runtime wrote %s", bootunit.UnitPath)
	}
	before := h.sim().State()
	out := h.run(roceSpec, 2, "apply", "--yes", "--only", "runtime", "-f", "-")
	if strings.Contains(out, "Apply:") {
		t.Errorf("second apply --only runtime applied something:\n%s", out)
	}
	if diff := cmp.Diff(before, h.sim().State()); diff != "" {
		t.Errorf("second apply --only runtime changed the host (-before +after):\n%s", diff)
	}
}

const ibSpec = `version: 1
services:
  - name: opensm
    enabled: true
    active: true
  - name: srp_daemon
    active: true
persistence: boot-unit
`

// TestScenarioSubnetManagerReboot: opensm enabled and started on an
// InfiniBand host comes back after a reboot; srp_daemon, only started, does
// not; persistence: none then removes rdmaform's unit.
func TestScenarioSubnetManagerReboot(t *testing.T) {
	h := newSim(t, "cx6-vpi-ib")
	want := []string{
		"service[opensm.service] update now enabled,active",
		"service[srp_daemon.service] update now active",
		"boot_unit[rdmaform.service] create now unit_file,boot_spec,enabled",
	}
	if diff := cmp.Diff(want, h.changes(ibSpec, 2)); diff != "" {
		t.Fatalf("first plan (-want +got):\n%s", diff)
	}
	h.applyThenEmpty(ibSpec)

	// The boot unit's apply has nothing runtime to do and exits 2 (a
	// service only started is left): the unit counts that as success.
	if out := h.run("", 0, "sim", "reboot", h.dir); !strings.Contains(out, "--only runtime -f /etc/rdmaform/boot.yaml: exit 2") || !strings.Contains(out, "rdmaform.service: started") {
		t.Errorf("sim reboot: the boot unit's apply did not exit 2 and count as started:\n%s", out)
	}
	want = []string{"service[srp_daemon.service] update now active"}
	if diff := cmp.Diff(want, h.changes(ibSpec, 2)); diff != "" {
		t.Fatalf("plan after reboot (-want +got):\n%s", diff)
	}
	if u := h.unit("opensm.service"); !u.Active {
		t.Errorf("opensm.service after reboot: %+v, want active", u)
	}
	// Nothing runtime to do: the boot unit's run changes nothing and says
	// what is left (srp_daemon, only started, is not restored at boot),
	// with exit 2, which the unit counts as success.
	h.run("", 2, "apply", "--yes", "--only", "runtime", "-f", filepath.Join(h.dir, bootunit.SpecPath))
	h.applyThenEmpty(ibSpec)

	none := strings.Replace(ibSpec, "persistence: boot-unit", "persistence: none", 1)
	want = []string{"boot_unit[rdmaform.service] delete now unit_file,boot_spec,enabled"}
	if diff := cmp.Diff(want, h.changes(none, 2)); diff != "" {
		t.Fatalf("plan with persistence: none (-want +got):\n%s", diff)
	}
	h.applyThenEmpty(none)
	for _, f := range []string{bootunit.UnitPath, bootunit.WantsPath, bootunit.SpecPath} {
		if _, err := os.Lstat(filepath.Join(h.dir, f)); err == nil {
			t.Errorf("%s still exists after persistence: none", f)
		}
	}
}

// TestScenarioFindings: host-dependent findings of both providers, each
// at its spec line.
func TestScenarioFindings(t *testing.T) {
	tests := []struct {
		name    string
		profile string
		edit    func(*sim.State)
		spec    string
		want    string
	}{
		{
			name:    "opensm on a RoCE-only host",
			profile: "cx5-roce",
			spec:    "version: 1\nservices:\n  - name: opensm\n    enabled: true\n    active: true\n",
			want:    "<stdin>:5:13: error: $.services[0].active: opensm is a subnet manager for InfiniBand fabrics, and this host has no InfiniBand port (mlx5_0/1: Ethernet, mlx5_1/1: Ethernet)",
		},
		{
			name:    "unit that does not exist",
			profile: "cx6-vpi-ib",
			spec:    "version: 1\nservices:\n  - name: nosuch\n    active: true\n",
			want:    "<stdin>:3:11: error: $.services[0].name: unit nosuch.service does not exist on this host (LoadState=not-found): install the package that provides it",
		},
		{
			name:    "static unit cannot be enabled",
			profile: "cx6-vpi-ib",
			spec:    "version: 1\nservices:\n  - name: rdma-ndd\n    enabled: true\n",
			want:    "<stdin>:4:14: error: $.services[0].enabled: unit rdma-ndd.service cannot be enabled or disabled (UnitFileState=static): it has no [Install] section or is not a unit file of its own",
		},
		{
			name:    "no systemd",
			profile: "cx6-vpi-ib",
			edit:    func(st *sim.State) { st.Systemd = &sim.SystemdState{Off: true} },
			spec:    "version: 1\nservices:\n  - name: opensm\n    active: true\n",
			want:    "<stdin>:3:3: error: $.services: no systemd runs on this host (no /run/systemd/system): services cannot be managed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h *simHost
			if tt.edit != nil {
				h = newSimState(t, tt.profile, tt.edit)
			} else {
				h = newSim(t, tt.profile)
			}
			out := h.run(tt.spec, 1, "plan", "-f", "-")
			if !strings.Contains(out, tt.want+"\n") {
				t.Errorf("plan output lacks\n%s\ngot:\n%s", tt.want, out)
			}
		})
	}
}

// TestScenarioNoSystemd: without a service manager the boot unit is still
// installed and enabled the way systemctl enable does it offline (the
// wants symlink), so the next boot with systemd runs it.
func TestScenarioNoSystemd(t *testing.T) {
	h := newSimState(t, "cx5-roce", func(st *sim.State) { st.Systemd = &sim.SystemdState{Off: true} })
	spec := "version: 1\npersistence: boot-unit\n"
	h.applyThenEmpty(spec)
	if link, err := os.Readlink(filepath.Join(h.dir, bootunit.WantsPath)); err != nil || link != bootunit.UnitPath {
		t.Errorf("enablement symlink: %q, %v; want %q", link, err, bootunit.UnitPath)
	}
}

// TestScenarioSpecEdited: editing the original spec shows the copy as
// changed; no persistence key leaves an installed unit alone.
func TestScenarioSpecEdited(t *testing.T) {
	h := newSim(t, "cx5-roce")
	h.applyThenEmpty(roceSpec)
	edited := strings.Replace(roceSpec, "tos: 106", "tos: 96", 1)
	want := []string{
		"rdma_cm[mlx5_0/1] update runtime tos",
		"boot_unit[rdmaform.service] update now boot_spec",
	}
	if diff := cmp.Diff(want, h.changes(edited, 2)); diff != "" {
		t.Fatalf("plan after editing the spec (-want +got):\n%s", diff)
	}
	h.applyThenEmpty(edited)
	if diff := cmp.Diff(edited, string(h.read(bootunit.SpecPath))); diff != "" {
		t.Errorf("boot spec copy (-want +got):\n%s", diff)
	}
	absent := strings.Replace(edited, "persistence: boot-unit\n", "", 1)
	if got := h.changes(absent, 0); len(got) != 0 {
		t.Errorf("no persistence key planned %v; want the installed unit left alone", got)
	}
	if _, err := os.Stat(filepath.Join(h.dir, bootunit.UnitPath)); err != nil {
		t.Errorf("unit removed without a persistence key: %v", err)
	}
}

// TestScenarioBinaryMissing: a spec with persistence on a host where
// rdmaform is not at the path the boot unit runs is a finding at the
// persistence line, and nothing is installed; once it is there, apply
// converges.
func TestScenarioBinaryMissing(t *testing.T) {
	h := newSim(t, "cx5-roce")
	bin := filepath.Join(h.dir, bootunit.DefaultBinary)
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	spec := "version: 1\npersistence: boot-unit\n"
	out := h.run(spec, 1, "plan", "-f", "-")
	if want := "<stdin>:2:14: error: $.persistence: the boot unit would run " + bootunit.DefaultBinary + ", which does not exist on this host"; !strings.Contains(out, want) {
		t.Errorf("plan lacks %q:\n%s", want, out)
	}
	h.run(spec, 1, "apply", "--yes", "-f", "-")
	if _, err := os.Stat(filepath.Join(h.dir, bootunit.UnitPath)); !os.IsNotExist(err) {
		t.Errorf("the unit was written although its binary is missing (stat: %v)", err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.applyThenEmpty(spec)
}
