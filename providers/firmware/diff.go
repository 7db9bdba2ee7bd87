package firmware

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/firmware/mlxfmt"
	"github.com/rdmaform/rdmaform/schema"
)

// Kind is the kind of this provider's addresses.
const Kind = "firmware"

// Address is the plan address of one adapter's firmware configuration.
func Address(pci string) plan.Address { return plan.Addr(Kind, pci) }

// payload is what Apply needs for one adapter: the tool, the -d argument
// and the NAME=VALUE arguments in spec order, with their spec positions
// for error messages.
type payload struct {
	tool   string
	dev    string
	pci    string
	sets   []string
	values map[string]string // param name -> the spec's value, for the ledger
	paths  map[string]string // param name -> spec path
	source map[string]*plan.Source
	// was holds the Next Boot value each set replaces, for Revert, in
	// the tool's display form (a name such as ETH, or a number).
	was map[string]string
	// current holds each parameter's Current value at plan time: a set
	// back to it (Revert's, or a spec's) un-stages the parameter, which
	// then waits for no reboot and leaves the staged ledger.
	current map[string]mlxfmt.Value
	// burn is a firmware image to burn (image.go) instead of sets.
	burn *burn
}

var linkTypeRE = regexp.MustCompile(`^LINK_TYPE_P([1-9][0-9]?)$`)

// AffectedPort says which RDMA port a LINK_TYPE_Pn parameter of the
// adapter function at pci sets (inventory.FunctionOfCardPort: function n-1
// of the slot on mlx5, port n of the function on mlx4). dev is the
// inventory device at pci (nil if unknown).
func AffectedPort(pci string, n int, dev *inventory.Device) (string, int) {
	return inventory.FunctionOfCardPort(pci, n, dev)
}

// target is one spec device with firmware parameters.
type target struct {
	index int    // spec device index
	pci   string // the function -d addresses
	tool  string // auto, mlxconfig, mstconfig
	path  string // $.devices[i].firmware
	names []string
}

func targets(req *plan.Request) []target {
	if req.Full {
		return showTargets(req)
	}
	var out []target
	for i, d := range req.Spec.Devices {
		if d.Firmware == nil || len(d.Firmware.Params) == 0 {
			continue
		}
		dev := req.Devices[i]
		if dev == nil || dev.PCI == "" {
			continue // unresolved (the engine reported it) or software device (Plan reports it)
		}
		t := target{index: i, pci: dev.PCI, tool: d.Firmware.Tool, path: schema.Path("devices", i, "firmware")}
		if t.tool == "" {
			t.tool = "auto"
		}
		for _, p := range d.Firmware.Params {
			t.names = append(t.names, p.Name)
		}
		out = append(out, t)
	}
	return out
}

// showTargets is the scope of show: one PCI function per card (every
// function of a card shows the same values), with the parameters show
// asks for (Request.Capture.FirmwareParams, or CaptureParams).
func showTargets(req *plan.Request) []target {
	var out []target
	seen := map[string]bool{}
	for i, d := range req.Devices {
		if d == nil || d.PCI == "" || seen[slotOf(d.PCI)] {
			continue
		}
		seen[slotOf(d.PCI)] = true
		names := req.Capture.FirmwareParams
		if len(names) == 0 {
			names = defaultCaptureParams(len(d.GPUAffinity) > 0)
		}
		out = append(out, target{index: i, pci: d.PCI, tool: "auto", path: schema.Path("devices", i, "firmware"), names: names})
	}
	return out
}

// Plan implements plan.TypedProvider.
func (p *Provider) Plan(req *plan.Request, obs *Observed, facts *plan.Facts) plan.Proposal {
	prop := diff(req, obs, facts)
	prop.Managed = manages(req)
	return prop
}

// manages lists the adapters the spec sets parameters of or asks a
// firmware version of.
func manages(req *plan.Request) []plan.Managed {
	var out []plan.Managed
	for i, d := range req.Spec.Devices {
		if d.Firmware == nil || (len(d.Firmware.Params) == 0 && !hasVersion(d.Firmware) && d.Firmware.Catalog == nil) {
			continue
		}
		if dev := req.Devices[i]; dev != nil && dev.PCI != "" {
			out = append(out, plan.Managed{Address: Address(dev.PCI), Path: schema.Path("devices", i, "firmware")})
			if d.Firmware.Image != "" || d.Firmware.Catalog != nil {
				out = append(out, plan.Managed{Address: ImageAddress(dev.PCI), Path: schema.Path("devices", i, "firmware", "image")})
			}
		}
	}
	return out
}

