// Package audit is the read-only comparison of a host with a golden spec
// (rdmaform audit): per resource the providers declare, drift and pending
// reboots; health checks of ports, P_Keys and probes; waivers for known
// exceptions. Nothing here changes the host: plans are built, never
// applied. The host described as a spec (rdmaform show) is plan.Capture.
package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/portstate"
	"github.com/rdmaform/rdmaform/probe"
	"github.com/rdmaform/rdmaform/schema"
	"github.com/rdmaform/rdmaform/version"
)

// FormatVersion is the version of the JSON audit report. It changes only
// when a field changes meaning or disappears; new fields keep it.
const FormatVersion = 1

// Status is the outcome of one check.
type Status int

// Statuses.
const (
	// Pass: the host is as the golden spec says.
	Pass Status = iota
	// Fail: drift, a failed health check, or a host-dependent finding.
	Fail
	// Pending: the host will match after a reboot (firmware staged for the
	// next boot, or part of the spec that can only be planned after it).
	Pending
	// Waived: it failed or is pending, but a current waiver covers it.
	Waived
)

func (s Status) String() string {
	switch s {
	case Pass:
		return "pass"
	case Fail:
		return "fail"
	case Pending:
		return "pending"
	case Waived:
		return "waived"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// MarshalText implements encoding.TextMarshaler.
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *Status) UnmarshalText(b []byte) error {
	for _, x := range []Status{Pass, Fail, Pending, Waived} {
		if x.String() == string(b) {
			*s = x
			return nil
		}
	}
	return fmt.Errorf("unknown status %q", b)
}

// Checks, by the name reports and waivers use.
const (
	// CheckDrift: plan would change the resource.
	CheckDrift = "drift"
	// CheckPendingReboot: the resource waits for a reboot.
	CheckPendingReboot = "pending_reboot"
	// CheckFinding: a host-dependent problem plan reports at a spec line
	// (a device that is not there, RoCE on an InfiniBand port, ...).
	CheckFinding = "finding"
	// Port health.
	CheckState         = "state"
	CheckPhysState     = "phys_state"
	CheckLinkLayer     = "link_layer"
	CheckRate          = "rate"
	CheckSubnetManager = "subnet_manager"
	CheckRoCEv2GID     = "roce_v2_gid"
	// CheckRoCEMode reports, for a port whose spec sets RoCE settings but
	// no mode, the mode rdma_cm uses by default there (always passes).
	CheckRoCEMode = "roce_mode"
	// CheckPKey: an IPoIB connection's P_Key is in its port's table.
	CheckPKey = "pkey"
	// CheckHostname: the host is the one the spec is for.
	CheckHostname = "hostname"
	// CheckProbe: a connectivity probe of the spec passed (audit --probes).
	CheckProbe = "probe"
	// CheckLossless: a RoCE port's lossless path holds on the host (the
	// qos provider's health check: ToS → DSCP → priority → PFC, ECN, an
	// ETS share; CNPs lossless or strict).
	CheckLossless = "lossless"
)

// checkOrder orders a resource's checks in reports.
var checkOrder = []string{CheckHostname, CheckDrift, CheckPendingReboot, CheckFinding, CheckLinkLayer,
	CheckPhysState, CheckState, CheckRate, CheckSubnetManager, CheckRoCEv2GID, CheckRoCEMode, CheckPKey, CheckLossless, CheckProbe, CheckGPURelation, CheckGPUACS, CheckGPUATS,
	CheckGPURelaxedOrdering, CheckGPUPeerMemory, CheckGPUDriverParams, CheckGPUNUMA}

func checkRank(c string) int {
	for i, x := range checkOrder {
		if x == c {
			return i
		}
	}
	return len(checkOrder)
}

// IsHealth reports whether a check is a health check (not drift and not a
// pending reboot).
func IsHealth(check string) bool { return check != CheckDrift && check != CheckPendingReboot }

// Result is one check of one resource.
type Result struct {
	Resource string      `json:"resource"`
	Check    string      `json:"check"`
	Status   Status      `json:"status"`
	Message  string      `json:"message,omitempty"`
	Source   *schema.Pos `json:"source,omitempty"`
	// Waiver is the waiver that matched, current or expired.
	Waiver *AppliedWaiver `json:"waiver,omitempty"`

	// path is the spec path the check is about; a plan finding at the
	// same path is the same problem, reported once.
	path string
}

// AppliedWaiver is a waiver as a result reports it.
type AppliedWaiver struct {
	Reason  string `json:"reason"`
	Expires string `json:"expires"`
	Expired bool   `json:"expired"`
}

// Summary counts a report.
type Summary struct {
	Checks  int `json:"checks"`
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Pending int `json:"pending"`
	Waived  int `json:"waived"`
	Errors  int `json:"errors"`
	// Compliant: nothing failed, nothing is pending, no errors.
	Compliant bool `json:"compliant"`
}

// Build names the rdmaform that made a report.
type Build struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
}

