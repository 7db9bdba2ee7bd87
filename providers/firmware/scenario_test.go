package firmware_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/need"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/firmware"
	"github.com/rdmaform/rdmaform/sim"
)

// rdmaform runs the whole program and returns its exit code and output.
func rdmaform(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Run(args, cli.Env{Stdout: &out, Stderr: &errOut, Environ: []string{}})
	return code, out.String() + errOut.String()
}

func step(t *testing.T, wantCode int, wantIn []string, args ...string) string {
	t.Helper()
	code, out := rdmaform(t, args...)
	if code != wantCode {
		t.Fatalf("rdmaform %s: exit %d, want %d\n%s", strings.Join(args, " "), code, wantCode, out)
	}
	for _, w := range wantIn {
		if !strings.Contains(out, w) {
			t.Errorf("rdmaform %s: output lacks %q:\n%s", strings.Join(args, " "), w, out)
		}
	}
	return out
}

// TestScenarioVPIToRoCE is the reboot lifecycle on a ConnectX-6 VPI host:
// P1 goes from InfiniBand to Ethernet with RoCE v2 settings on it. The
// RoCE part waits for the reboot; after it, only RoCE changes; apply, then
// plan is empty.
func TestScenarioVPIToRoCE(t *testing.T) {
	dir := t.TempDir()
	hostDir := filepath.Join(dir, "host")
	spec := filepath.Join(dir, "host.yaml")
	if err := os.WriteFile(spec, []byte(`version: 1
devices:
  - pci: "0000:3b:00.0"
    firmware:
      params:
        LINK_TYPE_P1: ETH
    ports:
      - port: 1
        roce:
          mode: v2
          tos: 106
`), 0o644); err != nil {
		t.Fatal(err)
	}
	step(t, 0, nil, "sim", "new", hostDir, "--profile", "cx6-vpi-ib")
	sd := "--sim=" + hostDir

	out := step(t, plan.ExitChanges, []string{
		"  ~ firmware[0000:3b:00.0]                       after reboot   # " + spec + ":5:7\n      LINK_TYPE_P1: IB -> ETH\n",
		"  ? rdma_cm[mlx5_0/1] waits for LINK_TYPE_P1=ETH on 0000:3b:00.0 (reboot)\n",
		"Plan: 0 to add, 1 to change, 0 to remove. Reboot required.",
	}, sd, "plan", "-f", spec)
	if strings.Contains(out, "~ rdma_cm") {
		t.Errorf("RoCE planned before the reboot:\n%s", out)
	}
	step(t, plan.ExitReboot, []string{"Reboot required to finish."}, sd, "apply", "-f", spec, "--yes")
	out = step(t, plan.ExitReboot, []string{
		"  ! firmware[0000:3b:00.0] LINK_TYPE_P1 staged for next boot (current IB, next ETH)",
		"  ? rdma_cm[mlx5_0/1] waits for LINK_TYPE_P1=ETH on 0000:3b:00.0 (reboot)",
	}, sd, "plan", "-f", spec)
	if strings.Contains(out, "  ~ ") {
		t.Errorf("changes planned while the firmware waits for a reboot:\n%s", out)
	}
	step(t, plan.ExitReboot, []string{"LINK_TYPE_P1 staged for next boot", "/run/reboot-required is present (rdmaform)"}, sd, "status", "-f", spec)
	step(t, 0, nil, "sim", "reboot", hostDir)
	out = step(t, plan.ExitChanges, []string{"  ~ rdma_cm[mlx5_0/1]", "tos: 0 -> 106"}, sd, "plan", "-f", spec)
	if strings.Contains(out, "firmware[") {
		t.Errorf("firmware still in the plan after the reboot:\n%s", out)
	}
	step(t, 0, nil, sd, "apply", "-f", spec, "--yes")
	step(t, 0, []string{"No changes. The host matches the spec."}, sd, "plan", "-f", spec)
	step(t, 0, []string{"Nothing waits for a reboot."}, sd, "status")
}

// TestScenarioLatency: sim new --latency is stored in the host's state.
func TestScenarioLatency(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "h")
	step(t, 0, nil, "sim", "new", dir, "--profile", "cx5-roce", "--latency", "mstconfig=1.5s", "--latency", "mst=20ms")
	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for k, v := range s.State().Latency {
		b, _ := v.MarshalText()
		got[k] = string(b)
	}
	if diff := cmp.Diff(map[string]string{"mstconfig": "1.5s", "mst": "20ms"}, got); diff != "" {
		t.Errorf("latency (-want +got):\n%s", diff)
	}
	step(t, 1, []string{`--latency "mlxconfig": want TOOL=DURATION`}, "sim", "new", dir+"2", "--latency", "mlxconfig")
}

