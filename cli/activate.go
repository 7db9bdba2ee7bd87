package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers"
	"github.com/rdmaform/rdmaform/providers/firmware"
	"github.com/rdmaform/rdmaform/providers/firmware/mlxfmt"
	"github.com/rdmaform/rdmaform/providers/sriov"
	"github.com/rdmaform/rdmaform/schema"
)

// Limits of activate --wait: how long a reset card may take to register
// its RDMA devices and netdevs again.
const (
	minActivateWait = time.Second
	maxActivateWait = time.Hour
)

// rdmaConsumers are kernel modules that keep RDMA connections of their
// own (NVMe over RDMA, NFS over RDMA, SRP, iSER, Lustre's LNet, RDS,
// SMC-R): a firmware reset of the adapter under them breaks their
// connections, so activate refuses while one holds the RDMA core
// (/sys/module/ib_core/holders), unless --force.
var rdmaConsumers = map[string]string{
	"nvme_rdma":  "NVMe over RDMA (initiator)",
	"nvmet_rdma": "NVMe over RDMA (target)",
	"rpcrdma":    "NFS over RDMA",
	"svcrdma":    "NFS over RDMA (server)",
	"xprtrdma":   "NFS over RDMA (client)",
	"ib_srp":     "SRP (initiator)",
	"ib_srpt":    "SRP (target)",
	"ib_iser":    "iSER (initiator)",
	"ib_isert":   "iSER (target)",
	"ko2iblnd":   "Lustre LNet (o2ib)",
	"rds_rdma":   "RDS over RDMA",
	"smc":        "SMC-R",
}

// blueFields are the PCI device IDs of BlueField DPUs: resetting one
// resets its Arm side too, which runs an operating system of its own.
var blueFields = map[string]string{"0xa2d2": "BlueField", "0xa2d6": "BlueField-2", "0xa2dc": "BlueField-3"}

// activateCard is one card's part of an activation.
type activateCard struct {
	// Card is the PCI slot (0000:3b:00), Functions its PCI functions with
	// staged values or RDMA devices.
	Card      string   `json:"card"`
	Functions []string `json:"functions"`
	By        string   `json:"by"`
	Level     int      `json:"level,omitempty"`
	Why       string   `json:"why"`
	// Result: reset (done and back), failed, refused (a precondition),
	// left (needs another way: a reboot), reboot (activated by the reboot).
	Result string `json:"result"`
	Reason string `json:"reason,omitempty"`
	// VFs is the VF count of each PF set to 0 for the reset and restored.
	VFs map[string]int `json:"vfs,omitempty"`

	tool     string
	resetDev string
	items    []string
	funcs    map[string]*inventory.Device
}

// activateDoc is activate -o json.
type activateDoc struct {
	FormatVersion int `json:"format_version"`
	// By is what activate did: fw-reset, reboot, or none.
	By             string         `json:"by"`
	Cards          []activateCard `json:"cards"`
	Refused        []string       `json:"refused,omitempty"`
	Pending        []plan.Pending `json:"pending"`
	Errors         []jsonError    `json:"errors"`
	RebootRequired bool           `json:"reboot_required"`
	// Interrupted: a signal (SIGINT, SIGTERM) stopped activate; the
	// resets under way ran to their end, the runtime part was not applied
	// again.
	Interrupted bool `json:"interrupted,omitempty"`
}

type activateOptions struct {
	by    string
	yes   bool
	force bool
	wait  time.Duration
}