// Report is an audit of one host against one golden spec, as plain data:
// every format renders the same value.
type Report struct {
	FormatVersion int    `json:"format_version"`
	Host          string `json:"host"`
	Spec          string `json:"spec"`
	// Rdmaform is the build that made the report.
	Rdmaform Build `json:"rdmaform"`
	// Time is when the audit ran (UTC), whole seconds.
	Time   time.Time `json:"time"`
	Checks []Result  `json:"checks"`
	// Errors are problems that kept part of the audit from being made (a
	// tool that failed, a service manager that did not answer).
	Errors []schema.Finding `json:"errors,omitempty"`
	// Warnings are remarks that change no outcome (a waiver that matched
	// nothing).
	Warnings []string `json:"warnings,omitempty"`
	// Probes are the connectivity probes' results (audit --probes); each
	// is also a check of resource probe[NAME].
	Probes []probe.Result `json:"probes,omitempty"`
	// ActivationFailures are staged firmware values a reboot did not
	// activate; each is also an error.
	ActivationFailures []plan.ActivationFailure `json:"activation_failures,omitempty"`
	// Firmware is each card a firmware catalog of the spec covers: the
	// version it runs against its entry's (rdmaform firmware-summary
	// groups them by PSID across a fleet).
	Firmware []CardFirmware `json:"firmware,omitempty"`
	Summary  Summary        `json:"summary"`
}

// Exit codes of an audit, the same as plan's: 1 errors, 2 failed checks
// (drift, health, findings), 3 only pending reboots, 0 compliant.
func (r *Report) ExitCode() int {
	switch {
	case len(r.Errors) > 0:
		return plan.ExitError
	case r.Summary.Failed > 0:
		return plan.ExitChanges
	case r.Summary.Pending > 0:
		return plan.ExitReboot
	}
	return plan.ExitOK
}

// JSON renders the report in its stable JSON form.
// Messages keep "->" and "<" as they are (no HTML escaping).
func (r *Report) JSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Options tune an audit.
type Options struct {
	// Waivers are known exceptions.
	Waivers []Waiver
	// Now is the time of the audit: waivers expire against its date, and
	// reports carry it. Tests set it; the command line takes the clock.
	Now time.Time
	// Probes runs the spec's connectivity probes too.
	Probes bool
	// GPUPath reads ACS and NIC firmware for the GPUDirect checks
	// (providers.GPUPath); nil fails the checks that need it.
	GPUPath GPUPathReader
}

