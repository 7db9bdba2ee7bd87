// Package plan holds rdmaform's plan as plain data (changes, pending
// reboot items, deferred items, findings), the provider interface, the
// engine that builds a plan from a spec and a host, and its renderers.
package plan

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/rdmaform/rdmaform/schema"
)

// FormatVersion is the version of the JSON plan format. It changes only
// when a field changes meaning or disappears; new fields keep it.
const FormatVersion = 1

// Action is what a change does to a resource.
type Action int

// Actions.
const (
	Create Action = iota
	Update
	Delete
)

func (a Action) String() string {
	switch a {
	case Create:
		return "create"
	case Update:
		return "update"
	case Delete:
		return "delete"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Symbol is the one-character mark of the text plan.
func (a Action) Symbol() string {
	switch a {
	case Create:
		return "+"
	case Update:
		return "~"
	case Delete:
		return "-"
	}
	return "?"
}

// MarshalText implements encoding.TextMarshaler.
func (a Action) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (a *Action) UnmarshalText(b []byte) error {
	for _, x := range []Action{Create, Update, Delete} {
		if x.String() == string(b) {
			*a = x
			return nil
		}
	}
	return fmt.Errorf("unknown action %q", b)
}

// Activation says when a change takes effect and whether it lasts.
type Activation int

// Activations.
const (
	// Now: persistent and effective now (a NetworkManager profile, a unit).
	Now Activation = iota
	// NextBoot: written now, effective after a reboot (firmware).
	NextBoot
	// Runtime: effective now, lost at reboot (configfs, sysfs, rxe, netlink).
	Runtime
)

func (a Activation) String() string {
	switch a {
	case Now:
		return "now"
	case NextBoot:
		return "next-boot"
	case Runtime:
		return "runtime"
	}
	return fmt.Sprintf("Activation(%d)", int(a))
}

// Label is the human form used in the text plan.
func (a Activation) Label() string {
	switch a {
	case NextBoot:
		return "after reboot"
	case Runtime:
		return "not persistent"
	}
	return ""
}

// MarshalText implements encoding.TextMarshaler.
func (a Activation) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (a *Activation) UnmarshalText(b []byte) error {
	for _, x := range []Activation{Now, NextBoot, Runtime} {
		if x.String() == string(b) {
			*a = x
			return nil
		}
	}
	return fmt.Errorf("unknown activation %q", b)
}

// Source is where in the spec a change comes from.
type Source = schema.Pos

// Attr is one attribute a change sets. Before is "" for a create; After is
// "" for a delete.
type Attr struct {
	Name   string `json:"name"`
	Before string `json:"before"`
	After  string `json:"after"`
}

// Reversed is the attributes of the change that undoes one: each
// attribute's before and after swapped. Attributes are for people; code
// that needs a value keeps it in its payload (make lint checks that
// providers read no Before or After).
func Reversed(attrs []Attr) []Attr {
	out := make([]Attr, 0, len(attrs))
	for _, a := range attrs {
		out = append(out, Attr{Name: a.Name, Before: a.After, After: a.Before})
	}
	return out
}

// Change is one resource to create, update or delete.
type Change struct {
	Address    Address    `json:"address"`
	Action     Action     `json:"action"`
	Activation Activation `json:"activation"`
	Source     *Source    `json:"source,omitempty"`
	Attributes []Attr     `json:"attributes"`
	// DependsOn lists the addresses this change needs applied first.
	DependsOn []Address `json:"depends_on,omitempty"`
	// Disrupts lists the netdevs this change takes down or re-addresses
	// (now or at the next boot); apply refuses such a change on the
	// interface that carries the default route or the operator's SSH
	// session unless told otherwise.
	Disrupts []string `json:"disrupts,omitempty"`

	// stage is the position of the provider in the list Build was given
	// (providers.All(): firmware first, the boot unit last): changes apply
	// stage by stage, each stage's in address order.
	stage int
	// Provider is the name of the provider that applies the change.
	Provider string `json:"-"`
	// Payload is the provider's own data for applying the change.
	Payload any `json:"-"`
}

// Pending is a value staged for the next boot but not yet live: never set
// again, only reported until a reboot makes it current.
type Pending struct {
	Address   Address `json:"address"`
	Attribute string  `json:"attribute"`
	Current   string  `json:"current"`
	NextBoot  string  `json:"next_boot"`
	Source    *Source `json:"source,omitempty"`
	// Activation says how the value can become current (nil: unknown).
	Activation *ActivateBy `json:"activation,omitempty"`
}

// Ways a pending value becomes current, cheapest first.
const (
	// ByFWReset: a firmware reset of the adapter (mstfwreset/mlxfwreset
	// at a level the device and driver support), no reboot.
	ByFWReset = "fw-reset"
	// ByReboot: a reboot reloads the firmware.
	ByReboot = "reboot"
	// ByPowerCycle: only a power cycle does (the tool said so).
	ByPowerCycle = "power-cycle"
	// ByDriverReload: the value is read when a kernel driver loads (the
	// nvidia module's modprobe.d options): reloading that driver, or a
	// reboot, makes it current.
	ByDriverReload = "driver-reload"
)

// ActivateBy is how a pending value can become current and why: By is
// ByFWReset (with its Level), ByReboot, ByPowerCycle or ByDriverReload.
type ActivateBy struct {
	By    string `json:"by"`
	Level int    `json:"level,omitempty"`
	Why   string `json:"why"`
	// Tool is the reset tool that answered (mstfwreset, mlxfwreset).
	Tool string `json:"-"`
	// Catalog is where the firmware catalog entry that set By says so
	// (its activation: reboot or power-cycle); nil when the reset tool
	// or the ledger said.
	Catalog *Source `json:"catalog,omitempty"`
}

// Label is the text plan's column: "after fw-reset", "after reboot",
// "after power-cycle".
func (a *ActivateBy) Label() string {
	if a == nil {
		return ""
	}
	return "after " + a.By
}

// Text is a pending item's line for people, without its mark:
// "firmware[0000:3b:00.0] LINK_TYPE_P1 staged for next boot (current IB,
// next ETH), after fw-reset".
func (pe Pending) Text() string {
	v := TextValues(pe.Current, pe.NextBoot)
	s := fmt.Sprintf("%s %s staged for next boot (current %s, next %s)", pe.Address, pe.Attribute, v[0], v[1])
	if pe.Activation != nil {
		s += ", " + pe.Activation.Label()
	}
	return s
}

// ActivationFailure is a firmware value rdmaform staged in an earlier boot
// that a reboot did not make current (the staged ledger says when and in
// which boot): the firmware was not reloaded. It is never staged again and
// is not pending: only a power cycle or a firmware reset activates it. The
// plan also carries it as an error at its spec line.
type ActivationFailure struct {
	Address   Address `json:"address"`
	Attribute string  `json:"attribute"`
	Current   string  `json:"current"`
	Staged    string  `json:"staged"`
	StagedAt  string  `json:"staged_at"`
	BootID    string  `json:"staged_boot_id"`
	Tool      string  `json:"tool"`
	Source    *Source `json:"source,omitempty"`
	// Activation is how it can still become current when that is known
	// from when it was staged (the tool said only a power cycle loads it);
	// nil otherwise.
	Activation *ActivateBy `json:"activation,omitempty"`
}

// ActivationFailed reports whether a finding of the plan is one of its
// activation failures (the error at the failure's spec line).
func (p *Plan) ActivationFailed(f schema.Finding) bool {
	for _, af := range p.ActivationFailures {
		if af.Source != nil && *af.Source == f.Pos {
			return true
		}
	}
	return false
}

// Deferred is part of the spec that can only be planned after a reboot.
type Deferred struct {
	Address Address `json:"address"`
	Reason  string  `json:"reason"`
	Source  *Source `json:"source,omitempty"`
}

// Summary counts a plan.
type Summary struct {
	Add            int  `json:"add"`
	Change         int  `json:"change"`
	Remove         int  `json:"remove"`
	RebootRequired bool `json:"reboot_required"`
}

// Plan is everything plan found, as plain data. Text and JSON render the
// same value.
type Plan struct {
	FormatVersion int              `json:"format_version"`
	Changes       []*Change        `json:"changes"`
	Pending       []Pending        `json:"pending"`
	Deferred      []Deferred       `json:"deferred"`
	Errors        []schema.Finding `json:"errors,omitempty"`
	// ActivationFailures are staged firmware values a reboot did not
	// activate (each also an error).
	ActivationFailures []ActivationFailure `json:"activation_failures,omitempty"`
	Summary            Summary             `json:"summary"`
	// Only names the activation a partial plan keeps (apply --only
	// runtime); LeftOut lists the changes it leaves for an apply without
	// --only, each with its own activation. Both are empty in a whole plan.
	Only    string    `json:"only,omitempty"`
	LeftOut []LeftOut `json:"left_out,omitempty"`
}

// LeftOut is a change a partial plan does not make: its address and when
// it would take effect.
type LeftOut struct {
	Address    Address    `json:"address"`
	Activation Activation `json:"activation"`
}

// Restrict makes p a partial plan of the activation only: the other
// changes move to LeftOut. Pending and deferred items stay: they still
// describe the host. A runtime plan (the boot unit's apply --only
// runtime) leaves out the errors of activation failures, which stay in
// ActivationFailures: a staged value a reboot did not bring (firmware, a
// kernel argument, a GPU driver parameter) is nothing a runtime apply
// sets, and must not keep it from setting the runtime state again at
// boot (ACS on the GPU path); plan, audit and status still report it.
func (p *Plan) Restrict(only Activation) {
	p.Only = only.String()
	if only == Runtime {
		var keep []schema.Finding
		for _, f := range p.Errors {
			if !p.ActivationFailed(f) {
				keep = append(keep, f)
			}
		}
		p.Errors = keep
	}
	var keep []*Change
	p.LeftOut = nil
	for _, c := range p.Changes {
		if c.Activation == only {
			keep = append(keep, c)
		} else {
			p.LeftOut = append(p.LeftOut, LeftOut{Address: c.Address, Activation: c.Activation})
		}
	}
	p.Changes = keep
	p.Finish()
}

// LeftOutText words a partial plan's left-out changes for people, by
// activation: "now: module[ib_ipoib], ipoib[ib0]; next-boot: firmware[…]".
func LeftOutText(l []LeftOut) string {
	var parts []string
	for _, act := range []Activation{Now, NextBoot, Runtime} {
		var addrs []Address
		for _, x := range l {
			if x.Activation == act {
				addrs = append(addrs, x.Address)
			}
		}
		if len(addrs) > 0 {
			parts = append(parts, act.String()+": "+JoinAddrs(addrs, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// Finish sorts every list and computes the summary. Changes are ordered by
// stage, then address; findings by position.
func (p *Plan) Finish() {
	p.FormatVersion = FormatVersion
	sort.SliceStable(p.Changes, func(i, j int) bool {
		a, b := p.Changes[i], p.Changes[j]
		if a.stage != b.stage {
			return a.stage < b.stage
		}
		return a.Address.Less(b.Address)
	})
	sort.SliceStable(p.Pending, func(i, j int) bool {
		if p.Pending[i].Address != p.Pending[j].Address {
			return p.Pending[i].Address.Less(p.Pending[j].Address)
		}
		return p.Pending[i].Attribute < p.Pending[j].Attribute
	})
	sort.SliceStable(p.Deferred, func(i, j int) bool { return p.Deferred[i].Address.Less(p.Deferred[j].Address) })
	rep := schema.Report(p.Errors)
	rep.Sort()
	if p.Changes == nil {
		p.Changes = []*Change{}
	}
	if p.Pending == nil {
		p.Pending = []Pending{}
	}
	if p.Deferred == nil {
		p.Deferred = []Deferred{}
	}
	p.Summary = Summarize(p)
}

// Summarize is the one place the summary is computed.
func Summarize(p *Plan) Summary {
	var s Summary
	for _, c := range p.Changes {
		switch c.Action {
		case Create:
			s.Add++
		case Update:
			s.Change++
		case Delete:
			s.Remove++
		}
		if c.Activation == NextBoot {
			s.RebootRequired = true
		}
	}
	if len(p.Pending) > 0 {
		s.RebootRequired = true
	}
	return s
}

// Exit codes, the same for every command.
const (
	ExitOK      = 0 // host matches, nothing pending
	ExitError   = 1 // error
	ExitChanges = 2 // changes needed, or drift found
	ExitReboot  = 3 // nothing to do now, but a reboot is needed
)

// ExitMeaning is what one exit code says.
type ExitMeaning struct {
	Code    int
	Meaning string
}

// ExitCodes say what ExitOK, ExitError, ExitChanges and ExitReboot mean:
// the CLI's help and docs/reference/exit-codes.md are made from them.
var ExitCodes = []ExitMeaning{
	{ExitOK, "the host matches the spec, nothing pending"},
	{ExitError, "error: bad spec, a failed change, a tool failure"},
	{ExitChanges, "changes needed (plan, audit) or drift found"},
	{ExitReboot, "nothing to do now, but a reboot is needed (firmware staged for next boot) or part of the spec can only be planned after one"},
}

// ExitCode is the plan's exit code: 1 with findings, 2 with changes, 3 with
// only pending or deferred items, 0 when the host matches.
func (p *Plan) ExitCode() int {
	switch {
	case len(p.Errors) > 0:
		return ExitError
	case len(p.Changes) > 0 || len(p.LeftOut) > 0:
		return ExitChanges
	case len(p.Pending) > 0 || len(p.Deferred) > 0:
		return ExitReboot
	}
	return ExitOK
}

// Empty reports whether nothing is to be done now.
func (p *Plan) Empty() bool { return len(p.Changes) == 0 }

// JSON renders the plan in its stable JSON form.
func (p *Plan) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Addr builds a resource's address, KIND[KEY] (rxe[rxe0],
// firmware[0000:3b:00.0]): every provider builds its addresses with it.
func Addr(kind, key string) Address { return Address{Kind: kind, Key: key} }

// ParseAddr reads an address in its printed form, KIND[KEY] (a saved plan,
// a rollback journal).
func ParseAddr(s string) (Address, error) {
	i := strings.IndexByte(s, '[')
	if i <= 0 || !strings.HasSuffix(s, "]") {
		return Address{}, fmt.Errorf("%q is not an address (KIND[KEY])", s)
	}
	return Address{Kind: s[:i], Key: s[i+1 : len(s)-1]}, nil
}

// Address names a resource: its kind (the provider's word: firmware,
// rdma_cm, interface) and its key within the kind (0000:3b:00.0,
// mlx5_0/1, ib0). Plans print it KIND[KEY]. Addr makes every one (make
// lint refuses a literal outside package plan).
type Address struct {
	Kind string
	Key  string
}

// String is the address as plans print it: KIND[KEY], "" for none.
func (a Address) String() string {
	if a == (Address{}) {
		return ""
	}
	return a.Kind + "[" + a.Key + "]"
}

// Less orders addresses as their printed forms sort.
func (a Address) Less(b Address) bool { return a.String() < b.String() }

// MarshalText writes the printed form: JSON and YAML carry KIND[KEY].
func (a Address) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText reads the printed form ("" is no address).
func (a *Address) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*a = Address{}
		return nil
	}
	p, err := ParseAddr(string(b))
	if err != nil {
		return err
	}
	*a = p
	return nil
}

// JoinAddrs joins addresses with sep, as strings.Join does strings.
func JoinAddrs(as []Address, sep string) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, sep)
}
