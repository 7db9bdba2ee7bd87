package sriov

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// payload is what Apply writes, in order, and what Revert puts back.
type payload struct {
	pci string
	// autoprobe is written first when set (the kernel binds VF drivers as
	// the VFs appear, so it must be right before they do).
	autoprobe *bool
	// writes are the values written to sriov_numvfs in order: [0, M] to go
	// from N to M, [M] from 0, [0] to disable.
	writes []int
	// before is the PF as the plan saw it.
	before PF
	want   int
}

// Plan implements plan.TypedProvider.
func (p *Provider) Plan(req *plan.Request, obs *Observed, facts *plan.Facts) plan.Proposal {
	prop := diff(req, obs, facts)
	prop.Managed = manages(req)
	return prop
}

// manages lists the PFs whose VF count the spec sets, and their VFs.
func manages(req *plan.Request) []plan.Managed {
	var out []plan.Managed
	for i, d := range req.Spec.Devices {
		dev := req.Devices[i]
		if d.SRIOV == nil || d.SRIOV.NumVFs == nil || dev == nil || dev.PCI == "" {
			continue
		}
		sp := schema.Path("devices", i, "sriov")
		out = append(out, plan.Managed{Address: Address(dev.PCI), Path: sp})
		for j, vf := range d.SRIOV.VFs {
			out = append(out, plan.Managed{Address: VFAddress(dev.PCI, vf.VF), Path: fmt.Sprintf("%s.vfs[%d]", sp, j)})
		}
	}
	return out
}

func truthy(v string) bool {
	switch strings.ToLower(v) {
	case "1", "true":
		return true
	}
	return false
}

func diff(req *plan.Request, obs *Observed, facts *plan.Facts) plan.Proposal {
	var prop plan.Proposal
	for i, d := range req.Spec.Devices {
		if d.SRIOV == nil || d.SRIOV.NumVFs == nil {
			continue
		}
		sp := schema.Path("devices", i, "sriov")
		dev := req.Devices[i]
		if dev == nil {
			continue // the engine reported the missing device
		}
		if dev.PCI == "" {
			prop.Errors = append(prop.Errors, req.Finding(sp, "%s is not a PCI function; it has no virtual functions", dev.Name))
			continue
		}
		var pf *PF
		if obs != nil {
			pf = obs.PFs[i]
		}
		if pf == nil {
			prop.Errors = append(prop.Errors, req.Unreadable(sp, "SR-IOV state of %s was not read", dev.PCI))
			continue
		}
		addr := Address(dev.PCI)
		want := *d.SRIOV.NumVFs
		if o, ok := obs.NMOwners[pf.Netdev]; ok && pf.Netdev != "" {
			prop.Errors = append(prop.Errors, req.Finding(sp, "NetworkManager connection %q (%s) sets sriov.total-vfs=%s on %s, the netdev of %s: two owners of one PF's VFs (NetworkManager sets the count whenever it activates the connection); remove its sriov setting (nmcli connection modify %s remove sriov) or leave SR-IOV to it", o.Name, o.UUID, o.TotalVFs, pf.Netdev, dev.PCI, o.UUID))
			continue
		}
		stagedEn, enStaged := facts.StagedParam(dev.PCI, "SRIOV_EN")
		stagedNum, numStaged := facts.StagedParam(dev.PCI, "NUM_OF_VFS")
		stagedN, numErr := strconv.Atoi(stagedNum)
		if pf.NoCapability {
			switch {
			case want == 0:
			case enStaged && truthy(stagedEn):
				prop.Deferred = append(prop.Deferred, plan.Deferred{Address: addr, Source: req.Pos(sp),
					Reason: fmt.Sprintf("waits for SRIOV_EN=%s on %s (reboot)", stagedEn, dev.PCI)})
			default:
				prop.Errors = append(prop.Errors, req.Finding(sp+".num_vfs",
					"%s has no SR-IOV capability (no sriov_totalvfs): enable it in firmware (firmware: params: {SRIOV_EN: true, NUM_OF_VFS: %d}) and reboot", dev.PCI, want))
			}
			continue
		}
		if want > pf.TotalVFs {
			if numStaged && numErr == nil && stagedN >= want && (!enStaged || truthy(stagedEn)) {
				prop.Deferred = append(prop.Deferred, plan.Deferred{Address: addr, Source: req.Pos(sp + ".num_vfs"),
					Reason: fmt.Sprintf("waits for NUM_OF_VFS=%s on %s (reboot); sriov_totalvfs is %d now", stagedNum, dev.PCI, pf.TotalVFs)})
				continue
			}
			msg := fmt.Sprintf("%s allows at most %d VFs (sriov_totalvfs, from firmware NUM_OF_VFS); raise NUM_OF_VFS to at least %d (firmware: params: {NUM_OF_VFS: %d}) and reboot", dev.PCI, pf.TotalVFs, want, want)
			if numStaged {
				msg += fmt.Sprintf("; NUM_OF_VFS=%s staged for the next boot is not enough", stagedNum)
			}
			prop.Errors = append(prop.Errors, req.Finding(sp+".num_vfs", "%s", msg))
			continue
		}
		pl := &payload{pci: dev.PCI, before: *pf, want: want}
		var attrs []plan.Attr
		if ap := d.SRIOV.DriversAutoprobe; ap != nil && *ap != pf.Autoprobe {
			pl.autoprobe = ap
			attrs = append(attrs, plan.Attr{Name: "drivers_autoprobe", Before: strconv.FormatBool(pf.Autoprobe), After: strconv.FormatBool(*ap)})
		}
		var disrupts []string
		if want != pf.NumVFs {
			attrs = append(attrs, plan.Attr{Name: "num_vfs", Before: strconv.Itoa(pf.NumVFs), After: strconv.Itoa(want)})
			if pf.NumVFs != 0 {
				// Every VF goes away, the ones kept included: the kernel
				// only disables all and enables anew.
				pl.writes = append(pl.writes, 0)
				disrupts = append(disrupts, pf.VFNetdevs...)
			}
			if want != 0 {
				pl.writes = append(pl.writes, want)
			}
		}
		recreated := want != pf.NumVFs && want != 0
		vfs := vfChanges(req, facts, sp, d, dev.PCI, pf, recreated, addr)
		prop.Errors = append(prop.Errors, vfs.Errors...)
		prop.Deferred = append(prop.Deferred, vfs.Deferred...)
		if len(attrs) > 0 {
			sort.Strings(disrupts)
			prop.Changes = append(prop.Changes, &plan.Change{Address: addr, Action: plan.Update, Activation: plan.Runtime,
				Source: req.Pos(sp), Attributes: attrs, Payload: pl, Disrupts: disrupts})
		}
		prop.Changes = append(prop.Changes, vfs.Changes...)
	}
	return prop
}
