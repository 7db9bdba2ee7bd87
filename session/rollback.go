package session

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers"
	"github.com/rdmaform/rdmaform/providers/bootunit"
	"github.com/rdmaform/rdmaform/providers/gpudriver"
	"github.com/rdmaform/rdmaform/providers/ipoib"
	"github.com/rdmaform/rdmaform/providers/modules"
	"github.com/rdmaform/rdmaform/providers/names"
	"github.com/rdmaform/rdmaform/providers/netdev"
	"github.com/rdmaform/rdmaform/providers/rdmacm"
	"github.com/rdmaform/rdmaform/providers/rdmanetns"
	"github.com/rdmaform/rdmaform/providers/rxe"
	"github.com/rdmaform/rdmaform/providers/services"
	"github.com/rdmaform/rdmaform/providers/sriov"
	"github.com/rdmaform/rdmaform/providers/subnetmanager"
	"github.com/rdmaform/rdmaform/schema"
)

// NewJournal is the rollback journal of an apply of spec whose plan is p
// and whose confirmation is due at deadline, before its first change:
// the host's state before it, as a spec (show's capture of the
// providers the plan uses, with the interfaces and units it touches
// under the names they have now, plus absent entries for what it
// creates, the VF counts, RDMA netns modes and names show leaves out),
// the resources it touches (also under their names before a rename), the
// modules it loads and the files it writes. Writing it and arming what
// rolls back at the deadline are the caller's (Write, the CLI's watcher).
func NewJournal(ctx context.Context, h *host.Host, spec *schema.Spec, p *plan.Plan, deadline time.Time) (*Journal, error) {
	// Only the providers the plan uses are captured: an untouched part
	// (a firmware tool that cannot read an adapter, say) must not block.
	used := map[string]bool{}
	for _, ch := range p.Changes {
		used[ch.Provider] = true
	}
	// A unit the subnet manager's changes start (opensm did not run): its
	// state before is recorded, and the rollback stops it again.
	var started []string
	for _, ch := range p.Changes {
		if u, ok := subnetmanager.StartsUnit(ch); ok && !slices.Contains(started, u) {
			started = append(started, u)
			used[services.New().Name()] = true
		}
	}
	var prov []plan.Provider
	for _, pr := range providers.All() {
		if used[pr.Name()] {
			prov = append(prov, pr)
		}
	}
	// Every interface and unit the plan touches is recorded, also one
	// that show would not capture (no RDMA device's interface, yet).
	var o plan.CaptureOptions
	// A netdev the plan renames is recorded under the name it has now.
	oldName, oldRDMA := map[string]string{}, map[string]string{}
	for _, ch := range p.Changes {
		if old, name, rdma, ok := names.Renamed(ch); ok && rdma {
			oldRDMA[name] = old
		} else if ok {
			oldName[name] = old
		}
	}
	for _, ch := range p.Changes {
		switch ch.Address.Kind {
		case netdev.Kind:
			n := ch.Address.Key
			if old, ok := oldName[n]; ok {
				n = old
			}
			o.Netdevs = append(o.Netdevs, n)
		case services.Kind:
			o.Units = append(o.Units, ch.Address.Key)
		}
	}
	o.Units = append(o.Units, started...)
	// rdma_cm's values are read through configfs, which show never
	// mounts, and exist only while rdma_cm is loaded: configfs loaded and
	// mounted and rdma_cm loaded now (the apply does it for its rdma_cm
	// changes anyway), the journal records the values the rollback puts
	// back (the kernel's, where rdma_cm was not loaded).
	if used[rdmacm.New().Name()] && !h.Offline() && h.Kernel != nil {
		if err := rdmacm.Ensure(ctx, h); err != nil {
			return nil, fmt.Errorf("loading rdma_cm to record its values for the rollback: %w", err)
		}
	}
	c, err := plan.Capture(ctx, h, prov, o)
	if err != nil {
		return nil, fmt.Errorf("recording the state before the apply for its rollback: %w", err)
	}
	before := c.Spec
	var addrs []string
	for _, u := range started {
		if a := services.Address(u).String(); !slices.ContainsFunc(p.Changes, func(c *plan.Change) bool { return c.Address.String() == a }) {
			addrs = append(addrs, a)
		}
	}
	for _, ch := range p.Changes {
		addrs = append(addrs, ch.Address.String())
		if alias, ok := beforeRename(ch.Address, oldName, oldRDMA); ok {
			// The rollback plans it under the name it had.
			addrs = append(addrs, alias)
		}
		if ch.Action != plan.Create {
			continue
		}
		// What the apply creates, the rollback removes.
		switch name := ch.Address.Key; ch.Address.Kind {
		case rxe.Kind:
			before.Rxe = append(before.Rxe, schema.Rxe{Name: name, State: "absent"})
		case ipoib.Kind:
			for _, ic := range spec.IPoIB {
				if ic.Name == name {
					before.IPoIB = append(before.IPoIB, schema.IPoIB{Name: name, Parent: ic.Parent, PKey: ic.PKey, Membership: ic.Membership, State: "absent"})
				}
			}
		}
	}
	var loaded []string
	for _, ch := range p.Changes {
		switch ch.Address.Kind {
		case modules.Kind:
			// A module change that creates loads the module.
			if ch.Action == plan.Create {
				loaded = append(loaded, ch.Address.Key)
			}
		case gpudriver.Kind:
			// gpu.peer_memory: nvidia-peermem loaded nvidia_peermem.
			if gpudriver.LoadedPeermem(ch) {
				loaded = append(loaded, gpudriver.PeermemModule)
			}
		case sriov.Kind:
			// show leaves out a PF with no VFs: the rollback needs its 0.
			noVFs(before, ch)
		case rdmanetns.Kind:
			// show leaves out the default mode: the rollback needs it.
			if mode, ok := rdmanetns.JournalBefore(ch); ok && (before.Rdma == nil || ch.Address == rdmanetns.RuntimeAddress) {
				before.Rdma = &schema.RdmaSystem{NetnsMode: mode}
			}
		case names.KindRDMA, names.KindNetdev:
			// show captures no names: the rollback renames back.
			journalName(before, ch)
		}
	}
	files, err := RecordFiles(h, p)
	if err != nil {
		return nil, err
	}
	if used[(&bootunit.Provider{}).Name()] && before.Persistence == "" && !slices.ContainsFunc(files, func(f FileState) bool { return f.Path == bootunit.UnitPath && f.Exists }) {
		// No boot unit before: the rollback removes it as persistence:
		// none does (disabled, its files gone, the manager reloaded).
		before.Persistence = "none"
	}
	text, err := schema.Marshal(before)
	if err != nil {
		return nil, err
	}
	return &Journal{PID: os.Getpid(), Deadline: deadline.UTC(), Addresses: addrs, Spec: string(text), Loaded: loaded, Files: files}, nil
}

