package kcmdline

import (
	"slices"

	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// Plan implements plan.TypedProvider.
func (p *Provider) Plan(req *plan.Request, obs *Observed, _ *plan.Facts) plan.Proposal {
	var prop plan.Proposal
	if req.Spec.KernelArgs == nil || obs == nil {
		return prop
	}
	for i, a := range req.Spec.KernelArgs {
		prop.Managed = append(prop.Managed, plan.Managed{Address: ArgAddress(keyOf(a.Arg)), Path: schema.Path("kernel_args", i)})
	}
	switch obs.Bootloader {
	case BootGrub:
	case BootKernelInstall:
		if len(obs.Kernels) == 0 {
			prop.Errors = append(prop.Errors, req.Finding("$.kernel_args",
				"this host's boot entries are written by kernel-install from %s, and no installed kernel was found to add again (%s/VERSION/vmlinuz or /boot/vmlinuz-VERSION); install the kernel, or set the arguments by hand", KernelCmdline, ModulesDir))
			return prop
		}
	case BootGrubby:
		if obs.LedgerErr != nil {
			prop.Errors = append(prop.Errors, req.Unreadable("$.kernel_args", "%v", obs.LedgerErr))
			return prop
		}
		return planGrubby(req, obs, prop)
	default:
		prop.Errors = append(prop.Errors, req.Finding("$.kernel_args",
			"rdmaform does not recognise this host's bootloader: update-grub is not installed, nor grubby, nor kernel-install with %s and a BLS or UKI layout; set the kernel arguments by hand", KernelCmdline))
		return prop
	}
	if obs.LedgerErr != nil {
		prop.Errors = append(prop.Errors, req.Unreadable("$.kernel_args", "%v", obs.LedgerErr))
		return prop
	}
	if obs.Bootloader == BootKernelInstall {
		return planKernelInstall(req, obs, prop)
	}
	var want []string
	var absent []schema.KernelArg
	for i, a := range req.Spec.KernelArgs {
		if !a.Absent {
			want = append(want, a.Arg)
			// The files are sourced before rdmaform's, but
			// GRUB_CMDLINE_LINUX_DEFAULT comes after GRUB_CMDLINE_LINUX
			// on the linux line, and the kernel takes a key's last value.
			if other, ok := obs.ElsewhereArg[keyOf(a.Arg)]; ok && other != a.Arg {
				prop.Errors = append(prop.Errors, req.Finding(schema.Path("kernel_args", i),
					"%s sets %s: with it on the command line the kernel may see that value instead of %s; remove it from %s (then run update-grub)", obs.Elsewhere[keyOf(a.Arg)], other, a.Arg, obs.Elsewhere[keyOf(a.Arg)]))
			}
			continue
		}
		absent = append(absent, a)
		if f, ok := obs.Elsewhere[keyOf(a.Arg)]; ok {
			prop.Errors = append(prop.Errors, req.Finding(schema.Path("kernel_args", i),
				"%s sets %s: rdmaform writes only %s and cannot make it absent; remove it from %s (then run update-grub)", f, keyOf(a.Arg), GrubFile, f))
		}
	}
	listed := obs.Listed
	if listed == nil {
		listed = []string{}
	}
	changed := map[string]bool{}
	if !slices.Equal(listed, want) && !(len(want) == 0 && obs.Raw == nil) {
		var attrs []plan.Attr
		for _, a := range want {
			if !slices.Contains(listed, a) {
				attrs = append(attrs, plan.Attr{Name: keyOf(a), Before: valueIn(listed, keyOf(a)), After: a})
				changed[a] = true
			}
		}
		for _, a := range listed {
			if !slices.Contains(want, a) && !slices.ContainsFunc(want, func(w string) bool { return keyOf(w) == keyOf(a) }) {
				attrs = append(attrs, plan.Attr{Name: keyOf(a), Before: a, After: ""})
			}
		}
		if len(attrs) == 0 {
			attrs = append(attrs, plan.Attr{Name: "order", Before: joinArgs(listed), After: joinArgs(want)})
		}
		action := plan.Update
		switch {
		case obs.Raw == nil:
			action = plan.Create
		case len(want) == 0:
			action = plan.Delete
		}
		prop.Changes = append(prop.Changes, &plan.Change{
			Address: plan.Addr(Kind, GrubFile), Action: action, Activation: plan.NextBoot, Source: req.Pos("$.kernel_args"),
			Attributes: attrs,
			Payload:    &payload{content: renderOwnFile(want), args: want, absent: absent, running: obs.Running, before: obs.Raw},
		})
	}
	return pendingOrFailed(req, obs, prop, changed, want, GrubFile+" is written and update-grub ran: the next boot reads it")
}

// planKernelInstall plans /etc/kernel/cmdline: its words with the spec's
// arguments, then kernel-install add for each installed kernel.
func planKernelInstall(req *plan.Request, obs *Observed, prop plan.Proposal) plan.Proposal {
	words := editWords(obs.Words, req.Spec.KernelArgs)
	changed := map[string]bool{}
	var want []string
	var absent []schema.KernelArg
	for _, a := range req.Spec.KernelArgs {
		if a.Absent {
			absent = append(absent, a)
		} else {
			want = append(want, a.Arg)
		}
	}
	if !slices.Equal(words, nonNil(obs.Words)) {
		var attrs []plan.Attr
		for _, a := range req.Spec.KernelArgs {
			key := keyOf(a.Arg)
			before := wordsOf(obs.Words, key)
			after := wordsOf(words, key)
			if before != after {
				attrs = append(attrs, plan.Attr{Name: key, Before: before, After: after})
				changed[a.Arg] = true
			}
		}
		prop.Changes = append(prop.Changes, &plan.Change{
			Address: plan.Addr(Kind, KernelCmdline), Action: plan.Update, Activation: plan.NextBoot, Source: req.Pos("$.kernel_args"),
			Attributes: attrs,
			Payload:    &payload{tool: BootKernelInstall, content: renderKernelCmdline(words), args: want, absent: absent, running: obs.Running, before: obs.Raw},
		})
	}
	return pendingOrFailed(req, obs, prop, changed, want, KernelCmdline+" is written and kernel-install ran: the next boot's entry has it")
}

// wordsOf joins the words of a key.
func wordsOf(words []string, key string) string {
	var out []string
	for _, w := range words {
		if keyOf(w) == key {
			out = append(out, w)
		}
	}
	return joinArgs(out)
}

// pendingOrFailed adds what the written configuration already gives
// (changed: what this plan's change gives) as pending a reboot, or as an
// activation failure when it was written in an earlier boot.
func pendingOrFailed(req *plan.Request, obs *Observed, prop plan.Proposal, changed map[string]bool, want []string, why string) plan.Proposal {
	for i, a := range req.Spec.KernelArgs {
		if changed[a.Arg] || satisfied(obs.Running, a) {
			continue
		}
		if a.Absent {
			if _, ok := obs.Elsewhere[keyOf(a.Arg)]; ok || slices.ContainsFunc(want, func(w string) bool { return keyOf(w) == keyOf(a.Arg) }) {
				continue
			}
		}
		path := schema.Path("kernel_args", i)
		cur, ok := lastOf(obs.Running, keyOf(a.Arg))
		if !ok {
			cur = notOnLine
		}
		next := a.Arg
		if a.Absent {
			next = notOnLine
		}
		e := obs.Ledger.Find(a.Arg, a.Absent)
		if e != nil && obs.BootID != "" && e.BootID != obs.BootID {
			prop.ActivationFailures = append(prop.ActivationFailures, plan.ActivationFailure{
				Address: ArgAddress(keyOf(a.Arg)), Attribute: "cmdline", Current: cur, Staged: next,
				StagedAt: e.StagedAt.Format("2006-01-02T15:04:05Z07:00"), BootID: e.BootID, Tool: e.Tool, Source: req.Pos(path),
				Activation: &plan.ActivateBy{By: plan.ByReboot, Why: "the bootloader's configuration was written; a reboot did not bring it"},
			})
			prop.Errors = append(prop.Errors, req.Finding(path, "%s", e.DidNotTake(obs.BootID)))
			continue
		}
		prop.Pending = append(prop.Pending, plan.Pending{
			Address: ArgAddress(keyOf(a.Arg)), Attribute: "cmdline", Current: cur, NextBoot: next, Source: req.Pos(path),
			Activation: &plan.ActivateBy{By: plan.ByReboot, Why: why},
		})
	}
	return prop
}

// notOnLine is a pending item's value for a key not on the command line.
const notOnLine = "absent"

func valueIn(args []string, key string) string {
	v, _ := lastOf(args, key)
	return v
}

func joinArgs(a []string) string {
	out := ""
	for i, x := range a {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}