// Run audits the host against a golden spec: it builds the plan with the
// engine (never applying it) and reads the host's health, then applies
// waivers. The host is left as it was.
func Run(ctx context.Context, h *host.Host, spec *schema.Spec, providers []plan.Provider, o Options) (*Report, error) {
	res, err := plan.Build(ctx, h, spec, providers)
	if err != nil {
		return nil, err
	}
	hostname, _ := h.Hostname()
	v := version.Get()
	r := &Report{FormatVersion: FormatVersion, Host: hostname, Spec: spec.Src.File, Rdmaform: Build{Version: v.Version, Commit: v.Commit},
		Time: o.Now.UTC().Truncate(time.Second)}
	a := &auditor{h: h, req: res.Request, plan: res.Plan, facts: res.Facts, managed: res.Managed, hostname: hostname, gpuPath: o.GPUPath}
	r.Checks = append(r.Checks, a.hostCheck()...)
	r.Checks = append(r.Checks, a.resourceChecks()...)
	r.Checks = append(r.Checks, a.portChecks()...)
	r.Checks = append(r.Checks, a.pkeyChecks()...)
	lc, lw := healthChecks(ctx, h, res, providers)
	r.Checks, r.Warnings = append(r.Checks, lc...), append(r.Warnings, lw...)
	gc, gerrs := a.gpuDirectChecks(ctx)
	r.Checks = append(r.Checks, gc...)
	r.Errors = append(r.Errors, gerrs...)
	r.ActivationFailures = res.Plan.ActivationFailures
	r.Firmware = a.catalogFirmware()
	checks, errs := a.findings(r.Checks)
	r.Checks = append(r.Checks, checks...)
	r.Errors = append(r.Errors, errs...)
	if o.Probes {
		pc, perrs, results, warn := probeChecks(ctx, h, spec)
		r.Checks = append(r.Checks, pc...)
		r.Errors = append(r.Errors, perrs...)
		r.Probes = results
		r.Warnings = append(r.Warnings, warn...)
	}
	r.Warnings = append(r.Warnings, applyWaivers(r.Checks, o.Waivers, o.Now)...)
	sort.SliceStable(r.Checks, func(i, j int) bool {
		x, y := r.Checks[i], r.Checks[j]
		if x.Resource != y.Resource {
			return x.Resource < y.Resource
		}
		if checkRank(x.Check) != checkRank(y.Check) {
			return checkRank(x.Check) < checkRank(y.Check)
		}
		return x.Message < y.Message
	})
	if r.Checks == nil {
		r.Checks = []Result{}
	}
	r.Summary = summarize(r)
	return r, nil
}

func summarize(r *Report) Summary {
	s := Summary{Checks: len(r.Checks), Errors: len(r.Errors)}
	for _, c := range r.Checks {
		switch c.Status {
		case Pass:
			s.Passed++
		case Fail:
			s.Failed++
		case Pending:
			s.Pending++
		case Waived:
			s.Waived++
		}
	}
	s.Compliant = s.Failed == 0 && s.Pending == 0 && s.Errors == 0
	return s
}

type auditor struct {
	h     *host.Host
	req   *plan.Request
	plan  *plan.Plan
	facts *plan.Facts
	// managed is what the providers declared the spec asks for.
	managed  []plan.Managed
	hostname string
	gpuPath  GPUPathReader
}

func (a *auditor) pos(path string) *schema.Pos { return a.req.Pos(path) }

// hostCheck compares the hostname with host.hostname: equal, or equal to
// the first label of a fully qualified kernel hostname.
func (a *auditor) hostCheck() []Result {
	s := a.req.Spec
	if s.Host == nil || s.Host.Hostname == "" {
		return nil
	}
	want := s.Host.Hostname
	r := Result{Resource: "host", Check: CheckHostname, Source: a.pos("$.host.hostname"), path: "$.host.hostname"}
	short, _, _ := strings.Cut(a.hostname, ".")
	if strings.EqualFold(a.hostname, want) || strings.EqualFold(short, want) {
		return []Result{r}
	}
	r.Status = Fail
	r.Message = fmt.Sprintf("this host is %q; the spec is for %q", a.hostname, want)
	return []Result{r}
}

