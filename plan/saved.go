package plan

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/words"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/version"
)

// SavedKind marks a saved plan file.
const SavedKind = "rdmaform-plan"

// savedKindRE finds a saved plan's kind in a file that is not valid JSON.
var savedKindRE = regexp.MustCompile(`"kind"\s*:\s*"` + SavedKind + `"`)

// Saved is a plan written by `plan --out`: the plan, the spec it was made
// from (its bytes, so apply needs nothing else), and what the host was when
// it was made. `apply FILE` re-discovers and refuses a plan whose host has
// changed since.
type Saved struct {
	Kind          string `json:"kind"`
	FormatVersion int    `json:"format_version"`
	// Rdmaform is the build that made the plan: only the same version
	// and commit apply it (what a change does is that build's code).
	Rdmaform version.Info `json:"rdmaform"`
	Spec     struct {
		File    string `json:"file"`
		Digest  string `json:"digest"`
		Content string `json:"content"`
	} `json:"spec"`
	Host Identity `json:"host"`
	// ObservedDigest covers the inventory and every provider's
	// observation: anything rdmaform read that the plan depends on.
	ObservedDigest string `json:"observed_digest"`
	Plan           *Plan  `json:"plan"`
	// Digest covers everything above (the file with digest ""). It is an
	// unkeyed sha256: it catches accidental damage, not a deliberate edit
	// (anyone can recompute it); Check catches an edit of the changes by
	// planning the embedded spec again.
	Digest string `json:"digest"`
}

// Identity is what makes a host the same host in the same boot.
type Identity struct {
	Hostname  string      `json:"hostname"`
	MachineID string      `json:"machine_id"`
	BootID    string      `json:"boot_id"`
	Adapters  []AdapterID `json:"adapters"`
}

// AdapterID is one adapter's identity and firmware version.
type AdapterID struct {
	Name  string `json:"name"`
	PCI   string `json:"pci,omitempty"`
	FWVer string `json:"fw_ver,omitempty"`
}

// Identify reads the host's identity through its root: hostname
// (/proc/sys/kernel/hostname, else /etc/hostname), machine-id
// (/etc/machine-id), boot_id (/proc/sys/kernel/random/boot_id) and
// adapters with firmware versions.
func Identify(h *host.Host, inv *inventory.Inventory) Identity {
	id := Identity{Adapters: []AdapterID{}}
	id.Hostname, _ = h.Hostname() // /etc/hostname when there is no /proc
	id.MachineID, _ = host.ReadAttr(h.FS, "/etc/machine-id")
	id.BootID, _ = host.ReadAttr(h.FS, "/proc/sys/kernel/random/boot_id")
	for _, d := range inv.Devices {
		id.Adapters = append(id.Adapters, AdapterID{Name: d.Name, PCI: d.PCI, FWVer: d.FWVer})
	}
	sort.Slice(id.Adapters, func(i, j int) bool { return id.Adapters[i].Name < id.Adapters[j].Name })
	return id
}

// Digest is the sha256 of data, as "sha256:HEX".
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ObservedDigest hashes the inventory and the providers' observations.
// Observations are encoded as JSON (maps sorted by key), so the digest is
// stable for equal states.
func ObservedDigest(res *Result) string {
	var names []string
	for n := range res.Observed {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	inv, _ := json.Marshal(res.Request.Inv)
	b.Write(inv)
	for _, n := range names {
		o, err := json.Marshal(res.Observed[n])
		if err != nil {
			o = []byte(fmt.Sprintf("%q", err.Error()))
		}
		fmt.Fprintf(&b, "\n%s=%s", n, o)
	}
	return Digest(b.Bytes())
}

// NewSaved records a plan with its spec and host.
func NewSaved(h *host.Host, res *Result, specFile string, specData []byte) *Saved {
	s := &Saved{Kind: SavedKind, FormatVersion: FormatVersion, Rdmaform: version.Get(), Plan: res.Plan}
	s.Spec.File = specFile
	s.Spec.Content = string(specData)
	s.Spec.Digest = Digest(specData)
	s.Host = Identify(h, res.Request.Inv)
	s.ObservedDigest = ObservedDigest(res)
	s.Digest = s.bodyDigest()
	return s
}

// bodyDigest is the digest of the saved plan's JSON with digest "".
func (s *Saved) bodyDigest() string {
	c := *s
	c.Digest = ""
	b, err := json.Marshal(&c)
	if err != nil {
		return ""
	}
	return Digest(b)
}

// LoadSaved reads a saved plan; ok is false when data is not one (a spec).
func LoadSaved(data []byte) (s *Saved, ok bool, err error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, false, nil
	}
	s = &Saved{}
	if err := json.Unmarshal(trimmed, s); err != nil {
		// A saved plan that no longer parses but says its kind was cut
		// short or damaged, and is not a spec to try instead.
		if savedKindRE.Match(trimmed) {
			return nil, true, fmt.Errorf("saved plan is damaged (cut short?): it is not valid JSON (%w); nothing was changed: make it again with plan --out", err)
		}
		return nil, false, nil
	}
	if s.Kind != SavedKind {
		return nil, false, nil
	}
	if s.FormatVersion != FormatVersion {
		return nil, true, fmt.Errorf("saved plan has format version %d; this rdmaform reads %d", s.FormatVersion, FormatVersion)
	}
	if Digest([]byte(s.Spec.Content)) != s.Spec.Digest {
		return nil, true, fmt.Errorf("saved plan is damaged: its spec does not match its digest")
	}
	if s.Digest == "" || s.bodyDigest() != s.Digest {
		return nil, true, fmt.Errorf("saved plan was changed after it was made (its digest does not match its content); nothing was changed: make it again with plan --out")
	}
	if s.Host.Hostname == "" || (s.Host.MachineID == "" && s.Host.BootID == "") {
		return nil, true, fmt.Errorf("saved plan records no host identity (hostname %q, machine-id %q, boot_id %q); nothing was changed: make it again with plan --out on the host", s.Host.Hostname, s.Host.MachineID, s.Host.BootID)
	}
	return s, true, nil
}

