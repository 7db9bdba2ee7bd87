package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/firmware"
	"github.com/rdmaform/rdmaform/providers/sriov"
)

// ActivateRecordPath is what an activation's firmware resets undo,
// written before the first reset: each PF's VF count and the settings of
// its VFs. It lives in /run (a reboot takes the VFs down anyway, and
// empties it). An activation that ends removes it; one cut short (the
// process killed during a reset or the wait) leaves it, and the next
// rdmaform activate gives the VFs back and, with -f, applies the spec
// again, as the killed run would have.
const ActivateRecordPath = "/run/rdmaform/activate.json"

// maxActivateRecord bounds the record's size: a PF has at most a few
// hundred VFs, each a few lines.
const maxActivateRecord = 1 << 20

// activateRecord is ActivateRecordPath's content.
type activateRecord struct {
	FormatVersion int       `json:"format_version"`
	BootID        string    `json:"boot_id"`
	PID           int       `json:"pid"`
	Started       time.Time `json:"started"`
	// PFs are the PFs whose VFs the resets take down, with what to give
	// them back.
	PFs []recordPF `json:"pfs"`
}

type recordPF struct {
	Card string `json:"card"`
	PF   string `json:"pf"`
	// Netdev is the PF's netdev before the reset: the VF settings are
	// given back only when it comes back under that name (a link-layer
	// change gives it another, and the old settings are of the other kind).
	Netdev string     `json:"netdev,omitempty"`
	Count  int        `json:"count"`
	VFs    []recordVF `json:"vfs,omitempty"`
}

type recordVF struct {
	VF       int    `json:"vf"`
	MAC      string `json:"mac,omitempty"`
	NodeGUID string `json:"node_guid,omitempty"`
	PortGUID string `json:"port_guid,omitempty"`
	Trust    bool   `json:"trust"`
	Spoofchk bool   `json:"spoofchk"`
	State    string `json:"state,omitempty"`
}

func (r *activateRecord) add(card string, s savedVFs) {
	pf := recordPF{Card: card, PF: s.pf, Netdev: s.netdev, Count: s.count}
	for _, i := range sortedKeys(s.vfs) {
		v := s.vfs[i]
		pf.VFs = append(pf.VFs, recordVF{VF: i, MAC: v.MAC, NodeGUID: v.NodeGUID, PortGUID: v.PortGUID, Trust: v.Trust, Spoofchk: v.Spoofchk, State: v.State})
	}
	r.PFs = append(r.PFs, pf)
}

func (p recordPF) saved() savedVFs {
	s := savedVFs{pf: p.PF, netdev: p.Netdev, count: p.Count, vfs: map[int]sriov.VFInfo{}}
	for _, v := range p.VFs {
		s.vfs[v.VF] = sriov.VFInfo{MAC: v.MAC, NodeGUID: v.NodeGUID, PortGUID: v.PortGUID, Trust: v.Trust, Spoofchk: v.Spoofchk, State: v.State}
	}
	return s
}

// writeActivateRecord writes the record (0600, atomically); with no PF
// left in it, the file goes.
//
// Equivalent to: writing /run/rdmaform/activate.json
func writeActivateRecord(h *host.Host, r *activateRecord) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := h.FS.MkdirAll(path.Dir(ActivateRecordPath), 0o755); err != nil {
		return fmt.Errorf("writing %s: %w", ActivateRecordPath, err)
	}
	if err := h.FS.WriteFile(ActivateRecordPath, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", ActivateRecordPath, err)
	}
	return nil
}

func removeActivateRecord(h *host.Host) error {
	if err := h.FS.Remove(ActivateRecordPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing %s: %w", ActivateRecordPath, err)
	}
	return nil
}

