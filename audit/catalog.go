package audit

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rdmaform/rdmaform/schema"
)

// Card firmware states against a catalog (CardFirmware.Status).
const (
	// FirmwareCurrent: the card runs its entry's version.
	FirmwareCurrent = "current"
	// FirmwarePending: the entry's version is burned and waits for its
	// activation.
	FirmwarePending = "pending"
	// FirmwareOutdated: the card runs another version than its entry's.
	FirmwareOutdated = "outdated"
	// FirmwareUnlisted: no entry lists the card (PSID, part number).
	FirmwareUnlisted = "unlisted"
)

// CardFirmware is one card's firmware against the spec's catalog: what
// runs and what its entry says. The fleet summary (rdmaform
// firmware-summary) reads these from every host's report.
type CardFirmware struct {
	// Card is the card's first PCI function the spec selects; Device its
	// RDMA device.
	Card       string `json:"card"`
	Device     string `json:"device"`
	PSID       string `json:"psid"`
	PartNumber string `json:"part_number,omitempty"`
	Running    string `json:"running"`
	// Catalog is the entry's version ("" when no entry lists the card),
	// Activation what the entry says makes it run.
	Catalog    string `json:"catalog,omitempty"`
	Activation string `json:"activation,omitempty"`
	Status     string `json:"status"`
}

// catalogFirmware reports each card a catalog covers, once per card (its
// functions show one firmware), ordered by card.
func (a *auditor) catalogFirmware() []CardFirmware {
	pending := map[string]bool{}
	for _, p := range a.plan.Pending {
		if p.Address.Kind == "firmware_image" && p.Attribute == "version" {
			pending[slot(p.Address.Key)] = true
		}
	}
	seen := map[string]bool{}
	var out []CardFirmware
	for i, d := range a.req.Spec.Devices {
		if d.Firmware == nil || d.Firmware.Catalog == nil || i >= len(a.req.Devices) {
			continue
		}
		dev := a.req.Devices[i]
		if dev == nil || dev.PCI == "" || seen[slot(dev.PCI)] {
			continue
		}
		seen[slot(dev.PCI)] = true
		c := CardFirmware{Card: dev.PCI, Device: dev.Name, PSID: dev.PSID, PartNumber: dev.PartNumber, Running: dev.FWVer, Status: FirmwareUnlisted}
		if k := d.Firmware.Catalog.Entry(dev.PSID, dev.PartNumber); k >= 0 {
			e := d.Firmware.Catalog.Entries[k]
			c.Catalog, c.Activation = e.Version, e.Activation
			switch {
			case sameVersion(dev.FWVer, e.Version):
				c.Status = FirmwareCurrent
			case pending[slot(dev.PCI)]:
				c.Status = FirmwarePending
			default:
				c.Status = FirmwareOutdated
			}
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Card < out[j].Card })
	return out
}

// slot is a PCI function's card: its address without the function.
func slot(pci string) string {
	if i := strings.LastIndexByte(pci, '.'); i > 0 {
		return pci[:i]
	}
	return pci
}

// sameVersion compares two dotted versions number by number (20.36.1012
// and 20.36.01012 agree); anything else as text.
func sameVersion(a, b string) bool {
	x, errA := schema.ParseFirmwareVersion(a, 1, 3)
	y, errB := schema.ParseFirmwareVersion(b, 1, 3)
	if errA != nil || errB != nil {
		return a == b
	}
	return fmt.Sprint(x) == fmt.Sprint(y)
}

// PSIDSummary is one card model across a fleet: how many of its cards
// run the catalog's version, wait for it, or run another.
type PSIDSummary struct {
	PSID        string   `json:"psid"`
	PartNumbers []string `json:"part_numbers,omitempty"`
	// Catalog lists the entries' versions for this PSID ("" for cards no
	// entry lists).
	Catalog []string `json:"catalog"`
	Cards   int      `json:"cards"`
	Hosts   int      `json:"hosts"`
	// Counts by status (FirmwareCurrent ...).
	Current  int `json:"current"`
	Pending  int `json:"pending"`
	Outdated int `json:"outdated"`
	Unlisted int `json:"unlisted"`
	// Running counts the cards by the version they run.
	Running map[string]int `json:"running"`
	// NotCurrent names the cards that do not run their entry's version
	// (or have none): HOST card (status, running).
	NotCurrent []string `json:"not_current,omitempty"`
}

// SummarizeFirmware groups the cards of many hosts' reports by PSID.
func SummarizeFirmware(reports []*Report) []PSIDSummary {
	by := map[string]*PSIDSummary{}
	hosts := map[string]map[string]bool{}
	pns := map[string]map[string]bool{}
	cats := map[string]map[string]bool{}
	for _, r := range reports {
		for _, c := range r.Firmware {
			s := by[c.PSID]
			if s == nil {
				s = &PSIDSummary{PSID: c.PSID, Running: map[string]int{}}
				by[c.PSID], hosts[c.PSID], pns[c.PSID], cats[c.PSID] = s, map[string]bool{}, map[string]bool{}, map[string]bool{}
			}
			s.Cards++
			s.Running[c.Running]++
			hosts[c.PSID][r.Host] = true
			if c.PartNumber != "" {
				pns[c.PSID][c.PartNumber] = true
			}
			cats[c.PSID][c.Catalog] = true
			switch c.Status {
			case FirmwareCurrent:
				s.Current++
			case FirmwarePending:
				s.Pending++
			case FirmwareOutdated:
				s.Outdated++
			default:
				s.Unlisted++
			}
			if c.Status != FirmwareCurrent {
				s.NotCurrent = append(s.NotCurrent, fmt.Sprintf("%s %s (%s, running %s)", r.Host, c.Card, c.Status, c.Running))
			}
		}
	}
	var out []PSIDSummary
	for psid, s := range by {
		s.Hosts = len(hosts[psid])
		s.PartNumbers = sortedSet(pns[psid])
		s.Catalog = sortedSet(cats[psid])
		sort.Strings(s.NotCurrent)
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PSID < out[j].PSID })
	return out
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// firmwareLines renders a report's card firmware for the text report:
// the cards that do not run their entry's version.
func firmwareLines(cs []CardFirmware) []string {
	var out []string
	for _, c := range cs {
		switch c.Status {
		case FirmwareCurrent:
			continue
		case FirmwareUnlisted:
			out = append(out, fmt.Sprintf("firmware %s (%s, PSID %s): runs %s; no catalog entry lists it", c.Card, c.Device, c.PSID, c.Running))
		default:
			out = append(out, fmt.Sprintf("firmware %s (%s, PSID %s): runs %s; the catalog says %s (%s, by %s)", c.Card, c.Device, c.PSID, c.Running, c.Catalog, c.Status, c.Activation))
		}
	}
	return out
}
