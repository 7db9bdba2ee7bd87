package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/firmware"
	"github.com/rdmaform/rdmaform/schema"
)

func (a *app) statusCmd() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "status [-f SPEC] [-o text|json]",
		Short: "List what waits for a reboot, read from the host",
		Long: `List what waits for a reboot: firmware values staged for the next boot
(Next Boot differs from Current) and /run/reboot-required. Everything is
read from the host now, nothing from a cache. With -f SPEC only the
spec's firmware parameters are queried (fast); without it every adapter
gets a full query.

Exit codes: 0 nothing waits for a reboot; 1 error; 3 a reboot is needed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := a.host()
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			defer a.recordSimCalls()
			var pending []plan.Pending
			var failed []schema.Finding
			var failures []plan.ActivationFailure
			if file != "" {
				spec, err := a.loadSpec(file)
				if err != nil {
					return err
				}
				res, err := plan.Build(cmd.Context(), h, spec, []plan.Provider{firmware.New()})
				if err != nil {
					return &exitError{code: plan.ExitError, err: err}
				}
				for _, f := range res.Plan.Errors {
					if !res.Plan.ActivationFailed(f) {
						return &exitError{code: plan.ExitError, err: &findingsError{name: spec.Src.File, rep: res.Plan.Errors}}
					}
					failed = append(failed, f)
				}
				pending, failures = res.Plan.Pending, res.Plan.ActivationFailures
			} else {
				pending, err = pendingAll(cmd.Context(), h, a.env.Stderr)
				if err != nil {
					return &exitError{code: plan.ExitError, err: err}
				}
			}
			marker, err := firmware.ReadRebootMarker(h)
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			return a.printStatus(statusOf{pending, failures, failed}, marker, unfinishedRollback(h))
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "spec `FILE` (- for stdin): query only its firmware parameters")
	a.outputFlag(cmd, "text", "text", "json")
	a.hostFlags(cmd)
	return cmd
}

// statusDoc is `status -o json`.
type statusDoc struct {
	FormatVersion int            `json:"format_version"`
	Pending       []plan.Pending `json:"pending"`
	// ActivationFailures are staged values a reboot did not activate
	// (status -f): exit 1.
	ActivationFailures []plan.ActivationFailure `json:"activation_failures,omitempty"`
	// RebootRequiredFile is /run/reboot-required (Debian's marker).
	RebootRequiredFile struct {
		Present  bool     `json:"present"`
		Packages []string `json:"packages"`
	} `json:"reboot_required_file"`
	RebootRequired bool `json:"reboot_required"`
	// UnfinishedRollback is a rollback that failed part-way: what it
	// left to undo (its journal stays for 'rdmaform rollback' to retry).
	UnfinishedRollback *unfinished `json:"unfinished_rollback,omitempty"`
}

// unfinishedRollback is what a rollback that failed part-way left, from
// its journal (the live one, else its copy that outlived a reboot).
func unfinishedRollback(h *host.Host) *unfinished {
	for _, f := range []string{JournalFile, BootJournalFile} {
		if j, err := readJournalFile(h, f); err == nil {
			return j.Unfinished
		}
	}
	return nil
}

// statusOf is what status read from the spec's firmware: pending values,
// and activation failures with their findings.
type statusOf struct {
	pending  []plan.Pending
	failures []plan.ActivationFailure
	failed   []schema.Finding
}

func (a *app) printStatus(st statusOf, m firmware.RebootMarker, u *unfinished) (err error) {
	pending := st.pending
	if a.jsonOut() {
		doc := statusDoc{FormatVersion: FormatVersion, Pending: pending, ActivationFailures: st.failures, RebootRequired: len(pending) > 0 || m.Required, UnfinishedRollback: u}
		if doc.Pending == nil {
			doc.Pending = []plan.Pending{}
		}
		doc.RebootRequiredFile.Present = m.Required
		doc.RebootRequiredFile.Packages = append([]string{}, m.Packages...)
		if err := a.writeJSON(doc); err != nil {
			return err
		}
		if u != nil || len(st.failures) > 0 {
			return exitCode(plan.ExitError)
		}
		if doc.RebootRequired {
			return exitCode(plan.ExitReboot)
		}
		return nil
	}
	w := a.env.Stdout
	if u != nil {
		fmt.Fprintf(w, "  ! a rollback failed part-way (%s, by %s): still to undo %s: %s\n    run '%s' to retry\n",
			u.At.Format(time.RFC3339), u.By, strings.Join(u.Failed, ", "), u.Error, a.hint("rollback"))
		defer func() { err = exitCode(plan.ExitError) }()
	}
	for _, f := range st.failed {
		fmt.Fprintf(w, "  ! %s\n", f)
	}
	if len(st.failed) > 0 {
		defer func() { err = exitCode(plan.ExitError) }()
	}
	for _, pe := range pending {
		fmt.Fprintf(w, "  ! %s %s staged for next boot (current %s, next %s)\n", pe.Address, pe.Attribute, pe.Current, pe.NextBoot)
	}
	if m.Required {
		line := "  ! " + firmware.RebootRequired + " is present"
		if len(m.Packages) > 0 {
			line += " (" + strings.Join(m.Packages, ", ") + ")"
		}
		fmt.Fprintln(w, line)
	}
	if len(pending) == 0 && !m.Required {
		fmt.Fprintln(w, "Nothing waits for a reboot.")
		return nil
	}
	fmt.Fprintln(w, "Reboot required.")
	return exitCode(plan.ExitReboot)
}

// pendingAll queries every adapter's whole firmware configuration, one
// PCI function per card (the functions share it), in parallel, and lists
// the values whose Next Boot differs from Current. A host without a
// firmware tool or without adapters has nothing pending here.
func pendingAll(ctx context.Context, h *host.Host, warn io.Writer) ([]plan.Pending, error) {
	inv, err := inventory.Discover(ctx, h)
	if err != nil {
		return nil, fmt.Errorf("reading RDMA devices from sysfs: %w", err)
	}
	seen := map[string]bool{}
	var pcis []string
	for _, d := range inv.Devices {
		if d.PCI == "" || !host.Exists(h.FS, "/sys/bus/pci/devices/"+d.PCI) {
			continue
		}
		slot := d.PCI
		if i := strings.LastIndexByte(slot, '.'); i >= 0 {
			slot = slot[:i]
		}
		if !seen[slot] {
			seen[slot] = true
			pcis = append(pcis, d.PCI)
		}
	}
	sort.Strings(pcis)
	if len(pcis) == 0 {
		return nil, nil
	}
	tools := &firmware.ToolPicker{}
	if _, err := tools.Pick(ctx, h, "auto"); err != nil {
		if errors.Is(err, firmware.ErrNoTool) {
			fmt.Fprintf(warn, "rdmaform: firmware not read: %v\n", err)
			return nil, nil
		}
		return nil, err
	}
	mst := &firmware.MSTMap{}
	obs := make([]*firmware.AdapterObs, len(pcis))
	var wg sync.WaitGroup
	for i, pci := range pcis {
		wg.Add(1)
		go func() {
			defer wg.Done()
			obs[i] = firmware.ReadAdapter(ctx, h, tools, mst, "auto", pci, nil)
		}()
	}
	wg.Wait()
	var out []plan.Pending
	for i, o := range obs {
		if o.Err != nil {
			return nil, fmt.Errorf("%s: %w", firmware.Address(pcis[i]), o.Err)
		}
		var names []string
		for n, p := range o.Params {
			if p.Pending() {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		for _, n := range names {
			p := o.Params[n]
			out = append(out, plan.Pending{Address: firmware.Address(pcis[i]), Attribute: n, Current: p.Current.Display(), NextBoot: p.NextBoot.Display()})
		}
	}
	return out, nil
}
