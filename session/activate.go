package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/words"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers"
	"github.com/rdmaform/rdmaform/providers/bootunit"
	"github.com/rdmaform/rdmaform/providers/firmware"
	"github.com/rdmaform/rdmaform/providers/firmware/mlxfmt"
	"github.com/rdmaform/rdmaform/providers/kcmdline"
	"github.com/rdmaform/rdmaform/providers/sriov"
	"github.com/rdmaform/rdmaform/schema"
)

// ActivateOptions are an activation's inputs (rdmaform activate's flags).
type ActivateOptions struct {
	// Spec, when given, names what is staged (its pending items) and is
	// applied again after a reset (its runtime part), then verified.
	// Without it, Pending says what is staged.
	Spec *schema.Spec
	// By is the way: plan.ByFWReset, plan.ByReboot, or "" (the cheapest
	// every pending item allows).
	By string
	// Force resets even while a kernel user of RDMA holds the RDMA core.
	Force bool
	// Wait is how long a reset card may take to register again
	// (MinActivateWait to MaxActivateWait).
	Wait time.Duration
	// Yes reboots without Ask; Ask (nil refuses) is asked before a reboot.
	Yes bool
	Ask func() error
	// LockTimeout is how long to wait for an apply on the host to finish;
	// LockWaiting is told before the wait.
	LockTimeout time.Duration
	LockWaiting func(holder string)
	// Out receives activate's text (what each card did, the closing
	// line); nil: none, the caller renders Result.Doc. Warn receives
	// warnings, Info progress remarks (nil: none).
	Out, Warn, Info io.Writer
	// Environ is the environment (the guard's SSH session).
	Environ []string
	// Pending lists what is staged on the host without a spec (the CLI's
	// firmware query, as rdmaform status reads it); nil: a spec is needed.
	Pending func(ctx context.Context, h *host.Host, warn io.Writer) ([]plan.Pending, error)
	// Hint names follow-up commands in messages (default "rdmaform ARGS").
	Hint Hint
}

// ActivateResult is what an activation did: its document (activate -o
// json) and exit code (0 everything staged is current, 1 a refusal or a
// failure, 3 a reboot still needed, 130/143 interrupted).
type ActivateResult struct {
	Doc  *ActivateDoc
	Code int
}

// ExitError is an activation that ends with Code; Err, when set, says
// why (the CLI prints it).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

func exitCode(code int) error { return &ExitError{Code: code} }

// FindingsError is a spec (or another file) with positioned findings.
type FindingsError struct {
	Name   string
	Report schema.Report
}

func (e *FindingsError) Error() string {
	return fmt.Sprintf("%s: %d %s", e.Name, len(e.Report), words.Plural(len(e.Report), "error", "errors"))
}

// JSONError is one error of a JSON document, in the one shape of every
// document's errors (schema.Finding: path and source when it has them).
type JSONError = schema.Finding

