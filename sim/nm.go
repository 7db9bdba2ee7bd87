package sim

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/sim/nmemu"
)

// nmcliTool emulates nmcli against the simulated NetworkManager. The
// IPoIB netdevs it can activate on are the host's own, and what an
// activation does to them (P_Key child interfaces, transport mode, MTU,
// addresses) shows in the host's netdevs afterwards.
func nmcliTool(_ context.Context, s *Sim, args []string, stdin []byte) (string, string, int) {
	var stdout, stderr []byte
	var code int
	if readOnly(args) {
		// Reads change nothing on the host: no save, no re-render.
		s.lock()
		stdout, stderr, code = s.state.nmRun(append([]string{"nmcli"}, args...), stdin)
		s.unlock()
		return string(stdout), string(stderr), code
	}
	_ = s.mutate(false, func(st *State) error {
		stdout, stderr, code = st.nmRun(append([]string{"nmcli"}, args...), stdin)
		return nil
	})
	return string(stdout), string(stderr), code
}

// readOnly reports whether an nmcli command line only reads:
// `general ...` or `connection show ...`.
func readOnly(args []string) bool {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		if args[0] == "-f" || args[0] == "--fields" {
			args = args[1:]
		}
		if len(args) > 0 {
			args = args[1:]
		}
	}
	switch {
	case len(args) >= 1 && args[0] == "general":
		return true
	case len(args) >= 2 && args[0] == "connection" && args[1] == "show":
		return true
	}
	return false
}

// nmRun runs one emulated nmcli command on the state: the host's netdevs
// are NetworkManager's devices, an activation the kernel would refuse
// fails as NetworkManager reports it, and the netdevs follow the active
// profiles afterwards.
func (st *State) nmRun(argv []string, stdin []byte) ([]byte, []byte, int) {
	if st.NM == nil {
		st.NM = &nmemu.State{}
	}
	st.feedNMDevices()
	before := map[string]activation{}
	for _, p := range st.NM.Profiles {
		if p.Active {
			before[p.Settings["connection.uuid"]] = activation{path: p.ActivePath, device: p.Device}
		}
	}
	if p, reason := st.refusedActivation(argv[1:]); reason != "" {
		if p.Active {
			p.Active, p.Device, p.ActivePath = false, "", 0
		}
		st.syncIPoIB(before)
		return nil, []byte("Error: Connection activation failed: " + reason + "\n"), 4
	}
	stdout, stderr, code := nmemu.Run(argv, st.NM, stdin)
	st.syncIPoIB(before)
	return stdout, stderr, code
}

// feedNMDevices gives the emulator the host's netdevs as NetworkManager
// devices; IPoIB ones have the InfiniBand link layer.
func (st *State) feedNMDevices() {
	st.NM.Devices = nil
	for _, n := range st.Netdevs {
		ll := "Ethernet"
		if n.Kind == "ipoib" {
			ll = "InfiniBand"
		}
		st.NM.Devices = append(st.NM.Devices, nmemu.Device{Name: n.Name, LinkLayer: ll})
	}
}

// refusedActivation returns the profile a `connection up` names and
// NetworkManager's reason when the kernel refuses its transport mode:
// writing "connected" to /sys/class/net/IB/mode fails with EINVAL
// ("Setting Connected Mode failed, not supported by this device") on an
// interface whose hardware address lacks the connected-mode flag
// (enhanced IPoIB, ConnectX-4 and later), and NetworkManager fails the
// activation with the device state reason INFINIBAND_MODE.
func (st *State) refusedActivation(args []string) (*nmemu.Profile, string) {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		if args[0] == "-f" || args[0] == "--fields" {
			args = args[1:]
		}
		if len(args) > 0 {
			args = args[1:]
		}
	}
	if len(args) != 4 || args[0] != "connection" || args[1] != "up" {
		return nil, ""
	}
	p := st.nmProfile(args[2], args[3])
	if p == nil || p.Settings["infiniband.transport-mode"] != "connected" {
		return nil, ""
	}
	name := p.Settings["connection.interface-name"]
	if p.Settings["infiniband.p-key"] != "default" {
		name = p.Settings["infiniband.parent"]
	}
	nd := st.Netdev(name)
	if nd == nil || nd.Kind != "ipoib" || connectedCapable(nd) {
		return nil, ""
	}
	return p, "InfiniBand device does not support connected mode"
}

// connectedCapable reports whether an IPoIB interface can run connected
// mode: the first byte of its hardware address has the RC flag 0x80.
func connectedCapable(nd *Netdev) bool {
	first, _, _ := strings.Cut(nd.MAC, ":")
	v, err := strconv.ParseUint(first, 16, 8)
	return err == nil && v&0x80 != 0
}

// nmProfile finds a profile by `uuid U` or `id NAME`.
func (st *State) nmProfile(kind, value string) *nmemu.Profile {
	for i := range st.NM.Profiles {
		p := &st.NM.Profiles[i]
		if (kind == "uuid" && p.Settings["connection.uuid"] == value) || (kind == "id" && p.Settings["connection.id"] == value) {
			return p
		}
	}
	return nil
}

// activation is one active profile's activation number and device.
type activation struct {
	path   int
	device string
}

// isChild reports whether an IPoIB netdev is a P_Key child interface.
func isChild(n *Netdev) bool { return n.Kind == "ipoib" && n.PKey != 0 && n.PKey != 0xffff }

