package sim

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/sim/mlxemu"
)

// firmwareTool emulates mlxconfig (MFT) or mstconfig (mstflint) over the
// simulated adapters; a successful set changes their Next Boot values.
// Firmware values show in no file until a reboot, so only sim.yaml is
// saved, and only when a value changed (no tree rendering: a query is
// cheap, as on a host where mlxconfig only reads the flash); sets on
// several adapters at once share saves (leaveFirmware).
func firmwareTool(tool string) toolFunc {
	return func(_ context.Context, s *Sim, args []string, stdin []byte) (string, string, int) {
		s.lock()
		st := s.state
		e := &mlxemu.Emulator{Adapters: st.Firmware, MSTStarted: st.MSTStarted && tool == "mlxconfig"}
		before := snapshot(st.Firmware)
		stdout, stderr, code := e.Run(tool, args, stdin)
		if shareCardParams(st.Firmware, before) {
			s.rev++ // saved by the runner's leaveFirmware
			if !s.dirty {
				// Keep the host's lock until then (see LockFile).
				s.dirty = true
				s.held++
			}
		}
		s.unlock()
		return string(stdout), string(stderr), code
	}
}

// mstTool emulates MFT's mst script (start, stop, status -v).
func mstTool(_ context.Context, s *Sim, args []string, _ []byte) (string, string, int) {
	s.lock()
	defer s.unlock()
	st := s.state
	e := &mlxemu.Emulator{Adapters: st.Firmware, MSTStarted: st.MSTStarted}
	stdout, stderr, code := e.RunMST(args)
	if st.MSTStarted != e.MSTStarted {
		st.MSTStarted = e.MSTStarted
		if err := s.save(); err != nil {
			return string(stdout), string(stderr) + err.Error() + "\n", 1
		}
	}
	return string(stdout), string(stderr), code
}

// snapshot copies every adapter's parameters.
func snapshot(as []*mlxemu.Adapter) [][]mlxemu.Param {
	out := make([][]mlxemu.Param, len(as))
	for i, a := range as {
		out[i] = append([]mlxemu.Param(nil), a.Params...)
	}
	return out
}

// shareCardParams gives every PCI function of a card the parameters a set
// or reset through one of them wrote: firmware configuration lives in the
// card's flash, so 0000:3b:00.0 and 0000:3b:00.1 show the same values,
// except for the per-host-function TLVs (PerFunctionTLV), which each
// function keeps for itself. It reports whether anything changed.
func shareCardParams(as []*mlxemu.Adapter, before [][]mlxemu.Param) bool {
	for i, a := range as {
		if paramsEqual(a.Params, before[i]) {
			continue
		}
		for _, b := range as {
			if b == a || slotOf(b.BDF) != slotOf(a.BDF) {
				continue
			}
			at := map[string]int{}
			for j, p := range b.Params {
				at[p.Name] = j
			}
			for _, p := range a.Params {
				if j, ok := at[p.Name]; ok && !PerFunctionTLV[p.TLV] {
					b.Params[j] = p
				}
			}
		}
		return true
	}
	return false
}

// PerFunctionTLV lists the emulated parameters' TLVs that each PCI
// function of a card has for itself (class 3, per host function, in
// mstflint's parameter database; simcheck compares the two).
var PerFunctionTLV = map[string]bool{"nv_hca_conf": true}

func paramsEqual(a, b []mlxemu.Param) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Next != b[i].Next || a[i].Current != b[i].Current {
			return false
		}
	}
	return true
}

func slotOf(bdf string) string {
	if i := strings.LastIndexByte(bdf, '.'); i >= 0 {
		return strings.ToLower(bdf[:i])
	}
	return strings.ToLower(bdf)
}

// rebootFirmware makes Next Boot values current and gives each port the
// link layer its LINK_TYPE_Pn now says.
func (st *State) rebootFirmware() {
	mlxemu.Reboot(st.Firmware)
	st.loadFlash()
	st.linkTypesOf(st.Firmware)
}

// linkTypesOf gives the ports of the adapter functions the link layer
// their current LINK_TYPE_Pn says.
func (st *State) linkTypesOf(adapters []*mlxemu.Adapter) {
	for _, a := range adapters {
		d := st.DeviceByPCI(a.BDF)
		if d == nil {
			continue
		}
		for _, p := range d.Ports {
			prm := a.Param(linkTypeParam(a.BDF, p.Num, len(d.Ports)))
			if prm == nil {
				continue
			}
			switch prm.Current {
			case 1:
				p.LinkLayer = "InfiniBand"
			case 2:
				p.LinkLayer = "Ethernet"
			}
		}
	}
}

// linkTypeParam names the firmware parameter that sets the link type of
// port `port` of the PCI function bdf, which has `ports` ports. The
// parameters are the card's: on mlx5 each port is a PCI function with one
// RDMA port, so function n-1 of the slot is LINK_TYPE_Pn; on mlx4 one
// function has every port, so port n is LINK_TYPE_Pn. This is the mapping
// providers/firmware.AffectedPort uses.
func linkTypeParam(bdf string, port, ports int) string {
	if ports > 1 {
		return fmt.Sprintf("LINK_TYPE_P%d", port)
	}
	fn := 0
	if i := strings.LastIndexByte(bdf, '.'); i >= 0 {
		if n, err := strconv.ParseInt(bdf[i+1:], 16, 32); err == nil {
			fn = int(n)
		}
	}
	return fmt.Sprintf("LINK_TYPE_P%d", fn+1)
}
