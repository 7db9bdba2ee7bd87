//go:build kernlab

package guest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// rdmaformBin is the static rdmaform run.sh puts into the guest.
const rdmaformBin = "/usr/sbin/rdmaform"

// rdmaform runs the real binary as an operator would (the guest's
// environment, no terminal) and returns its exit code and output.
func rdmaform(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(rdmaformBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("rdmaform %s: %v", strings.Join(args, " "), err)
	}
	t.Logf("$ rdmaform %s  # exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
	return code, out.String(), errb.String()
}

// mustCode runs rdmaform and fails the test unless it exits with want.
func mustCode(t *testing.T, want int, args ...string) (stdout, stderr string) {
	t.Helper()
	code, out, errs := rdmaform(t, args...)
	if code != want {
		t.Fatalf("rdmaform %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errs)
	}
	return out, errs
}

// converge is every scenario's proof: plan shows work (exit 2), apply
// does it (exit 0), and the next plan is empty (exit 0).
func converge(t *testing.T, spec string) {
	t.Helper()
	mustCode(t, 2, "plan", "-f", spec)
	mustCode(t, 0, "apply", "--yes", "-f", spec)
	out, _ := mustCode(t, 0, "plan", "-f", spec)
	if !strings.Contains(out, "No changes") {
		t.Fatalf("plan after apply is not empty:\n%s", out)
	}
}

// run runs a tool of the guest and fails the test when it fails.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := tryRun(name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

// tryRun runs a tool of the guest and returns its combined output.
func tryRun(name string, args ...string) (string, error) {
	b, err := exec.Command(name, args...).CombinedOutput()
	return string(b), err
}

// writeSpec writes a spec file for one test.
func writeSpec(t *testing.T, text string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "host.yaml")
	if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// readFile returns a file's content or fails the test.
func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// exists tells whether a path exists.
func exists(name string) bool {
	_, err := os.Lstat(name)
	return err == nil
}

// loaded tells whether /proc/modules lists a module.
func loaded(t *testing.T, mod string) bool {
	t.Helper()
	for _, l := range strings.Split(readFile(t, "/proc/modules"), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == mod {
			return true
		}
	}
	return false
}

// veth makes a veth pair in the guest's own namespace, up, and removes
// it when the test ends (with any rxe link on it).
func veth(t *testing.T, a, b string) {
	t.Helper()
	run(t, "/sbin/modprobe", "veth")
	run(t, "/sbin/ip", "link", "add", a, "type", "veth", "peer", "name", b)
	run(t, "/sbin/ip", "link", "set", a, "up")
	run(t, "/sbin/ip", "link", "set", b, "up")
	t.Cleanup(func() {
		for _, l := range rdmaLinksOn(a, b) {
			_, _ = tryRun("/sbin/rdma", "link", "delete", l)
		}
		_, _ = tryRun("/sbin/ip", "link", "del", a)
	})
}

// rdmaLinksOn names the rdma links whose netdev is one of netdevs.
func rdmaLinksOn(netdevs ...string) []string {
	var out []string
	ents, _ := os.ReadDir("/sys/class/infiniband")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/sys/class/infiniband", e.Name(), "parent"))
		if err != nil {
			// Without a parent file, ask the GID table.
			b, _ = os.ReadFile(filepath.Join("/sys/class/infiniband", e.Name(), "ports/1/gid_attrs/ndevs/0"))
		}
		for _, n := range netdevs {
			if strings.TrimSpace(string(b)) == n {
				out = append(out, e.Name())
			}
		}
	}
	return out
}
