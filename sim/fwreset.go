package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rdmaform/rdmaform/sim/mlxemu"
)

// fwresetTool emulates mstfwreset (mstflint) or mlxfwreset (MFT) over the
// simulated adapters: query lists the reset levels of the adapter's MFRL
// register; reset at level 3 reloads the card's firmware (Next Boot values
// become current on every function of the card) and re-registers the
// card as the driver restart does (see resetCard); level 4 reboots the
// host. The tool clears the card's VFs itself first, as 4.21's
// MlnxDriverLinux does; a "vfs" reset fault makes that fail. A
// "power-cycle" reset fault is firmware whose MFRL register reports no
// level: only a power cycle loads its configuration. A "no-return" reset
// fault is a reset that succeeds (the firmware is loaded) after which
// the driver fails to probe the card's functions again: no RDMA device,
// no netdevs, until a reboot.
func fwresetTool(prog string) toolFunc {
	return func(_ context.Context, s *Sim, args []string, stdin []byte) (string, string, int) {
		c, usage, code := mlxemu.ParseResetArgs(prog, args)
		if code != 0 {
			return "", usage, code
		}
		if c.Command == "version" {
			return mlxemu.ResetVersion(prog), "", 0
		}
		s.lock()
		if c.Command == "reset" && s.state.Hypervisor != "" {
			// reset_flow_host asks lscpu first, before it opens the
			// device: "Hypervisor vendor" in its output ends the reset.
			s.unlock()
			return mlxemu.ResetError(mlxemu.ErrVirtualMachine), "", 1
		}
		a := s.state.resetAdapter(c.Device)
		if a == nil {
			s.unlock()
			return mlxemu.ResetOpenError(c.Device), "", 1
		}
		slot := slotOf(a.BDF)
		levels := a.SupportedResetLevels()
		sync := a.ResetDriverSync
		if s.takeLocked(faultReset, ResetPowerCycle, a.BDF) != nil {
			levels = nil
		}
		vfs := s.state.cardVFs(slot)
		refuseVFs := false
		if c.Command == "reset" && vfs > 0 {
			refuseVFs = s.takeLocked(faultReset, ResetVFs, a.BDF) != nil
		}
		s.unlock()

		if c.Command == "query" {
			out, code := mlxemu.RenderResetQuery(levels, sync)
			return out, "", code
		}
		level, requested := c.Level, c.Level >= 0
		if !requested {
			if len(levels) == 0 {
				return "\n" + mlxemu.ResetError(mlxemu.ErrNoResetLevel), "", 1
			}
			level = slices.Min(levels)
		}
		if !slices.Contains(levels, level) {
			return "\n" + mlxemu.ResetError(mlxemu.LevelNotSupported(level)), "", 1
		}
		out := mlxemu.RenderResetStart(c.Device, level, requested, c.Yes)
		if !c.Yes && !answeredYes(stdin) {
			return out + mlxemu.ResetError("Aborted by user"), "", 1
		}
		if refuseVFs {
			return out + mlxemu.ResetError(mlxemu.ErrVFs), "", 1
		}
		switch level {
		case 0:
			// A live patch: the running firmware is patched in place; a
			// configuration change waits for a real reset.
			return out + "-I- Sending Reset Command To Fw             -Done\n-I- FW was loaded successfully.\n", "", 0
		case 4:
			if err := s.Reboot(); err != nil {
				return out, err.Error() + "\n", 1
			}
			return out + mlxemu.RenderWarmRebootSteps(), "", 0
		}
		// The card is reset under the lock; sim.yaml and the tree are
		// written once for the resets that end together (leaveFirmware).
		s.lock()
		if s.stale != nil {
			err := s.stale
			s.unlock()
			return out, err.Error() + "\n", 1
		}
		scopes := s.state.cardScopes(slot)
		s.knowRendering()
		noReturn := s.takeLocked(faultReset, ResetNoReturn, a.BDF) != nil
		var late *Fault
		if !noReturn {
			late = s.takeLocked(faultReset, ResetLate, a.BDF)
		}
		s.state.resetCard(slot, noReturn || late != nil)
		if late != nil {
			at := time.Now().Add(time.Duration(late.Delay))
			for _, d := range s.state.Unprobed {
				if slotOf(d.PCI) == slot {
					d.ProbeAt = at
				}
			}
			s.probeLater(at)
		}
		s.state.sortAll()
		s.rev++
		s.renderDue = append(s.renderDue, scopes...)
		if !s.dirty {
			s.dirty = true
			s.held++
		}
		s.unlock()
		return out + mlxemu.RenderResetSteps(), "", 0
	}
}

