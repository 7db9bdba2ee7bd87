package cli_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/internal/testlab/fstree"
)

// readOnlyCall is every command line plan, show, status and audit may
// run: firmware queries, mst's listing, NetworkManager's listings, dcb's and ethtool's QoS reads. No set,
// no mst start, no modprobe, no nmcli change.
var readOnlyCall = regexp.MustCompile(`^((mlxconfig|mstconfig) -d \S+ -e q( [A-Z0-9_]+)*|mst status -v|nmcli -t -f \S+ connection show( uuid \S+)*|dcb -j (pfc|ets|app|dcbx) show dev \S+|ethtool -a \S+|ip -j link show dev \S+)$`)

// TestReadOnlyCommandsChangeNothing: on the simulated host of every
// example, before and after its changes are applied, plan, show, status
// and audit leave every file of the host as it was (contents and modes)
// and run nothing but queries; under --root they leave the tree as it was.
func TestReadOnlyCommandsChangeNothing(t *testing.T) {
	specs, _ := filepath.Glob("../examples/*.yaml")
	for _, spec := range specs {
		t.Run(filepath.Base(spec), func(t *testing.T) {
			state, err := os.ReadFile(filepath.Join("..", exampleHost(t, spec), "sim.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			h := filepath.Join(dir, "host")
			if err := os.MkdirAll(h, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(h, "sim.yaml"), state, 0o644); err != nil {
				t.Fatal(err)
			}
			calls := filepath.Join(dir, "calls")
			check := func(when string) {
				t.Helper()
				// The first run renders the simulated tree; from then on
				// it must not change.
				rdmaform(t, "--sim", h, "status")
				before := fstree.Snapshot(t, h)
				_ = os.Remove(calls)
				for _, args := range [][]string{{"plan", "-f", spec}, {"show"}, {"status"}, {"audit", "-f", spec}} {
					cmd := append([]string{"--sim", h}, args...)
					code, out, errs := runCLIEnv(t, []string{"RDMAFORM_SIM_CALLS=" + calls}, cmd...)
					if code == 1 && !strings.Contains(errs, "rdmaform:") {
						t.Errorf("%s: %v: exit 1 without a message\n%s", when, args, out)
					}
				}
				if diff := cmp.Diff(before, fstree.Snapshot(t, h)); diff != "" {
					t.Errorf("%s: plan, show, status or audit changed the host's files (-before +after):\n%s", when, diff)
				}
				b, _ := os.ReadFile(calls)
				for _, c := range strings.Split(strings.TrimSpace(string(b)), "\n") {
					if c != "" && !readOnlyCall.MatchString(c) {
						t.Errorf("%s: a read-only command ran %q", when, c)
					}
				}
			}
			check("before apply")
			args := append(append([]string{"--sim", h, "apply", "--yes"}, exampleFlags(t, spec)...), "-f", spec)
			if code, out := rdmaform(t, args...); code != 0 && code != 3 {
				t.Fatalf("apply: exit %d\n%s", code, out)
			}
			check("after apply")

			// Under --root (the tree the simulator rendered, read as an
			// offline image; its commands are this machine's, and fail):
			// the files are left as they were.
			root := filepath.Join(dir, "root")
			if err := os.CopyFS(root, os.DirFS(h)); err != nil {
				t.Fatal(err)
			}
			before := fstree.Snapshot(t, root)
			for _, args := range [][]string{{"plan", "-f", spec}, {"show"}, {"status"}, {"audit", "-f", spec}} {
				runCLIEnv(t, nil, append([]string{"--root", root}, args...)...)
			}
			if diff := cmp.Diff(before, fstree.Snapshot(t, root)); diff != "" {
				t.Errorf("under --root: plan, show, status or audit changed the tree (-before +after):\n%s", diff)
			}
		})
	}
}