// resourceChecks gives every resource the spec manages (and every one the
// plan touches) a drift and a pending_reboot check.
func (a *auditor) resourceChecks() []Result {
	type res struct {
		source  *schema.Pos
		changes []*plan.Change
		pending []string
	}
	all := map[string]*res{}
	get := func(addr string, src *schema.Pos) *res {
		r, ok := all[addr]
		if !ok {
			r = &res{source: src}
			all[addr] = r
		}
		if r.source == nil {
			r.source = src
		}
		return r
	}
	// A resource the host could not be read for has no drift or
	// pending_reboot check: the audit's errors say it was not audited.
	unread := map[string]bool{}
	for _, f := range a.plan.Errors {
		if f.Unreadable {
			unread[a.resourceOf(f.Path)] = true
		}
	}
	for _, m := range a.managed {
		if unread[m.Address.String()] {
			continue
		}
		get(m.Address.String(), a.pos(m.Path))
	}
	for _, c := range a.plan.Changes {
		r := get(c.Address.String(), c.Source)
		r.changes = append(r.changes, c)
	}
	for _, p := range a.plan.Pending {
		r := get(p.Address.String(), p.Source)
		r.pending = append(r.pending, fmt.Sprintf("%s staged for next boot (current %s, next %s)", p.Attribute, p.Current, p.NextBoot))
	}
	for _, d := range a.plan.Deferred {
		r := get(d.Address.String(), d.Source)
		r.pending = append(r.pending, d.Reason)
	}
	var out []Result
	for _, addr := range sortedKeys(all) {
		r := all[addr]
		drift := Result{Resource: addr, Check: CheckDrift, Source: r.source}
		if len(r.changes) > 0 {
			drift.Status = Fail
			var parts []string
			for _, c := range r.changes {
				parts = append(parts, describeChange(c))
			}
			drift.Message = strings.Join(parts, "; ")
		}
		pend := Result{Resource: addr, Check: CheckPendingReboot, Source: r.source}
		if len(r.pending) > 0 {
			pend.Status = Pending
			pend.Message = strings.Join(r.pending, "; ")
		}
		out = append(out, drift, pend)
	}
	return out
}

// describeChange words a change as the text plan does: "mode: v1 -> v2".
func describeChange(c *plan.Change) string {
	var attrs []string
	for _, at := range c.Attributes {
		v := plan.TextValues(at.Before, at.After)
		switch {
		case c.Action == plan.Create || at.Before == "":
			attrs = append(attrs, fmt.Sprintf("%s: %s", at.Name, v[1]))
		case c.Action == plan.Delete || at.After == "":
			attrs = append(attrs, fmt.Sprintf("%s: %s -> (none)", at.Name, v[0]))
		default:
			attrs = append(attrs, fmt.Sprintf("%s: %s -> %s", at.Name, v[0], v[1]))
		}
	}
	s := c.Action.String()
	if len(attrs) > 0 {
		s += " (" + strings.Join(attrs, ", ") + ")"
	}
	return s
}

// PortAddress is the resource name of a port's health checks.
func PortAddress(dev string, port int) string {
	return plan.Addr("port", dev+"/"+strconv.Itoa(port)).String()
}

// nextLink is a link layer a port gets at the next boot, and how.
type nextLink struct {
	linkLayer linklayer.LinkLayer
	// staged: already written to firmware (pending); otherwise the plan
	// would write it (drift).
	staged bool
	param  string // LINK_TYPE_P1=ETH
}

// nextLinks asks the plan's facts which link layer each port gets at the
// next boot: firmware values staged (pending) or to be set (changes).
func (a *auditor) nextLinks() map[string]nextLink {
	out := map[string]nextLink{}
	byPCI := map[string]*inventory.Device{}
	for _, d := range a.req.Inv.Devices {
		if d.PCI != "" {
			byPCI[d.PCI] = d
		}
	}
	for _, l := range a.facts.LinkChanges() {
		if d := byPCI[l.Device]; d != nil && l.When == plan.NextBoot && l.To != "" {
			out[PortAddress(d.Name, l.Port)] = nextLink{linkLayer: l.To, staged: l.Staged, param: l.Setting}
		}
	}
	return out
}

// Diagnosis of seed 000: two ends that speak different link layers both
// stay down.
const linkMismatchHint = "both ends down because one is InfiniBand and the other Ethernet: check LINK_TYPE on this port and the switch port"

