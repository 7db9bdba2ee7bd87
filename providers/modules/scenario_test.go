package modules_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/sim"
)

func rf(t *testing.T, args ...string) (int, string) {
	t.Helper()
	code, out, errs := clitest.Run(t, args...)
	return code, out + errs
}

func spec(t *testing.T, text string) string {
	t.Helper()
	return clitest.WriteSpec(t, text)
}

// TestScenario: modules are loaded and listed for boot; a module dropped
// from the spec leaves the file but stays loaded; each step ends with
// "apply, then plan is empty". A module the kernel does not have fails
// with modprobe's words and a hint.
func TestScenario(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "host")
	if code, out := rf(t, "sim", "new", dir, "--profile", "vm-soft"); code != 0 {
		t.Fatal(out)
	}
	conf := filepath.Join(dir, "etc/modules-load.d/rdmaform.conf")
	header := "# Managed by rdmaform: kernel modules systemd-modules-load loads at boot.\n" +
		"# The spec's modules: list is the source; edits here are overwritten.\n"
	steps := []struct {
		name   string
		spec   string
		plan   string // the change lines of the text plan
		conf   string // after apply, without the header
		loaded []string
	}{{
		name:   "load and list",
		spec:   "version: 1\nmodules: [rdma_rxe, ib-core, rdma_ucm]\n",
		plan:   "+ module[rdma_rxe]\n~ module[ib_core]\n+ module[rdma_ucm]\n",
		conf:   "ib_core\nrdma_rxe\nrdma_ucm\n",
		loaded: []string{"ib_core", "rdma_rxe", "rdma_ucm"},
	}, {
		name:   "drop one: unlisted, still loaded",
		spec:   "version: 1\nmodules: [rdma_rxe, ib_core]\n",
		plan:   "- module[rdma_ucm]\n",
		conf:   "ib_core\nrdma_rxe\n",
		loaded: []string{"ib_core", "rdma_rxe", "rdma_ucm"},
	}}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			f := spec(t, st.spec)
			code, out := rf(t, "--sim", dir, "plan", "-f", f)
			if code != 2 {
				t.Fatalf("plan: exit %d, want 2\n%s", code, out)
			}
			var marks []string
			for _, l := range strings.Split(out, "\n") {
				if f := strings.Fields(l); len(f) >= 2 && strings.Contains("+~-", f[0]) && strings.HasPrefix(f[1], "module[") {
					marks = append(marks, f[0]+" "+f[1]+"\n")
				}
			}
			// The plan lists changes by address within the stage.
			if d := cmp.Diff(sortedLines(st.plan), sortedLines(strings.Join(marks, ""))); d != "" {
				t.Errorf("plan (-want +got):\n%s\n%s", d, out)
			}
			if code, out := rf(t, "--sim", dir, "apply", "-f", f, "--yes"); code != 0 {
				t.Fatalf("apply: exit %d\n%s", code, out)
			}
			if code, out := rf(t, "--sim", dir, "plan", "-f", f); code != 0 {
				t.Fatalf("plan after apply: exit %d, want 0\n%s", code, out)
			}
			b, err := os.ReadFile(conf)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(header+st.conf, string(b)); d != "" {
				t.Errorf("rdmaform.conf (-want +got):\n%s", d)
			}
			s, err := sim.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(st.loaded, s.State().Modules); d != "" {
				t.Errorf("loaded modules (-want +got):\n%s", d)
			}
		})
	}

	t.Run("missing module", func(t *testing.T) {
		code, out := rf(t, "--sim", dir, "apply", "--yes", "-f", spec(t, "version: 1\nmodules: [rdma_rxe, ib_core, no_such_mod]\n"))
		if code != 1 {
			t.Fatalf("apply: exit %d, want 1\n%s", code, out)
		}
		for _, want := range []string{"module[no_such_mod]", "Module no_such_mod not found", "linux-modules-extra"} {
			if !strings.Contains(out, want) {
				t.Errorf("apply output lacks %q:\n%s", want, out)
			}
		}
	})
}

func sortedLines(s string) []string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	for i := 1; i < len(ls); i++ {
		for j := i; j > 0 && ls[j] < ls[j-1]; j-- {
			ls[j], ls[j-1] = ls[j-1], ls[j]
		}
	}
	return ls
}
