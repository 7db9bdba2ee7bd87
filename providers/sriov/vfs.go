package sriov

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// VFKind is the kind of a single VF's address: sriov_vf[PCI/N].
const VFKind = "sriov_vf"

// VFAddress is the plan address of VF n of the PF at pci.
func VFAddress(pci string, n int) plan.Address { return plan.Addr(VFKind, pci+"/"+strconv.Itoa(n)) }

// Zero values a new VF starts with: GUIDs and MAC unset.
const (
	zeroGUID = "00:00:00:00:00:00:00:00"
	zeroMAC  = "00:00:00:00:00:00"
)

// VFInfo is one VF as the PF's driver reports it.
type VFInfo struct {
	MAC string
	// NodeGUID and PortGUID are "" when the kernel does not report them
	// (before 5.5, or a driver without ndo_get_vf_guid).
	NodeGUID, PortGUID string
	Trust, Spoofchk    bool
	State              string
}

// ReadVFs reads the VFs of a PF netdev.
//
// Equivalent to: ip -j link show dev PF
func ReadVFs(ctx context.Context, h *host.Host, netdev string) (map[int]VFInfo, error) {
	res, err := h.Run(ctx, "ip", "-j", "link", "show", "dev", netdev)
	if err != nil {
		return nil, err
	}
	vfs, err := ParseVFs(res.Stdout)
	if err != nil {
		return nil, fmt.Errorf("ip -j link show dev %s: %w", netdev, err)
	}
	return vfs, nil
}

// ParseVFs reads the vfinfo_list of `ip -j link show dev PF` (iproute2's
// print_vfinfo): vf, address, spoofchk, "node guid" and "port guid" (keys
// with a space, present only when the kernel reports them), link_state,
// trust. A link without the list has no VFs.
func ParseVFs(b []byte) (map[int]VFInfo, error) {
	var links []struct {
		VFs []struct {
			VF        *int    `json:"vf"`
			Address   string  `json:"address"`
			Spoofchk  bool    `json:"spoofchk"`
			NodeGUID  *string `json:"node guid"`
			PortGUID  *string `json:"port guid"`
			LinkState string  `json:"link_state"`
			Trust     bool    `json:"trust"`
		} `json:"vfinfo_list"`
	}
	if err := json.Unmarshal(b, &links); err != nil {
		return nil, fmt.Errorf("not ip's JSON: %w", err)
	}
	if len(links) != 1 {
		return nil, fmt.Errorf("%d links in the answer, want 1", len(links))
	}
	out := map[int]VFInfo{}
	for _, v := range links[0].VFs {
		if v.VF == nil {
			return nil, fmt.Errorf("a vfinfo_list entry has no vf number")
		}
		info := VFInfo{MAC: strings.ToLower(v.Address), Trust: v.Trust, Spoofchk: v.Spoofchk, State: v.LinkState}
		if v.NodeGUID != nil {
			info.NodeGUID = strings.ToLower(*v.NodeGUID)
		}
		if v.PortGUID != nil {
			info.PortGUID = strings.ToLower(*v.PortGUID)
		}
		out[*v.VF] = info
	}
	return out, nil
}

// vfPayload is what Apply does to one VF.
type vfPayload struct {
	pci, netdev string
	vf          int
	cfg         host.VFConfig
	// rebind: the VF's driver is unbound and bound again after the
	// GUIDs are set (an InfiniBand VF takes them only then).
	rebind bool
	before VFInfo
	// created: the VF comes new in this plan (the count changes).
	created bool
}

