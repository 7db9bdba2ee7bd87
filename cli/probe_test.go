package cli_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/need"
	"github.com/rdmaform/rdmaform/internal/testlab/netns"
)

// needPing skips (or, with RDMAFORM_REQUIRE_LAB=1, fails) a test that runs
// the real iputils ping.
func needPing(t *testing.T) {
	t.Helper()
	need.Tool(t, "ping", "apt-get install iputils-ping")
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

// TestProbeExampleValidates: the two-host example spec of docs/guides/audits-and-probes.md.
func TestProbeExampleValidates(t *testing.T) {
	if code, out, errs := runCLI(t, "validate", "--no-param-db", "-f", "../examples/ansible/probes.yaml"); code != 0 {
		t.Errorf("examples/ansible/probes.yaml: exit %d\n%s%s", code, out, errs)
	}
}

// labKernel makes a test's host a running one (host.Host.Offline is
// false): its commands run in the test's network namespace, and it
// mounts nothing.
type labKernel struct{}

func (labKernel) EnsureConfigfs() error { return errors.New("the probe lab mounts nothing") }

// TestProbeAndAuditProbes runs real ping probes (the loopback of a
// network namespace of the test's own: one answered, one the deadline
// cuts short after one or two of three replies, and one bound to a netdev
// that does not exist, which cannot run) on a host whose files are a
// rendered tree and whose commands run in that namespace, and checks
// rdmaform probe's outcomes, summary and exit codes (0 all passed, 2 one
// failed, 1 one could not run) and audit --probes in all four formats.
// The machine's own namespace sends nothing.
func TestProbeAndAuditProbes(t *testing.T) {
	needPing(t)
	lab := netns.New(t)
	lab.IP(t, "link", "set", "lo", "up")
	dir := t.TempDir()
	root := filepath.Join(dir, "host")
	if code, out, errs := runCLI(t, "sim", "new", root, "--profile", "cx5-roce"); code != 0 {
		t.Fatalf("sim new: %d\n%s%s", code, out, errs)
	}
	runCLI := func(t *testing.T, args ...string) (int, string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		environ := append(os.Environ(), "NO_COLOR=1", "RDMAFORM_NOW=2026-03-01T12:00:00Z")
		code := cli.RunOnHost(args, cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Environ: environ}, func(h *host.Host) *host.Host {
			c := *h
			c.Runner, c.Kernel = lab.Runner(), labKernel{}
			return &c
		})
		return code, out.String(), errb.String()
	}
	spec := filepath.Join(dir, "probes.yaml")
	write := func(text string) {
		if err := os.WriteFile(spec, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const loopback = "version: 1\nprobes:\n  - name: loopback\n    ping: {to: 127.0.0.1, count: 2, timeout: 3s}\n"
	const partly = "  - name: partly\n    ping: {to: 127.0.0.1, count: 3, timeout: 1s}\n"
	const nowhere = "  - name: nowhere\n    ping: {to: 127.0.0.1, interface: nosuch0, count: 1, timeout: 2s}\n"
	write(loopback)
	code, out, errs := runCLI(t, "--root", root, "probe", "-f", spec)
	if code != 0 || !strings.Contains(out, "PASS  loopback") || !strings.Contains(out, "probe: 1 passed, 0 failed, 0 could not run") {
		t.Errorf("probe of the loopback: exit %d\n%s%s", code, out, errs)
	}

	type result struct {
		Name, Outcome string
		Passed        bool
		RTTms         float64 `json:"rtt_ms"`
		Reason        string
		Command       string
	}
	probeJSON := func(wantCode int) []result {
		t.Helper()
		code, out, errs := runCLI(t, "--root", root, "probe", "-f", spec, "-o", "json")
		var doc struct{ Probes []result }
		if err := json.Unmarshal([]byte(out), &doc); err != nil || code != wantCode {
			t.Fatalf("probe: exit %d (want %d), %v\n%s%s", code, wantCode, err, out, errs)
		}
		return doc.Probes
	}
	// Fewer replies than count fails, with the replies that came.
	write(loopback + partly)
	ps := probeJSON(2)
	if len(ps) != 2 || ps[0].Outcome != "passed" || !ps[0].Passed || ps[0].RTTms <= 0 ||
		ps[1].Outcome != "failed" || ps[1].Passed || !strings.Contains(ps[1].Reason, "/3 answered by 127.0.0.1") || strings.HasPrefix(ps[1].Reason, "0/") {
		t.Errorf("probe with one partly answered: %+v", ps)
	}
	// A probe that cannot run is an error, counted apart, and exit 1 wins.
	write(loopback + partly + nowhere)
	ps = probeJSON(1)
	if len(ps) != 3 || ps[2].Outcome != "error" || ps[2].Passed || !strings.Contains(ps[2].Reason, "SO_BINDTODEVICE nosuch0: No such device") || ps[2].Command == "" {
		t.Errorf("probe that cannot run: %+v", ps)
	}
	code, out, errs = runCLI(t, "--root", root, "probe", "-f", spec)
	if code != 1 || !strings.Contains(out, "ERROR  nowhere") || !strings.Contains(out, "FAIL   partly") ||
		!strings.Contains(out, "probe: 1 passed, 1 failed, 1 could not run") || !strings.Contains(errs, "1 of 3 probes could not run") {
		t.Errorf("probe text with an error: exit %d\n%s%s", code, out, errs)
	}

	// audit --probes: one check per probe, in every format.
	code, out, _ = runCLI(t, "--root", root, "audit", "-f", spec, "--probes")
	if code != 1 || !strings.Contains(out, "FAIL    probe[partly] probe: ") || !strings.Contains(out, "probes.yaml:5:5") ||
		!strings.Contains(out, "probes.yaml:7:5: error: $.probes[2]: probe nowhere could not run: ") || !strings.Contains(out, "SO_BINDTODEVICE nosuch0") || strings.Contains(out, "probe[nowhere]") ||
		!strings.Contains(out, "1 error: the audit is incomplete") {
		t.Errorf("audit --probes text: exit %d\n%s", code, out)
	}
	_, out, _ = runCLI(t, "--root", root, "audit", "-f", spec, "--probes", "-o", "json")
	var rep struct {
		Checks []struct{ Resource, Check, Status string }
		Probes []struct{ Name string }
		Errors []struct{ Message string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Probes) != 3 || len(rep.Errors) != 1 {
		t.Fatalf("audit --probes json: %v\n%s", err, out)
	}
	statuses := map[string]string{}
	for _, c := range rep.Checks {
		if c.Check == "probe" {
			statuses[c.Resource] = c.Status
		}
	}
	if statuses["probe[loopback]"] != "pass" || statuses["probe[partly]"] != "fail" || len(statuses) != 2 {
		t.Errorf("audit json probe checks: %v", statuses)
	}
	_, out, _ = runCLI(t, "--root", root, "audit", "-f", spec, "--probes", "-o", "junit")
	if !strings.Contains(out, `<testcase name="probe" classname="probe[loopback]" time="0"></testcase>`) || !strings.Contains(out, `classname="probe[partly]"`) || !strings.Contains(out, `type="probe"`) {
		t.Errorf("audit --probes junit:\n%s", out)
	}
	_, out, _ = runCLI(t, "--root", root, "audit", "-f", spec, "--probes", "-o", "prometheus")
	for _, want := range []string{
		`rdmaform_probe_success{name="loopback",kind="ping",target="127.0.0.1"} 1`,
		`rdmaform_probe_success{name="partly",kind="ping",target="127.0.0.1"} 0`,
		`rdmaform_probe_rtt_seconds{name="loopback",kind="ping",target="127.0.0.1"} `,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("audit --probes prometheus lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, `name="nowhere"`) {
		t.Errorf("a probe that could not run has a success metric:\n%s", out)
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

// TestProbeServeArguments: probe serve outside the kernel lab. --for is
// checked at its limits (1h passes, a nanosecond more and 0 do not)
// before anything starts; a host no probe targets (a simulated one:
// under --root nothing is served, TestProbeRefusesOfflineRoot) has
// nothing to serve and exits 0 at once.
func TestProbeServeArguments(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "host")
	if code, out, errs := runCLI(t, "sim", "new", root, "--profile", "cx5-roce"); code != 0 {
		t.Fatalf("sim new: %d\n%s%s", code, out, errs)
	}
	spec := filepath.Join(dir, "probes.yaml")
	if err := os.WriteFile(spec, []byte("version: 1\nprobes:\n  - name: cm\n    rdma_cm: {to: 192.0.2.1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"0s", "1h0m0.000000001s", "-1s"} {
		code, out, errs := runCLI(t, "--root", root, "probe", "serve", "-f", spec, "--for", d)
		if code != 1 || !strings.Contains(errs, "give a duration from 1s to 1h0m0s (e.g. --for 5m)") || out != "" {
			t.Errorf("--for %s: exit %d\n%s%s", d, code, out, errs)
		}
	}
	code, out, errs := runCLI(t, "--sim", root, "probe", "serve", "-f", spec, "--for", "1h")
	if code != 0 || out != "probe serve: no probe of "+spec+" needs a responder on this host\n" {
		t.Errorf("nothing to serve: exit %d\n%s%s", code, out, errs)
	}
}

// TestProbeRefusesOfflineRoot: a --root tree is files, not a running
// host, so probe, probe serve and audit --probes on one send no traffic:
// each refuses, naming why, and exits 1 before any tool runs. A ping,
// rping and ibping of the test's own, first on PATH, record each call:
// none is made.
func TestProbeRefusesOfflineRoot(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "host")
	if code, out, errs := runCLI(t, "sim", "new", root, "--profile", "cx5-roce"); code != 0 {
		t.Fatalf("sim new: %d\n%s%s", code, out, errs)
	}
	bin := filepath.Join(dir, "bin")
	calls := filepath.Join(dir, "calls")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"ping", "rping", "ibv_rc_pingpong", "ibping"} {
		script := "#!/bin/sh\necho \"" + tool + " $*\" >>" + calls + "\n"
		if err := os.WriteFile(filepath.Join(bin, tool), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"PATH=" + bin + ":" + os.Getenv("PATH")}
	spec := filepath.Join(dir, "probes.yaml")
	// The simulated host's own address (served: rdma_cm) and the loopback.
	text := "version: 1\nprobes:\n  - name: loopback\n    ping: {to: 127.0.0.1, count: 1, timeout: 1s}\n  - name: cm\n    rdma_cm: {to: 192.168.21.11}\n"
	if err := os.WriteFile(spec, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	const why = "a --root tree is not a running host: probes send traffic from a running kernel, and nothing was sent"
	for _, args := range [][]string{
		{"probe", "-f", spec},
		{"probe", "-f", spec, "-o", "json"},
		{"probe", "serve", "-f", spec, "--for", "2s"},
		{"audit", "-f", spec, "--probes"},
	} {
		code, out, errs := runCLIEnv(t, env, append([]string{"--root", root}, args...)...)
		if code != 1 || !strings.Contains(out+errs, why) {
			t.Errorf("%s under --root: exit %d, want 1 naming why\n%s%s", strings.Join(args, " "), code, out, errs)
		}
		if b, err := os.ReadFile(calls); err == nil {
			t.Fatalf("%s under --root ran: %s", strings.Join(args, " "), b)
		}
	}
	// The tools on PATH do record a call: a live run would show in calls.
	if _, err := exec.Command(filepath.Join(bin, "ping"), "-c1").Output(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(calls); err != nil || string(b) != "ping -c1\n" {
		t.Fatalf("the recording ping: %q %v", b, err)
	}
}
