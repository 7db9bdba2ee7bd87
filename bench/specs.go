package bench

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rdmaform/rdmaform/sim"
)

// FirmwareTarget is one spec device with firmware parameters: the PCI
// function and the parameter names it sets.
type FirmwareTarget struct {
	PCI    string
	Params []string
}

// FirmwareTargets lists what FirmwareSpec sets on a host: every PCI
// function of every card, function 0 with LINK_TYPE_P1, SRIOV_EN and
// NUM_OF_VFS, function 1 with LINK_TYPE_P2 (the link type of its port).
// Firmware parameters belong to the card; an operator still writes each
// port's link type next to the function that carries the port.
func FirmwareTargets(st *sim.State) []FirmwareTarget {
	var out []FirmwareTarget
	for _, d := range st.Devices {
		if d.PCI == "" {
			continue
		}
		t := FirmwareTarget{PCI: d.PCI, Params: []string{"LINK_TYPE_P2"}}
		if strings.HasSuffix(d.PCI, ".0") {
			t.Params = []string{"LINK_TYPE_P1", "SRIOV_EN", "NUM_OF_VFS"}
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PCI < out[j].PCI })
	return out
}

var firmwareValues = map[string]string{"LINK_TYPE_P1": "ETH", "LINK_TYPE_P2": "ETH", "SRIOV_EN": "true", "NUM_OF_VFS": "8"}

// FirmwareSpec is a spec setting FirmwareTargets' parameters: a change on
// every function of a gpu-node host as created (InfiniBand, SR-IOV off).
func FirmwareSpec(st *sim.State) []byte {
	var b strings.Builder
	b.WriteString("version: 1\ndevices:\n")
	for _, t := range FirmwareTargets(st) {
		fmt.Fprintf(&b, "  - pci: %q\n    firmware:\n      params:\n", t.PCI)
		for _, p := range t.Params {
			fmt.Fprintf(&b, "        %s: %s\n", p, firmwareValues[p])
		}
	}
	return []byte(b.String())
}

// IPoIBConn is one IPoIB connection of IPoIBSpec, with what Ansible needs
// to make the same profile.
type IPoIBConn struct {
	Name   string
	Parent string
	IPv4   string
}

// IPoIBConns returns n connections, one per InfiniBand netdev of the host
// in name order (a gpu-node with 8 cards has 16).
func IPoIBConns(st *sim.State, n int) ([]IPoIBConn, error) {
	var parents []string
	for _, nd := range st.Netdevs {
		if nd.Kind == "ipoib" && nd.PKey == 0xffff {
			parents = append(parents, nd.Name)
		}
	}
	sort.Strings(parents)
	if len(parents) < n {
		return nil, fmt.Errorf("the host has %d IPoIB netdevs, %d connections asked", len(parents), n)
	}
	var out []IPoIBConn
	for i, p := range parents[:n] {
		out = append(out, IPoIBConn{Name: fmt.Sprintf("bench-%s", p), Parent: p, IPv4: fmt.Sprintf("10.%d.0.1/24", 10+i)})
	}
	return out, nil
}

// IPoIBSpec declares the connections: datagram mode, a static IPv4
// address, IPv6 off, saved but not activated (state: down: autoconnect
// no), because an infiniband profile cannot be activated without an IPoIB
// device, which the NetworkManager lab has not. No MTU: given an MTU,
// community.general.nmcli activates an infiniband profile right after
// creating it (create_connection_up), which fails in the lab, so neither
// side sets one.
func IPoIBSpec(conns []IPoIBConn) []byte {
	var b strings.Builder
	b.WriteString("version: 1\nipoib:\n")
	for _, c := range conns {
		fmt.Fprintf(&b, "  - name: %s\n    parent: %s\n    mode: datagram\n    ipv4: {addresses: [%s]}\n    state: down\n",
			c.Name, c.Parent, c.IPv4)
	}
	return []byte(b.String())
}