func answeredYes(stdin []byte) bool {
	a := strings.ToLower(strings.TrimSpace(string(stdin)))
	return a == "y" || a == "yes"
}

// Reset faults (Fault.Reset): the answers a firmware reset can get.
const (
	// ResetPowerCycle: the adapter's MFRL register reports no reset
	// level, so neither a reset nor a warm reboot loads its firmware.
	ResetPowerCycle = "power-cycle"
	// ResetVFs: the card's VFs cannot be removed (in use), so the reset
	// is refused while VFs exist.
	ResetVFs = "vfs"
	// ResetNoReturn: the reset succeeds and loads the firmware, but the
	// driver fails to probe the card's functions after it (mlx5_core's
	// probe failing after a firmware reset), so they register no RDMA
	// device and no netdevs until a reboot probes them again.
	ResetNoReturn = "no-return"
	// ResetLate: as no-return, but the driver registers the card again
	// Fault.Delay after the reset (a slow probe).
	ResetLate = "late"
)

// ResetFaults are the reset faults.
var ResetFaults = []string{ResetPowerCycle, ResetVFs, ResetNoReturn, ResetLate}

// resetAdapter finds the adapter function a -d names: its PCI address
// (with or without the domain) or, as mstflint resolves it through
// /sys/class/infiniband/NAME/device, its RDMA device.
func (st *State) resetAdapter(dev string) *mlxemu.Adapter {
	want := strings.ToLower(dev)
	if strings.Count(want, ":") == 1 {
		want = "0000:" + want
	}
	if strings.HasPrefix(dev, "mlx") {
		if d := st.Device(dev); d != nil && d.PCI != "" {
			want = strings.ToLower(d.PCI)
		}
	}
	for _, a := range st.Firmware {
		if strings.ToLower(a.BDF) == want {
			return a
		}
	}
	return nil
}

// cardVFs counts the VFs enabled on the PCI functions of a card.
func (st *State) cardVFs(slot string) int {
	n := 0
	for _, d := range st.Devices {
		if d.PCI != "" && slotOf(d.PCI) == slot && d.SRIOV != nil {
			n += d.SRIOV.NumVFs
		}
	}
	return n
}

// resetCard is a level 3 firmware reset of the card in slot: the tool sets
// sriov_numvfs to 0 on its functions, the firmware reloads (Next Boot
// values become current, a burned image runs, ports take the link layer
// LINK_TYPE_Pn now says) and the driver restarts, so every function re-registers as after an
// mlx4 port type change (reregister): netdevs made anew with the driver's
// MTU and no addresses, rdma_cm defaults the kernel's. NetworkManager
// activates its autoconnect profiles on the new netdevs again. With
// noReturn the driver does not probe the functions again: they move to
// Unprobed, with no RDMA device and no netdevs.
func (st *State) resetCard(slot string, noReturn bool) {
	var card []*mlxemu.Adapter
	for _, a := range st.Firmware {
		if slotOf(a.BDF) == slot {
			card = append(card, a)
		}
	}
	mlxemu.Reboot(card)
	st.loadCardFlash(slot)
	gone := map[string]bool{}
	for _, d := range st.Devices {
		if d.PCI == "" || slotOf(d.PCI) != slot {
			continue
		}
		if d.SRIOV != nil {
			d.SRIOV = nil
			st.syncVFNetdevs(d)
		}
		for _, p := range d.Ports {
			for _, n := range []string{p.NetdevEth, p.NetdevIB} {
				if n != "" {
					gone[n] = true
				}
			}
			if d.Driver == "mlx4" && p.Mlx4Boot != "" {
				p.Mlx4Type = p.Mlx4Boot
			}
		}
		st.reregister(d)
	}
	st.linkTypesOf(card)
	if noReturn {
		st.Devices = slices.DeleteFunc(st.Devices, func(d *Device) bool {
			if d.PCI == "" || slotOf(d.PCI) != slot {
				return false
			}
			st.Unprobed = append(st.Unprobed, d)
			return true
		})
	}
	st.reconcilePorts()
	st.nmReattach(gone)
}

