package kcmdline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// Make implements plan.TypedProvider: it writes GrubFile (or removes it),
// runs update-grub, reads the file back, and records in the staged ledger
// each argument the running kernel does not have yet. When update-grub
// fails, the file is put back as it was and update-grub runs again.
//
// Equivalent to: printf '...GRUB_CMDLINE_LINUX="${GRUB_CMDLINE_LINUX} ARGS"\n' > /etc/default/grub.d/90-rdmaform.cfg; update-grub
func (p *Provider) Make(ctx context.Context, h *host.Host, c *plan.Change, pl *payload) error {
	switch pl.tool {
	case BootKernelInstall:
		return makeKernelInstall(ctx, h, pl)
	case BootGrubby:
		return makeGrubby(ctx, h, pl)
	}
	old, err := h.FS.ReadFile(GrubFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading %s: %w", GrubFile, err)
	}
	if err := writeOwn(h, pl.content); err != nil {
		return err
	}
	if err := Regenerate(ctx, h); err != nil {
		if rerr := writeOwn(h, old); rerr == nil {
			_ = Regenerate(ctx, h)
		}
		return err
	}
	got, err := h.FS.ReadFile(GrubFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading %s back: %w", GrubFile, err)
	}
	if !slices.Equal(parseOwnFile(string(got)), nonNil(pl.args)) {
		return fmt.Errorf("%s reads back %q, not the arguments written (%v)", GrubFile, got, pl.args)
	}
	return record(h, pl)
}

func nonNil(a []string) []string {
	if a == nil {
		return []string{}
	}
	return a
}

func writeOwn(h *host.Host, content []byte) error {
	if content == nil {
		if err := h.FS.Remove(GrubFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", GrubFile, err)
		}
		return nil
	}
	if err := h.FS.WriteFile(GrubFile, content, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", GrubFile, err)
	}
	return nil
}

// makeKernelInstall writes /etc/kernel/cmdline (its mode kept), runs
// kernel-install add for each installed kernel, reads the file back and
// records the ledger. When kernel-install fails, the file is put back as
// it was and the kernels are added again with it.
//
// Equivalent to: printf 'WORDS\n' > /etc/kernel/cmdline; kernel-install add VERSION IMAGE (each installed kernel)
func makeKernelInstall(ctx context.Context, h *host.Host, pl *payload) error {
	old, err := h.FS.ReadFile(KernelCmdline)
	if err != nil {
		return fmt.Errorf("reading %s: %w", KernelCmdline, err)
	}
	mode := fs.FileMode(0o644)
	if fi, err := h.FS.Stat(KernelCmdline); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := h.FS.WriteFile(KernelCmdline, pl.content, mode); err != nil {
		return fmt.Errorf("writing %s: %w", KernelCmdline, err)
	}
	if err := RegenerateKernelInstall(ctx, h); err != nil {
		if rerr := h.FS.WriteFile(KernelCmdline, old, mode); rerr == nil {
			_ = RegenerateKernelInstall(ctx, h)
		}
		return err
	}
	got, err := h.FS.ReadFile(KernelCmdline)
	if err != nil {
		return fmt.Errorf("reading %s back: %w", KernelCmdline, err)
	}
	if !slices.Equal(strings.Fields(string(got)), strings.Fields(string(pl.content))) {
		return fmt.Errorf("%s reads back %q, not what was written (%q)", KernelCmdline, got, pl.content)
	}
	return record(h, pl)
}

// Regenerate runs update-grub (Debian's wrapper of grub-mkconfig -o
// /boot/grub/grub.cfg). Offline (--root) nothing runs.
func Regenerate(ctx context.Context, h *host.Host) error {
	if h.Offline() {
		return nil
	}
	if _, err := h.Run(ctx, BootGrub); err != nil {
		return fmt.Errorf("regenerating the GRUB configuration: %w", err)
	}
	return nil
}

// record updates the ledger after a write: each argument the written
// file gives, and each absent one, that the running kernel does not
// match is staged in this boot (an entry already there for the same
// argument keeps its boot); entries the running kernel now matches, or
// that the payload no longer names, leave.
func record(h *host.Host, pl *payload) error {
	l, err := ReadLedger(h.FS)
	if err != nil {
		return err
	}
	boot, _ := host.ReadAttr(h.FS, BootIDPath)
	if boot == "" {
		boot = "unknown"
	}
	now := time.Now().UTC().Truncate(time.Second)
	var keep []LedgerEntry
	add := func(a schema.KernelArg) {
		if satisfied(pl.running, a) {
			return
		}
		if e := l.Find(a.Arg, a.Absent); e != nil {
			keep = append(keep, *e)
			return
		}
		keep = append(keep, newEntry(boot, now, a, pl.tool))
	}
	for _, a := range pl.args {
		add(schema.KernelArg{Arg: a})
	}
	for _, a := range pl.absent {
		add(a)
	}
	l.Entries = keep
	return writeLedger(h.FS, l)
}

// newEntry is a ledger entry of an argument written for tool's file.
func newEntry(boot string, at time.Time, a schema.KernelArg, tool string) LedgerEntry {
	e := LedgerEntry{BootID: boot, StagedAt: at, Arg: a.Arg, Absent: a.Absent, Tool: BootGrub, File: GrubFile}
	switch tool {
	case BootKernelInstall:
		e.Tool, e.File = BootKernelInstall, KernelCmdline
	case BootGrubby:
		e.Tool, e.File = BootGrubby, "the boot entries (grubby --update-kernel=ALL)"
	}
	return e
}

var _ plan.Settler = (*Provider)(nil)

// Settle implements plan.Settler: entries the running kernel matches now,
// or that the spec no longer asks for, leave the ledger; an argument the
// plan reports pending without an entry (an absent one that no file
// rdmaform reads sets, so no write of rdmaform's was needed) gets one in
// this boot, so that the boot after it can tell whether it went.
//
// Equivalent to: editing /var/lib/rdmaform/staged-cmdline.json
func (p *Provider) Settle(_ context.Context, h *host.Host, res *plan.Result) error {
	obs := plan.Observation[*Observed](res.Observed[p.Name()])
	if obs == nil || obs.LedgerErr != nil || obs.Ledger == nil || (obs.Bootloader != BootGrub && obs.Bootloader != BootKernelInstall && obs.Bootloader != BootGrubby) {
		return nil
	}
	var keep []LedgerEntry
	for _, e := range obs.Ledger.Entries {
		a := schema.KernelArg{Arg: e.Arg, Absent: e.Absent}
		if slices.Contains(res.Request.Spec.KernelArgs, a) && !satisfied(obs.Running, a) {
			keep = append(keep, e)
		}
	}
	changed := len(keep) != len(obs.Ledger.Entries)
	pending := map[plan.Address]bool{}
	for _, pe := range res.Plan.Pending {
		pending[pe.Address] = true
	}
	boot := obs.BootID
	if boot == "" {
		boot = "unknown"
	}
	for _, a := range res.Request.Spec.KernelArgs {
		if !pending[ArgAddress(keyOf(a.Arg))] || satisfied(obs.Running, a) || obs.Ledger.Find(a.Arg, a.Absent) != nil {
			continue
		}
		keep = append(keep, newEntry(boot, time.Now().UTC().Truncate(time.Second), a, obs.Bootloader))
		changed = true
	}
	if !changed {
		return nil
	}
	return writeLedger(h.FS, &Ledger{Entries: keep})
}
