// Package crosscheck checks host specs against each other (rdmaform lint):
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
package crosscheck

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/rdmaform/rdmaform/linklayer"
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

// warn is add for a finding that is a warning.
func (l *linter) warn(h *Host, path, format string, args ...any) {
	l.add(h, path, format, args...)
	l.rep[len(l.rep)-1].Warning = true
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
	l.tos()
	l.qos()
	l.lossless()
	l.mtu()
	l.ipoib()
	l.addresses()
	l.peers()
	l.subnetManagers()
	l.gpuOrdering()
	l.rails()
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

// rocePort is one RoCE (Ethernet) port of a host's spec, as lint sees it.
type rocePort struct {
	ref portRef
	// mode is v1 or v2; assumed when the spec leaves it to the kernel.
	mode    string
	assumed bool
	// role: client opens RDMA CM connections, server accepts them, peer
	// does both.
	role string
}

// Roles and the default mode lint assumes.
const (
	RoleClient = "client"
	RoleServer = "server"
	RolePeer   = "peer"
	// DefaultMode is the kernel's default RoCE version for rdma_cm since
	// RHEL 7.5, for every adapter but the ConnectX-3 that is not a Pro
	// (v1). Lint reads no host, so it cannot tell them apart.
	DefaultMode = "v2"
)

// assumedNote explains an assumed mode in a finding.
const assumedNote = "roce.mode not set: assumed the kernel default, v2 since RHEL 7.5 (a ConnectX-3 that is not a Pro uses v1)"

func (r rocePort) connects() bool { return r.role == RoleClient || r.role == RolePeer }
func (r rocePort) accepts() bool  { return r.role == RoleServer || r.role == RolePeer }

// describe is "(RoCE v2, client)", with the assumption when there is one.
func (r rocePort) describe() string {
	m := "RoCE " + r.mode
	if r.assumed {
		m += "; " + assumedNote
	}
	return fmt.Sprintf("(%s, %s)", m, r.role)
}

// modePath is where a finding about the port's mode points.
func (r rocePort) modePath() string {
	if r.assumed {
		return r.ref.path()
	}
	return r.ref.path() + ".roce.mode"
}

// rocePorts lists a host's Ethernet ports with the mode and role lint
// uses for them.
func rocePorts(h *Host) []rocePort {
	role := RolePeer
	if h.Spec.Host != nil && h.Spec.Host.Role != "" {
		role = h.Spec.Host.Role
	}
	var out []rocePort
	for i, d := range h.Spec.Devices {
		for j := range d.Ports {
			p := &d.Ports[j]
			if linkLayer(p) != linklayer.Ethernet {
				continue
			}
			r := rocePort{ref: portRef{h, i, j}, mode: DefaultMode, assumed: true, role: role}
			if p.Roce != nil && p.Roce.Mode != "" {
				r.mode, r.assumed = p.Roce.Mode, false
			}
			if p.Roce != nil && p.Roce.Role != "" {
				r.role = p.Roce.Role
			}
			out = append(out, r)
		}
	}
	return out
}

// Connects is the seeds' compatibility matrix of RDMA CM over RoCE: the
// client decides the version, and every pair connects except a RoCE v2
// client with a RoCE v1 server.
func Connects(clientMode, serverMode string) bool {
	return !(clientMode == "v2" && serverMode == "v1")
}

// roce reports hosts that cannot connect over RDMA_CM: a port of one host
// that opens connections (client or peer) in RoCE v2 and a port of
// another that accepts them (server or peer) in RoCE v1, on a network
// they share. The finding is at the client's port and names the server's.
func (l *linter) roce() {
	ports := make([][]rocePort, len(l.hosts))
	for i, h := range l.hosts {
		ports[i] = rocePorts(h)
	}
	for i, a := range l.hosts {
		for j, b := range l.hosts {
			if i == j {
				continue
			}
			rel, why := related(a, b)
			if !rel {
				continue
			}
			if c, s, ok := incompatible(ports[i], ports[j]); ok {
				l.add(a, c.modePath(), "%s %s cannot connect to %s at %s %s, %s: a RoCE v2 client cannot reach a RoCE v1 server (a v1 client can reach a v2 server); use v1 on %s's port, or v2 on %s's if its adapter supports it (not a ConnectX-3 without Pro)",
					c.ref, c.describe(), s.ref, b.pos(s.modePath()), s.describe(), why, a.Name, b.Name)
			}
		}
	}
}

// incompatible finds the first client port of one host and server port of
// another that cannot connect.
func incompatible(clients, servers []rocePort) (rocePort, rocePort, bool) {
	for _, c := range clients {
		if !c.connects() {
			continue
		}
		for _, s := range servers {
			if s.accepts() && !Connects(c.mode, s.mode) {
				return c, s, true
			}
		}
	}
	return rocePort{}, rocePort{}, false
}

// tos reports two hosts on one network whose RoCE ports set different
// ToS values: one network's RoCE traffic needs one DSCP to land in the
// switches' lossless class. Reported once per pair, at the later host.
func (l *linter) tos() {
	type tosUse struct {
		r   rocePort
		tos int
	}
	uses := make([][]tosUse, len(l.hosts))
	for i, h := range l.hosts {
		for _, r := range rocePorts(h) {
			if rc := r.ref.p().Roce; rc != nil && rc.Tos != nil {
				uses[i] = append(uses[i], tosUse{r, *rc.Tos})
			}
		}
	}
	// Each host is compared with the first earlier host of its network
	// that sets a ToS: the reference, as for IPoIB.
	for j, b := range l.hosts {
		i, why, ok := l.reference(j, func(i int) bool { return len(uses[i]) > 0 })
		if !ok {
			continue
		}
		a, ua := l.hosts[i], uses[i][0]
		for _, ub := range uses[j] {
			if ua.tos != ub.tos {
				l.add(b, ub.r.ref.path()+".roce"+pathIf(b.Spec.Src.Has(ub.r.ref.path()+".roce.tos"), ".tos"), "%s uses RoCE ToS %d, but %s at %s uses ToS %d (%s): RoCE traffic of one network needs one ToS (one DSCP in the switches' lossless class)",
					ub.r.ref, ub.tos, ua.r.ref, a.pos(ua.r.ref.path()+".roce"), ua.tos, why)
				break
			}
		}
	}
}

// reference is the first host before host j that shares a network with
// it and has what lint compares (has): the one j is compared with, and
// why they are related.
func (l *linter) reference(j int, has func(i int) bool) (int, string, bool) {
	for i := 0; i < j; i++ {
		if rel, why := related(l.hosts[i], l.hosts[j]); rel && has(i) {
			return i, why, true
		}
	}
	return 0, "", false
}

// qos reports two hosts on one network whose RoCE ports disagree on DSCP
// trust or on the PFC priorities: a lossless class works only when every
// NIC and the switches classify and pause the same way. Each host is
// compared with the first earlier host of its network that sets them;
// the finding is at the later host's key.
func (l *linter) qos() {
	type qosUse struct {
		r     rocePort
		trust string
		pfc   string // "3,4", "none"; "" when not set
		cnp   string // "dscp 48, priority 6"; "" when not set
	}
	uses := make([][]qosUse, len(l.hosts))
	for i, h := range l.hosts {
		for _, r := range rocePorts(h) {
			q := r.ref.p().QoS
			if q == nil || (q.Trust == "" && q.PFC == nil && q.CNP == nil) {
				continue
			}
			l.cnpClass(h, r, q)
			u := qosUse{r: r, trust: q.Trust, cnp: describeCNP(q.CNP)}
			if q.PFC != nil {
				ps := append([]int(nil), *q.PFC...)
				sort.Ints(ps)
				var s []string
				for _, p := range ps {
					s = append(s, fmt.Sprint(p))
				}
				u.pfc = "none"
				if len(s) > 0 {
					u.pfc = strings.Join(s, ",")
				}
			}
			uses[i] = append(uses[i], u)
		}
	}
	for j, b := range l.hosts {
		i, why, ok := l.reference(j, func(i int) bool { return len(uses[i]) > 0 })
		if !ok {
			continue
		}
		a, ua := l.hosts[i], uses[i][0]
		for _, ub := range uses[j] {
			at := ub.r.ref.path() + ".qos"
			if ua.trust != "" && ub.trust != "" && ua.trust != ub.trust {
				l.add(b, at+".trust", "%s trusts %s, but %s at %s trusts %s (%s): one network's hosts must classify RoCE traffic the same way, or it misses the lossless class",
					ub.r.ref, ub.trust, ua.r.ref, a.pos(ua.r.ref.path()+".qos.trust"), ua.trust, why)
			}
			if ua.pfc != "" && ub.pfc != "" && ua.pfc != ub.pfc {
				l.add(b, at+".pfc", "%s has PFC on priorities %s, but %s at %s on %s (%s): one network needs PFC on the same priorities on every NIC and switch port",
					ub.r.ref, ub.pfc, ua.r.ref, a.pos(ua.r.ref.path()+".qos.pfc"), ua.pfc, why)
			}
			if ua.cnp != "" && ub.cnp != "" && ua.cnp != ub.cnp {
				l.add(b, at+".cnp", "%s sends CNPs with %s, but %s at %s with %s (%s): one network's CNPs belong in one class on every NIC and switch port",
					ub.r.ref, ub.cnp, ua.r.ref, a.pos(ua.r.ref.path()+".qos.cnp"), ua.cnp, why)
			}
		}
	}
}

// describeCNP words a CNP block for comparison: both values when both
// are given, else the one given; "" without a block.
func describeCNP(c *schema.CNP) string {
	if c == nil {
		return ""
	}
	var s []string
	if c.DSCP != nil {
		s = append(s, fmt.Sprintf("dscp %d", *c.DSCP))
	}
	if c.Priority != nil {
		s = append(s, fmt.Sprintf("priority %d", *c.Priority))
	}
	return strings.Join(s, ", ")
}

// cnpClass reports a CNP priority that is neither lossless (in the port's
// pfc) nor on a strict ETS class: CNPs that wait behind data or are
// dropped under congestion slow DCQCN's answer to that very congestion.
func (l *linter) cnpClass(h *Host, r rocePort, q *schema.QoS) {
	if q.CNP == nil || q.CNP.Priority == nil {
		return
	}
	prio := *q.CNP.Priority
	if q.PFC != nil && slices.Contains(*q.PFC, prio) {
		return
	}
	if e := q.ETS; e != nil && prio < len(e.PrioTC) {
		if tc := e.PrioTC[prio]; tc >= 0 && tc < len(e.TSA) && e.TSA[tc] == "strict" {
			return
		}
	}
	l.add(h, r.ref.path()+".qos.cnp.priority", "%s sends CNPs on priority %d, which is neither in pfc nor on a strict ETS class: CNPs queued behind data or dropped under congestion come too late for DCQCN; add it to pfc or give its class tsa strict", r.ref, prio)
}

// mtu reports interfaces of different hosts on one IPv4 subnet whose
// MTUs differ: frames above the smaller MTU are dropped, and RDMA over
// them stalls.
func (l *linter) mtu() {
	type ifUse struct {
		host *Host
		path string
		name string
		mtu  int
	}
	bySubnet := map[netip.Prefix][]ifUse{}
	for _, h := range l.hosts {
		for i, it := range h.Spec.Interfaces {
			if it.MTU == nil {
				continue
			}
			seen := map[netip.Prefix]bool{}
			for _, a := range it.Addresses {
				p, err := netip.ParsePrefix(a)
				if err != nil || !p.Addr().Is4() || seen[p.Masked()] {
					continue
				}
				seen[p.Masked()] = true
				bySubnet[p.Masked()] = append(bySubnet[p.Masked()], ifUse{h, schema.Path("interfaces", i), it.Name, *it.MTU})
			}
		}
	}
	for _, n := range sortedSubnets(bySubnet) {
		us := bySubnet[n]
		ref := us[0]
		for _, u := range us[1:] {
			if u.host != ref.host && u.mtu != ref.mtu {
				l.add(u.host, u.path+".mtu", "%s on %s has MTU %d, but %s's %s at %s has MTU %d: one subnet needs one MTU",
					u.name, n, u.mtu, ref.host.Name, ref.name, ref.host.pos(ref.path+".mtu"), ref.mtu)
			}
		}
	}
}

// conn is one IPoIB connection of one host.
type conn struct {
	host  *Host
	index int
	c     *schema.IPoIB
}

func (c conn) path() string { return schema.Path("ipoib", c.index) }

func (c conn) pkey() int {
	if c.c.PKey == nil {
		return 0xffff
	}
	return c.c.Partition()
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
	for _, n := range sortedSubnets(bySubnet) {
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
		l.limitedOnly(n, cs)
	}
}

// limitedOnly reports a subnet whose hosts are all limited members of its
// partition: a limited member talks only to full members, so none of
// them reaches another. Some limited and some full is the usual
// client/server partition and is fine.
func (l *linter) limitedOnly(n netip.Prefix, cs []conn) {
	hosts := map[*Host]bool{}
	for _, c := range cs {
		if c.c.Membership != "limited" || c.pkey() != cs[0].pkey() {
			return
		}
		hosts[c.host] = true
	}
	if len(hosts) < 2 {
		return
	}
	for _, c := range cs {
		l.add(c.host, c.path()+".membership", "IPoIB connection %s on %s is a limited member of partition 0x%04x, and so is every other host on %s: limited members cannot talk to each other; make at least one (the servers) a full member",
			c.c.Name, n, c.pkey(), n)
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
			add(it.Addresses, schema.Path("interfaces", i, "addresses"))
		}
		for i, c := range h.Spec.IPoIB {
			if c.State == "absent" {
				continue
			}
			if c.IPv4 != nil {
				add(c.IPv4.Addresses, schema.Path("ipoib", i, "ipv4", "addresses"))
			}
			if c.IPv6 != nil {
				add(c.IPv6.Addresses, schema.Path("ipoib", i, "ipv6", "addresses"))
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
func linkLayer(p *schema.Port) linklayer.LinkLayer {
	switch {
	case p.LinkLayer != "":
		return p.LinkLayer
	case linklayer.OfMlx4Type(p.Type) != "":
		return linklayer.OfMlx4Type(p.Type)
	case p.Roce != nil, p.QoS != nil:
		return linklayer.Ethernet
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
func (r portRef) path() string    { return schema.Path("devices", r.dev, "ports", r.port) }
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

// sortedSubnets lists a map's subnets in a stable order, for findings that
// come out the same on every run.
func sortedSubnets[V any](m map[netip.Prefix]V) []netip.Prefix {
	nets := make([]netip.Prefix, 0, len(m))
	for p := range m {
		nets = append(nets, p)
	}
	sort.Slice(nets, func(i, j int) bool { return nets[i].String() < nets[j].String() })
	return nets
}
