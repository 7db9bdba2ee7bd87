package session

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/bootunit"
	"github.com/rdmaform/rdmaform/providers/gpudriver"
	"github.com/rdmaform/rdmaform/providers/kcmdline"
	"github.com/rdmaform/rdmaform/providers/modules"
	"github.com/rdmaform/rdmaform/providers/names"
	"github.com/rdmaform/rdmaform/providers/rdmanetns"
	"github.com/rdmaform/rdmaform/providers/subnetmanager"
)

// FileState is a file a resource of the plan writes, as it was before
// the apply: the rollback puts it back byte for byte, and removes it when
// there was none. The journal's spec cannot say "no such file" (a spec
// without rdma.netns_mode or names leaves those files alone, and one with
// them writes them), so a file the apply created outlived its rollback.
type FileState struct {
	// Address is the resource whose change writes the file.
	Address string `json:"address"`
	Path    string `json:"path"`
	// Exists is false when there was no file: the rollback removes it.
	Exists bool `json:"exists"`
	// Content is the file's bytes; Link a symlink's target instead.
	Content []byte      `json:"content,omitempty"`
	Link    string      `json:"link,omitempty"`
	Mode    fs.FileMode `json:"mode,omitempty"`
}

// JournalPaths are the files a change of the plan at address a may write.
// The subnet manager's files are those of both layouts: the one not
// installed has none before and none after, and the rollback leaves a
// file that is as it was alone.
func JournalPaths(a plan.Address) []string {
	switch a.Kind {
	case rdmanetns.Kind:
		if a == rdmanetns.BootAddress {
			return []string{rdmanetns.ConfFile}
		}
	case names.KindRules:
		return []string{names.RulesFile}
	case modules.Kind:
		return []string{modules.ConfFile}
	case kcmdline.Kind:
		if a.Key == kcmdline.KernelCmdline {
			return []string{kcmdline.KernelCmdline}
		}
		return []string{kcmdline.GrubFile}
	case gpudriver.Kind:
		switch a {
		case gpudriver.ConfAddress:
			return []string{gpudriver.ConfFile}
		case gpudriver.PeermemAddress:
			return []string{gpudriver.LoadFile}
		}
	case bootunit.Kind:
		return []string{bootunit.SpecPath, bootunit.UnitPath, bootunit.WantsPath}
	case subnetmanager.Kind:
		switch a {
		case subnetmanager.PartitionsAddr:
			return []string{subnetmanager.Debian.Partitions, subnetmanager.RHEL.Partitions}
		case subnetmanager.ConfAddr:
			return []string{subnetmanager.Debian.Conf, subnetmanager.RHEL.Conf}
		case subnetmanager.PortsAddr:
			return []string{subnetmanager.Debian.Ports}
		}
	}
	return nil
}

// RecordFiles reads, before the apply, every file the plan's changes may
// write.
func RecordFiles(h *host.Host, p *plan.Plan) ([]FileState, error) {
	seen := map[string]bool{}
	var out []FileState
	for _, ch := range p.Changes {
		for _, path := range JournalPaths(ch.Address) {
			if seen[path] {
				continue
			}
			seen[path] = true
			f, err := readFileState(h, path)
			if err != nil {
				return nil, fmt.Errorf("recording %s for the rollback: %w", path, err)
			}
			f.Address = ch.Address.String()
			out = append(out, f)
		}
	}
	return out, nil
}

func readFileState(h *host.Host, path string) (FileState, error) {
	f := FileState{Path: path}
	fi, err := h.FS.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return f, nil
	case err != nil:
		return f, err
	}
	f.Exists = true
	if fi.Mode()&fs.ModeSymlink != 0 {
		f.Link, err = h.FS.Readlink(path)
		return f, err
	}
	f.Mode = fi.Mode().Perm()
	b, err := h.FS.ReadFile(path)
	if b == nil {
		b = []byte{}
	}
	f.Content = b
	return f, err
}

// RestoreFiles puts back every recorded file that differs from what the
// journal holds; it returns the files it changed and the resources of
// those it could not. A failure leaves the rest to the next rollback
// (each file is compared again).
func RestoreFiles(h *host.Host, files []FileState) (changed []FileState, failed []plan.Address, err error) {
	for _, want := range files {
		now, ferr := readFileState(h, want.Path)
		if ferr == nil {
			if now.Exists == want.Exists && now.Link == want.Link && bytes.Equal(now.Content, want.Content) && now.Mode == want.Mode {
				continue
			}
			ferr = restoreFile(h, now, want)
		}
		if ferr != nil {
			err = errors.Join(err, fmt.Errorf("restoring %s: %w", want.Path, ferr))
			if a, perr := plan.ParseAddr(want.Address); perr == nil && !slices.Contains(failed, a) {
				failed = append(failed, a)
			}
			continue
		}
		changed = append(changed, want)
	}
	return changed, failed, err
}

func restoreFile(h *host.Host, now, want FileState) error {
	if now.Exists && (!want.Exists || want.Link != "" || now.Link != "") {
		if err := h.FS.Remove(want.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	switch {
	case !want.Exists:
		return nil
	case want.Link != "":
		return h.FS.Symlink(want.Link, want.Path)
	}
	mode := want.Mode
	if mode == 0 {
		mode = 0o644
	}
	return h.FS.WriteFile(want.Path, want.Content, mode)
}