// portChecks are the health checks of every spec port on a device the
// host has.
func (a *auditor) portChecks() []Result {
	var out []Result
	next := a.nextLinks()
	for i, d := range a.req.Spec.Devices {
		dev := a.req.Devices[i]
		if dev == nil {
			continue // plan reported the missing device
		}
		for j, sp := range d.Ports {
			pp := schema.Path("devices", i, "ports", j)
			out = append(out, a.portHealth(dev, sp, pp, next)...)
		}
	}
	return out
}

func (a *auditor) portHealth(dev *inventory.Device, sp schema.Port, pp string, next map[string]nextLink) []Result {
	addr := PortAddress(dev.Name, sp.Port)
	src := a.pos(pp)
	res := func(check string) Result { return Result{Resource: addr, Check: check, Source: src} }
	ip := dev.Port(sp.Port)
	if ip == nil {
		r := res(CheckState)
		r.Status, r.Message = Fail, fmt.Sprintf("%s has no port %d", dev.Name, sp.Port)
		r.path = pp + ".port"
		return []Result{r}
	}
	var out []Result
	nl, changing := next[addr]
	mismatch := false
	if want := sp.LinkLayer; want != "" {
		r := res(CheckLinkLayer)
		r.path = pp + ".link_layer"
		r.Source = a.pos(r.path)
		switch {
		case ip.LinkLayer == want:
			if changing && nl.linkLayer != want {
				r.Status = Fail
				r.Message = fmt.Sprintf("%s now, but becomes %s at the next boot (%s)", ip.LinkLayer, nl.linkLayer, nl.param)
			}
		case changing && nl.linkLayer == want && nl.staged:
			r.Status = Pending
			r.Message = fmt.Sprintf("%s now, %s after the reboot (%s staged for next boot)", ip.LinkLayer, want, nl.param)
		case changing && nl.linkLayer == want:
			r.Status = Fail
			r.Message = fmt.Sprintf("%s, expected %s; firmware is not set yet (%s, then a reboot)", ip.LinkLayer, want, nl.param)
			mismatch = true
		default:
			r.Status = Fail
			r.Message = fmt.Sprintf("%s, expected %s", ip.LinkLayer, want)
			mismatch = true
		}
		out = append(out, r)
	}
	// Seed 000: a port that does not come up while its link layer is not
	// the one expected, or is about to change, is most likely cabled to a
	// port that speaks the other one.
	hint := ""
	if (ip.PhysState == portstate.Polling || ip.PhysState == portstate.Disabled) && (mismatch || (changing && nl.linkLayer != ip.LinkLayer)) {
		hint = "; " + linkMismatchHint
	}
	exp := sp.Expect
	if exp == nil {
		exp = &schema.Expect{}
	}
	wantPhys := exp.PhysState
	if wantPhys == "" {
		wantPhys = portstate.LinkUp
	}
	r := res(CheckPhysState)
	if ip.PhysState != wantPhys {
		r.Status = Fail
		r.Message = fmt.Sprintf("%s, expected %s%s", ip.PhysState, wantPhys, hint)
	}
	out = append(out, r)
	wantState := exp.State
	if wantState == "" {
		wantState = portstate.Active
	}
	r = res(CheckState)
	if ip.State != wantState {
		r.Status = Fail
		r.Message = fmt.Sprintf("%s (physical state %s), expected %s%s", ip.State, ip.PhysState, wantState, hint)
		if hint == "" && ip.LinkLayer == linklayer.InfiniBand && ip.PhysState == portstate.LinkUp && ip.SMLID == 0 {
			r.Message += "; the link is up but no subnet manager has configured the port: run opensm on one node of the fabric"
		}
	}
	out = append(out, r)
	if exp.MinRate != nil {
		r := res(CheckRate)
		if got := ip.RateGbps(); got < float64(*exp.MinRate) {
			r.Status = Fail
			r.Message = fmt.Sprintf("%q, expected at least %d Gb/s", ip.Rate, *exp.MinRate)
		}
		out = append(out, r)
	}
	if ip.LinkLayer == linklayer.InfiniBand && ip.PhysState == portstate.LinkUp {
		r := res(CheckSubnetManager)
		if !ip.SubnetManagerPresent() {
			r.Status = Fail
			r.Message = fmt.Sprintf("no subnet manager answers on this port (state %s, sm_lid 0x%x): run opensm on one node of the fabric", ip.State, ip.SMLID)
		}
		out = append(out, r)
	}
	if sp.Roce != nil && sp.Roce.Mode == "" && ip.LinkLayer == linklayer.Ethernet {
		r := res(CheckRoCEMode)
		r.path = pp + ".roce"
		r.Source = a.pos(r.path)
		r.Message = "mode not set: " + EffectiveRoCEMode(dev, ip)
		out = append(out, r)
	}
	if sp.Roce != nil && sp.Roce.Mode == "v2" && ip.LinkLayer == linklayer.Ethernet {
		r := res(CheckRoCEv2GID)
		r.path = pp + ".roce"
		r.Source = a.pos(r.path)
		types := map[string]bool{}
		for _, g := range ip.GIDs {
			types[g.Type] = true
		}
		switch {
		case !types[inventory.GIDRoCEv2]:
			r.Status = Fail
			r.Message = fmt.Sprintf("no RoCE v2 GID in the port's GID table (types: %s): RoCE v2 needs an IP address on the port's netdev (%s)",
				joinKeys(types), strings.Join(ip.Netdevs, ", "))
		}
		out = append(out, r)
	}
	return out
}