// TestRealMstconfigNoAdapter runs Debian's mstconfig through the real
// runner on a rooted fixture host that has an adapter in sysfs but not on
// the PCI bus: the plan fails with the command line and the tool's words.
func TestRealMstconfigNoAdapter(t *testing.T) {
	need.Tool(t, "mstconfig", "apt-get install mstflint")
	st, err := sim.NewState("cx5-roce", "node1", 0)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := sim.Create(dir, st); err != nil { // the rendered sysfs tree is the fixture
		t.Fatal(err)
	}
	h, err := host.NewRooted(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := build(t, h, parse(t, "version: 1\ndevices:\n  - pci: \"0000:5e:00.0\"\n    firmware:\n      tool: mstconfig\n      params:\n        LINK_TYPE_P1: ETH\n"))
	if len(p.Errors) != 1 {
		t.Fatalf("findings: %v", p.Errors)
	}
	got := p.Errors[0].String()
	want := "host.yaml:5:7: error: $.devices[0].firmware: reading firmware of 0000:5e:00.0: mstconfig -d 0000:5e:00.0 -e q LINK_TYPE_P1: -E- Failed to open the device"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	var qe *firmware.QueryError
	res, err := plan.Build(context.Background(), h, parse(t, "version: 1\ndevices:\n  - pci: \"0000:5e:00.0\"\n    firmware:\n      tool: mstconfig\n      params:\n        NUM_OF_VFS: 1\n"), []plan.Provider{firmware.New()})
	if err != nil {
		t.Fatal(err)
	}
	a := res.Observed["firmware"].(*firmware.Observed).Adapters[0]
	if !errors.As(a.Err, &qe) {
		t.Fatalf("error %v (%T) is not a *firmware.QueryError", a.Err, a.Err)
	}
}

// TestParamDB checks spec values against Debian's real parameter
// database: names with port suffixes, enum, bool and number ranges. VPI
// is ConnectX-3's auto-sensing link type, which the database (ConnectX-4
// and later) does not list: accepted, since show captures it there.
func TestParamDB(t *testing.T) {
	need.File(t, firmware.ParamDBPath, "apt-get install mstflint")
	db, err := firmware.LoadParamDB(firmware.ParamDBPath)
	if err != nil {
		t.Fatal(err)
	}
	spec := parse(t, `version: 1
devices:
  - pci: "0000:3b:00.0"
    firmware:
      params:
        LINK_TYPE_P1: eth
        LINK_TYPE_P2: "ETH(2)"
        SRIOV_EN: true
        NUM_OF_VFS: 8
        KEEP_IB_LINK_UP_P1: 0
        ROCE_CONTROL: ROCE_ENABLE
        LINK_TYPE_P1_X: ETH
        LINK_TYPE: ETH
        NUM_OF_VFS_P1: 2
        KEEP_ETH_LINK_UP_P2: maybe
        ROCE_CC_PRIO_MASK_P1: 256
  - pci: "0000:3b:00.1"
    firmware:
      params:
        LINK_TYPE_P2: AUTO
  - pci: "0000:81:00.0"
    firmware:
      params:
        LINK_TYPE_P1: VPI
        LINK_TYPE_P2: 3
`)
	var got []string
	for _, f := range db.Check(spec) {
		got = append(got, f.String())
	}
	db0 := firmware.ParamDBPath
	want := []string{
		"host.yaml:12:25: error: $.devices[0].firmware.params.LINK_TYPE_P1_X: unknown firmware parameter LINK_TYPE_P1_X (not in " + db0 + "; --no-param-db skips this check)",
		"host.yaml:13:20: error: $.devices[0].firmware.params.LINK_TYPE: unknown firmware parameter LINK_TYPE (not in " + db0 + "; --no-param-db skips this check)",
		"host.yaml:14:24: error: $.devices[0].firmware.params.NUM_OF_VFS_P1: unknown firmware parameter NUM_OF_VFS_P1 (not in " + db0 + "; --no-param-db skips this check)",
		"host.yaml:15:30: error: $.devices[0].firmware.params.KEEP_ETH_LINK_UP_P2: \"maybe\" is not a valid value: KEEP_ETH_LINK_UP_P2 is boolean: true, false, 1 or 0",
		"host.yaml:16:31: error: $.devices[0].firmware.params.ROCE_CC_PRIO_MASK_P1: \"256\" is not a valid value: ROCE_CC_PRIO_MASK_P1 takes 0 to 255",
		"host.yaml:20:23: error: $.devices[1].firmware.params.LINK_TYPE_P2: \"AUTO\" is not a valid value: LINK_TYPE_P2 takes IB(1), ETH(2)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}

	// Through validate: the same findings at their lines, exit 1; skipped
	// with --no-param-db.
	file := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(file, []byte("version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params:\n        LINK_TYPE_P1: AUTO\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	step(t, 1, []string{"bad.yaml:6:23: error: $.devices[0].firmware.params.LINK_TYPE_P1: \"AUTO\" is not a valid value"}, "validate", "-f", file)
	step(t, 0, []string{"valid"}, "validate", "-f", file, "--no-param-db")
}