// StaleError says why a saved plan no longer fits its host.
type StaleError struct {
	Reasons []string
}

func (e *StaleError) Error() string {
	return "saved plan is stale, nothing was changed: " + strings.Join(e.Reasons, "; ") + "; run plan again"
}

// Check compares a saved plan with now, its embedded spec planned again on
// the host: the same rdmaform build (version and commit), the same host
// (hostname, machine-id) in the same boot with the same adapters and
// firmware versions, and, on the same host, the same changes and pending
// items with the same before values; otherwise the plan is refused,
// naming the first difference. A change of the host that the plan does
// not touch does not make it stale.
func (s *Saved) Check(h *host.Host, now *Result) error {
	var why []string
	if v := version.Get(); v.Version != s.Rdmaform.Version || v.Commit != s.Rdmaform.Commit {
		why = append(why, fmt.Sprintf("the plan was made by rdmaform %s (%s), this is %s (%s)", s.Rdmaform.Version, s.Rdmaform.Commit, v.Version, v.Commit))
	}
	cur := Identify(h, now.Request.Inv)
	if cur.Hostname != s.Host.Hostname {
		why = append(why, fmt.Sprintf("different host: the plan was made on %q, this is %q", s.Host.Hostname, cur.Hostname))
	}
	if cur.MachineID != s.Host.MachineID {
		why = append(why, fmt.Sprintf("different machine: the plan was made on machine-id %q, this is %q", s.Host.MachineID, cur.MachineID))
	}
	if cur.BootID != s.Host.BootID {
		why = append(why, fmt.Sprintf("the host rebooted since the plan was made (boot_id %s, now %s)", s.Host.BootID, cur.BootID))
	}
	if d := adapterDiff(s.Host.Adapters, cur.Adapters); d != "" {
		why = append(why, "adapters changed: "+d)
	}
	if len(why) == 0 {
		// What apply changes is what the embedded spec gives on this host
		// now; the plan shows the changes it recorded. The two must be
		// the same: the digest is unkeyed, so a plan whose changes were
		// edited and its digest recomputed is caught here.
		// A partial apply (--only runtime) compares the recorded changes
		// of that activation.
		recorded := s.Plan
		var only Activation
		if now.Plan.Only != "" && only.UnmarshalText([]byte(now.Plan.Only)) == nil {
			r := *s.Plan
			r.Restrict(only)
			recorded = &r
		}
		if d := planDifference(recorded, now.Plan); d != "" {
			why = append(why, "the spec in the plan no longer gives the changes it records on this host (the host changed since the plan was made, or the plan was edited); "+d)
		}
	}
	if len(why) > 0 {
		return &StaleError{Reasons: why}
	}
	return nil
}