func joinKeys(m map[string]bool) string {
	if len(m) == 0 {
		return "none"
	}
	return strings.Join(sortedKeys(m), ", ")
}

// pkeyChecks check that each IPoIB connection's P_Key is in the P_Key
// table of its parent's port: the subnet manager made the port a member.
func (a *auditor) pkeyChecks() []Result {
	var out []Result
	for i, c := range a.req.Spec.IPoIB {
		if c.PKey == nil || c.State == "absent" {
			continue
		}
		dev, port := a.req.Inv.PortOfNetdev(c.Parent)
		if port == nil || port.LinkLayer != linklayer.InfiniBand {
			continue // plan reports a parent that is missing or not IPoIB
		}
		p := schema.Path("ipoib", i, "pkey")
		r := Result{Resource: a.resourceOf(p), Check: CheckPKey, Source: a.pos(p), path: p}
		want := c.Partition()
		table, err := inventory.ReadPKeys(a.h.FS, dev.Name, port.Num)
		switch {
		case err != nil:
			r.Status, r.Message = Fail, err.Error()
		case !inventory.HasPKey(table, want):
			r.Status = Fail
			r.Message = fmt.Sprintf("P_Key 0x%04x is not in the P_Key table of port %d of %s (%s): the subnet manager has not made this port a member of the partition",
				want, port.Num, dev.Name, inventory.FormatPKeys(table))
		}
		out = append(out, r)
	}
	return out
}

// findings turns the plan's findings into failed checks of the resource
// their spec path names; a finding at a path a health check covers is
// that check's problem, reported once. Findings with no spec path, and
// those that say part of the host could not be read (a firmware tool that
// failed or is missing, no service manager), are errors: that part of the
// host could not be audited, which is not drift (exit 1, not 2).
func (a *auditor) findings(have []Result) ([]Result, []schema.Finding) {
	covered := map[string]bool{}
	for _, r := range have {
		if r.path != "" && r.Status != Pass {
			covered[r.path] = true
		}
	}
	var out []Result
	var errs []schema.Finding
	for _, f := range a.plan.Errors {
		// An activation failure is no drift an apply could fix: an error.
		if f.Path == "$" || f.Unreadable || a.plan.ActivationFailed(f) {
			errs = append(errs, f)
			continue
		}
		if covered[f.Path] {
			continue
		}
		pos := f.Pos
		out = append(out, Result{Resource: a.resourceOf(f.Path), Check: CheckFinding, Status: Fail, Message: f.Message, Source: &pos})
	}
	return out, errs
}

