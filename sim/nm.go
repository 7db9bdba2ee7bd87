package sim

import (
	"context"

	"github.com/rdmaform/rdmaform/sim/nmemu"
)

// nmcliTool emulates nmcli against the simulated NetworkManager. The
// IPoIB netdevs it can activate on are the host's own.
func nmcliTool(_ context.Context, s *Sim, args []string, stdin []byte) (string, string, int) {
	var stdout, stderr []byte
	var code int
	_ = s.mutate(false, func(st *State) error {
		if st.NM == nil {
			st.NM = &nmemu.State{}
		}
		st.NM.Devices = nil
		for _, n := range st.Netdevs {
			ll := "Ethernet"
			if n.Kind == "ipoib" {
				ll = "InfiniBand"
			}
			st.NM.Devices = append(st.NM.Devices, nmemu.Device{Name: n.Name, LinkLayer: ll})
		}
		stdout, stderr, code = nmemu.Run(append([]string{"nmcli"}, args...), st.NM, stdin)
		return nil
	})
	return string(stdout), string(stderr), code
}

// rebootNM: NetworkManager keeps its profiles across a reboot; what was
// active comes up again where its device exists.
func (st *State) rebootNM() {}