// syncIPoIB makes the netdevs follow NetworkManager's active profiles, as
// the kernel does when NetworkManager configures them: an activated P_Key
// profile creates its child interface (echo 0x8002 >
// /sys/class/net/ib0/create_child), a profile (re)activated in this run
// sets the interface's transport mode, MTU and addresses and brings it up,
// a child whose profile is no longer active is deleted, and a parent whose
// profile went away gets its boot addresses back. before maps the UUIDs
// active before the run to their activations.
func (st *State) syncIPoIB(before map[string]activation) {
	owner := map[string]bool{}
	for i := range st.NM.Profiles {
		p := &st.NM.Profiles[i]
		if !p.Active {
			continue
		}
		owner[p.Device] = true
		s := p.Settings
		if s["infiniband.p-key"] != "default" && st.Netdev(p.Device) == nil {
			parent := st.Netdev(s["infiniband.parent"])
			if parent == nil {
				continue
			}
			pk, _ := strconv.ParseInt(s["infiniband.p-key"], 0, 32)
			st.Netdevs = append(st.Netdevs, &Netdev{Name: p.Device, Kind: "ipoib", MTU: parent.MTU, MAC: parent.MAC,
				Device: parent.Device, Port: parent.Port, PKey: int(pk), Mode: "datagram"})
		}
		if b, ok := before[s["connection.uuid"]]; ok && b.path == p.ActivePath {
			continue // active before and not re-activated
		}
		nd := st.Netdev(p.Device)
		if nd == nil {
			continue
		}
		nd.Mode = s["infiniband.transport-mode"]
		nd.MTU = st.activatedMTU(nd, s["infiniband.mtu"])
		nd.Up = true
		nd.Addrs = nil
		for _, fam := range []string{"ipv4", "ipv6"} {
			for _, a := range strings.Split(s[fam+".addresses"], ",") {
				if a = strings.TrimSpace(a); a != "" {
					nd.Addrs = append(nd.Addrs, a)
				}
			}
		}
	}
	st.Netdevs = slices.DeleteFunc(st.Netdevs, func(n *Netdev) bool { return isChild(n) && !owner[n.Name] })
	for _, b := range before {
		// Deactivated or deleted: NetworkManager removes what it set.
		if n := st.Netdev(b.device); n != nil && !owner[n.Name] {
			n.Addrs = nil
			if n.Boot != nil {
				n.Addrs = append([]string(nil), n.Boot.Addrs...)
			}
		}
	}
}

// activatedMTU is the MTU an IPoIB interface ends with when NetworkManager
// activates a profile with infiniband.mtu mtu ("auto" or a number): in
// connected mode the value itself (auto: 65520, what the kernel sets when
// switching to connected); in datagram mode at most the fabric's IB MTU
// minus 4, which the kernel enforces silently (auto: that maximum).
func (st *State) activatedMTU(nd *Netdev, mtu string) int {
	v, err := strconv.Atoi(mtu)
	if nd.Mode == "connected" {
		if err != nil || v <= 0 {
			return 65520
		}
		return v
	}
	limit := st.ibMTU(nd) - 4
	if err != nil || v <= 0 || v > limit {
		return limit
	}
	return v
}

// ibMTU is the simulated fabric's IB MTU for an IPoIB interface: the
// port's interface comes up in datagram mode at the IB MTU minus 4, so
// its boot MTU tells it (2044: a 2K IB MTU).
func (st *State) ibMTU(nd *Netdev) int {
	parent := nd
	if isChild(nd) {
		if i := strings.LastIndex(nd.Name, "."); i > 0 {
			if p := st.Netdev(nd.Name[:i]); p != nil {
				parent = p
			}
		}
	}
	if parent.Boot != nil && parent.Boot.MTU > 0 && parent.Boot.MTU <= 4092 {
		for _, m := range []int{256, 512, 1024, 2048, 4096} {
			if parent.Boot.MTU+4 <= m {
				return m
			}
		}
	}
	return 2048
}

// rebootNM: NetworkManager keeps its profiles across a reboot; the kernel
// forgets P_Key children and transport modes. At boot NetworkManager
// activates every profile with autoconnect yes whose device exists, one
// per device, those that were active before first.
func (st *State) rebootNM() {
	st.Netdevs = slices.DeleteFunc(st.Netdevs, isChild)
	for _, n := range st.Netdevs {
		if n.Kind == "ipoib" {
			n.Mode = "datagram"
			n.MTU = st.activatedMTU(n, "auto")
			if n.Boot != nil {
				n.MTU = n.Boot.MTU
			}
		}
	}
	if st.NM == nil {
		return
	}
	var order []int
	was := map[int]bool{}
	for i := range st.NM.Profiles {
		p := &st.NM.Profiles[i]
		was[i] = p.Active
		p.Active, p.Device, p.ActivePath = false, "", 0
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if was[a] != was[b] {
			if was[a] {
				return -1
			}
			return 1
		}
		return strings.Compare(st.NM.Profiles[a].Settings["connection.id"], st.NM.Profiles[b].Settings["connection.id"])
	})
	for _, i := range order {
		p := &st.NM.Profiles[i]
		if p.Settings["connection.autoconnect"] != "yes" || st.deviceTaken(p) {
			continue
		}
		st.nmRun([]string{"nmcli", "connection", "up", "uuid", p.Settings["connection.uuid"]}, nil)
	}
}

// deviceTaken reports whether the interface a profile would activate on
// already has an active profile.
func (st *State) deviceTaken(p *nmemu.Profile) bool {
	s := p.Settings
	name := s["connection.interface-name"]
	if s["infiniband.p-key"] != "default" {
		pk, _ := strconv.ParseInt(s["infiniband.p-key"], 0, 32)
		name = fmt.Sprintf("%s.%04x", s["infiniband.parent"], pk)
	}
	for _, q := range st.NM.Profiles {
		if q.Active && q.Device == name {
			return true
		}
	}
	return false
}