// Activate makes what is staged for the next boot current, as rdmaform
// activate does: it refuses while the host is busy (*BusyError), takes
// the host's apply lock (*LockError), finds what is staged card by card,
// checks every precondition (refused: exit 1, nothing changed), then
// resets each card a firmware reset activates (in parallel: VFs to 0
// and back, waiting for the card), applies the spec's runtime part again
// and verifies, or reboots. An error is an *ExitError with its code (or
// one of the above); a result comes with the document otherwise.
func Activate(ctx context.Context, h *host.Host, o ActivateOptions) (*ActivateResult, error) {
	switch o.By {
	case "", plan.ByFWReset, plan.ByReboot:
	default:
		// Every other way (none, power-cycle, a typo) is refused: none of
		// them is a firmware reset, which is what the rest would do.
		return nil, &ExitError{Code: plan.ExitError, Err: fmt.Errorf("activate by %q: the ways are %s and %s (or none given: the cheapest every pending item allows); nothing was changed", o.By, plan.ByFWReset, plan.ByReboot)}
	}
	if err := CheckFree(h, o.Hint); err != nil {
		return nil, err
	}
	unlock, err := h.LockWaiting(ctx, o.LockTimeout, "rdmaform activate", o.LockWaiting)
	if err != nil {
		return nil, &LockError{Err: err}
	}
	defer unlock()
	a := &activator{json: o.Out == nil, infoW: o.Info, ask: o.Ask, pending: o.Pending, hint: o.Hint.or()}
	a.env.Stdout, a.env.Stderr, a.env.Environ = orDiscard(o.Out), orDiscard(o.Warn), o.Environ
	// What an activation cut short took down comes back first.
	if a.recovered, err = a.recover(ctx, h, o.Wait); err == nil {
		err = a.activate(ctx, h, o.Spec, activateOptions{by: o.By, yes: o.Yes, force: o.Force, wait: o.Wait})
	}
	var ee *ExitError
	if errors.As(err, &ee) && ee.Err == nil && a.doc != nil {
		return &ActivateResult{Doc: a.doc, Code: ee.Code}, nil
	}
	return nil, err
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

type activateOptions struct {
	by    string
	yes   bool
	force bool
	wait  time.Duration
}

// activator is one activation: where its text goes, how it asks.
type activator struct {
	env struct {
		Stdout, Stderr io.Writer
		Environ        []string
	}
	json    bool
	infoW   io.Writer
	ask     func() error
	pending func(ctx context.Context, h *host.Host, warn io.Writer) ([]plan.Pending, error)
	// doc is the document, once done.
	doc *ActivateDoc
	// recovered: an activation cut short was found (its record) and its
	// VFs given back; its spec's runtime part is still to be applied.
	recovered bool
	// planned is the plan stagedCards made of the spec (nil without one).
	planned *plan.Plan
	hint    Hint
	// interruptedApply: a signal stopped the spec's re-apply part way.
	interruptedApply bool
	// argFailures are the kernel arguments a reboot did not bring (the
	// plan's activation failures of kernel_arg addresses): no reset or
	// reboot brings them, and they are not a card's.
	argFailures []string
}

func (a *activator) jsonOut() bool { return a.json }

func (a *activator) info() io.Writer { return orDiscard(a.infoW) }

// writeJSON hands the document back for the caller to write.
func (a *activator) writeJSON(doc *ActivateDoc) error {
	a.doc = doc
	return nil
}

func (a *activator) build(ctx context.Context, h *host.Host, spec *schema.Spec) (*plan.Result, error) {
	res, err := Plan(ctx, h, spec, nil)
	if err != nil {
		return nil, &ExitError{Code: plan.ExitError, Err: err}
	}
	return res, nil
}

func (a *activator) pendingAll(ctx context.Context, h *host.Host, warn io.Writer) ([]plan.Pending, error) {
	if a.pending == nil {
		return nil, errors.New("activate without a spec: no way to read what is staged; give the spec")
	}
	return a.pending(ctx, h, warn)
}

// askFirst asks before activate reboots (cmd, does and hint are the
// CLI's words for its question).
func (a *activator) askFirst(cmd, does, hint string) error {
	if a.ask == nil {
		return &ExitError{Code: plan.ExitError, Err: fmt.Errorf("%s asks before it %s, and nothing can be asked here; nothing was changed (%s)", cmd, does, hint)}
	}
	return a.ask()
}

// syncRebootMarker keeps rdmaform's entry in /run/reboot-required true
// to the plan; a failure to write it is a warning.
func (a *activator) syncRebootMarker(h *host.Host, p *plan.Plan) {
	if err := firmware.SyncRebootMarker(h, p); err != nil {
		fmt.Fprintf(a.env.Stderr, "rdmaform: warning: %v\n", err)
	}
}

func nonNil(p []plan.Pending) []plan.Pending {
	if p == nil {
		return []plan.Pending{}
	}
	return p
}

// MinActivateWait and MaxActivateWait bound activate --wait: how long a reset card may take to register
// its RDMA devices and netdevs again.
const (
	MinActivateWait = time.Second
	MaxActivateWait = time.Hour
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

// ActivateCard is one card's part of an activation.
type ActivateCard struct {
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
	// catalog: the firmware catalog entry that set By (plan.ActivateBy's
	// Catalog), if one did.
	catalog *plan.Source
	items   []string
	funcs   map[string]*inventory.Device
}

// ActivateDoc is activate -o json.
type ActivateDoc struct {
	FormatVersion int `json:"format_version"`
	// By is what activate did: fw-reset, reboot, or none.
	By             string         `json:"by"`
	Cards          []ActivateCard `json:"cards"`
	Refused        []string       `json:"refused,omitempty"`
	Pending        []plan.Pending `json:"pending"`
	Errors         []JSONError    `json:"errors"`
	RebootRequired bool           `json:"reboot_required"`
	// Lost is what a reboot (By reboot) loses that nothing sets again
	// after the boot: the host has no enabled boot unit.
	Lost []string `json:"lost,omitempty"`
	// Interrupted: a signal (SIGINT, SIGTERM) stopped activate; the
	// resets under way ran to their end, the runtime part was not applied
	// again.
	Interrupted bool `json:"interrupted,omitempty"`
}

// activate finds what is staged, card by card, and activates it.
func (a *activator) activate(ctx context.Context, h *host.Host, spec *schema.Spec, o activateOptions) error {
	doc := &ActivateDoc{FormatVersion: plan.FormatVersion, By: "none", Cards: []ActivateCard{}, Pending: []plan.Pending{}, Errors: []JSONError{}}
	cards, err := a.stagedCards(ctx, h, spec)
	if err != nil {
		return err
	}
	if len(a.argFailures) > 0 {
		doc.Cards, doc.Refused = cards, a.argFailures
		return a.activateDone(doc, "Nothing was changed:\n  "+strings.Join(a.argFailures, "\n  "), plan.ExitError)
	}
	if len(cards) == 0 {
		return a.nothingStaged(ctx, h, spec, doc)
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
	// --by fw-reset on a card whose firmware catalog entry says its image
	// becomes active by a reboot: the operator's catalog and the command
	// line disagree, and a reset would leave the image staged. Refused
	// before any card is reset (without --by, the catalog's way is taken).
	if o.by == plan.ByFWReset {
		var disagree []string
		for i := range cards {
			if cards[i].By == plan.ByReboot && cards[i].catalog != nil {
				r := fmt.Sprintf("%s: --by fw-reset, but the firmware catalog entry at %s says this model's image becomes active by a reboot; activate with --by reboot, or without --by (the catalog's way)", cards[i].Card, cards[i].catalog)
				cards[i].Result, cards[i].Reason = "refused", r
				disagree = append(disagree, r)
			}
		}
		if len(disagree) > 0 {
			doc.Cards, doc.Refused = cards, disagree
			return a.activateDone(doc, "Nothing was changed:\n  "+strings.Join(disagree, "\n  "), plan.ExitError)
		}
	}
	if by == plan.ByReboot {
		return a.activateByReboot(ctx, h, spec, cards, o, doc)
	}
	return a.activateByReset(ctx, h, spec, cards, o, doc)
}

// stagedCards lists the cards with staged values (pending items, and
// values a reboot did not activate), each with how it can be activated.
func (a *activator) stagedCards(ctx context.Context, h *host.Host, spec *schema.Spec) ([]ActivateCard, error) {
	var pending []plan.Pending
	var failures []plan.ActivationFailure
	if spec != nil {
		res, err := a.build(ctx, h, spec)
		if err != nil {
			return nil, err
		}
		for _, f := range res.Plan.Errors {
			if !res.Plan.ActivationFailed(f) {
				return nil, &ExitError{Code: plan.ExitError, Err: &FindingsError{Name: spec.Src.File, Report: res.Plan.Errors}}
			}
		}
		pending, failures = res.Plan.Pending, res.Plan.ActivationFailures
		a.planned = res.Plan
	} else {
		var err error
		if pending, err = a.pendingAll(ctx, h, a.env.Stderr); err != nil {
			return nil, &ExitError{Code: plan.ExitError, Err: err}
		}
	}
	inv, err := inventory.Discover(ctx, h)
	if err != nil {
		return nil, &ExitError{Code: plan.ExitError, Err: fmt.Errorf("reading RDMA devices from sysfs: %w", err)}
	}
	bySlot := map[string]*ActivateCard{}
	card := func(pci string) *ActivateCard {
		slot := slotOfPCI(pci)
		c := bySlot[slot]
		if c == nil {
			c = &ActivateCard{Card: slot, funcs: map[string]*inventory.Device{}}
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
	worse := func(c *ActivateCard, act *plan.ActivateBy, dev string) {
		rank := map[string]int{plan.ByFWReset: 1, plan.ByReboot: 2, plan.ByPowerCycle: 3}
		if act == nil {
			act = &plan.ActivateBy{By: plan.ByReboot, Why: "no way to activate was found"}
		}
		if act.By == plan.ByDriverReload {
			// A driver's module options: activate does not reload the
			// GPU driver (it would stop every GPU process); a reboot
			// loads it again.
			act = &plan.ActivateBy{By: plan.ByReboot, Why: act.Why + "; rdmaform activate does not reload the GPU driver, it reboots"}
		}
		switch {
		case rank[act.By] > rank[c.By]:
			c.By, c.Level, c.Why, c.tool, c.resetDev, c.catalog = act.By, act.Level, act.Why, act.Tool, dev, act.Catalog
		case rank[act.By] == rank[c.By] && act.Catalog != nil && c.catalog == nil:
			// The same way, which the catalog asks for too: its entry
			// is the reason to name.
			c.Why, c.catalog = act.Why, act.Catalog
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
		if af.Address.Kind == kcmdline.ArgKind {
			what := fmt.Sprintf("kernel argument %s did not take: written in boot %s, and after a reboot it is not on /proc/cmdline", af.Staged, af.BootID)
			switch {
			case af.Staged == "absent":
				what = fmt.Sprintf("kernel argument %s was to be made absent: written in boot %s, and after a reboot /proc/cmdline still has it", af.Current, af.BootID)
			case af.Current != "absent":
				what += " (it has " + af.Current + ")"
			}
			a.argFailures = append(a.argFailures, fmt.Sprintf("%s: %s; neither a reset nor a reboot brings it, and rdmaform does not write it again (plan -f SPEC names what decides this host's command line)", af.Address, what))
			continue
		}
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
	var out []ActivateCard
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

// activateDone hands the document back (or writes the message) and
// exits with code.
func (a *activator) activateDone(doc *ActivateDoc, msg string, code int) error {
	doc.RebootRequired = code == plan.ExitReboot
	a.doc = doc
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
func (a *activator) activateByReboot(ctx context.Context, h *host.Host, spec *schema.Spec, cards []ActivateCard, o activateOptions, doc *ActivateDoc) error {
	doc.By = plan.ByReboot
	var lines []string
	for i := range cards {
		cards[i].Result = "reboot"
		lines = append(lines, cards[i].items...)
	}
	doc.Cards = cards
	after := fmt.Sprintf("After the boot the boot unit (%s, with %s) applies the runtime state again and the staged ledger (%s) checks that each value took.", bootunit.UnitName, bootunit.SpecPath, firmware.LedgerPath)
	if !bootUnitEnabled(h) {
		doc.Lost = lostAtReboot(ctx, h)
		after = fmt.Sprintf("This host has no enabled boot unit (persistence: boot-unit): nothing applies the runtime state again after the boot. Lost at the reboot:\n  %s\nAfter the boot, %s sets what the spec asks for again, and the staged ledger (%s) checks that each value took.",
			strings.Join(doc.Lost, "\n  "), a.applyHint(spec), firmware.LedgerPath)
	}
	if !a.jsonOut() {
		fmt.Fprintf(a.env.Stdout, "A reboot activates:\n  %s\n%s\n", strings.Join(lines, "\n  "), after)
	}
	r, ok := h.Systemd.(host.Rebooter)
	if h.Systemd == nil || !ok {
		return &ExitError{Code: plan.ExitError, Err: fmt.Errorf("no service manager to reboot through (systemd's D-Bus API); nothing was changed")}
	}
	if !o.yes {
		if err := a.askFirst("activate --by reboot", "reboots", "use --yes to reboot without asking"); err != nil {
			return err
		}
	}
	if err := r.Reboot(ctx); err != nil {
		return &ExitError{Code: plan.ExitError, Err: fmt.Errorf("rebooting: %w", err)}
	}
	return a.activateDone(doc, "Reboot started.", 0)
}

// activateByReset checks every precondition, then resets each card that
// a firmware reset activates (in parallel), waits for it, restores its
// VFs, applies the spec again and verifies.
func (a *activator) activateByReset(ctx context.Context, h *host.Host, spec *schema.Spec, cards []ActivateCard, o activateOptions, doc *ActivateDoc) error {
	doc.By = plan.ByFWReset
	var refused []string
	holders := RDMAUsers(ctx, h)
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
		return a.activateInterrupted(ctx, h, doc, spec)
	}
	// What the resets undo is on disk before the first one: a run killed
	// during a reset leaves it for the next to give back.
	rec := newActivateRecord(h)
	saved := make([][]savedVFs, len(cards))
	for i := range cards {
		if cards[i].By == plan.ByFWReset {
			saved[i] = readVFs(ctx, h, &cards[i])
			for _, s := range saved[i] {
				rec.add(cards[i].Card, s)
			}
		}
	}
	if err := writeActivateRecord(h, rec); err != nil {
		return &ExitError{Code: plan.ExitError, Err: fmt.Errorf("%w; nothing was changed", err)}
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
			a.resetCard(rctx, h, &cards[i], saved[i], o.wait)
		}()
	}
	wg.Wait()
	stop()
	// The record keeps only the VFs that did not come back.
	rec.PFs = nil
	for i, c := range cards {
		for _, s := range saved[i] {
			if _, ok := c.VFs[s.pf]; !ok {
				rec.add(c.Card, s)
			}
		}
	}
	a.keepRecord(h, rec)
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
		return a.activateInterrupted(ctx, h, doc, spec, msgs...)
	}
	return a.finish(ctx, h, spec, doc, msgs, left)
}

// finish applies the spec again once the cards registered again (their
// runtime part is the driver's defaults), or without a spec reads what is
// still pending; settles the staged ledger and the reboot marker; and
// ends: 1 with msgs (the cards' failures) or errors, 3 when something is
// left (left: a card left for a reboot) or still waits, 0 when every
// staged value is current and the plan is empty.
func (a *activator) finish(ctx context.Context, h *host.Host, spec *schema.Spec, doc *ActivateDoc, msgs []string, left bool) error {
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
		if r != nil && r.Outcome.Interrupted {
			// A signal stopped the re-apply between two changes: not a
			// reboot that is needed, an activation that was cut short.
			a.interruptedApply = true
			return a.activateInterrupted(ctx, h, doc, spec, msgs...)
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
		}
	} else {
		pending, err := a.pendingAll(ctx, h, a.env.Stderr)
		if err != nil {
			msgs = append(msgs, err.Error())
		}
		after = &plan.Plan{Pending: pending}
	}
	if len(msgs) == 0 {
		// A card that failed keeps its entries for the next run to settle.
		a.settle(ctx, h, after)
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
		doc.Errors = append(doc.Errors, JSONError{Message: m})
	}
	switch {
	case len(msgs) > 0:
		if a.jsonOut() {
			return a.activateDone(doc, "", plan.ExitError)
		}
		return &ExitError{Code: plan.ExitError, Err: fmt.Errorf("activate failed:\n%s", strings.Join(msgs, "\n"))}
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
func (a *activator) activateInterrupted(ctx context.Context, h *host.Host, doc *ActivateDoc, spec *schema.Spec, msgs ...string) error {
	code := 130
	var se interface{ ExitCode() int } // the CLI's *SignalError
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
	switch {
	case spec != nil && a.interruptedApply:
		left = fmt.Sprintf("the rest of the spec's runtime part and the check that the plan is empty (run rdmaform apply -f %s)", spec.Src.File)
	case spec != nil:
		left = fmt.Sprintf("applying the spec's runtime part again and checking that the plan is empty (run rdmaform apply -f %s)", spec.Src.File)
	}
	did := "no card was reset"
	if len(done) > 0 {
		did = "reset " + strings.Join(done, ", ") + " (the firmware reset ran to its end, the card is back)"
		// What the resets loaded is current: the staged ledger and the
		// reboot marker say so before activate stops (briefly, past the
		// signal).
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		a.settle(sctx, h, nil)
		cancel()
	}
	doc.Errors = append(doc.Errors, JSONError{Message: "interrupted"})
	for _, m := range msgs {
		doc.Errors = append(doc.Errors, JSONError{Message: m})
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
	return &ExitError{Code: code, Err: fmt.Errorf("activate interrupted: %s; not done: %s", did, left)}
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
func (a *activator) resetCard(ctx context.Context, h *host.Host, c *ActivateCard, all []savedVFs, wait time.Duration) {
	fail := func(format string, args ...any) {
		c.Result, c.Reason = "failed", fmt.Sprintf(format, args...)
	}
	var saved []savedVFs
	for _, s := range all {
		if err := h.FS.WriteAttr(sriov.Dir(s.pf)+"/sriov_numvfs", []byte("0")); err != nil {
			fail("setting sriov_numvfs of %s to 0 before the reset: %v", s.pf, err)
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
					// The firmware refused the level when it came to it:
					// only a power cycle loads what is staged now.
					c.By = plan.ByPowerCycle
					fail("%s: -E- %s: only a power cycle loads what is staged (power off and on, through the BMC or PDU)", cmd, te.Message)
					a.restoreVFs(ctx, h, c, saved)
					return
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

// readVFs reads the VF count of each PF of the card that has VFs, and
// the settings of its VFs (through its port 1 netdev).
func readVFs(ctx context.Context, h *host.Host, c *ActivateCard) []savedVFs {
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
		saved = append(saved, s)
	}
	return saved
}

// keepRecord writes what is left of the record of this activation's
// resets (the VFs that are not back), or removes it when nothing is; a
// failure is a warning.
func (a *activator) keepRecord(h *host.Host, rec *activateRecord) {
	var err error
	if len(rec.PFs) == 0 {
		err = removeActivateRecord(h)
	} else {
		err = writeActivateRecord(h, rec)
	}
	if err != nil {
		fmt.Fprintf(a.env.Stderr, "rdmaform: warning: %v\n", err)
	}
}

// settle drops from the staged ledger what runs now, and keeps the
// reboot marker true: with a plan of the spec (after), as apply does;
// without one (after holds the pending values every adapter reports), the
// marker lists rdmaform while a value is pending or a ledger entry waits.
// Failures are warnings.
func (a *activator) settle(ctx context.Context, h *host.Host, after *plan.Plan) {
	// The kernel arguments the running kernel has leave their ledger.
	argsLeft, err := kcmdline.DropTaken(h)
	if err != nil {
		fmt.Fprintf(a.env.Stderr, "rdmaform: warning: %v\n", err)
	}
	left, err := firmware.DropTaken(ctx, h)
	if err != nil {
		fmt.Fprintf(a.env.Stderr, "rdmaform: warning: %v\n", err)
		return
	}
	left += argsLeft
	switch {
	case after != nil && a.planned != nil:
		a.syncRebootMarker(h, after)
	case after != nil && len(after.Pending) > 0:
		err = firmware.MarkRebootRequired(h)
	case left == 0:
		err = firmware.ClearRebootMarker(h)
	}
	if err != nil {
		fmt.Fprintf(a.env.Stderr, "rdmaform: warning: %v\n", err)
	}
}

// nothingStaged ends an activation with nothing to activate. An
// activation cut short (a.recovered) gets its spec applied again, as it
// would have after its resets; otherwise, with a spec, the exit code is
// the plan's: 0 only when the plan is empty. The staged ledger and the
// reboot marker are settled (a run killed after its resets left them).
func (a *activator) nothingStaged(ctx context.Context, h *host.Host, spec *schema.Spec, doc *ActivateDoc) error {
	if a.recovered && spec != nil {
		return a.finish(ctx, h, spec, doc, nil, false)
	}
	after := a.planned
	if after == nil {
		after = &plan.Plan{}
	}
	a.settle(ctx, h, after)
	if spec == nil {
		return a.activateDone(doc, "Nothing is staged: nothing to activate.", 0)
	}
	switch code := after.ExitCode(); code {
	case plan.ExitOK:
		return a.activateDone(doc, "Nothing is staged: nothing to activate. The host matches the spec.", 0)
	case plan.ExitChanges:
		var addrs []plan.Address
		for _, c := range after.Changes {
			addrs = append(addrs, c.Address)
		}
		doc.Errors = append(doc.Errors, JSONError{Message: fmt.Sprintf("the host does not match the spec: %s", plan.JoinAddrs(addrs, ", "))})
		return a.activateDone(doc, fmt.Sprintf("Nothing is staged: nothing to activate. The host does not match the spec: %d %s (%s); run %s.",
			len(addrs), words.Plural(len(addrs), "change", "changes"), plan.JoinAddrs(addrs, ", "), a.applyHint(spec)), code)
	default:
		return a.activateDone(doc, "Nothing is staged, but something of the spec waits for a reboot.", code)
	}
}

// restoreVFs gives each PF its VFs back, with the settings they had.
func (a *activator) restoreVFs(ctx context.Context, h *host.Host, c *ActivateCard, saved []savedVFs) {
	for _, s := range saved {
		if !rdmaRegistered(h, s.pf) {
			// No driver bound: sriov_numvfs refuses (ENOENT).
			c.Result, c.Reason = "failed", joinReason(c.Reason, fmt.Sprintf("the %d VFs of %s are not restored: it did not come back", s.count, s.pf))
			continue
		}
		if now, _ := host.ReadAttr(h.FS, sriov.Dir(s.pf)+"/sriov_numvfs"); now == strconv.Itoa(s.count) {
			// Back already (an activation cut short restored the count).
		} else if err := h.FS.WriteAttr(sriov.Dir(s.pf)+"/sriov_numvfs", []byte(strconv.Itoa(s.count))); err != nil {
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
func waitForCard(ctx context.Context, h *host.Host, c *ActivateCard, wait time.Duration) error {
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
func cardMissing(_ context.Context, h *host.Host, c *ActivateCard) []string {
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

// bootUnitEnabled tells whether rdmaform's boot unit is installed and
// enabled (persistence: boot-unit): it applies the runtime part at boot.
//
// Equivalent to: test -f /etc/systemd/system/rdmaform.service; readlink /etc/systemd/system/multi-user.target.wants/rdmaform.service
func bootUnitEnabled(h *host.Host) bool {
	unit, err := host.ReadOptional(h.FS, bootunit.UnitPath)
	if err != nil || unit == nil {
		return false
	}
	link, err := h.FS.Readlink(bootunit.WantsPath)
	return err == nil && link == bootunit.UnitPath
}

// lostAtReboot names the runtime state a reboot loses: each PF's VFs
// (their count now), and the runtime settings by kind.
func lostAtReboot(ctx context.Context, h *host.Host) []string {
	var out []string
	if inv, err := inventory.Discover(ctx, h); err == nil {
		for _, d := range inv.Devices {
			if d.PCI == "" {
				continue
			}
			if pf, err := sriov.Read(h, d.PCI); err == nil && pf.NumVFs > 0 {
				out = append(out, fmt.Sprintf("the %d VFs of %s (%s) and their settings", pf.NumVFs, d.PCI, d.Name))
			}
		}
	}
	return append(out, "runtime settings: rdma_cm defaults, mlx4 port types written through sysfs, Soft-RoCE links, addresses, MTUs and routes set through netlink, DCB, pause and ethtool settings, RDMA network namespace mode")
}

// applyHint is the command that sets a spec's runtime part again.
func (a *activator) applyHint(spec *schema.Spec) string {
	if spec == nil {
		return a.hint("apply", "-f", "SPEC")
	}
	return a.hint("apply", "-f", spec.Src.File)
}