func adapterDiff(was, now []AdapterID) string {
	index := func(l []AdapterID) map[string]AdapterID {
		m := map[string]AdapterID{}
		for _, a := range l {
			m[a.Name] = a
		}
		return m
	}
	w, n := index(was), index(now)
	var out []string
	for name, a := range w {
		b, ok := n[name]
		switch {
		case !ok:
			out = append(out, name+" is gone")
		case a.PCI != b.PCI:
			out = append(out, fmt.Sprintf("%s moved from %s to %s", name, a.PCI, b.PCI))
		case a.FWVer != b.FWVer:
			out = append(out, fmt.Sprintf("%s firmware %s, now %s", name, a.FWVer, b.FWVer))
		}
	}
	for name := range n {
		if _, ok := w[name]; !ok {
			out = append(out, name+" is new")
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// planDifference compares the changes and pending items a saved plan
// records with those its spec gives on the host now: "" when they are the
// same (action, activation, source, attributes with their before and after
// values, dependencies, disrupted netdevs; pending items with their
// current and next-boot values), else the first difference, in address
// order, and every address that differs.
func planDifference(was, now *Plan) string {
	w := map[string]*Change{}
	for _, c := range was.Changes {
		w[c.Address.String()] = c
	}
	n := map[string]*Change{}
	for _, c := range now.Changes {
		n[c.Address.String()] = c
	}
	var addrs []string
	for a := range w {
		addrs = append(addrs, a)
	}
	for a := range n {
		if _, ok := w[a]; !ok {
			addrs = append(addrs, a)
		}
	}
	sort.Strings(addrs)
	var first string
	var diff []string
	for _, a := range addrs {
		if d := changeDifference(a, w[a], n[a]); d != "" {
			if first == "" {
				first = d
			}
			diff = append(diff, a)
		}
	}
	if first == "" && len(was.Changes) != len(now.Changes) {
		first = fmt.Sprintf("the plan records %d %s, the spec gives %d", len(was.Changes), words.Plural(len(was.Changes), "change", "changes"), len(now.Changes))
		diff = append(diff, "changes")
	}
	if d := pendingDifference(was.Pending, now.Pending); d != "" {
		if first == "" {
			first = d
		}
		diff = append(diff, "pending reboot items")
	}
	if first == "" {
		return ""
	}
	return "first difference: " + first + " (differing: " + strings.Join(diff, ", ") + ")"
}

// shown is a value as a difference prints it ("" for none).
func shown(v string) string {
	if v == "" {
		return `""`
	}
	return v
}

// changeDifference says how the recorded change w of address a differs
// from the change n the spec gives now (either may be nil: no change);
// "" when they are the same.
func changeDifference(a string, w, n *Change) string {
	switch {
	case w == nil && n == nil:
		return ""
	case w == nil:
		return fmt.Sprintf("%s: the plan records no change, the spec gives %s", a, n.Action)
	case n == nil:
		return fmt.Sprintf("%s: the plan records %s, the spec gives no change", a, w.Action)
	}
	differs := func(what, recorded, given string) string {
		return fmt.Sprintf("%s %s: the plan records %s, the spec gives %s", a, what, recorded, given)
	}
	if w.Action != n.Action {
		return differs("action", w.Action.String(), n.Action.String())
	}
	if w.Activation != n.Activation {
		return differs("activation", w.Activation.String(), n.Activation.String())
	}
	attrs := func(c *Change) (map[string]Attr, []string) {
		m := map[string]Attr{}
		var names []string
		for _, at := range c.Attributes {
			m[at.Name] = at
			names = append(names, at.Name)
		}
		return m, names
	}
	wa, wn := attrs(w)
	na, nn := attrs(n)
	for _, name := range append(wn, nn...) {
		x, inW := wa[name]
		y, inN := na[name]
		switch {
		case !inN:
			return differs(name, shown(x.Before)+" -> "+shown(x.After), "no change of it")
		case !inW:
			return differs(name, "no change of it", shown(y.Before)+" -> "+shown(y.After))
		case x != y:
			return differs(name, shown(x.Before)+" -> "+shown(x.After), shown(y.Before)+" -> "+shown(y.After))
		}
	}
	if strings.Join(wn, ",") != strings.Join(nn, ",") {
		return differs("attributes", strings.Join(wn, ", "), strings.Join(nn, ", "))
	}
	list := func(l []Address) string {
		var s []string
		for _, x := range l {
			s = append(s, x.String())
		}
		return "[" + strings.Join(s, ", ") + "]"
	}
	if list(w.DependsOn) != list(n.DependsOn) {
		return differs("depends on", list(w.DependsOn), list(n.DependsOn))
	}
	if d, e := "["+strings.Join(w.Disrupts, ", ")+"]", "["+strings.Join(n.Disrupts, ", ")+"]"; d != e {
		return differs("disrupts", d, e)
	}
	if pos(w.Source) != pos(n.Source) {
		return differs("source", pos(w.Source), pos(n.Source))
	}
	return ""
}

// pos prints a change's source ("none" for none).
func pos(p *Source) string {
	if p == nil {
		return "none"
	}
	return p.String()
}

// pendingDifference says how the recorded pending items differ from those
// the spec gives now: the first difference, "" when none.
func pendingDifference(was, now []Pending) string {
	key := func(p Pending) string { return p.Address.String() + " " + p.Attribute }
	item := func(p Pending) string {
		return fmt.Sprintf("%s (current %s) from %s", shown(p.NextBoot), shown(p.Current), pos(p.Source))
	}
	n := map[string]Pending{}
	for _, p := range now {
		n[key(p)] = p
	}
	w := map[string]Pending{}
	var keys []string
	for _, p := range was {
		w[key(p)] = p
		keys = append(keys, key(p))
	}
	for _, p := range now {
		if _, ok := w[key(p)]; !ok {
			keys = append(keys, key(p))
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		x, inW := w[k]
		y, inN := n[k]
		switch {
		case !inN:
			return fmt.Sprintf("pending %s: the plan records %s, the spec gives nothing pending", k, item(x))
		case !inW:
			return fmt.Sprintf("pending %s: the plan records nothing pending, the spec gives %s", k, item(y))
		case item(x) != item(y):
			return fmt.Sprintf("pending %s: the plan records %s, the spec gives %s", k, item(x), item(y))
		}
	}
	if len(was) != len(now) {
		return fmt.Sprintf("the plan records %d pending items, the spec gives %d", len(was), len(now))
	}
	return ""
}