// noVFs records in before the VF count of a PF the SR-IOV change ch
// touches, when show left the PF's sriov out (no VFs enabled): 0, and
// the driver autoprobe the change replaces.
func noVFs(before *schema.Spec, ch *plan.Change) {
	i := slices.IndexFunc(before.Devices, func(d schema.Device) bool { return d.PCI == ch.Address.Key })
	if i < 0 {
		before.Devices = append(before.Devices, schema.Device{PCI: ch.Address.Key})
		i = len(before.Devices) - 1
	}
	d := &before.Devices[i]
	if d.SRIOV != nil {
		return
	}
	zero := 0
	d.SRIOV = &schema.SRIOV{NumVFs: &zero}
	for _, at := range ch.Attributes {
		if b, err := strconv.ParseBool(at.Before); at.Name == "drivers_autoprobe" && err == nil {
			d.SRIOV.DriversAutoprobe = &b
		}
	}
}

// beforeRename is a change's address under the names the host had
// before the apply renamed its netdev (interface[NAME], ethtool[NAME]) or
// RDMA device (rxe[NAME], qos[DEV/N], rdma_cm[DEV/N]); ok false when
// neither is renamed.
func beforeRename(a plan.Address, oldName, oldRDMA map[string]string) (string, bool) {
	if old, ok := oldName[a.Key]; ok {
		return plan.Addr(a.Kind, old).String(), true
	}
	if old, ok := oldRDMA[a.Key]; ok { // rxe[NAME]
		return plan.Addr(a.Kind, old).String(), true
	}
	dev, port, ok := strings.Cut(a.Key, "/")
	if old, renamed := oldRDMA[dev]; ok && renamed {
		return plan.Addr(a.Kind, old+"/"+port).String(), true
	}
	return "", false
}

// journalName gives the captured device a rename replaced its old name,
// so that the rollback renames it back.
func journalName(before *schema.Spec, ch *plan.Change) {
	key, rdma, old, ok := names.JournalBefore(ch)
	if !ok {
		return
	}
	for i := range before.Devices {
		d := &before.Devices[i]
		if d.PCI != key || key == "" {
			continue
		}
		if d.Names == nil {
			d.Names = &schema.Names{}
		}
		if rdma {
			d.Names.RDMA = old
		} else {
			d.Names.Netdev = old
		}
	}
}
