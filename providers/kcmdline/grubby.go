package kcmdline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// grubby (RHEL, Fedora, Rocky: rhboot/grubby).
//
// "grubby --info=ALL" prints each boot entry as lines KEY=VALUE
// (grubby-bls display_info_values: index=, kernel=, args="OPTIONS",
// initrd=, title=); a value in double quotes is read without them, and
// a line of another key is left out, so that a grubby that prints more
// is read the same.
// "grubby --update-kernel=ALL --args=ARGS --remove-args=ARGS" edits the
// options of every entry (grubby-bls update_bls_fragment and update_args,
// rhboot/grubby commit fdb5c761, read for this driver): each word of
// --remove-args deletes the first place its text occurs, with the
// non-blanks after it (sed "s!ARG[^ ]*!!"), so --remove-args=iommu would
// cut "iommu=on" out of "intel_iommu=on"; a KEY=VALUE of --args replaces
// the first place "KEY=" occurs, with the non-blanks after it, or is
// appended when there is none; a bare word of --args is appended unless
// its text occurs anywhere. The value is what follows the last '=' of
// the word and the key what precedes it.
//
// rdmaform drives grubby only where these rules give exactly what the
// spec asks for in every entry: a key (or a bare word, or an absent
// KEY=VALUE) whose text occurs in an entry inside another word, or more
// than once, is a plan finding naming the word, and a value with a
// second '=' (pci=config_acs=...) too, since grubby splits it at the
// last one. Before it runs grubby, it works out the entries' new options
// itself (editWords), and reads them back after.

// GrubbyAddress is the plan key of grubby's boot entries.
const GrubbyAddress = "grubby"

// grubbyEntry is one boot entry as grubby --info=ALL prints it.
type grubbyEntry struct {
	Index  string
	Kernel string
	Args   []string
}

// parseGrubbyInfo reads grubby --info=ALL's output: an entry starts at
// each index= line; values may be quoted. Lines it does not know are
// left out; an entry without a kernel is not one grubby edits.
func parseGrubbyInfo(out string) ([]grubbyEntry, error) {
	var ents []grubbyEntry
	for _, l := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), "=")
		if !ok {
			continue
		}
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		}
		switch k {
		case "index":
			ents = append(ents, grubbyEntry{Index: v})
		case "kernel", "args":
			if len(ents) == 0 {
				return nil, fmt.Errorf("grubby --info=ALL: %q before the first index= line", l)
			}
			e := &ents[len(ents)-1]
			if k == "kernel" {
				e.Kernel = v
			} else {
				e.Args = strings.Fields(v)
			}
		}
	}
	var out2 []grubbyEntry
	for _, e := range ents {
		if e.Kernel != "" {
			out2 = append(out2, e)
		}
	}
	return out2, nil
}

// readGrubby runs grubby --info=ALL.
func readGrubby(ctx context.Context, h *host.Host) ([]grubbyEntry, error) {
	res, err := h.Run(ctx, BootGrubby, "--info=ALL")
	if err != nil {
		return nil, fmt.Errorf("reading the boot entries: %w", err)
	}
	return parseGrubbyInfo(string(res.Stdout))
}

// grubbyHazard says why grubby's text matching would not give what the
// spec asks for in an entry's options ("" when it gives exactly that).
func grubbyHazard(words []string, a schema.KernelArg) string {
	key := keyOf(a.Arg)
	if strings.Count(a.Arg, "=") > 1 {
		return fmt.Sprintf("grubby splits %s at its last '=' (key %q), not its first", a.Arg, a.Arg[:strings.LastIndexByte(a.Arg, '=')])
	}
	// The text grubby looks for: KEY= for a KEY=VALUE to set; the word
	// for a bare one or one to remove.
	text := key + "="
	switch {
	case a.Absent && strings.Contains(a.Arg, "="):
		text = a.Arg
	case a.Absent || !strings.Contains(a.Arg, "="):
		text = key
	}
	n := 0
	for _, w := range words {
		c := strings.Count(w, text)
		n += c
		if c > 0 && !strings.HasPrefix(w, text) {
			return fmt.Sprintf("grubby matches %q as text, and it is inside %s", text, w)
		}
		if c > 0 && a.Absent && ((!strings.Contains(a.Arg, "=") && keyOf(w) != key) || (strings.Contains(a.Arg, "=") && w != a.Arg)) {
			return fmt.Sprintf("grubby matches %q as text, and %s begins with it", text, w)
		}
	}
	if n > 1 {
		return fmt.Sprintf("%q occurs %d times and grubby changes only the first", text, n)
	}
	return ""
}

