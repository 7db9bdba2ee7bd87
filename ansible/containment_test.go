package ansible_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmaform/rdmaform/ansible"
)

// TestConfirmFilesStayInTheTree: the module's background apply writes
// its log (LogFile) and its copy of the program (SelfCopy) on the host,
// inside the sim tree like every other write: a symlink planted at
// either, climbing out of the tree (relative) or naming a file outside
// by its absolute path (read inside the tree, where the task then
// writes), leaves the file outside as it was, and nothing is added next
// to it.
func TestConfirmFilesStayInTheTree(t *testing.T) {
	for _, p := range []string{ansible.LogFile, ansible.SelfCopy} {
		for _, kind := range []string{"relative", "absolute"} {
			t.Run(p+" "+kind, func(t *testing.T) {
				outside := t.TempDir()
				victim := filepath.Join(outside, "victim")
				if err := os.WriteFile(victim, []byte("outside\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				dir := newSim(t, "cx5-roce")
				link, target := filepath.Join(dir, p), victim
				if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
					t.Fatal(err)
				}
				if kind == "relative" {
					rel, err := filepath.Rel(filepath.Dir(link), victim)
					if err != nil {
						t.Fatal(err)
					}
					target = rel
				} else if err := os.MkdirAll(filepath.Join(dir, outside), 0o755); err != nil {
					// The tree has the directory the link names: the
					// file is written there.
					t.Fatal(err)
				}
				if err := os.Symlink(target, link); err != nil {
					t.Fatal(err)
				}
				res := module(t, map[string]any{"content": roceSpec, "sim": dir, "confirm_timeout": "2s"})
				if res.Confirm != nil {
					watch(t, res.Confirm).mustExit(t, "after the timeout")
				}
				if b, err := os.ReadFile(victim); err != nil || string(b) != "outside\n" {
					t.Errorf("the file outside the tree now holds %q (%v); the task: failed=%v %s", b, err, res.Failed, res.Msg)
				}
				if ents, err := os.ReadDir(outside); err != nil || len(ents) != 1 {
					t.Errorf("outside the tree now %v (%v)", ents, err)
				}
				if kind == "absolute" {
					// Read inside the tree: the task ran, and wrote the
					// tree's file of that name.
					if res.Failed || res.Confirm == nil {
						t.Errorf("the task failed: %s", res.Msg)
					}
					if fi, err := os.Stat(filepath.Join(dir, victim)); err != nil || fi.Size() == 0 {
						t.Errorf("the tree's %s: %v", victim, err)
					}
				}
			})
		}
	}
}