// probeLater makes the driver probe the Unprobed functions whose time
// has come, at at, in this process (Open does it in the next ones).
// Callers hold mu.
func (s *Sim) probeLater(at time.Time) {
	time.AfterFunc(time.Until(at), func() {
		_ = s.mutate(false, func(st *State) error {
			st.probeDue(time.Now())
			return nil
		})
	})
}

// probeDue registers again the Unprobed functions due at now, as the
// driver's probe does (reconcilePorts makes their netdevs anew), and
// reports whether there were any.
func (st *State) probeDue(now time.Time) bool {
	gone := map[string]bool{}
	st.Unprobed = slices.DeleteFunc(st.Unprobed, func(d *Device) bool {
		if d.ProbeAt.IsZero() || now.Before(d.ProbeAt) {
			return false
		}
		d.ProbeAt = time.Time{}
		st.Devices = append(st.Devices, d)
		for _, p := range d.Ports {
			for _, n := range []string{p.NetdevEth, p.NetdevIB} {
				if n != "" {
					gone[n] = true
				}
			}
		}
		return true
	})
	if len(gone) == 0 {
		return false
	}
	st.reconcilePorts()
	st.nmReattach(gone)
	return true
}

// unprobed reports whether the PCI function at pci has no driver bound
// (Unprobed).
func (st *State) unprobed(pci string) bool {
	return slices.ContainsFunc(st.Unprobed, func(d *Device) bool { return d.PCI == pci })
}

// cardScopes are the parts of the tree a reset of the card in slot
// changes: its functions' and VFs' PCI directories (RDMA devices, netdevs,
// SR-IOV), their rdma_cm groups, and the class and bus directories that
// link to them, the netdevs' /proc/sys settings, and /proc/irq (the
// functions' interrupt vectors go and come with them).
func (st *State) cardScopes(slot string) []string {
	out := []string{"/sys/class/infiniband", "/sys/class/net", "/sys/bus/pci/devices", "/sys/bus/pci/drivers", "/sys/devices/virtual/net", "/proc/sys/net/ipv4/conf", "/proc/sys/net/ipv6/conf", "/proc/irq"}
	for _, d := range st.Devices {
		if d.PCI == "" || slotOf(d.PCI) != slot {
			continue
		}
		out = append(out, st.pciDir(d.PCI), "/sys/kernel/config/rdma_cm/"+d.Name)
		if d.SRIOV != nil {
			for i := range d.SRIOV.VFs {
				out = append(out, st.pciDir(VFAddress(d.PCI, i)))
			}
		}
	}
	return out
}

// nmReattach: NetworkManager saw the netdevs (and their P_Key children)
// go and come back: their profiles are inactive, then those with
// autoconnect yes are activated again, one per device.
func (st *State) nmReattach(gone map[string]bool) {
	if st.NM == nil {
		return
	}
	on := func(dev string) bool {
		if gone[dev] {
			return true
		}
		parent, _, ok := strings.Cut(dev, ".")
		return ok && gone[parent]
	}
	var again []int
	for i := range st.NM.Profiles {
		p := &st.NM.Profiles[i]
		if !p.Active || !on(p.Device) {
			continue
		}
		p.Active, p.Device, p.ActivePath = false, "", 0
		again = append(again, i)
	}
	for _, i := range again {
		p := &st.NM.Profiles[i]
		if p.Settings["connection.autoconnect"] != "yes" || st.deviceTaken(p) {
			continue
		}
		st.nmRun([]string{"nmcli", "connection", "up", "uuid", p.Settings["connection.uuid"]}, nil)
	}
}

// knowRendering makes the rendering the tree was written from known in
// memory: the tree is the state's rendering (every change renders), so
// the render after resets compares with it instead of reading the files.
// It runs when a reset starts, beside the other resets' run time. Callers
// hold mu.
func (s *Sim) knowRendering() {
	if s.rendered == nil && s.stale == nil && len(s.renderDue) == 0 {
		s.rendered = s.state.render(s.Dir).want
	}
}

// resetFaultHelp names the reset faults for messages.
func resetFaultHelp() string {
	return fmt.Sprintf("%s (no reset level: only a power cycle helps), %s (refused while VFs exist), %s (the card does not register again after the reset) or %s (it registers again after --delay)", ResetPowerCycle, ResetVFs, ResetNoReturn, ResetLate)
}
