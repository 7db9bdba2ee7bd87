package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli"
)

// needPing skips (or, with RDMAFORM_REQUIRE_LAB=1, fails) a test that runs
// the real iputils ping.
func needPing(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("ping"); err != nil {
		if os.Getenv("RDMAFORM_REQUIRE_LAB") == "1" {
			t.Fatal("ping is missing (apt-get install iputils-ping) and RDMAFORM_REQUIRE_LAB=1")
		}
		t.Skip("ping is missing: apt-get install iputils-ping")
	}
}

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return runCLIEnv(t, nil, args...)
}

// runCLIEnv is runCLI with env added to the environment.
func runCLIEnv(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	environ := append(append(os.Environ(), "NO_COLOR=1", "RDMAFORM_NOW=2026-03-01T12:00:00Z"), env...)
	code := cli.Run(args, cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Environ: environ})
	return code, out.String(), errb.String()
}

// TestProbeExampleValidates: the README's two-host example spec.
func TestProbeExampleValidates(t *testing.T) {
	if code, out, errs := runCLI(t, "validate", "--no-param-db", "-f", "../examples/ansible/probes.yaml"); code != 0 {
		t.Errorf("examples/ansible/probes.yaml: exit %d\n%s%s", code, out, errs)
	}
}

// TestProbeAndAuditProbes runs real ping probes (the loopback, which
// changes nothing and leaves the machine; and one bound to a netdev that
// does not exist, which fails) against a rendered host tree (--root), and
// checks rdmaform probe's exit codes and audit --probes in all four
// formats.
func TestProbeAndAuditProbes(t *testing.T) {
	needPing(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "host")
	if code, out, errs := runCLI(t, "sim", "new", root, "--profile", "cx5-roce"); code != 0 {
		t.Fatalf("sim new: %d\n%s%s", code, out, errs)
	}
	spec := filepath.Join(dir, "probes.yaml")
	write := func(text string) {
		if err := os.WriteFile(spec, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("version: 1\nprobes:\n  - name: loopback\n    ping: {to: 127.0.0.1, count: 2, timeout: 3s}\n")
	code, out, errs := runCLI(t, "--root", root, "probe", "-f", spec)
	if code != 0 || !strings.Contains(out, "PASS  loopback") || !strings.Contains(out, "probe: 1 passed, 0 failed") {
		t.Errorf("probe of the loopback: exit %d\n%s%s", code, out, errs)
	}

	write("version: 1\nprobes:\n  - name: loopback\n    ping: {to: 127.0.0.1, count: 2, timeout: 3s}\n  - name: nowhere\n    ping: {to: 127.0.0.1, interface: nosuch0, count: 1, timeout: 2s}\n")
	code, out, errs = runCLI(t, "--root", root, "probe", "-f", spec, "-o", "json")
	var doc struct {
		Probes []struct {
			Name   string
			Passed bool
			RTTms  float64 `json:"rtt_ms"`
			Reason string
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 2 || len(doc.Probes) != 2 {
		t.Fatalf("probe with one failing: exit %d (want 2), %v\n%s%s", code, err, out, errs)
	}
	if !doc.Probes[0].Passed || doc.Probes[0].RTTms <= 0 || doc.Probes[1].Passed || !strings.Contains(doc.Probes[1].Reason, "nosuch0") {
		t.Errorf("probe results: %+v", doc.Probes)
	}

	// audit --probes: one check per probe, in every format.
	code, out, _ = runCLI(t, "--root", root, "audit", "-f", spec, "--probes")
	if code != 2 || !strings.Contains(out, "FAIL    probe[nowhere] probe: ") || !strings.Contains(out, "probes.yaml:5:5") {
		t.Errorf("audit --probes text: exit %d\n%s", code, out)
	}
	_, out, _ = runCLI(t, "--root", root, "audit", "-f", spec, "--probes", "-o", "json")
	var rep struct {
		Checks []struct{ Resource, Check, Status string }
		Probes []struct{ Name string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Probes) != 2 {
		t.Fatalf("audit --probes json: %v\n%s", err, out)
	}
	statuses := map[string]string{}
	for _, c := range rep.Checks {
		if c.Check == "probe" {
			statuses[c.Resource] = c.Status
		}
	}
	if statuses["probe[loopback]"] != "pass" || statuses["probe[nowhere]"] != "fail" {
		t.Errorf("audit json probe checks: %v", statuses)
	}
	_, out, _ = runCLI(t, "--root", root, "audit", "-f", spec, "--probes", "-o", "junit")
	if !strings.Contains(out, `<testcase name="probe" classname="probe[loopback]" time="0"></testcase>`) || !strings.Contains(out, `classname="probe[nowhere]"`) || !strings.Contains(out, `type="probe"`) {
		t.Errorf("audit --probes junit:\n%s", out)
	}
	_, out, _ = runCLI(t, "--root", root, "audit", "-f", spec, "--probes", "-o", "prometheus")
	for _, want := range []string{
		`rdmaform_probe_success{name="loopback",kind="ping",target="127.0.0.1"} 1`,
		`rdmaform_probe_success{name="nowhere",kind="ping",target="127.0.0.1"} 0`,
		`rdmaform_probe_rtt_seconds{name="loopback",kind="ping",target="127.0.0.1"} `,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("audit --probes prometheus lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, `rdmaform_health{resource="probe[`) {
		t.Errorf("probes are counted in rdmaform_health as well:\n%s", out)
	}
	// Without --probes nothing is probed.
	_, out, _ = runCLI(t, "--root", root, "audit", "-f", spec, "-o", "json")
	if strings.Contains(out, `"probes"`) || strings.Contains(out, "probe[") {
		t.Errorf("audit without --probes ran probes:\n%s", out)
	}
}
