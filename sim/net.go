package sim

import (
	"fmt"
	"net/netip"
	"sort"
	"syscall"

	"github.com/rdmaform/rdmaform/host"
)

// simNet emulates netlink over the simulated host's netdevs and rxe links,
// with the errors the kernel returns.
type simNet struct {
	sim *Sim
}

var _ host.Net = (*simNet)(nil)

func (n *simNet) read(fn func(st *State) error) error {
	n.sim.lock()
	defer n.sim.unlock()
	return fn(n.sim.state)
}

func notFound(name string) error { return fmt.Errorf("%s: %w", name, host.ErrLinkNotFound) }

// LinkByName implements host.Net.
func (n *simNet) LinkByName(name string) (host.Link, error) {
	var l host.Link
	err := n.read(func(st *State) error {
		for i, nd := range st.Netdevs {
			if nd.Name == name {
				oper := "down"
				if nd.Up {
					oper = "up"
				}
				l = host.Link{Name: nd.Name, Index: i + 2, MTU: nd.MTU, AdminUp: nd.Up, OperState: oper, Type: nd.Kind, HWAddr: nd.MAC}
				return nil
			}
		}
		return notFound(name)
	})
	return l, err
}

func (n *simNet) change(name string, fn func(st *State, nd *Netdev) error) error {
	return n.sim.mutate(false, func(st *State) error {
		nd := st.Netdev(name)
		if nd == nil {
			return notFound(name)
		}
		return fn(st, nd)
	})
}

// LinkSetUp implements host.Net.
func (n *simNet) LinkSetUp(name string, up bool) error {
	op := "LinkSetDown"
	if up {
		op = "LinkSetUp"
	}
	if err := n.sim.inject(faultNetlink, op, name); err != nil {
		return unlessDropped(err)
	}
	return n.change(name, func(st *State, nd *Netdev) error {
		nd.Up = up
		if !up {
			st.flushRoutes(name, "")
		}
		return nil
	})
}

// LinkSetMTU implements host.Net.
func (n *simNet) LinkSetMTU(name string, mtu int) error {
	if err := n.sim.inject(faultNetlink, "LinkSetMTU", name); err != nil {
		return unlessDropped(err)
	}
	return n.change(name, func(_ *State, nd *Netdev) error {
		max := 9216
		if nd.Kind == "ipoib" {
			max = 4092
			if nd.Mode == "connected" {
				max = 65520
			}
		}
		if mtu < 68 || mtu > max {
			return fmt.Errorf("set mtu %d on %s: %w", mtu, name, syscall.EINVAL)
		}
		nd.MTU = mtu
		return nil
	})
}

// AddrList implements host.Net.
func (n *simNet) AddrList(name string) ([]host.Addr, error) {
	var out []host.Addr
	err := n.read(func(st *State) error {
		nd := st.Netdev(name)
		if nd == nil {
			return notFound(name)
		}
		for _, a := range nd.Addrs {
			if p, err := netip.ParsePrefix(a); err == nil {
				out = append(out, host.Addr{Prefix: p, Global: !p.Addr().IsLinkLocalUnicast()})
			}
		}
		for _, a := range nd.DynAddrs {
			if p, err := netip.ParsePrefix(a); err == nil {
				out = append(out, host.Addr{Prefix: p, Global: !p.Addr().IsLinkLocalUnicast(), Dynamic: true})
			}
		}
		return nil
	})
	return out, err
}

// AddrAdd implements host.Net.
func (n *simNet) AddrAdd(name string, p netip.Prefix) error {
	if err := n.sim.inject(faultNetlink, "AddrAdd", name+" "+p.String()); err != nil {
		return unlessDropped(err)
	}
	return n.change(name, func(_ *State, nd *Netdev) error {
		for _, a := range append(append([]string{}, nd.Addrs...), nd.DynAddrs...) {
			if q, err := netip.ParsePrefix(a); err == nil && q.Addr() == p.Addr() {
				return fmt.Errorf("add %s to %s: %w", p, name, syscall.EEXIST)
			}
		}
		nd.Addrs = append(nd.Addrs, p.String())
		return nil
	})
}

// AddrDel implements host.Net.
func (n *simNet) AddrDel(name string, p netip.Prefix) error {
	if err := n.sim.inject(faultNetlink, "AddrDel", name+" "+p.String()); err != nil {
		return unlessDropped(err)
	}
	return n.change(name, func(st *State, nd *Netdev) error {
		for i, a := range nd.Addrs {
			if q, err := netip.ParsePrefix(a); err == nil && q == p {
				nd.Addrs = append(nd.Addrs[:i], nd.Addrs[i+1:]...)
				st.flushRoutes("", p.Addr().String())
				return nil
			}
		}
		return fmt.Errorf("delete %s from %s: %w", p, name, syscall.EADDRNOTAVAIL)
	})
}