// diff compares each adapter's desired parameters with its Next Boot
// values: a difference is a change (one per adapter, every parameter in
// it); a value already staged but not yet current is pending, never set
// again. LINK_TYPE_Pn changes, planned or pending, are published so later
// stages defer what needs the new link layer.
func diff(req *plan.Request, obs *Observed, facts *plan.Facts) plan.Proposal {
	var prop plan.Proposal
	if obs != nil && obs.LedgerErr != nil && (len(targets(req)) > 0 || len(imageTargets(req)) > 0) {
		// Nothing is planned on top of a ledger that cannot be read: apply
		// would lose what it says.
		prop.Errors = append(prop.Errors, req.Finding("$", "%v", obs.LedgerErr))
		return prop
	}
	burned := map[string]bool{}
	for i, d := range req.Spec.Devices {
		dev := req.Devices[i]
		w := wantOf(req, i)
		switch {
		case dev != nil && w != nil:
			imagePlan(req, i, w, obs, &prop, burned)
		case dev != nil && d.Firmware != nil && d.Firmware.Catalog != nil:
			prop.Errors = append(prop.Errors, catalogFinding(req, i)...)
		case dev != nil && hasVersion(d.Firmware):
			prop.Errors = append(prop.Errors, versionFindings(req, i, d.Firmware, dev)...)
		}
		if d.Firmware == nil || len(d.Firmware.Params) == 0 {
			continue
		}
		fwPath := schema.Path("devices", i, "firmware")
		if dev == nil {
			continue // the engine reported the missing device
		}
		if dev.PCI == "" {
			prop.Errors = append(prop.Errors, req.Finding(fwPath, "%s is not a PCI adapter; it has no firmware to configure", dev.Name))
			continue
		}
		var a *AdapterObs
		if obs != nil {
			a = obs.Adapters[i]
		}
		if a == nil {
			prop.Errors = append(prop.Errors, req.Unreadable(fwPath, "firmware of %s was not read", dev.PCI))
			continue
		}
		if a.Err != nil {
			prop.Errors = append(prop.Errors, req.Unreadable(fwPath, "reading firmware of %s: %v", dev.PCI, a.Err))
			continue
		}
		addr := Address(dev.PCI)
		pl := &payload{tool: a.Tool, dev: a.Device, pci: dev.PCI, values: map[string]string{}, paths: map[string]string{}, source: map[string]*plan.Source{}, was: map[string]string{}, current: map[string]mlxfmt.Value{}}
		var attrs []plan.Attr
		var disrupts []string
		for _, prm := range d.Firmware.Params {
			pp := fwPath + ".params." + prm.Name
			if te := a.Unknown[prm.Name]; te != nil {
				prop.Errors = append(prop.Errors, req.Finding(pp, "%s does not know parameter %s on %s (%s): -E- %s", a.Tool, prm.Name, dev.PCI, a.deviceType(), te.Message))
				continue
			}
			have, ok := a.Params[prm.Name]
			if !ok {
				prop.Errors = append(prop.Errors, req.Finding(pp, "%s printed no row for %s on %s", a.Tool, prm.Name, dev.PCI))
				continue
			}
			staged := func(pending bool, via string) {
				facts.StageParam(dev.PCI, prm.Name, prm.Value)
				m := linkTypeRE.FindStringSubmatch(prm.Name)
				ll := linklayer.OfLinkType(prm.Value)
				if m == nil || ll == "" {
					return
				}
				n, _ := strconv.Atoi(m[1])
				fn, port := AffectedPort(dev.PCI, n, dev)
				facts.ChangeLink(plan.LinkChange{Device: fn, Port: port, To: ll, When: plan.NextBoot, Staged: pending, Cause: addr, Setting: prm.Name + "=" + prm.Value, Via: via})
			}
			if mlxfmt.Equal(prm.Value, have.NextBoot) {
				if have.Current.Kind != mlxfmt.KindAbsent && !mlxfmt.Equal(prm.Value, have.Current) {
					if e := survived(obs, dev.PCI, prm.Name, prm.Value); e != nil {
						prop.ActivationFailures = append(prop.ActivationFailures, plan.ActivationFailure{Address: addr, Attribute: prm.Name,
							Current: have.Current.Display(), Staged: prm.Value, StagedAt: e.StagedAt.Format(time.RFC3339), BootID: e.BootID, Tool: e.Tool, Source: req.Pos(pp), Activation: e.PowerCycle()})
						prop.Errors = append(prop.Errors, req.Finding(pp, "%s", e.DidNotTake(prm.Value, have.Current.Display(), obs.BootID)))
						// Still staged: what needs it waits for its reload
						// (a firmware reset or a power cycle), as before the
						// reboot, and is not an error of its own.
						staged(true, "a reboot did not load it: a firmware reset or a power cycle")
						continue
					}
					act := activationOf(a.Reset)
					if obs != nil {
						if pc := obs.Ledger.SaidPowerCycle(dev.PCI, prm.Name, prm.Value); pc != nil {
							act = pc // the tool said so when it staged it
						}
					}
					prop.Pending = append(prop.Pending, plan.Pending{Address: addr, Attribute: prm.Name,
						Current: have.Current.Display(), NextBoot: have.NextBoot.Display(), Source: req.Pos(pp), Activation: act})
					staged(true, "")
				}
				continue
			}
			if have.ReadOnly {
				prop.Errors = append(prop.Errors, req.Finding(pp, "%s is read-only on %s (%s marks it RO); it is %s and cannot be set to %s", prm.Name, dev.PCI, a.Tool, have.NextBoot, prm.Value))
				continue
			}
			arg, err := mlxfmt.SetArg(prm.Value)
			if err != nil {
				prop.Errors = append(prop.Errors, req.Finding(pp, "%v", err))
				continue
			}
			attrs = append(attrs, plan.Attr{Name: prm.Name, Before: have.NextBoot.Display(), After: prm.Value})
			disrupts = append(disrupts, linkNetdevs(req, dev, prm.Name, prm.Value, have)...)
			pl.sets = append(pl.sets, prm.Name+"="+arg)
			pl.was[prm.Name] = have.NextBoot.Display()
			pl.current[prm.Name] = have.Current
			pl.values[prm.Name] = prm.Value
			pl.paths[prm.Name] = pp
			pl.source[prm.Name] = req.Pos(pp)
			staged(false, "")
		}
		// A parameter in error is an error at its line (and apply refuses
		// a plan with errors); the adapter's other parameters are still
		// planned, so the plan shows everything that is left to do.
		if len(attrs) == 0 {
			continue
		}
		prop.Changes = append(prop.Changes, &plan.Change{Address: addr, Action: plan.Update, Activation: plan.NextBoot,
			Source: req.Pos(fwPath), Attributes: attrs, Payload: pl, Disrupts: sortedSet(disrupts)})
	}
	prop.Errors = append(prop.Errors, conflicts(req)...)
	return prop
}

