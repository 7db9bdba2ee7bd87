// Package fleet checks host specs against each other (rdmaform lint):
// what no single host's plan can see, because each end of a connection is
// right on its own and wrong together. It is pure: specs in, findings out.
//
// How hosts relate: RoCE and addresses meet on IP networks. Two hosts
// share a RoCE network when their interfaces sections give addresses in
// a common IPv4 subnet; a host whose spec gives no interface address is
// assumed to share one with every other host of the set (lint cannot
// rule it out, and the operator passed them together). IPoIB connections
// relate when their IPv4 addresses are in one subnet. A cable relates two
// ports when a port names the other as its peer.
package fleet

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rdmaform/rdmaform/schema"
)

// Host is one host's spec in the set.
type Host struct {
	// Name is host.hostname, or the spec's file name without extension.
	Name string
	Spec *schema.Spec
}

// NewHost names a spec's host.
func NewHost(spec *schema.Spec) *Host {
	name := ""
	if spec.Host != nil {
		name = spec.Host.Hostname
	}
	if name == "" && spec.Src != nil {
		base := filepath.Base(spec.Src.File)
		name = strings.TrimSuffix(base, filepath.Ext(base))
	}
	return &Host{Name: name, Spec: spec}
}

type linter struct {
	hosts []*Host
	rep   schema.Report
}

func (l *linter) add(h *Host, path, format string, args ...any) {
	l.rep = append(l.rep, schema.Finding{Path: path, Pos: h.Spec.Src.Lookup(path), Message: fmt.Sprintf(format, args...)})
}

func (h *Host) pos(path string) schema.Pos { return h.Spec.Src.Lookup(path) }

// Lint checks the hosts' specs against each other: RoCE versions that
// cannot connect, IPoIB connections of one subnet that disagree on P_Key,
// transport mode or MTU, addresses given to two hosts, and cables whose
// ends expect different link layers. Findings are sorted by file and
// position.
func Lint(hosts []*Host) schema.Report {
	l := &linter{hosts: hosts}
	l.names()
	l.roce()
	l.ipoib()
	l.addresses()
	l.peers()
	sort.SliceStable(l.rep, func(i, j int) bool {
		a, b := l.rep[i], l.rep[j]
		if a.Pos.File != b.Pos.File {
			return a.Pos.File < b.Pos.File
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line < b.Pos.Line
		}
		if a.Pos.Col != b.Pos.Col {
			return a.Pos.Col < b.Pos.Col
		}
		return a.Message < b.Message
	})
	return l.rep
}

// names reports two specs for one host: peers and messages name hosts.
func (l *linter) names() {
	seen := map[string]*Host{}
	for _, h := range l.hosts {
		if prev, dup := seen[h.Name]; dup {
			l.add(h, "$.host", "host %s is also the host of %s; give each spec its own host.hostname", h.Name, prev.Spec.Src.File)
			continue
		}
		seen[h.Name] = h
	}
}

// subnets are the IPv4 subnets of a host's interfaces addresses.
func subnets(h *Host) map[netip.Prefix]bool {
	out := map[netip.Prefix]bool{}
	for _, it := range h.Spec.Interfaces {
		for _, a := range it.Addresses {
			if p, err := netip.ParsePrefix(a); err == nil && p.Addr().Is4() {
				out[p.Masked()] = true
			}
		}
	}
	return out
}

// related says whether two hosts share a RoCE network, and how lint knows.
func related(a, b *Host) (bool, string) {
	sa, sb := subnets(a), subnets(b)
	if len(sa) == 0 || len(sb) == 0 {
		return true, "assumed to share a network: no interface addresses to tell otherwise"
	}
	var common []string
	for p := range sa {
		if sb[p] {
			common = append(common, p.String())
		}
	}
	if len(common) == 0 {
		return false, ""
	}
	sort.Strings(common)
	return true, "both on " + strings.Join(common, ", ")
}

// roceUse is the first port of a host that uses a RoCE version.
type roceUse struct {
	path, port string
}

func roceModes(h *Host) map[string]roceUse {
	out := map[string]roceUse{}
	for i, d := range h.Spec.Devices {
		_, sel := d.Selector()
		for j, p := range d.Ports {
			if p.Roce == nil || p.Roce.Mode == "" {
				continue
			}
			if _, ok := out[p.Roce.Mode]; !ok {
				out[p.Roce.Mode] = roceUse{path: fmt.Sprintf("$.devices[%d].ports[%d].roce.mode", i, j), port: fmt.Sprintf("%s port %d", sel, p.Port)}
			}
		}
	}
	return out
}

