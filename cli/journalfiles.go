package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/bootunit"
	"github.com/rdmaform/rdmaform/providers/modules"
	"github.com/rdmaform/rdmaform/providers/names"
	"github.com/rdmaform/rdmaform/providers/rdmanetns"
	"github.com/rdmaform/rdmaform/providers/subnetmanager"
)

// journalFile is a file a resource of the plan writes, as it was before
// the apply: the rollback puts it back byte for byte, and removes it when
// there was none. The journal's spec cannot say "no such file" (a spec
// without rdma.netns_mode or names leaves those files alone, and one with
// them writes them), so a file the apply created outlived its rollback.
type journalFile struct {
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

// journalPaths are the files a change of the plan at address a may write.
// The subnet manager's files are those of both layouts: the one not
// installed has none before and none after, and the rollback leaves a
// file that is as it was alone.
func journalPaths(a plan.Address) []string {
	switch a.Kind {
	case rdmanetns.Kind:
		if a == rdmanetns.BootAddress {
			return []string{rdmanetns.ConfFile}
		}
	case names.KindRules:
		return []string{names.RulesFile}
	case modules.Kind:
		return []string{modules.ConfFile}
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

// recordFiles reads, before the apply, every file the plan's changes may
// write.
func recordFiles(h *host.Host, p *plan.Plan) ([]journalFile, error) {
	seen := map[string]bool{}
	var out []journalFile
	for _, ch := range p.Changes {
		for _, path := range journalPaths(ch.Address) {
			if seen[path] {
				continue
			}
			seen[path] = true
			f, err := readJournalFileState(h, path)
			if err != nil {
				return nil, fmt.Errorf("recording %s for the rollback: %w", path, err)
			}
			f.Address = ch.Address.String()
			out = append(out, f)
		}
	}
	return out, nil
}

func readJournalFileState(h *host.Host, path string) (journalFile, error) {
	f := journalFile{Path: path}
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

// restoreFiles puts back every recorded file that differs from what the
// journal holds; it returns the files it changed and the resources of
// those it could not. A failure leaves the rest to the next rollback
// (each file is compared again).
func restoreFiles(h *host.Host, files []journalFile) (changed []journalFile, failed []plan.Address, err error) {
	for _, want := range files {
		now, ferr := readJournalFileState(h, want.Path)
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

func restoreFile(h *host.Host, now, want journalFile) error {
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

// retellOpenSM has the running opensm read its files again once the
// rollback changed them: each running opensm unit (Debian's
// opensm@GUID.service per InfiniBand port, opensm.service) is restarted,
// as the subnet manager provider does for a key it reads only at start.
// Without a service manager that can, it says what to do.
func (a *app) retellOpenSM(ctx context.Context, h *host.Host) error {
	sig, ok := h.Systemd.(host.UnitSignaller)
	if h.Systemd == nil || !ok {
		return fmt.Errorf("opensm's files are back, but no service manager here restarts opensm: restart it to have it read them")
	}
	units := []string{}
	if inv, err := inventory.Discover(ctx, h); err == nil {
		for _, d := range inv.Devices {
			for _, pt := range d.Ports {
				if pt.GUID != "" {
					units = append(units, subnetmanager.Units(&subnetmanager.LocalPort{GUID: pt.GUID})[0])
				}
			}
		}
	}
	units = append(units, subnetmanager.Units(nil)...)
	var errs error
	for _, u := range units {
		st, err := h.Systemd.Unit(ctx, u)
		if err != nil || !st.Active() {
			continue
		}
		if pid, err := sig.MainPID(ctx, u); err != nil || pid == 0 {
			continue // Debian's opensm.service: a oneshot that starts the instances
		}
		if err := sig.Restart(ctx, u); err != nil {
			errs = errors.Join(errs, fmt.Errorf("restarting %s to have opensm read its restored files: %w", u, err))
		}
	}
	return errs
}

// afterRestore tells the services that read restored files: the service
// manager reloads a restored boot unit, and opensm reads its files again.
// Failures are warnings: the files are back.
func (a *app) afterRestore(ctx context.Context, h *host.Host, changed []journalFile) {
	unit, sm := false, false
	for _, f := range changed {
		switch {
		case f.Path == bootunit.UnitPath || f.Path == bootunit.WantsPath:
			unit = true
		case slices.Contains(journalPaths(subnetmanager.PartitionsAddr), f.Path) || slices.Contains(journalPaths(subnetmanager.ConfAddr), f.Path) || f.Path == subnetmanager.Debian.Ports:
			sm = true
		}
	}
	if unit && h.Systemd != nil {
		if err := h.Systemd.Reload(ctx); err != nil {
			fmt.Fprintf(a.env.Stderr, "rdmaform: warning: reloading the service manager after restoring %s: %v\n", bootunit.UnitPath, err)
		}
	}
	if sm {
		if err := a.retellOpenSM(ctx, h); err != nil {
			fmt.Fprintf(a.env.Stderr, "rdmaform: warning: %v\n", err)
		}
	}
}
