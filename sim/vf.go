package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"syscall"

	"github.com/rdmaform/rdmaform/host"
)

// pfOfNetdev returns the SR-IOV physical function whose first port's
// netdev is name.
func (st *State) pfOfNetdev(name string) *Device {
	for _, d := range st.Devices {
		if pf := st.pfNetdev(d); pf != nil && pf.Name == name && d.PCI != "" {
			return d
		}
	}
	return nil
}

// LinkSetVF implements host.Net with the PF drivers' operations: an IPoIB
// PF (mlx5's ipoib_netdev_ops_pf) sets VF GUIDs and link state and
// nothing else; an Ethernet PF (mlx5e) sets MAC, trust, spoof checking
// and link state but no GUID. What a PF lacks is EOPNOTSUPP, a VF it
// does not have EINVAL, as from rtnetlink.
func (n *simNet) LinkSetVF(pf string, vf int, c host.VFConfig) error {
	if err := n.sim.inject(faultNetlink, "LinkSetVF", fmt.Sprintf("%s vf %d", pf, vf)); err != nil {
		return unlessDropped(err)
	}
	return n.sim.mutateSaved(func(st *State) error {
		nd := st.Netdev(pf)
		if nd == nil {
			return notFound(pf)
		}
		d := st.pfOfNetdev(pf)
		if d == nil || d.SRIOV == nil || vf < 0 || vf >= len(d.SRIOV.VFs) {
			return fmt.Errorf("ip link set dev %s vf %d: %w", pf, vf, syscall.EINVAL)
		}
		v := d.SRIOV.VFs[vf]
		ib := nd.Kind == "ipoib"
		op := func(what string, ok bool) error {
			if !ok {
				return fmt.Errorf("ip link set dev %s vf %d %s: %w", pf, vf, what, syscall.EOPNOTSUPP)
			}
			return nil
		}
		guid := func(s string) (string, error) {
			a, err := net.ParseMAC(s)
			if err != nil || len(a) != 8 {
				return "", fmt.Errorf("%q: %w", s, syscall.EINVAL)
			}
			return a.String(), nil
		}
		if c.NodeGUID != "" {
			if err := op("node_guid", ib); err != nil {
				return err
			}
			g, err := guid(c.NodeGUID)
			if err != nil {
				return err
			}
			v.NodeGUID = g
		}
		if c.PortGUID != "" {
			if err := op("port_guid", ib); err != nil {
				return err
			}
			g, err := guid(c.PortGUID)
			if err != nil {
				return err
			}
			v.PortGUID = g
		}
		if c.MAC != "" {
			if err := op("mac", !ib); err != nil {
				return err
			}
			a, err := net.ParseMAC(c.MAC)
			if err != nil || len(a) != 6 || a[0]&1 == 1 {
				return fmt.Errorf("ip link set dev %s vf %d mac %s: %w", pf, vf, c.MAC, syscall.EINVAL)
			}
			v.MAC = a.String()
		}
		if c.Trust != nil {
			if err := op("trust", !ib); err != nil {
				return err
			}
			v.Trust = *c.Trust
		}
		if c.Spoofchk != nil {
			if err := op("spoofchk", !ib); err != nil {
				return err
			}
			v.Spoofchk = *c.Spoofchk
		}
		if c.State != "" {
			v.LinkState = c.State
		}
		return nil
	})
}

// ipTool emulates iproute2's `ip -j link show dev NAME` (the one form
// rdmaform runs): the link object with its vfinfo_list, written as
// ip/ipaddress.c's print_vfinfo prints it.
func ipTool(_ context.Context, s *Sim, args []string, _ []byte) (string, string, int) {
	if len(args) != 5 || args[0] != "-j" || args[1] != "link" || args[2] != "show" || args[3] != "dev" {
		return "", fmt.Sprintf("the simulated ip runs only `ip -j link show dev NAME`, not %q\n", strings.Join(args, " ")), 255
	}
	name := args[4]
	var out string
	found := true
	s.view(func(st *State) {
		idx := 0
		var nd *Netdev
		for i, x := range st.Netdevs {
			if x.Name == name {
				nd, idx = x, i+2
			}
		}
		if nd == nil {
			found = false
			return
		}
		linkType, bcast := "ether", "ff:ff:ff:ff:ff:ff"
		if nd.Kind == "ipoib" {
			linkType, bcast = "infiniband", "00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:ff:ff:ff:ff"
		}
		oper := "DOWN"
		flags := []string{"BROADCAST", "MULTICAST"}
		if nd.Up {
			oper = "UP"
			flags = append(flags, "UP", "LOWER_UP")
		}
		// Keys in the order ip prints them (ipaddress.c).
		link := ordered{{"ifindex", idx}, {"ifname", nd.Name}, {"flags", flags}, {"mtu", nd.MTU}, {"qdisc", "mq"},
			{"operstate", oper}, {"linkmode", "DEFAULT"}, {"group", "default"}, {"txqlen", 1000},
			{"link_type", linkType}, {"address", nd.MAC}, {"broadcast", bcast}}
		if d := st.pfOfNetdev(name); d != nil {
			if ok, _ := st.sriovCap(d.PCI); ok {
				vfs := []ordered{}
				if d.SRIOV != nil {
					for i, v := range d.SRIOV.VFs {
						addr := v.MAC
						if nd.Kind == "ipoib" {
							addr = "00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00"
						}
						e := ordered{{"vf", i}, {"link_type", linkType}, {"address", addr}, {"broadcast", bcast},
							{"vlan_list", []ordered{{}}}, {"rate", ordered{{"max_tx", 0}, {"min_tx", 0}}}, {"spoofchk", v.Spoofchk}}
						if nd.Kind == "ipoib" && !d.SRIOV.NoGUIDReadback {
							e = append(e, kv{"node guid", v.NodeGUID}, kv{"port guid", v.PortGUID})
						}
						e = append(e, kv{"link_state", v.LinkState}, kv{"trust", v.Trust}, kv{"query_rss_en", false})
						vfs = append(vfs, e)
					}
				}
				link = append(link, kv{"vfinfo_list", vfs})
			}
		}
		b, _ := json.Marshal([]ordered{link})
		out = string(b) + "\n"
	})
	if !found {
		return "", fmt.Sprintf("Device \"%s\" does not exist.\n", name), 1
	}
	return out, "", 0
}

// kv and ordered are a JSON object that keeps its members in the order
// given, as ip's JSON writer does.
type kv struct {
	k string
	v any
}

type ordered []kv

// MarshalJSON implements json.Marshaler.
func (o ordered) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.k)
		v, err := json.Marshal(m.v)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}