// roce reports hosts that cannot connect over RDMA_CM: a RoCE v2 client
// cannot reach a RoCE v1 server (a v1 client can reach a v2 server, which
// answers in v1). The finding is at the v2 port of the client.
func (l *linter) roce() {
	modes := make([]map[string]roceUse, len(l.hosts))
	for i, h := range l.hosts {
		modes[i] = roceModes(h)
	}
	for i, a := range l.hosts {
		v2, ok := modes[i]["v2"]
		if !ok {
			continue
		}
		for j, b := range l.hosts {
			v1, ok := modes[j]["v1"]
			if i == j || !ok {
				continue
			}
			rel, why := related(a, b)
			if !rel {
				continue
			}
			l.add(a, v2.path, "%s (%s) uses RoCE v2 and %s (%s at %s) uses RoCE v1 (%s): a RoCE v2 client cannot connect to a RoCE v1 server, so %s cannot reach %s; use v1 on both, or v2 on both if %s's adapter supports it",
				a.Name, v2.port, b.Name, v1.port, b.pos(v1.path), why, a.Name, b.Name, b.Name)
		}
	}
}

// conn is one IPoIB connection of one host.
type conn struct {
	host  *Host
	index int
	c     *schema.IPoIB
}

func (c conn) path() string { return fmt.Sprintf("$.ipoib[%d]", c.index) }

func (c conn) pkey() int {
	if c.c.PKey == nil {
		return 0xffff
	}
	return schema.FullMember(c.c.PKey.Value)
}

func (c conn) mode() string {
	if c.c.Mode == "" {
		return "datagram"
	}
	return c.c.Mode
}

// ipoib reports IPoIB connections of different hosts on one IPv4 subnet
// that disagree: another P_Key is another partition (they cannot talk),
// another transport mode or MTU breaks large transfers.
func (l *linter) ipoib() {
	bySubnet := map[netip.Prefix][]conn{}
	for _, h := range l.hosts {
		for i := range h.Spec.IPoIB {
			c := &h.Spec.IPoIB[i]
			if c.State == "absent" || c.IPv4 == nil {
				continue
			}
			seen := map[netip.Prefix]bool{}
			for _, a := range c.IPv4.Addresses {
				p, err := netip.ParsePrefix(a)
				if err != nil || seen[p.Masked()] {
					continue
				}
				seen[p.Masked()] = true
				bySubnet[p.Masked()] = append(bySubnet[p.Masked()], conn{h, i, c})
			}
		}
	}
	var nets []netip.Prefix
	for p := range bySubnet {
		nets = append(nets, p)
	}
	sort.Slice(nets, func(i, j int) bool { return nets[i].String() < nets[j].String() })
	for _, n := range nets {
		cs := bySubnet[n]
		ref := cs[0]
		for _, c := range cs[1:] {
			if c.host == ref.host {
				continue
			}
			where := fmt.Sprintf("%s (%s at %s)", ref.host.Name, ref.c.Name, ref.host.pos(ref.path()))
			if c.pkey() != ref.pkey() {
				l.add(c.host, c.path()+pathIf(c.c.PKey != nil, ".pkey"), "IPoIB connection %s on %s uses P_Key 0x%04x, but %s uses 0x%04x: hosts of one IPoIB subnet must be in one partition",
					c.c.Name, n, c.pkey(), where, ref.pkey())
			}
			if c.mode() != ref.mode() {
				l.add(c.host, c.path()+pathIf(c.c.Mode != "", ".mode"), "IPoIB connection %s on %s uses %s mode, but %s uses %s mode",
					c.c.Name, n, c.mode(), where, ref.mode())
			}
			if c.c.MTU != nil && ref.c.MTU != nil && *c.c.MTU != *ref.c.MTU {
				l.add(c.host, c.path()+".mtu", "IPoIB connection %s on %s has MTU %d, but %s has MTU %d: one subnet needs one MTU",
					c.c.Name, n, *c.c.MTU, where, *ref.c.MTU)
			}
		}
	}
}

func pathIf(ok bool, suffix string) string {
	if ok {
		return suffix
	}
	return ""
}

// addrUse is one address a spec gives.
type addrUse struct {
	host *Host
	path string
}

// addresses reports an address given twice in the set (two hosts, or two
// sections of one host).
func (l *linter) addresses() {
	uses := map[netip.Addr][]addrUse{}
	for _, h := range l.hosts {
		add := func(list []string, path string) {
			for k, a := range list {
				if p, err := netip.ParsePrefix(a); err == nil {
					uses[p.Addr()] = append(uses[p.Addr()], addrUse{h, fmt.Sprintf("%s[%d]", path, k)})
				}
			}
		}
		for i, it := range h.Spec.Interfaces {
			add(it.Addresses, fmt.Sprintf("$.interfaces[%d].addresses", i))
		}
		for i, c := range h.Spec.IPoIB {
			if c.State == "absent" {
				continue
			}
			if c.IPv4 != nil {
				add(c.IPv4.Addresses, fmt.Sprintf("$.ipoib[%d].ipv4.addresses", i))
			}
			if c.IPv6 != nil {
				add(c.IPv6.Addresses, fmt.Sprintf("$.ipoib[%d].ipv6.addresses", i))
			}
		}
	}
	for addr, us := range uses {
		first := us[0]
		for _, u := range us[1:] {
			if u.host == first.host && u.path == first.path {
				continue
			}
			l.add(u.host, u.path, "address %s is also given to %s at %s; an address belongs to one interface of one host", addr, first.host.Name, first.host.pos(first.path))
		}
	}
}

