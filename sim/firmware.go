package sim

import (
	"context"

	"github.com/rdmaform/rdmaform/sim/mlxemu"
)

// firmwareTool emulates mlxconfig (MFT) or mstconfig (mstflint) over the
// simulated adapters; a successful set changes their Next Boot values.
func firmwareTool(tool string) toolFunc {
	return func(_ context.Context, s *Sim, args []string, stdin []byte) (string, string, int) {
		var stdout, stderr []byte
		var code int
		_ = s.mutate(false, func(st *State) error {
			e := &mlxemu.Emulator{Adapters: st.Firmware, MSTStarted: st.MSTStarted && tool == "mlxconfig"}
			stdout, stderr, code = e.Run(tool, args, stdin)
			return nil
		})
		return string(stdout), string(stderr), code
	}
}

// mstTool emulates MFT's mst script (start, stop, status -v).
func mstTool(_ context.Context, s *Sim, args []string, _ []byte) (string, string, int) {
	var stdout, stderr []byte
	var code int
	_ = s.mutate(false, func(st *State) error {
		e := &mlxemu.Emulator{Adapters: st.Firmware, MSTStarted: st.MSTStarted}
		stdout, stderr, code = e.RunMST(args)
		st.MSTStarted = e.MSTStarted
		return nil
	})
	return string(stdout), string(stderr), code
}

// rebootFirmware makes Next Boot values current and gives each port the
// link layer its LINK_TYPE_Pn now says.
func (st *State) rebootFirmware() {
	mlxemu.Reboot(st.Firmware)
	for _, a := range st.Firmware {
		d := st.DeviceByPCI(a.BDF)
		if d == nil {
			continue
		}
		for _, p := range d.Ports {
			prm := a.Param(linkTypeParam(p.Num))
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

// linkTypeParam names the firmware parameter of a port's link type. An
// mlx5 PCI function has one port; a dual-port adapter's second function
// carries LINK_TYPE_P2 in the same firmware, but each function's emulated
// parameter set names its own port's link type as the function's P<n>.
func linkTypeParam(port int) string {
	if port == 2 {
		return "LINK_TYPE_P2"
	}
	return "LINK_TYPE_P1"
}