// vfChanges plans the VF entries of one PF at pci; recreated says the
// plan changes the count, so every VF comes new with zeroed settings. A
// VF setting is checked against the link layer the PF has now and the one
// it will have after the next boot (a firmware LINK_TYPE this plan sets or
// that is staged): what the PF will not take then is an error now, not
// after the reboot; what it takes only then waits for the reboot.
func vfChanges(req *plan.Request, facts *plan.Facts, sp string, d schema.Device, pci string, pf *PF, recreated bool, countAddr plan.Address) plan.Proposal {
	var prop plan.Proposal
	var changes []*plan.Change
	bootIB, boot := pf.IB, plan.LinkChange{}
	if l, ok := facts.LinkAtBoot(pci, pf.Port); ok && l.To != "" {
		bootIB, boot = l.To == linklayer.InfiniBand, l
	}
	for j, vf := range d.SRIOV.VFs {
		vp := fmt.Sprintf("%s.vfs[%d]", sp, j)
		if pf.Netdev == "" {
			prop.Errors = append(prop.Errors, req.Finding(vp, "%s has no netdev to set VF %d through", pci, vf.VF))
			continue
		}
		ethOnly := vf.MAC != "" || vf.Trust != nil || vf.Spoofchk != nil
		ibOnly := vf.NodeGUID != "" || vf.PortGUID != ""
		switch {
		case bootIB && ethOnly && !pf.IB:
			prop.Errors = append(prop.Errors, req.Finding(vp, "%s becomes an InfiniBand PF at the next boot (%s): its VFs take node_guid, port_guid and state then, not mac, trust or spoofchk (IPoIB has no such VF operations)", pci, boot.Setting))
			continue
		case !bootIB && ibOnly && pf.IB:
			prop.Errors = append(prop.Errors, req.Finding(vp, "%s becomes an Ethernet PF at the next boot (%s): VF GUIDs are InfiniBand; use mac", pci, boot.Setting))
			continue
		case pf.IB && ethOnly && bootIB:
			prop.Errors = append(prop.Errors, req.Finding(vp, "%s is an InfiniBand PF (%s): its VFs take node_guid, port_guid and state, not mac, trust or spoofchk (IPoIB has no such VF operations)", pci, pf.Netdev))
			continue
		case !pf.IB && ibOnly && !bootIB:
			prop.Errors = append(prop.Errors, req.Finding(vp, "%s is an Ethernet PF (%s): VF GUIDs are InfiniBand; use mac", pci, pf.Netdev))
			continue
		case bootIB != pf.IB:
			// What the PF takes only after the boot, and its VFs with it.
			prop.Deferred = append(prop.Deferred, plan.Deferred{Address: VFAddress(pci, vf.VF), Reason: boot.Reason(), Source: req.Pos(vp)})
			continue
		}
		if errs := pfAddressTaken(req, vp, vf, pf); len(errs) > 0 {
			prop.Errors = append(prop.Errors, errs...)
			continue
		}
		var have VFInfo
		if recreated {
			have = VFInfo{MAC: zeroMAC, State: "auto", Spoofchk: !pf.IB}
			if pf.IB {
				have.NodeGUID, have.PortGUID = zeroGUID, zeroGUID
			}
		} else {
			info, ok := pf.VFInfo[vf.VF]
			if !ok && pf.VFsOffline {
				prop.Errors = append(prop.Errors, req.Unreadable(vp, "VF settings are read with ip from the running kernel; a --root tree has none"))
				continue
			}
			if !ok {
				prop.Errors = append(prop.Errors, req.Unreadable(vp, "%s reports no VF %d (ip -j link show dev %s)", pf.Netdev, vf.VF, pf.Netdev))
				continue
			}
			have = info
		}
		if (vf.NodeGUID != "" || vf.PortGUID != "") && !recreated && have.NodeGUID == "" && have.PortGUID == "" {
			prop.Errors = append(prop.Errors, req.Finding(vp, "this kernel does not report VF GUIDs (before 5.5, or %s's driver lacks ndo_get_vf_guid), so rdmaform cannot verify them and does not set them; set them once by hand (ip link set dev %s vf %d node_guid G port_guid G) and leave them out of the spec", pf.Netdev, pf.Netdev, vf.VF))
			continue
		}
		pl := &vfPayload{pci: pci, netdev: pf.Netdev, vf: vf.VF, before: have, created: recreated}
		var attrs []plan.Attr
		str := func(name, want, cur string, set *string) {
			if want != "" && want != cur {
				*set = want
				attrs = append(attrs, plan.Attr{Name: name, Before: cur, After: want})
			}
		}
		str("node_guid", vf.NodeGUID, have.NodeGUID, &pl.cfg.NodeGUID)
		str("port_guid", vf.PortGUID, have.PortGUID, &pl.cfg.PortGUID)
		str("mac", vf.MAC, have.MAC, &pl.cfg.MAC)
		boolean := func(name string, want *bool, cur bool, set **bool) {
			if want != nil && *want != cur {
				v := *want
				*set = &v
				attrs = append(attrs, plan.Attr{Name: name, Before: strconv.FormatBool(cur), After: strconv.FormatBool(v)})
			}
		}
		boolean("trust", vf.Trust, have.Trust, &pl.cfg.Trust)
		boolean("spoofchk", vf.Spoofchk, have.Spoofchk, &pl.cfg.Spoofchk)
		str("state", vf.State, have.State, &pl.cfg.State)
		if len(attrs) == 0 {
			continue
		}
		pl.rebind = pf.IB && (pl.cfg.NodeGUID != "" || pl.cfg.PortGUID != "")
		c := &plan.Change{Address: VFAddress(pci, vf.VF), Action: plan.Update, Activation: plan.Runtime, Source: req.Pos(vp), Attributes: attrs, Payload: pl}
		if recreated {
			c.DependsOn = []plan.Address{countAddr}
		}
		if pl.rebind && !recreated && vf.VF < len(pf.VFNetdev) && pf.VFNetdev[vf.VF] != "" {
			// The rebind takes the VF's netdev away and back.
			c.Disrupts = []string{pf.VFNetdev[vf.VF]}
		}
		changes = append(changes, c)
	}
	sort.Slice(changes, func(a, b int) bool { return changes[a].Address.Less(changes[b].Address) })
	prop.Changes = changes
	return prop
}

