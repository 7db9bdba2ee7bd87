// Package fstree snapshots a directory tree for before/after comparisons
// in tests: "this command left every file as it was".
package fstree

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Snapshot maps every entry below dir to what it is: a file's mode and
// content, a directory's mode, a symlink's target.
func Snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			files[rel] = "link " + target
			return err
		case d.IsDir():
			files[rel] = "dir " + info.Mode().String()
		default:
			b, err := os.ReadFile(p)
			files[rel] = info.Mode().String() + " " + string(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// Write makes a tree below dir: each file of files (a slash path relative
// to dir) with its content, and the directories it needs.
func Write(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