func (a *app) activateCmd() *cobra.Command {
	var file string
	var o activateOptions
	var lockTimeout, confirmTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "activate [-f SPEC] [--by fw-reset|reboot] [--yes] [--force] [-o text|json]",
		Short: "Make staged firmware values current (firmware reset or reboot), then prove it",
		Long: `Make what is staged for the next boot current, then verify. Each
pending item says how it can become current (plan, status): a firmware
reset of its card (mstfwreset/mlxfwreset), a reboot, or a power cycle.

--by fw-reset resets each card once (both functions), cards in parallel.
Before anything changes every precondition is checked and reported, and
nothing is changed when one fails: a kernel user of RDMA (a module
holding the RDMA core: /sys/module/ib_core/holders; an NFS mount over
RDMA: /proc/mounts; NVMe over RDMA: /sys/class/nvme/*/transport; an
rdma_cm ID of the kernel's: rdma resource show cm_id) is refused unless
--force; a BlueField DPU is refused; a card whose
firmware reports no reset level needs a power cycle (exit 1). VFs are set
to 0 before the reset and restored after (count and settings). The card
registers again: activate waits (--wait) for its RDMA devices and
netdevs, applies the spec's runtime part again (-f SPEC), and verifies
that the plan is empty; a card not back within --wait fails (exit 1),
named with what did not come back. A card that only a reboot activates
is left: exit 3. An interrupt (Ctrl-C, SIGTERM) does not stop a reset:
the reset tool gets SIGTERM only after apply's grace period (a minute)
and is never killed; activate waits for the card and its VFs, then
stops without applying the runtime part (exit 130 or 143).

--by reboot reboots through systemd (the boot unit and the staged ledger
do the rest after the boot), only with --yes or a confirmed prompt.
Without --by, the cheapest way every pending item allows.

Exit 0: everything staged is current (and the plan empty); 1: an error,
a refusal or a power cycle needed; 3: a reboot is still needed; 130/143:
interrupted by SIGINT/SIGTERM.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("confirm-timeout") {
				return &exitError{code: plan.ExitError, err: fmt.Errorf("activate --confirm-timeout: a firmware reset cannot be undone but by another one (the configuration it loaded is the one that was staged), and a reboot cannot be taken back; nothing was changed (stage with apply --confirm-timeout --allow-firmware, then activate)")}
			}
			switch o.by {
			case "", plan.ByFWReset, plan.ByReboot:
			case plan.ByPowerCycle:
				return &exitError{code: plan.ExitError, err: fmt.Errorf("--by power-cycle: rdmaform cannot power-cycle a host; do it out of band (BMC, PDU), then run rdmaform plan")}
			default:
				return &exitError{code: plan.ExitError, err: fmt.Errorf("--by %q: the ways are fw-reset and reboot", o.by)}
			}
			if o.wait < minActivateWait || o.wait > maxActivateWait {
				return &exitError{code: plan.ExitError, err: fmt.Errorf("--wait %s: between %s and %s", o.wait, minActivateWait, maxActivateWait)}
			}
			if o.force && o.by == plan.ByReboot {
				return &exitError{code: plan.ExitError, err: fmt.Errorf("--force overrides a firmware reset's refusal; a reboot has none")}
			}
			var spec *schema.Spec
			if file != "" {
				var err error
				if spec, err = a.loadSpec(file); err != nil {
					return err
				}
			}
			h, err := a.host()
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			defer a.recordSimCalls()
			if err := a.refuseWhileWaiting(h); err != nil {
				return err
			}
			unlock, err := h.LockWaiting(cmd.Context(), lockTimeout, "rdmaform activate", func(string) {
				fmt.Fprintf(a.info(), "rdmaform: waiting up to %s for the host's apply lock (%s)\n", lockTimeout, host.LockFile)
			})
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			defer unlock()
			return a.activate(cmd.Context(), h, spec, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&file, "file", "f", "", "spec `FILE` (- for stdin): its pending items, and its runtime part applied again after a reset")
	fl.StringVar(&o.by, "by", "", "activate by `WAY`: fw-reset or reboot (default: the cheapest every pending item allows)")
	fl.BoolVarP(&o.yes, "yes", "y", false, "reboot without asking (--by reboot)")
	fl.BoolVar(&o.force, "force", false, "reset even while a kernel user of RDMA (NVMe/NFS over RDMA, SRP, iSER) holds the RDMA core")
	fl.DurationVar(&o.wait, "wait", 2*time.Minute, "how long a reset card may take to register again (1s to 1h)")
	fl.DurationVar(&lockTimeout, "lock-timeout", 30*time.Second, "how long to wait for an apply on this host to finish")
	fl.DurationVar(&confirmTimeout, "confirm-timeout", 0, "refused: a firmware reset or reboot cannot be taken back")
	a.outputFlag(cmd, "text", "text", "json")
	a.hostFlags(cmd)
	return cmd
}

// activate finds what is staged, card by card, and activates it.
func (a *app) activate(ctx context.Context, h *host.Host, spec *schema.Spec, o activateOptions) error {
	doc := &activateDoc{FormatVersion: FormatVersion, By: "none", Cards: []activateCard{}, Pending: []plan.Pending{}, Errors: []jsonError{}}
	cards, err := a.stagedCards(ctx, h, spec)
	if err != nil {
		return err
	}
	if len(cards) == 0 {
		return a.activateDone(doc, "Nothing is staged: nothing to activate.", 0)
	}
	need := map[string]bool{}
	for _, c := range cards {
		need[c.By] = true
	}
	by := o.by
	if by == "" {
		by = plan.ByFWReset
		if need[plan.ByReboot] {
			by = plan.ByReboot // one reboot activates every card
		}
	}
	// A card only a power cycle activates: neither way helps, nothing is done.
	var power []string
	for i := range cards {
		if cards[i].By == plan.ByPowerCycle {
			cards[i].Result, cards[i].Reason = "refused", cards[i].Why
			power = append(power, fmt.Sprintf("%s: only a power cycle activates what is staged (%s)", cards[i].Card, cards[i].Why))
		}
	}
	if len(power) > 0 {
		doc.Cards, doc.Refused = cards, power
		return a.activateDone(doc, "Nothing was changed:\n  "+strings.Join(power, "\n  "), plan.ExitError)
	}
	if by == plan.ByReboot {
		return a.activateByReboot(ctx, h, cards, o, doc)
	}
	return a.activateByReset(ctx, h, spec, cards, o, doc)
}

// stagedCards lists the cards with staged values (pending items, and
// values a reboot did not activate), each with how it can be activated.
func (a *app) stagedCards(ctx context.Context, h *host.Host, spec *schema.Spec) ([]activateCard, error) {
	var pending []plan.Pending
	var failures []plan.ActivationFailure
	if spec != nil {
		res, err := a.build(ctx, h, spec)
		if err != nil {
			return nil, err
		}
		for _, f := range res.Plan.Errors {
			if !res.Plan.ActivationFailed(f) {
				return nil, &exitError{code: plan.ExitError, err: &findingsError{name: spec.Src.File, rep: res.Plan.Errors}}
			}
		}
		pending, failures = res.Plan.Pending, res.Plan.ActivationFailures
	} else {
		var err error
		if pending, err = pendingAll(ctx, h, a.env.Stderr); err != nil {
			return nil, &exitError{code: plan.ExitError, err: err}
		}
	}
	inv, err := inventory.Discover(ctx, h)
	if err != nil {
		return nil, &exitError{code: plan.ExitError, err: fmt.Errorf("reading RDMA devices from sysfs: %w", err)}
	}
	bySlot := map[string]*activateCard{}
	card := func(pci string) *activateCard {
		slot := slotOfPCI(pci)
		c := bySlot[slot]
		if c == nil {
			c = &activateCard{Card: slot, funcs: map[string]*inventory.Device{}}
			for _, d := range inv.Devices {
				if d.PCI != "" && slotOfPCI(d.PCI) == slot {
					c.funcs[d.PCI] = d
				}
			}
			bySlot[slot] = c
		}
		if !slices.Contains(c.Functions, pci) {
			c.Functions = append(c.Functions, pci)
		}
		return c
	}
	worse := func(c *activateCard, act *plan.ActivateBy, dev string) {
		rank := map[string]int{plan.ByFWReset: 1, plan.ByReboot: 2, plan.ByPowerCycle: 3}
		if act == nil {
			act = &plan.ActivateBy{By: plan.ByReboot, Why: "no way to activate was found"}
		}
		if rank[act.By] > rank[c.By] {
			c.By, c.Level, c.Why, c.tool, c.resetDev = act.By, act.Level, act.Why, act.Tool, dev
		}
	}
	for _, pe := range pending {
		pci := pe.Address.Key
		c := card(pci)
		c.items = append(c.items, pe.Text())
		worse(c, pe.Activation, pci)
	}
	tools := &firmware.ToolPicker{}
	for _, af := range failures {
		pci := af.Address.Key
		c := card(pci)
		c.items = append(c.items, fmt.Sprintf("%s %s staged %s in boot %s, still %s (a reboot did not activate it)", af.Address, af.Attribute, af.Staged, af.BootID, af.Current))
		act := af.Activation // the tool said, as it staged it, how
		if act == nil {
			act = firmware.Activation(ctx, h, tools, af.Tool, pci)
		}
		if act.By == plan.ByReboot {
			// A reboot did not do it: a firmware reset or a power cycle.
			act = &plan.ActivateBy{By: plan.ByPowerCycle, Why: "a reboot did not reload the firmware and " + act.Why}
		}
		worse(c, act, pci)
	}
	var out []activateCard
	for _, c := range bySlot {
		sort.Strings(c.Functions)
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Card < out[j].Card })
	return out, nil
}

func slotOfPCI(pci string) string {
	if i := strings.LastIndexByte(pci, '.'); i >= 0 {
		return pci[:i]
	}
	return pci
}

// activateDone writes the document (or the message) and exits with code.
func (a *app) activateDone(doc *activateDoc, msg string, code int) error {
	doc.RebootRequired = code == plan.ExitReboot
	if a.jsonOut() {
		if err := a.writeJSON(doc); err != nil {
			return err
		}
		return exitCode(code)
	}
	if msg != "" {
		fmt.Fprintln(a.env.Stdout, msg)
	}
	return exitCode(code)
}

// activateByReboot says what a reboot will activate and reboots through
// the service manager, with --yes or a confirmed prompt.
func (a *app) activateByReboot(ctx context.Context, h *host.Host, cards []activateCard, o activateOptions, doc *activateDoc) error {
	doc.By = plan.ByReboot
	var lines []string
	for i := range cards {
		cards[i].Result = "reboot"
		lines = append(lines, cards[i].items...)
	}
	doc.Cards = cards
	if !a.jsonOut() {
		fmt.Fprintf(a.env.Stdout, "A reboot activates:\n  %s\nAfter the boot the boot unit applies the runtime state again and the staged ledger (%s) checks that each value took.\n",
			strings.Join(lines, "\n  "), firmware.LedgerPath)
	}
	r, ok := h.Systemd.(host.Rebooter)
	if h.Systemd == nil || !ok {
		return &exitError{code: plan.ExitError, err: fmt.Errorf("no service manager to reboot through (systemd's D-Bus API); nothing was changed")}
	}
	if !o.yes {
		if err := a.askFirst("activate --by reboot", "reboots", "use --yes to reboot without asking"); err != nil {
			return err
		}
	}
	if err := r.Reboot(ctx); err != nil {
		return &exitError{code: plan.ExitError, err: fmt.Errorf("rebooting: %w", err)}
	}
	return a.activateDone(doc, "Reboot started.", 0)
}

// activateByReset checks every precondition, then resets each card that
// a firmware reset activates (in parallel), waits for it, restores its
// VFs, applies the spec again and verifies.
func (a *app) activateByReset(ctx context.Context, h *host.Host, spec *schema.Spec, cards []activateCard, o activateOptions, doc *activateDoc) error {
	doc.By = plan.ByFWReset
	var refused []string
	holders := rdmaUsers(ctx, h)
	for i := range cards {
		c := &cards[i]
		if c.By != plan.ByFWReset {
			c.Result, c.Reason = "left", c.Why
			continue
		}
		for _, pci := range c.Functions {
			id, _ := host.ReadAttr(h.FS, "/sys/bus/pci/devices/"+pci+"/device")
			if name, ok := blueFields[strings.ToLower(id)]; ok {
				r := fmt.Sprintf("%s is a %s DPU: a firmware reset resets its Arm side and the operating system there; activate it with --by reboot", pci, name)
				c.Result, c.Reason = "refused", r
				refused = append(refused, r)
				break
			}
		}
		if len(holders) > 0 && !o.force {
			r := fmt.Sprintf("%s: a firmware reset breaks the RDMA connections of %s; stop %s, or use --force",
				c.Card, strings.Join(holders, ", "), map[bool]string{true: "them", false: "it"}[len(holders) > 1])
			if c.Result == "" {
				c.Result, c.Reason = "refused", r
			}
			refused = append(refused, r)
		}
	}
	doc.Cards = cards
	if len(refused) > 0 {
		doc.Refused = refused
		return a.activateDone(doc, "Nothing was changed:\n  "+strings.Join(refused, "\n  "), plan.ExitError)
	}
	if ctx.Err() != nil {
		return a.activateInterrupted(ctx, doc, spec)
	}
	// An interrupt reaches a reset under way only after apply's grace
	// period, as it reaches a firmware set (and then as SIGTERM, never
	// SIGKILL): the reset ends, the card is waited for and its VFs come
	// back, then activate stops.
	rctx, stop := apply.GraceContext(ctx, apply.DefaultGrace)
	var wg sync.WaitGroup
	for i := range cards {
		if cards[i].By != plan.ByFWReset {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.resetCard(rctx, h, &cards[i], o.wait)
		}()
	}
	wg.Wait()
	stop()
	var msgs []string
	left := false
	for _, c := range cards {
		switch c.Result {
		case "reset":
			if !a.jsonOut() {
				fmt.Fprintf(a.env.Stdout, "%s: firmware reset (level %d) done, the card is back%s\n", c.Card, c.Level, vfText(c.VFs))
			}
		case "left":
			left = true
			if !a.jsonOut() {
				fmt.Fprintf(a.env.Stdout, "%s: left for a reboot (%s)\n", c.Card, c.Reason)
			}
		default:
			msgs = append(msgs, fmt.Sprintf("%s: %s", c.Card, c.Reason))
		}
	}
	if ctx.Err() != nil {
		return a.activateInterrupted(ctx, doc, spec, msgs...)
	}
	// The cards registered again: the spec's runtime part, then the proof.
	var after *plan.Plan
	if spec != nil {
		r, err := apply.Converge(ctx, h, apply.ConvergeOptions{
			Build:     func(ctx context.Context) (*plan.Result, error) { return a.build(ctx, h, spec) },
			Providers: providers.All(),
			Guard:     apply.GuardOptions{Environ: a.env.Environ},
		})
		if err != nil {
			msgs = append(msgs, err.Error())
		}
		if r != nil {
			msgs = append(msgs, r.Errors...)
			after = r.After
			if after == nil {
				after = r.Before
			}
			if !r.Ran {
				for _, f := range after.Errors {
					msgs = append(msgs, f.String())
				}
			} else if !a.jsonOut() {
				fmt.Fprintf(a.env.Stdout, "Runtime settings applied again: %d applied, %d failed, %d skipped.\n", len(r.Outcome.Applied), len(r.Outcome.Failed), len(r.Outcome.Skipped))
			}
			if after != nil {
				a.syncRebootMarker(h, after)
			}
		}
	} else {
		pending, err := pendingAll(ctx, h, a.env.Stderr)
		if err != nil {
			msgs = append(msgs, err.Error())
		}
		after = &plan.Plan{Pending: pending}
	}
	if after != nil {
		doc.Pending = nonNil(after.Pending)
		for _, pe := range after.Pending {
			if !a.jsonOut() {
				fmt.Fprintf(a.env.Stdout, "  ! %s\n", pe.Text())
			}
		}
		if len(after.Pending) > 0 || len(after.Deferred) > 0 || len(after.Changes) > 0 {
			left = true
		}
	}
	for _, m := range msgs {
		doc.Errors = append(doc.Errors, jsonError{Message: m})
	}
	switch {
	case len(msgs) > 0:
		if a.jsonOut() {
			return a.activateDone(doc, "", plan.ExitError)
		}
		return &exitError{code: plan.ExitError, err: fmt.Errorf("activate failed:\n%s", strings.Join(msgs, "\n"))}
	case left:
		return a.activateDone(doc, "A reboot is still needed to finish.", plan.ExitReboot)
	}
	msg := "Every staged value is current."
	if spec != nil {
		msg += " The host matches the spec."
	}
	return a.activateDone(doc, msg, 0)
}

// activateInterrupted reports an activation a signal stopped (before
// any reset, or after the resets under way ended): what was done, what
// was not (the runtime part and the proof), exit 130 for SIGINT, 143 for
// SIGTERM. msgs are the cards' failures.
func (a *app) activateInterrupted(ctx context.Context, doc *activateDoc, spec *schema.Spec, msgs ...string) error {
	code := 130
	var se *SignalError
	if errors.As(context.Cause(ctx), &se) {
		code = se.ExitCode()
	}
	doc.Interrupted = true
	var done []string
	for _, c := range doc.Cards {
		if c.Result == "reset" {
			done = append(done, c.Card)
		}
	}
	left := "checking that nothing is still staged (run rdmaform status)"
	if spec != nil {
		left = fmt.Sprintf("applying the spec's runtime part again and checking that the plan is empty (run rdmaform apply -f %s)", spec.Src.File)
	}
	did := "no card was reset"
	if len(done) > 0 {
		did = "reset " + strings.Join(done, ", ") + " (the firmware reset ran to its end, the card is back)"
	}
	doc.Errors = append(doc.Errors, jsonError{Message: "interrupted"})
	for _, m := range msgs {
		doc.Errors = append(doc.Errors, jsonError{Message: m})
	}
	if a.jsonOut() {
		if err := a.writeJSON(doc); err != nil {
			return err
		}
		return exitCode(code)
	}
	for _, m := range msgs {
		fmt.Fprintln(a.env.Stdout, m)
	}
	fmt.Fprintf(a.env.Stdout, "\nInterrupted: %s; not done: %s.\n", did, left)
	return &exitError{code: code, err: fmt.Errorf("activate interrupted: %s; not done: %s", did, left)}
}

func vfText(vfs map[string]int) string {
	if len(vfs) == 0 {
		return ""
	}
	var parts []string
	for pf, n := range vfs {
		parts = append(parts, fmt.Sprintf("%s %d", pf, n))
	}
	sort.Strings(parts)
	return " (VFs restored: " + strings.Join(parts, ", ") + ")"
}

// savedVFs is one PF's VFs before a reset.
type savedVFs struct {
	pf     string
	netdev string
	count  int
	vfs    map[int]sriov.VFInfo
}

// resetCard resets one card: its VFs to 0, the reset tool at the card's
// level (never SIGKILLed), the wait for its RDMA devices and netdevs, its
// VFs back with their settings.
//
// Equivalent to: echo 0 > /sys/bus/pci/devices/PF/sriov_numvfs; mstfwreset -d PCI reset -y --level 3;
// echo N > /sys/bus/pci/devices/PF/sriov_numvfs; ip link set PF vf I mac ... (each VF)
func (a *app) resetCard(ctx context.Context, h *host.Host, c *activateCard, wait time.Duration) {
	fail := func(format string, args ...any) {
		c.Result, c.Reason = "failed", fmt.Sprintf(format, args...)
	}
	var saved []savedVFs
	for _, pci := range sortedKeys(c.funcs) {
		pf, err := sriov.Read(h, pci)
		if err != nil || pf.NumVFs == 0 {
			continue
		}
		s := savedVFs{pf: pci, count: pf.NumVFs}
		if d := c.funcs[pci]; d != nil && len(d.Ports) > 0 && len(d.Ports[0].Netdevs) > 0 {
			s.netdev = d.Ports[0].Netdevs[0]
			s.vfs, _ = sriov.ReadVFs(ctx, h, s.netdev)
		}
		if err := h.FS.WriteAttr(sriov.Dir(pci)+"/sriov_numvfs", []byte("0")); err != nil {
			fail("setting sriov_numvfs of %s to 0 before the reset: %v", pci, err)
			a.restoreVFs(ctx, h, c, saved)
			return
		}
		saved = append(saved, s)
	}
	tool := c.tool
	if tool == "" {
		tool = firmware.MSTFWReset
	}
	dev := c.resetDev
	if dev == "" {
		dev = c.Functions[0]
	}
	// Gentle: an interrupt never stops a reset half way (SIGTERM after the
	// grace period, never SIGKILL; Ctrl-C does not reach it).
	cmd := host.Cmd{Args: []string{tool, "-d", dev, "reset", "-y", "--level", strconv.Itoa(c.Level)}, Gentle: true, Timeout: 15 * time.Minute}
	fmt.Fprintf(a.info(), "firmware reset %s: resetting (level %d)...\n", c.Card, c.Level)
	start := time.Now()
	_, err := h.Runner.Run(ctx, cmd)
	fmt.Fprintf(a.info(), "firmware reset %s: ended after %s\n", c.Card, time.Since(start).Round(time.Millisecond))
	if err != nil {
		var ee *host.ExitError
		if errors.As(err, &ee) {
			if te := mlxfmt.ParseResetError(ee.Stdout); te != nil {
				if te.Kind == mlxfmt.ResetErrNoLevel || te.Kind == mlxfmt.ResetErrLevel {
					c.By = plan.ByPowerCycle
				}
				fail("%s: -E- %s", cmd, te.Message)
				a.restoreVFs(ctx, h, c, saved)
				return
			}
		}
		fail("%s: %v", cmd, err)
		a.restoreVFs(ctx, h, c, saved)
		return
	}
	if err := waitForCard(ctx, h, c, wait); err != nil {
		fail("%v", err)
		a.restoreVFs(ctx, h, c, saved)
		return
	}
	c.Result = "reset"
	a.restoreVFs(ctx, h, c, saved)
}

// restoreVFs gives each PF its VFs back, with the settings they had.
func (a *app) restoreVFs(ctx context.Context, h *host.Host, c *activateCard, saved []savedVFs) {
	for _, s := range saved {
		if !rdmaRegistered(h, s.pf) {
			// No driver bound: sriov_numvfs refuses (ENOENT).
			c.Result, c.Reason = "failed", joinReason(c.Reason, fmt.Sprintf("the %d VFs of %s are not restored: it did not come back", s.count, s.pf))
			continue
		}
		if err := h.FS.WriteAttr(sriov.Dir(s.pf)+"/sriov_numvfs", []byte(strconv.Itoa(s.count))); err != nil {
			c.Result, c.Reason = "failed", joinReason(c.Reason, fmt.Sprintf("restoring %d VFs of %s: %v", s.count, s.pf, err))
			continue
		}
		if c.VFs == nil {
			c.VFs = map[string]int{}
		}
		c.VFs[s.pf] = s.count
		if now := pfNetdev(ctx, h, s.pf); now != s.netdev {
			// The port changed its link layer (ib0 is ens1f0np0 now): the
			// VFs' old settings are of the other kind; the spec sets theirs.
			continue
		}
		ib := pfKind(h, s.netdev) == "32"
		for _, i := range sortedKeys(s.vfs) {
			v := s.vfs[i]
			cfg := host.VFConfig{State: v.State}
			if ib {
				// An InfiniBand VF has GUIDs; MAC, trust and spoofchk are
				// Ethernet's (mlx5 refuses them on an IPoIB PF).
				cfg.NodeGUID, cfg.PortGUID = unlessZero(v.NodeGUID), unlessZero(v.PortGUID)
			} else {
				cfg.MAC, cfg.Trust, cfg.Spoofchk = unlessZero(v.MAC), &v.Trust, &v.Spoofchk
			}
			if err := h.Net.LinkSetVF(s.netdev, i, cfg); err != nil {
				c.Result, c.Reason = "failed", joinReason(c.Reason, fmt.Sprintf("restoring VF %d of %s: %v", i, s.netdev, err))
			}
		}
	}
}

// pfNetdev is the netdev of port 1 of the PCI function's RDMA device now.
func pfNetdev(ctx context.Context, h *host.Host, pci string) string {
	inv, err := inventory.Discover(ctx, h)
	if err != nil {
		return ""
	}
	for _, d := range inv.Devices {
		if d.PCI == pci && len(d.Ports) > 0 && len(d.Ports[0].Netdevs) > 0 {
			return d.Ports[0].Netdevs[0]
		}
	}
	return ""
}

// pfKind is the ARPHRD type of a netdev (32: InfiniBand, 1: Ethernet).
func pfKind(h *host.Host, netdev string) string {
	t, _ := host.ReadAttr(h.FS, "/sys/class/net/"+netdev+"/type")
	return t
}

// unlessZero is "" for an all-zero MAC or GUID (not set), else s.
func unlessZero(s string) string {
	if strings.Trim(s, "0:") == "" {
		return ""
	}
	return s
}

func joinReason(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func sortedKeys[K interface{ ~int | ~string }, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// waitForCard waits until every RDMA device of the card is registered
// again, with a netdev on each port that had one, bounded by wait; on
// timeout the error names what did not come back.
func waitForCard(ctx context.Context, h *host.Host, c *activateCard, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		missing := cardMissing(ctx, h, c)
		if len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after the reset %s did not come back within %s (--wait; a slow card needs a longer one); if the driver failed to probe the card (the kernel log says), a reboot probes it again, then rdmaform apply sets its runtime part", strings.Join(missing, "; "), wait)
		}
		t := time.NewTimer(200 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("waiting for %s: %w", strings.Join(missing, ", "), ctx.Err())
		case <-t.C:
		}
	}
}

// cardMissing lists the card's RDMA devices (by PCI function) and netdevs
// not registered now: each function's infiniband/ and net/ directories in
// sysfs (/sys/bus/pci/devices/PCI/...), where the driver registers them;
// as many netdevs as it had (its ports', not its VFs').
//
// Equivalent to: ls /sys/bus/pci/devices/PCI/infiniband /sys/bus/pci/devices/PCI/net
func cardMissing(_ context.Context, h *host.Host, c *activateCard) []string {
	var missing []string
	for _, pci := range sortedKeys(c.funcs) {
		if m := functionMissing(h, pci, c.funcs[pci]); m != "" {
			missing = append(missing, m)
		}
	}
	return missing
}

// functionMissing says what of the PCI function's RDMA device and netdevs
// (it had was before the reset) is not registered now, or "".
func functionMissing(h *host.Host, pci string, was *inventory.Device) string {
	dir := "/sys/bus/pci/devices/" + pci
	want := 0
	var names []string
	for _, p := range was.Ports {
		if len(p.Netdevs) > 0 {
			want++
			names = append(names, p.Netdevs...)
		}
	}
	if !rdmaRegistered(h, pci) {
		if len(names) == 0 {
			return "the RDMA device of " + pci + " (was " + was.Name + ")"
		}
		return fmt.Sprintf("the RDMA device of %s (was %s) and its netdevs (were %s)", pci, was.Name, strings.Join(names, ", "))
	}
	if es, _ := h.FS.ReadDir(dir + "/net"); len(es) < want {
		return fmt.Sprintf("the netdevs of %s (were %s)", pci, strings.Join(names, ", "))
	}
	return ""
}

// rdmaRegistered reports whether the PCI function has an RDMA device now
// (its driver is bound and registered it).
func rdmaRegistered(h *host.Host, pci string) bool {
	es, err := h.FS.ReadDir("/sys/bus/pci/devices/" + pci + "/infiniband")
	return err == nil && len(es) > 0
}
