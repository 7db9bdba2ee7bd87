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
}

// Identity is what makes a host the same host in the same boot.
type Identity struct {
	Hostname string      `json:"hostname"`
	BootID   string      `json:"boot_id"`
	Adapters []AdapterID `json:"adapters"`
}

// AdapterID is one adapter's identity and firmware version.
type AdapterID struct {
	Name  string `json:"name"`
	PCI   string `json:"pci,omitempty"`
	FWVer string `json:"fw_ver,omitempty"`
}

// Identify reads the host's identity: hostname, boot_id
// (/proc/sys/kernel/random/boot_id) and adapters with firmware versions.
func Identify(h *host.Host, inv *inventory.Inventory) Identity {
	id := Identity{Adapters: []AdapterID{}}
	id.Hostname, _ = h.Hostname()
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
	return s
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
	return s, true, nil
}

// StaleError says why a saved plan no longer fits its host.
type StaleError struct {
	Reasons []string
}

func (e *StaleError) Error() string {
	return "saved plan is stale, nothing was changed: " + strings.Join(e.Reasons, "; ") + "; run plan again"
}

// Check compares a saved plan with a fresh discovery of the host.
func (s *Saved) Check(h *host.Host, now *Result) error {
	var why []string
	cur := Identify(h, now.Request.Inv)
	if cur.Hostname != s.Host.Hostname {
		why = append(why, fmt.Sprintf("different host: the plan was made on %q, this is %q", s.Host.Hostname, cur.Hostname))
	}
	if cur.BootID != s.Host.BootID {
		why = append(why, fmt.Sprintf("the host rebooted since the plan was made (boot_id %s, now %s)", s.Host.BootID, cur.BootID))
	}
	if d := adapterDiff(s.Host.Adapters, cur.Adapters); d != "" {
		why = append(why, "adapters changed: "+d)
	}
	if len(why) == 0 && ObservedDigest(now) != s.ObservedDigest {
		why = append(why, "the host's state changed since the plan was made"+changedAddresses(s.Plan, now.Plan))
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

// changedAddresses names the resources whose planned change differs.
func changedAddresses(was, now *Plan) string {
	key := func(c *Change) string {
		b, _ := json.Marshal(c)
		return string(b)
	}
	w := map[string]string{}
	for _, c := range was.Changes {
		w[c.Address] = key(c)
	}
	var diff []string
	seen := map[string]bool{}
	for _, c := range now.Changes {
		seen[c.Address] = true
		if w[c.Address] != key(c) {
			diff = append(diff, c.Address)
		}
	}
	for a := range w {
		if !seen[a] {
			diff = append(diff, a)
		}
	}
	if len(diff) == 0 {
		return ""
	}
	sort.Strings(diff)
	return " (" + strings.Join(diff, ", ") + ")"
}