// AnsiblePlaybook makes the same profiles with community.general.nmcli:
// one task looping over the connections, on localhost without facts. The
// module's state: present saves a profile without activating it;
// autoconnect: false and method6: disabled are what rdmaform writes for
// state: down and no ipv6 block.
func AnsiblePlaybook(conns []IPoIBConn) []byte {
	var b strings.Builder
	b.WriteString(`- hosts: localhost
  gather_facts: false
  tasks:
    - name: IPoIB connections
      community.general.nmcli:
        type: infiniband
        conn_name: "{{ item.name }}"
        ifname: "{{ item.parent }}"
        transport_mode: datagram
        ip4: "{{ item.ipv4 }}"
        method6: disabled
        autoconnect: false
        state: present
      loop:
`)
	for _, c := range conns {
		fmt.Fprintf(&b, "        - {name: %s, parent: %s, ipv4: %q}\n", c.Name, c.Parent, c.IPv4)
	}
	return []byte(b.String())
}

// BigSpec is the 2,000-resource spec for BigHost: every function with
// firmware parameters and its port (RoCE defaults on the Ethernet ones),
// an IPoIB connection on every InfiniBand port and every P_Key of its
// table, and the extra netdevs as interfaces. Resources counts what it
// declares by kind.
func BigSpec(st *sim.State) (spec []byte, resources map[string]int) {
	resources = map[string]int{}
	var b strings.Builder
	b.WriteString("version: 1\ndevices:\n")
	type ibPort struct {
		netdev string
		pkeys  []int
	}
	var ib []ibPort
	devs := append([]*sim.Device(nil), st.Devices...)
	sort.Slice(devs, func(i, j int) bool { return devs[i].PCI < devs[j].PCI })
	for _, d := range devs {
		if d.PCI == "" {
			continue
		}
		p := d.Ports[0]
		fmt.Fprintf(&b, "  - pci: %q\n    firmware:\n      params:\n", d.PCI)
		if strings.HasSuffix(d.PCI, ".0") {
			b.WriteString("        SRIOV_EN: true\n        NUM_OF_VFS: 8\n")
		} else {
			b.WriteString("        NUM_OF_VFS: 8\n")
		}
		resources["firmware"]++
		if p.LinkLayer == "Ethernet" {
			b.WriteString("    ports:\n      - port: 1\n        link_layer: Ethernet\n        roce: {mode: v2, tos: 106}\n")
			resources["rdma_cm"]++
			continue
		}
		b.WriteString("    ports:\n      - port: 1\n        link_layer: InfiniBand\n")
		var keys []int
		for _, k := range p.PKeys {
			if k&0x7fff != 0x7fff {
				keys = append(keys, k)
			}
		}
		ib = append(ib, ibPort{netdev: p.NetdevIB, pkeys: keys})
	}
	b.WriteString("ipoib:\n")
	for i, p := range ib {
		fmt.Fprintf(&b, "  - {name: ib-%s, parent: %s, mode: datagram, mtu: 2044, ipv4: {addresses: [10.%d.0.1/24]}, state: down}\n", p.netdev, p.netdev, i)
		resources["ipoib"]++
		for j, k := range p.pkeys {
			fmt.Fprintf(&b, "  - {name: ib-%s-%04x, parent: %s, pkey: 0x%04x, mtu: 2044, ipv4: {addresses: [10.%d.%d.1/24]}, state: down}\n",
				p.netdev, k, p.netdev, k, i, j+1)
			resources["ipoib"]++
		}
	}
	b.WriteString("interfaces:\n")
	for _, nd := range st.Netdevs {
		if !strings.HasPrefix(nd.Name, "bn") {
			continue
		}
		fmt.Fprintf(&b, "  - {name: %s, state: up, mtu: 9000, addresses: [172.%d.%d.1/24]}\n", nd.Name, 16+resources["interface"]/256, resources["interface"]%256)
		resources["interface"]++
	}
	return []byte(b.String()), resources
}

// RoCESpec is a spec of every RoCE port of a host: the firmware link
// type it already has (so the firmware provider queries every function,
// and plans nothing) and, with qos, the lossless profile on each port.
func RoCESpec(st *sim.State, qos bool) []byte {
	var b strings.Builder
	b.WriteString("version: 1\ndevices:\n")
	for _, t := range FirmwareTargets(st) {
		param := "LINK_TYPE_P2"
		if strings.HasSuffix(t.PCI, ".0") {
			param = "LINK_TYPE_P1"
		}
		fmt.Fprintf(&b, "  - pci: %q\n    firmware:\n      params: {%s: ETH}\n", t.PCI, param)
		if qos {
			b.WriteString("    ports:\n      - port: 1\n        qos: {trust: dscp, pfc: [3], pause: false}\n")
		}
	}
	return []byte(b.String())
}