// linkLayer is the link layer a spec expects of a port: link_layer, or
// what its mlx4 type or RoCE settings imply; "" when the spec does not say.
func linkLayer(p *schema.Port) string {
	switch {
	case p.LinkLayer != "":
		return p.LinkLayer
	case p.Type == "ib":
		return "InfiniBand"
	case p.Type == "eth", p.Roce != nil:
		return "Ethernet"
	}
	return ""
}

// portRef is one port of one host's spec.
type portRef struct {
	host *Host
	dev  int
	port int // index in the device's ports
}

func (r portRef) p() *schema.Port { return &r.host.Spec.Devices[r.dev].Ports[r.port] }
func (r portRef) path() string    { return fmt.Sprintf("$.devices[%d].ports[%d]", r.dev, r.port) }
func (r portRef) String() string {
	_, sel := r.host.Spec.Devices[r.dev].Selector()
	return fmt.Sprintf("%s %s port %d", r.host.Name, sel, r.p().Port)
}

// find returns the port a peer names: a device of the host selected by
// that PCI address or name, and its port.
func find(h *Host, device string, port int) (portRef, bool, bool) {
	for i, d := range h.Spec.Devices {
		if (d.PCI == "" || d.PCI != schema.NormalizePCI(device)) && (d.Name == "" || d.Name != device) {
			continue
		}
		for j, p := range d.Ports {
			if p.Port == port {
				return portRef{h, i, j}, true, true
			}
		}
		return portRef{}, true, false
	}
	return portRef{}, false, false
}

// peers checks each cable a spec names: the peer exists in its host's
// spec, names this port back if it names a peer, and expects the same
// link layer (otherwise both ends stay down, seed 000). A peer host not in
// the set (a switch, a host not linted) is not checked.
func (l *linter) peers() {
	byName := map[string]*Host{}
	for _, h := range l.hosts {
		if _, dup := byName[h.Name]; !dup {
			byName[h.Name] = h
		}
	}
	reported := map[string]bool{}
	for _, h := range l.hosts {
		for i, d := range h.Spec.Devices {
			for j := range d.Ports {
				me := portRef{h, i, j}
				pe := me.p().Peer
				if pe == nil {
					continue
				}
				pp := me.path() + ".peer"
				if pe.Host == "" || pe.Device == "" || pe.Port == 0 {
					l.add(h, pp, "a peer needs host, device and port")
					continue
				}
				other, ok := byName[pe.Host]
				if !ok {
					continue
				}
				peer, devOK, portOK := find(other, pe.Device, pe.Port)
				switch {
				case !devOK:
					l.add(h, pp+".device", "%s's spec (%s) has no device %s", pe.Host, other.Spec.Src.File, pe.Device)
					continue
				case !portOK:
					l.add(h, pp+".port", "%s's spec (%s) lists no port %d of %s", pe.Host, other.Spec.Src.File, pe.Port, pe.Device)
					continue
				}
				if back := peer.p().Peer; back != nil {
					if r, _, ok := find(h, back.Device, back.Port); back.Host != h.Name || !ok || r != me {
						l.add(h, pp, "the peer %s names %s %s port %d as its own peer (%s), not this port", peer, back.Host, back.Device, back.Port, other.pos(peer.path()+".peer"))
					}
				}
				a, b := linkLayer(me.p()), linkLayer(peer.p())
				if a == "" || b == "" || a == b {
					continue
				}
				key := cableKey(me, peer)
				if reported[key] {
					continue
				}
				reported[key] = true
				at := me.path() + pathIf(me.p().LinkLayer != "", ".link_layer")
				l.add(h, at, "this end of the cable is %s and the other end, %s (%s), is %s: both ends would stay down; use one link layer on both (firmware LINK_TYPE or mlx4 type)",
					a, peer, other.pos(peer.path()), b)
			}
		}
	}
}

func cableKey(a, b portRef) string {
	x := fmt.Sprintf("%s|%d|%d", a.host.Name, a.dev, a.port)
	y := fmt.Sprintf("%s|%d|%d", b.host.Name, b.dev, b.port)
	if x > y {
		x, y = y, x
	}
	return x + "/" + y
}