// grubbySteps are what grubby --update-kernel=ALL does to every entry,
// in its order: the arguments to remove (the spec's absent ones some
// entry has), then those to add (the spec's present ones some entry
// lacks), a key that is text inside another key first (iommu before
// intel_iommu: adding intel_iommu=on first would have "iommu=pt" replace
// its "iommu=on").
func grubbySteps(ents []grubbyEntry, spec []schema.KernelArg) (remove, add []schema.KernelArg) {
	for _, a := range spec {
		for _, e := range ents {
			if satisfied(e.Args, a) {
				continue
			}
			if a.Absent {
				remove = append(remove, a)
			} else {
				add = append(add, a)
			}
			break
		}
	}
	sort.SliceStable(add, func(i, j int) bool { return len(keyOf(add[i].Arg)) < len(keyOf(add[j].Arg)) })
	return remove, add
}

// grubbyCommand is the grubby command line of the steps.
func grubbyCommand(remove, add []schema.KernelArg) []string {
	cmd := []string{BootGrubby, "--update-kernel=ALL"}
	join := func(as []schema.KernelArg) string {
		var out []string
		for _, a := range as {
			out = append(out, a.Arg)
		}
		return strings.Join(out, " ")
	}
	if len(add) > 0 {
		cmd = append(cmd, "--args="+join(add))
	}
	if len(remove) > 0 {
		cmd = append(cmd, "--remove-args="+join(remove))
	}
	return cmd
}

// grubbyEntryHazard walks the steps over an entry's words, as grubby
// does, and says where its text matching would not do what the step
// means (the step's index in the spec, and why); -1 when every step is
// exact.
func grubbyEntryHazard(words []string, spec, remove, add []schema.KernelArg) (int, string) {
	cur := words
	for _, st := range append(append([]schema.KernelArg{}, remove...), add...) {
		if why := grubbyHazard(cur, st); why != "" {
			return slices.Index(spec, st), why
		}
		cur = editWords(cur, []schema.KernelArg{st})
	}
	return -1, ""
}

// planGrubby plans every boot entry's options: one change, grubby
// --update-kernel=ALL, when an entry lacks an argument of the spec or has
// one to make absent; a finding where grubby's text matching would do
// something else, or where the entries cannot be read.
func planGrubby(req *plan.Request, obs *Observed, prop plan.Proposal) plan.Proposal {
	if obs.GrubbyErr != nil {
		prop.Errors = append(prop.Errors, req.Unreadable("$.kernel_args", "%v", obs.GrubbyErr))
		return prop
	}
	if len(obs.Grubby) == 0 {
		prop.Errors = append(prop.Errors, req.Finding("$.kernel_args", "grubby --info=ALL lists no boot entry with a kernel: there is nothing to write the arguments to"))
		return prop
	}
	for _, e := range obs.Grubby {
		for _, w := range e.Args {
			if strings.Contains(w, "$") {
				prop.Errors = append(prop.Errors, req.Finding("$.kernel_args",
					"the boot entry of %s takes its options from a GRUB variable (%s): what grubby would write there cannot be told; put the arguments in the variable (grub2-editenv) or expand it in the entries first", e.Kernel, w))
				return prop
			}
		}
	}
	var want []string
	var absent []schema.KernelArg
	for _, a := range req.Spec.KernelArgs {
		if a.Absent {
			absent = append(absent, a)
		} else {
			want = append(want, a.Arg)
		}
	}
	remove, add := grubbySteps(obs.Grubby, req.Spec.KernelArgs)
	bad := false
	for _, e := range obs.Grubby {
		if i, why := grubbyEntryHazard(e.Args, req.Spec.KernelArgs, remove, add); why != "" {
			prop.Errors = append(prop.Errors, req.Finding(schema.Path("kernel_args", i),
				"the boot entry of %s: %s (rhboot/grubby grubby-bls update_args); set %s in the entries by hand", e.Kernel, why, keyOf(req.Spec.KernelArgs[i].Arg)))
			bad = true
		}
	}
	changed := map[string]bool{}
	var attrs []plan.Attr
	for _, a := range append(append([]schema.KernelArg{}, remove...), add...) {
		for _, e := range obs.Grubby {
			if !satisfied(e.Args, a) {
				after := a.Arg
				if a.Absent {
					after = ""
				}
				attrs = append(attrs, plan.Attr{Name: keyOf(a.Arg), Before: wordsOf(e.Args, keyOf(a.Arg)), After: after})
				break
			}
		}
		changed[a.Arg] = true
	}
	if bad {
		return prop
	}
	if len(changed) > 0 {
		prop.Changes = append(prop.Changes, &plan.Change{
			Address: plan.Addr(Kind, GrubbyAddress), Action: plan.Update, Activation: plan.NextBoot, Source: req.Pos("$.kernel_args"),
			Attributes: attrs,
			Payload:    &payload{tool: BootGrubby, args: want, absent: absent, running: obs.Running, spec: req.Spec.KernelArgs, entries: obs.Grubby},
		})
	}
	return pendingOrFailed(req, obs, prop, changed, want, "grubby wrote every boot entry: the next boot reads it")
}