// RdmaLinkList implements host.Net: every RDMA device, sorted, with the
// netdev of rxe links; ErrNoRDMA (the kernel's EPROTONOSUPPORT) while
// ib_core is not loaded.
func (n *simNet) RdmaLinkList() ([]host.RdmaLink, error) {
	out := []host.RdmaLink{}
	err := n.read(func(st *State) error {
		if !st.ModuleLoaded("ib_core") {
			return fmt.Errorf("%w: %w", host.ErrNoRDMA, syscall.EPROTONOSUPPORT)
		}
		for _, d := range st.Devices {
			l := host.RdmaLink{Name: d.Name}
			if d.Driver == "rxe" {
				l.Netdev = d.Parent
			}
			out = append(out, l)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
		return nil
	})
	return out, err
}

// RdmaLinkAdd implements host.Net with the kernel's errors: ENODEV for a
// missing netdev, EEXIST for a netdev that has an rxe link, ENFILE for a
// name in use, EINVAL without the rdma_rxe module.
func (n *simNet) RdmaLinkAdd(name, netdev string) error {
	if err := n.sim.inject(faultNetlink, "RdmaLinkAdd", name+" "+netdev); err != nil {
		return unlessDropped(err)
	}
	return n.sim.mutate(false, func(st *State) error {
		if !st.ModuleLoaded("ib_core") {
			return fmt.Errorf("%w: %w", host.ErrNoRDMA, syscall.EPROTONOSUPPORT)
		}
		if !st.ModuleLoaded("rdma_rxe") {
			if !contains(st.Available, "rdma_rxe") {
				return fmt.Errorf("rdma link add %s type rxe netdev %s: %w", name, netdev, syscall.EINVAL)
			}
			st.Modules = append(st.Modules, "rdma_rxe") // request_module("rdma-link-rxe")
		}
		nd := st.Netdev(netdev)
		if nd == nil || nd.Kind == "ipoib" {
			return fmt.Errorf("rdma link add %s type rxe netdev %s: %w", name, netdev, syscall.ENODEV)
		}
		if st.Device(name) != nil {
			return fmt.Errorf("rdma link add %s type rxe netdev %s: %w", name, netdev, syscall.ENFILE)
		}
		for _, d := range st.Devices {
			if d.Driver == "rxe" && d.Parent == netdev {
				return fmt.Errorf("rdma link add %s type rxe netdev %s: %w", name, netdev, syscall.EEXIST)
			}
		}
		mac := nd.MAC
		guid := rxeGUID(mac)
		st.Devices = append(st.Devices, &Device{Name: name, Driver: "rxe", NodeGUID: guid, Parent: netdev,
			Ports: []*Port{{Num: 1, LinkLayer: "Ethernet", State: upState(nd.Up), PhysState: physUp(nd.Up), Rate: "10 Gb/sec (1X FDR10)"}}})
		return nil
	})
}

func upState(up bool) string {
	if up {
		return "ACTIVE"
	}
	return "DOWN"
}

func physUp(up bool) string {
	if up {
		return "LinkUp"
	}
	return "Disabled"
}

// rxeGUID is the EUI-64 of the netdev's MAC, as rxe makes its node GUID.
func rxeGUID(mac string) string {
	var b [6]int
	fmt.Sscanf(mac, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5])
	return fmt.Sprintf("%02x%02x:%02xff:fe%02x:%02x%02x", b[0]^2, b[1], b[2], b[3], b[4], b[5])
}

// RdmaLinkDel implements host.Net.
func (n *simNet) RdmaLinkDel(name string) error {
	if err := n.sim.inject(faultNetlink, "RdmaLinkDel", name); err != nil {
		return unlessDropped(err)
	}
	return n.sim.mutate(false, func(st *State) error {
		if !st.ModuleLoaded("ib_core") {
			return fmt.Errorf("%w: %w", host.ErrNoRDMA, syscall.EPROTONOSUPPORT)
		}
		for i, d := range st.Devices {
			if d.Name == name {
				if d.Driver != "rxe" {
					return fmt.Errorf("rdma link delete %s: %w", name, syscall.EINVAL)
				}
				st.Devices = append(st.Devices[:i], st.Devices[i+1:]...)
				st.CMGroups = without(st.CMGroups, name)
				for k := range st.RdmaCM {
					if len(k) > len(name) && k[:len(name)+1] == name+"/" {
						delete(st.RdmaCM, k)
					}
				}
				return nil
			}
		}
		return fmt.Errorf("rdma link delete %s: %w", name, syscall.ENODEV)
	})
}