// pfAddressTaken refuses a VF GUID or MAC that is its PF's own (as the
// host has it now): the VF and the PF would answer for one address.
func pfAddressTaken(req *plan.Request, vp string, vf schema.VF, pf *PF) []schema.Finding {
	var errs []schema.Finding
	for _, g := range []struct{ key, val string }{{"node_guid", vf.NodeGUID}, {"port_guid", vf.PortGUID}} {
		if g.val != "" && slices.Contains(pf.GUIDs, g.val) {
			errs = append(errs, req.Finding(vp+"."+g.key, "%s is a GUID of the PF %s (its node or port GUID); a VF needs a GUID of its own", g.val, pf.Netdev))
		}
	}
	if vf.MAC != "" && vf.MAC == pf.MAC {
		errs = append(errs, req.Finding(vp+".mac", "%s is the MAC of the PF %s; a VF needs a MAC of its own", vf.MAC, pf.Netdev))
	}
	return errs
}

// applyVF sets one VF, rebinds it when its GUIDs changed, and reads it
// back.
//
// Equivalent to: ip link set dev PF vf N node_guid G port_guid G ...;
// echo VF > /sys/bus/pci/drivers/DRV/unbind; echo VF > /sys/bus/pci/drivers/DRV/bind
func applyVF(ctx context.Context, h *host.Host, pl *vfPayload) error {
	if err := h.Net.LinkSetVF(pl.netdev, pl.vf, pl.cfg); err != nil {
		return err
	}
	if pl.rebind {
		if err := rebind(h, pl.pci, pl.vf); err != nil {
			return err
		}
	}
	got, err := ReadVFs(ctx, h, pl.netdev)
	if err != nil {
		return fmt.Errorf("reading VF %d of %s back: %w", pl.vf, pl.netdev, err)
	}
	g := got[pl.vf]
	var bad []string
	check := func(name, want, have string) {
		if want != "" && !strings.EqualFold(want, have) {
			bad = append(bad, fmt.Sprintf("%s is %q, not %q", name, have, want))
		}
	}
	check("node_guid", pl.cfg.NodeGUID, g.NodeGUID)
	check("port_guid", pl.cfg.PortGUID, g.PortGUID)
	check("mac", pl.cfg.MAC, g.MAC)
	check("state", pl.cfg.State, g.State)
	if pl.cfg.Trust != nil && *pl.cfg.Trust != g.Trust {
		bad = append(bad, fmt.Sprintf("trust is %t", g.Trust))
	}
	if pl.cfg.Spoofchk != nil && *pl.cfg.Spoofchk != g.Spoofchk {
		bad = append(bad, fmt.Sprintf("spoofchk is %t", g.Spoofchk))
	}
	if len(bad) > 0 {
		return fmt.Errorf("VF %d of %s after setting it: %s", pl.vf, pl.netdev, strings.Join(bad, "; "))
	}
	return nil
}

// rebind unbinds VF n of the PF at pci from its driver and binds it
// again; a VF with no driver is left alone (it takes the GUIDs when it
// binds).
func rebind(h *host.Host, pci string, n int) error {
	target, err := h.FS.Readlink(path.Join(Dir(pci), fmt.Sprintf("virtfn%d", n)))
	if err != nil {
		return fmt.Errorf("VF %d of %s: %w", n, pci, err)
	}
	vf := path.Base(target)
	drvLink, err := h.FS.Readlink(path.Join(Dir(vf), "driver"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("driver of VF %s: %w", vf, err)
	}
	drv := path.Base(drvLink)
	if schema.CheckModuleName(drv) != "" {
		return fmt.Errorf("driver of VF %s: %q is not a driver name", vf, drv)
	}
	for _, op := range []string{"unbind", "bind"} {
		name := path.Join("/sys/bus/pci/drivers", drv, op)
		if err := h.FS.WriteAttr(name, []byte(vf+"\n")); err != nil {
			return fmt.Errorf("echo %s > %s: %w", vf, name, err)
		}
	}
	return nil
}
