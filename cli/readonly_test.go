package cli_test

import (
	"bytes"
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
var readOnlyCall = regexp.MustCompile(`^((mlxconfig|mstconfig) -d \S+ -e q( [A-Z0-9_]+)*|(mlxfwreset|mstfwreset) -d \S+ query|mst status -v|nmcli -t -f \S+ connection show( uuid \S+)*|NetworkManager ListConnections|dcb -j (pfc|ets|app|dcbx) show dev \S+|ethtool -[agl] \S+|ip -j link show dev \S+)$`)

// rootReason is every reason a read-only command may give for an error
// under --root with no tool on PATH and no system bus: a tool that is
// missing, NetworkManager not reachable, what an
// offline tree cannot answer (netlink, dcb, configfs groups), and what the
// spec asks of the tree (a port's link layer, a PF without SR-IOV yet).
var rootReason = regexp.MustCompile(`is on PATH|is not installed|NetworkManager is not running|--root|configfs shows no port|has no SR-IOV capability|RoCE settings need an Ethernet port|the audit is incomplete`)

// TestReadOnlyCommandsChangeNothing: on the simulated host of every
// example, before and after its changes are applied (an SR-IOV example
// with the simulated reboot its firmware asks for, so its PF has VFs and
// their settings are read), plan, show, status and audit leave
// every file of the host as it was (contents and modes) and run nothing
// but queries. Under --root, with no tool on PATH (so no tool of this
// machine runs), they leave the tree as it was, show exits 0, status 0 or
// 3, and plan's and audit's errors each give a reason an offline tree has.
func TestReadOnlyCommandsChangeNothing(t *testing.T) {
	specs, _ := filepath.Glob("../examples/*.yaml")
	for _, spec := range specs {
		t.Run(filepath.Base(spec), func(t *testing.T) {
			state, err := os.ReadFile(filepath.Join("..", exampleHost(t, spec), "sim.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			specText, err := os.ReadFile(spec)
			if err != nil {
				t.Fatal(err)
			}
			hasVFs := bytes.Contains(specText, []byte("\n      vfs:"))
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
				if when == "after apply" && hasVFs && !strings.Contains(string(b), "ip -j link show dev ") {
					t.Errorf("%s: the spec has VFs, but no read-only command read them (ip -j link show)", when)
				}
			}
			check("before apply")
			if hasVFs {
				// The VFs come after the firmware's reboot.
				converge(t, h, spec, exampleFlags(t, spec))
			} else {
				args := append(append([]string{"--sim", h, "apply", "--yes"}, exampleFlags(t, spec)...), "-f", spec)
				if code, out := rdmaform(t, args...); code != 0 && code != 3 {
					t.Fatalf("apply: exit %d\n%s", code, out)
				}
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
			noTools := []string{"PATH=" + t.TempDir(), "DBUS_SYSTEM_BUS_ADDRESS=unix:path=" + filepath.Join(t.TempDir(), "no-bus")}
			for _, args := range [][]string{{"plan", "-f", spec}, {"show"}, {"status"}, {"audit", "-f", spec}} {
				code, out, errs := runCLIEnv(t, noTools, append([]string{"--root", root}, args...)...)
				ok := code == 0
				switch args[0] {
				case "status":
					ok = code == 0 || code == 3 && strings.Contains(out, "Reboot required.")
				case "plan", "audit":
					ok = code == 0 || code == 2 || code == 1 && strings.Contains(out+errs, " error: ")
				}
				if !ok {
					t.Errorf("under --root: %v: exit %d\n%s%s", args, code, out, errs)
				}
				for _, l := range strings.Split(out+errs, "\n") {
					if (strings.Contains(l, " error: ") || strings.HasPrefix(l, "rdmaform: ")) && !rootReason.MatchString(l) {
						t.Errorf("under --root: %v: an error an offline tree does not explain: %s", args, l)
					}
				}
			}
			if diff := cmp.Diff(before, fstree.Snapshot(t, root)); diff != "" {
				t.Errorf("under --root: plan, show, status or audit changed the tree (-before +after):\n%s", diff)
			}
		})
	}
}