// survived returns the ledger entry of a staged value that a reboot did
// not activate: staged in another boot than this one.
func survived(obs *Observed, pci, param, value string) *LedgerEntry {
	if obs == nil || obs.BootID == "" {
		return nil
	}
	e := obs.Ledger.Find(pci, param)
	if e == nil || e.BootID == obs.BootID || !sameStaged(e.Value, value) {
		return nil
	}
	return e
}

// conflicts finds a parameter two spec devices on the same card set to
// different values: the card has one value, so the plan could never settle.
func conflicts(req *plan.Request) []schema.Finding {
	type seen struct {
		value string
		path  string
	}
	bySlot := map[string]map[string]seen{}
	var out []schema.Finding
	for i, d := range req.Spec.Devices {
		if d.Firmware == nil || req.Devices[i] == nil || req.Devices[i].PCI == "" {
			continue
		}
		slot := slotOf(req.Devices[i].PCI)
		if bySlot[slot] == nil {
			bySlot[slot] = map[string]seen{}
		}
		for _, prm := range d.Firmware.Params {
			pp := schema.Path("devices", i, "firmware", "params", prm.Name)
			if prev, ok := bySlot[slot][prm.Name]; ok {
				if !sameMeaning(prev.value, prm.Value) {
					out = append(out, req.Finding(pp, "%s is a setting of the whole card at %s; %s sets it to %s", prm.Name, slot, prev.path, prev.value))
				}
				continue
			}
			bySlot[slot][prm.Name] = seen{prm.Value, pp}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// sameMeaning compares two spec values in the form the tool would get
// (ETH(2) and 2 agree, true and True agree). ETH and 2 cannot be compared
// without the card's enum, so they count as different: the operator should
// write one value one way.
func sameMeaning(a, b string) bool {
	sa, errA := mlxfmt.SetArg(a)
	sb, errB := mlxfmt.SetArg(b)
	if errA != nil || errB != nil {
		return a == b
	}
	return strings.EqualFold(sa, sb)
}

func slotOf(pci string) string {
	if i := strings.LastIndexByte(pci, '.'); i >= 0 {
		return pci[:i]
	}
	return pci
}
