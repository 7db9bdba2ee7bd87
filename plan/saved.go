package plan

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/version"
)

// SavedKind marks a saved plan file.
const SavedKind = "rdmaform-plan"

// Saved is a plan written by `plan --out`: the plan, the spec it was made
// from (its bytes, so apply needs nothing else), and what the host was when
// it was made. `apply FILE` re-discovers and refuses a plan whose host has
// changed since.
type Saved struct {
	Kind          string `json:"kind"`
	FormatVersion int    `json:"format_version"`
	// Rdmaform is the build that made the plan (an apply by another
	// version still checks the host, not the version).
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
	// Digest covers everything above (the file with digest ""), so that
	// an edit anywhere, the spec or the changes, is caught.
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
	id.Hostname, _ = h.Hostname()
	if id.Hostname == "" {
		id.Hostname, _ = host.ReadAttr(h.FS, "/etc/hostname")
	}
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

// Check compares a saved plan with a fresh discovery of the host: the
// same rdmaform version, the same host (hostname, machine-id) in the same
// boot with the same adapters, and the same changes with the same before
// values; otherwise the plan is refused. A change of the host that the
// plan does not touch does not make it stale.
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
		if d := changedAddresses(s.Plan, now.Plan); d != "" {
			why = append(why, "the host's state changed since the plan was made, and with it the changes"+d)
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

// changedAddresses names the resources whose planned change differs
// (action, activation, attributes with their before and after values,
// dependencies), and pending items that differ; "" when none does.
func changedAddresses(was, now *Plan) string {
	key := func(c *Change) string {
		b, _ := json.Marshal(c)
		return string(b)
	}
	pend := func(p *Plan) string {
		b, _ := json.Marshal(p.Pending)
		return string(b)
	}
	w := map[string]string{}
	for _, c := range was.Changes {
		w[c.Address.String()] = key(c)
	}
	var diff []string
	seen := map[string]bool{}
	for _, c := range now.Changes {
		seen[c.Address.String()] = true
		if w[c.Address.String()] != key(c) {
			diff = append(diff, c.Address.String())
		}
	}
	for a := range w {
		if !seen[a] {
			diff = append(diff, a)
		}
	}
	if pend(was) != pend(now) {
		diff = append(diff, "pending reboot items")
	}
	if len(diff) == 0 {
		return ""
	}
	sort.Strings(diff)
	return " (" + strings.Join(diff, ", ") + ")"
}