// readActivateRecord reads the record of an activation cut short (nil
// when there is none). Only a regular file of at most maxActivateRecord
// bytes is read.
func readActivateRecord(h *host.Host) (*activateRecord, error) {
	fi, err := h.FS.Lstat(ActivateRecordPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	bad := func(why string) error {
		return fmt.Errorf("%s (what an activation cut short must give back: its VFs) %s; look at it, then move it away", ActivateRecordPath, why)
	}
	switch {
	case err != nil:
		return nil, bad(err.Error())
	case !fi.Mode().IsRegular():
		return nil, bad("is not a regular file (" + fi.Mode().Type().String() + ")")
	case fi.Size() > maxActivateRecord:
		return nil, bad(fmt.Sprintf("is %d bytes, more than the %d a record can be", fi.Size(), maxActivateRecord))
	}
	data, err := h.FS.ReadFile(ActivateRecordPath)
	if err != nil {
		return nil, bad(err.Error())
	}
	r := &activateRecord{}
	if err := json.Unmarshal(data, r); err != nil {
		return nil, bad("is not a record rdmaform wrote: " + err.Error())
	}
	for i, p := range r.PFs {
		if p.PF == "" || p.Count < 1 {
			return nil, bad(fmt.Sprintf("has a PF entry %d without its address or VF count", i+1))
		}
	}
	return r, nil
}

// newActivateRecord is the record of this activation, before its resets.
func newActivateRecord(h *host.Host) *activateRecord {
	boot, _ := host.ReadAttr(h.FS, firmware.BootIDPath)
	return &activateRecord{FormatVersion: plan.FormatVersion, BootID: boot, PID: os.Getpid(), Started: time.Now().UTC().Truncate(time.Second)}
}

// recover gives back what an activation cut short took down: the VFs of
// each PF in its record, once the PF's RDMA device is back (waiting up to
// wait). A record of an earlier boot is dropped (the reboot took the VFs
// down; the boot unit or the next apply makes those of the spec). It
// reports whether a record of this boot was found (then the spec is
// applied again after this activation's own work). A PF that is not back
// stays in the record and fails the activation (exit 1).
func (a *activator) recover(ctx context.Context, h *host.Host, wait time.Duration) (bool, error) {
	r, err := readActivateRecord(h)
	if err != nil || r == nil {
		return false, err
	}
	boot, _ := host.ReadAttr(h.FS, firmware.BootIDPath)
	who := fmt.Sprintf("an activation cut short (pid %d, started %s)", r.PID, r.Started.Format(time.RFC3339))
	if boot != "" && r.BootID != boot {
		fmt.Fprintf(a.info(), "rdmaform: %s belongs to boot %s, not this one: the reboot took its VFs down; dropping it\n", ActivateRecordPath, r.BootID)
		return false, removeActivateRecord(h)
	}
	var restored, left []string
	var keep []recordPF
	deadline := time.Now().Add(wait)
	for _, p := range r.PFs {
		for !rdmaRegistered(h, p.PF) && time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(200 * time.Millisecond)
		}
		if !rdmaRegistered(h, p.PF) {
			keep = append(keep, p)
			left = append(left, fmt.Sprintf("the %d VFs of %s: it is not back (no RDMA device after %s)", p.Count, p.PF, wait))
			continue
		}
		now, _ := host.ReadAttr(h.FS, sriov.Dir(p.PF)+"/sriov_numvfs")
		switch n, _ := strconv.Atoi(now); {
		case n == p.Count:
			// Back already (the killed run restored the count): the
			// settings are given again below.
		case n != 0:
			left = append(left, fmt.Sprintf("the %d VFs of %s: it has %d now, which rdmaform leaves as they are", p.Count, p.PF, n))
			continue
		}
		c := &ActivateCard{Card: p.Card}
		a.restoreVFs(ctx, h, c, []savedVFs{p.saved()})
		if c.Result == "failed" {
			keep = append(keep, p)
			left = append(left, c.Reason)
			continue
		}
		restored = append(restored, fmt.Sprintf("%s %d", p.PF, p.Count))
	}
	if len(restored) > 0 {
		fmt.Fprintf(a.env.Stdout, "VFs %s took down restored: %s\n", who, strings.Join(restored, ", "))
	}
	if len(keep) > 0 {
		r.PFs = keep
		if err := writeActivateRecord(h, r); err != nil {
			return true, err
		}
		return true, &ExitError{Code: plan.ExitError, Err: fmt.Errorf("%s left VFs down that cannot be given back now: %s; nothing else was done (a reboot probes the card again; then rdmaform apply -f SPEC sets the VFs the spec asks for)", who, strings.Join(left, "; "))}
	}
	if len(left) > 0 {
		fmt.Fprintf(a.env.Stderr, "rdmaform: warning: %s: not restored: %s\n", who, strings.Join(left, "; "))
	}
	return true, removeActivateRecord(h)
}
