package sysfsns

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Entry is one file or symlink of a fixture tree. Sysfs attributes are
// written byte for byte: Data must end with "\n" as the kernel's do, except
// for an empty file, which stands for an attribute whose read fails (an
// empty GID slot: EINVAL).
type Entry struct {
	Path string // relative to the tree, "/"-separated
	Data string // file contents (when Link is "")
	Link string // symlink target, relative as on real sysfs
	// Binary marks a binary attribute (a PCI function's vpd, 0600), which
	// has no trailing newline.
	Binary bool
}

// File is an attribute file.
func File(path, data string) Entry { return Entry{Path: path, Data: data} }

// Binary is a binary attribute, such as a PCI function's vpd (root only).
func Binary(path string, data []byte) Entry {
	return Entry{Path: path, Data: string(data), Binary: true}
}

// Link is a symlink.
func Link(path, target string) Entry { return Entry{Path: path, Link: target} }

// WriteTree creates the entries under dir (directories as needed, files
// 0444 like sysfs attributes, symlinks as given).
func WriteTree(dir string, entries []Entry) error {
	for _, e := range entries {
		p := filepath.Join(dir, filepath.FromSlash(e.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if e.Link != "" {
			if err := os.Symlink(e.Link, p); err != nil {
				return err
			}
			continue
		}
		if e.Binary {
			if err := os.WriteFile(p, []byte(e.Data), 0o600); err != nil {
				return err
			}
			continue
		}
		if e.Data != "" && !strings.HasSuffix(e.Data, "\n") {
			return fmt.Errorf("%s: a sysfs attribute ends with a newline: %q", e.Path, e.Data)
		}
		if err := os.WriteFile(p, []byte(e.Data), 0o444); err != nil {
			return err
		}
	}
	return nil
}

// Digest returns one line per entry of the tree under dir, "path mode
// sha256" for files and "path -> target" for symlinks, in walk order, so
// two digests are equal exactly when the trees are byte-identical.
func Digest(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out = append(out, rel+" -> "+target)
		case fi.IsDir():
			out = append(out, fmt.Sprintf("%s/ %v", rel, fi.Mode()))
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out = append(out, fmt.Sprintf("%s %v %x", rel, fi.Mode(), sha256.Sum256(data)))
		}
		return nil
	})
	return out, err
}