// makeGrubby runs grubby --update-kernel=ALL with what every entry
// needs, then reads the entries back: each must have its options as the
// plan worked them out (editWords). A rollback (restore) gives each entry
// its words back: grubby --update-kernel=KERNEL with the words it gained
// removed and those it lost added (an added one goes at the end).
//
// Equivalent to: grubby --update-kernel=ALL --args='...' --remove-args='...'
func makeGrubby(ctx context.Context, h *host.Host, pl *payload) error {
	now, err := readGrubby(ctx, h)
	if err != nil {
		return err
	}
	if pl.restore {
		if err := restoreGrubby(ctx, h, now, pl.entries); err != nil {
			return err
		}
		// What the undone change staged waits for nothing now.
		l, err := ReadLedger(h.FS)
		if err != nil {
			return err
		}
		l.Entries = slices.DeleteFunc(l.Entries, func(e LedgerEntry) bool {
			return slices.ContainsFunc(pl.spec, func(a schema.KernelArg) bool { return a.Arg == e.Arg && a.Absent == e.Absent })
		})
		return writeLedger(h.FS, l)
	}
	remove, add := grubbySteps(now, pl.spec)
	for _, e := range now {
		if _, why := grubbyEntryHazard(e.Args, pl.spec, remove, add); why != "" {
			return fmt.Errorf("the boot entry of %s changed since the plan: %s; plan again", e.Kernel, why)
		}
	}
	cmd := grubbyCommand(remove, add)
	if len(cmd) > 2 {
		if _, err := h.Run(ctx, cmd...); err != nil {
			return fmt.Errorf("writing the boot entries: %w", err)
		}
	}
	after, err := readGrubby(ctx, h)
	if err != nil {
		return err
	}
	steps := append(append([]schema.KernelArg{}, remove...), add...)
	for _, e := range now {
		want := editWords(e.Args, steps)
		got := entryOf(after, e.Kernel)
		if got == nil || !slices.Equal(got.Args, want) {
			_ = restoreGrubby(ctx, h, after, now)
			return fmt.Errorf("grubby left the boot entry of %s with options %q, not %q; the entries were put back", e.Kernel, argsOf(got), strings.Join(want, " "))
		}
	}
	return record(h, pl)
}

func entryOf(ents []grubbyEntry, kernel string) *grubbyEntry {
	for i := range ents {
		if ents[i].Kernel == kernel {
			return &ents[i]
		}
	}
	return nil
}

func argsOf(e *grubbyEntry) string {
	if e == nil {
		return "(no such entry)"
	}
	return strings.Join(e.Args, " ")
}

// restoreGrubby gives each entry of before its words back.
func restoreGrubby(ctx context.Context, h *host.Host, now, before []grubbyEntry) error {
	var errs []error
	for _, b := range before {
		e := entryOf(now, b.Kernel)
		if e == nil {
			continue
		}
		var gained, lost []string
		for _, w := range e.Args {
			if !slices.Contains(b.Args, w) {
				gained = append(gained, w)
			}
		}
		for _, w := range b.Args {
			if !slices.Contains(e.Args, w) {
				lost = append(lost, w)
			}
		}
		if len(gained) == 0 && len(lost) == 0 {
			continue
		}
		cmd := []string{BootGrubby, "--update-kernel=" + b.Kernel}
		if len(lost) > 0 {
			cmd = append(cmd, "--args="+strings.Join(lost, " "))
		}
		if len(gained) > 0 {
			cmd = append(cmd, "--remove-args="+strings.Join(gained, " "))
		}
		if _, err := h.Run(ctx, cmd...); err != nil {
			errs = append(errs, fmt.Errorf("putting the boot entry of %s back: %w", b.Kernel, err))
		}
	}
	return errors.Join(errs...)
}