var devicePathRE = regexp.MustCompile(`^\$\.devices\[(\d+)\](?:\.ports\[(\d+)\])?`)

// resourceOf names the resource a spec path belongs to: the managed
// resource whose spec path holds it (the same list managed() gives the
// audit), else the device or port it is about, else the spec itself.
func (a *auditor) resourceOf(p string) string {
	best, addr := "", ""
	for _, m := range a.managed {
		inside := p == m.Path || strings.HasPrefix(p, m.Path+".") || strings.HasPrefix(p, m.Path+"[")
		if inside && len(m.Path) > len(best) {
			best, addr = m.Path, m.Address.String()
		}
	}
	if addr != "" {
		return addr
	}
	m := devicePathRE.FindStringSubmatch(p)
	if m == nil {
		return "spec"
	}
	s := a.req.Spec
	i, _ := strconv.Atoi(m[1])
	name := s.Devices[i].Name
	if d := a.req.Devices[i]; d != nil {
		name = d.Name
	}
	if name == "" {
		_, v := s.Devices[i].Selector()
		return plan.Addr("device", v).String()
	}
	if m[2] != "" {
		j, _ := strconv.Atoi(m[2])
		return PortAddress(name, s.Devices[i].Ports[j].Port)
	}
	return plan.Addr("device", name).String()
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ProbeAddress is the resource a probe's check is reported under.
func ProbeAddress(name string) string { return plan.Addr("probe", name).String() }

// probeChecks runs the spec's probes: one check per probe that ran, an
// error (at the probe's line) per probe that could not run.
func probeChecks(ctx context.Context, h *host.Host, spec *schema.Spec) ([]Result, []schema.Finding, []probe.Result, []string) {
	if len(spec.Probes) == 0 {
		return nil, nil, nil, []string{"audit --probes: the spec lists no probes"}
	}
	results, err := probe.Run(ctx, h, spec)
	if results == nil {
		return nil, []schema.Finding{{Path: "$.probes", Pos: spec.Src.Lookup("$.probes"), Message: err.Error()}}, nil, nil
	}
	var checks []Result
	var errs []schema.Finding
	for i, pr := range results {
		path := schema.Path("probes", i)
		pos := spec.Src.Lookup(path)
		if pr.Outcome == probe.OutcomeError {
			errs = append(errs, schema.Finding{Path: path, Pos: pos, Message: fmt.Sprintf("probe %s could not run: %s", pr.Name, pr.Reason)})
			continue
		}
		st, msg := Fail, pr.Reason
		if pr.Passed {
			st = Pass
			if pr.Perf == nil {
				// A bandwidth or latency probe's reason has its figures.
				msg = fmt.Sprintf("%s, %.3f ms", pr.Reason, pr.RTTms)
			}
		}
		checks = append(checks, Result{Resource: ProbeAddress(pr.Name), Check: CheckProbe, Status: st, Message: msg, Source: &pos, path: path})
	}
	return checks, errs, results, nil
}

// EffectiveRoCEMode says which RoCE version rdma_cm uses by default on an
// Ethernet port, and why: v1 on a ConnectX-3 that is not a Pro (RoCE v1
// only), or on a port without RoCE v2 GIDs; v2 (the kernel's default
// since RHEL 7.5) everywhere else.
func EffectiveRoCEMode(dev *inventory.Device, p *inventory.Port) string {
	switch {
	case dev.HCAType == inventory.ConnectX3:
		return "the kernel uses RoCE v1 (a ConnectX-3 that is not a Pro has RoCE v1 only)"
	case len(p.GIDs) > 0 && !p.Supports(inventory.GIDRoCEv2):
		return "the kernel uses RoCE v1 (the port has no RoCE v2 GID)"
	}
	return "the kernel uses RoCE v2 (its default)"
}
