package firmware

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// Reboot markers, as Debian's update-notifier, needrestart and motd read
// them.
const (
	RebootRequired     = "/run/reboot-required"
	RebootRequiredPkgs = "/run/reboot-required.pkgs"
	rebootText         = "*** System restart required ***\n"
	pkgName            = "rdmaform"
)

// MarkRebootRequired writes /run/reboot-required (kept as it is when
// present) and lists rdmaform once in /run/reboot-required.pkgs, as Debian
// packages' postinst scripts do.
//
// Equivalent to: echo '*** System restart required ***' > /run/reboot-required; echo rdmaform >> /run/reboot-required.pkgs
func MarkRebootRequired(h *host.Host) error {
	if !host.Exists(h.FS, RebootRequired) {
		if err := h.FS.WriteFile(RebootRequired, []byte(rebootText), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", RebootRequired, err)
		}
	}
	old, err := h.FS.ReadFile(RebootRequiredPkgs)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading %s: %w", RebootRequiredPkgs, err)
	}
	lines := strings.Fields(string(old))
	for _, l := range lines {
		if l == pkgName {
			return nil
		}
	}
	lines = append(lines, pkgName)
	if err := h.FS.WriteFile(RebootRequiredPkgs, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", RebootRequiredPkgs, err)
	}
	return nil
}

// ClearRebootMarker takes rdmaform off /run/reboot-required.pkgs, and
// removes both files when no other package is left there. Another
// package's entry, or a marker that does not list rdmaform, is left as
// it is.
//
// Equivalent to: sed -i '/^rdmaform$/d' /run/reboot-required.pkgs, then
// rm /run/reboot-required /run/reboot-required.pkgs if the list is empty
func ClearRebootMarker(h *host.Host) error {
	old, err := h.FS.ReadFile(RebootRequiredPkgs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", RebootRequiredPkgs, err)
	}
	var rest []string
	found := false
	for _, l := range strings.Fields(string(old)) {
		if l == pkgName {
			found = true
			continue
		}
		rest = append(rest, l)
	}
	if !found {
		return nil
	}
	if len(rest) > 0 {
		if err := h.FS.WriteFile(RebootRequiredPkgs, []byte(strings.Join(rest, "\n")+"\n"), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", RebootRequiredPkgs, err)
		}
		return nil
	}
	for _, f := range []string{RebootRequired, RebootRequiredPkgs} {
		if err := h.FS.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", f, err)
		}
	}
	return nil
}

// SyncRebootMarker makes rdmaform's entry in the reboot marker true to a
// plan: listed while a firmware value of the plan waits for a reboot,
// gone when none does (un-staged, or active after the reboot). A plan
// whose firmware could not be read changes nothing.
func SyncRebootMarker(h *host.Host, p *plan.Plan) error {
	for _, f := range p.Errors {
		if f.Unreadable {
			return nil
		}
	}
	if len(p.Pending) > 0 {
		return MarkRebootRequired(h)
	}
	return ClearRebootMarker(h)
}

// RebootMarker is what /run/reboot-required says.
type RebootMarker struct {
	Required bool
	// Packages from reboot-required.pkgs, sorted.
	Packages []string
}

// ReadRebootMarker reads /run/reboot-required and its .pkgs list.
func ReadRebootMarker(h *host.Host) (RebootMarker, error) {
	var m RebootMarker
	m.Required = host.Exists(h.FS, RebootRequired)
	b, err := h.FS.ReadFile(RebootRequiredPkgs)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return m, err
	}
	m.Packages = strings.Fields(string(b))
	sort.Strings(m.Packages)
	return m, nil
}
