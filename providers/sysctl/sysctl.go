// Package sysctl manages the kernel settings of /proc/sys an RDMA host
// needs (spec sysctl:): kernel.numa_balancing, and per netdev the ARP and
// reverse-path settings of multi-rail RoCE and the IPv6 settings of RoCE
// VFs on SLAAC fabrics. Each is written now through /proc/sys and read
// back, and listed in /etc/sysctl.d/90-rdmaform.conf, the one file
// rdmaform owns there, which systemd-sysctl applies at boot. A netdev
// that appears after systemd-sysctl ran (a VF) gets its settings from the
// boot unit's runtime apply. Settings dropped from the spec leave the file
// and keep their value now.
package sysctl

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// ConfFile is the sysctl.d file rdmaform owns.
const ConfFile = "/etc/sysctl.d/90-rdmaform.conf"

// header opens ConfFile.
const header = "# Managed by rdmaform: the spec's sysctl settings, applied at boot by systemd-sysctl.\n" +
	"# The spec's sysctl: section is the source; edits here are overwritten.\n"

// Provider is the sysctl provider.
type Provider struct{}

var _ plan.TypedProvider[*Observed, *payload] = (*Provider)(nil)

// New is the provider as plan.Build and apply take it.
func New() plan.Provider { return plan.Adapt[*Observed, *payload](&Provider{}) }

// Name implements plan.Provider.
func (*Provider) Name() string { return "sysctl" }

// Kind is the kind of this provider's addresses.
const Kind = "sysctl"

// Key is one setting: its path below /proc/sys, slash-separated
// ("net/ipv4/conf/ens1f0/arp_ignore"), which is also how sysctl.d names
// it unambiguously when a netdev name holds a dot.
type Key string

// Name is the key as sysctl.d and people write it: dotted, or the slash
// form when an element holds a dot (sysctl.d(5): a key whose first
// separator is a slash keeps its dots).
func (k Key) Name() string {
	if strings.Contains(string(k), ".") {
		return string(k)
	}
	return strings.ReplaceAll(string(k), "/", ".")
}

// Proc is the key's file.
func (k Key) Proc() string { return "/proc/sys/" + string(k) }

// Address is the plan address of one setting: sysctl[kernel.numa_balancing].
func Address(k Key) plan.Address { return plan.Addr(Kind, k.Name()) }

// ParseKey reads a sysctl.d key (sysctl.d(5)): a leading '-' (ignore a
// failure) is dropped; when the first separator is '.', every '.' is a
// separator; when it is '/', dots are kept.
func ParseKey(s string) Key {
	s = strings.TrimPrefix(strings.TrimSpace(s), "-")
	if i := strings.IndexAny(s, "./"); i >= 0 && s[i] == '.' {
		s = strings.ReplaceAll(s, ".", "/")
	}
	return Key(strings.Trim(s, "/"))
}

// setting is one value the spec asks for.
type setting struct {
	key   Key
	value string
	path  string // spec path
	iface string // "" for kernel settings
}

// settings are the spec's values, in spec order.
func settings(spec *schema.Spec) []setting {
	sc := spec.Sysctl
	if sc == nil {
		return nil
	}
	var out []setting
	if sc.NumaBalancing != nil {
		out = append(out, setting{key: "kernel/numa_balancing", value: b01(*sc.NumaBalancing), path: schema.Path("sysctl", "numa_balancing")})
	}
	for i, in := range sc.Interfaces {
		if schema.CheckNetdev(in.Name) != "" || strings.ContainsAny(in.Name, "=#; ") {
			continue // validation reported it; it never becomes a path
		}
		p := schema.Path("sysctl", "interfaces", i)
		add := func(family, attr, value string) {
			out = append(out, setting{key: Key("net/" + family + "/conf/" + in.Name + "/" + attr), value: value, path: p + "." + attr, iface: in.Name})
		}
		if in.ArpIgnore != nil {
			add("ipv4", "arp_ignore", strconv.Itoa(*in.ArpIgnore))
		}
		if in.ArpAnnounce != nil {
			add("ipv4", "arp_announce", strconv.Itoa(*in.ArpAnnounce))
		}
		if in.RpFilter != nil {
			add("ipv4", "rp_filter", strconv.Itoa(*in.RpFilter))
		}
		if in.AcceptLocal != nil {
			add("ipv4", "accept_local", b01(*in.AcceptLocal))
		}
		if in.DisableIPv6 != nil {
			add("ipv6", "disable_ipv6", b01(*in.DisableIPv6))
		}
		if in.AcceptRA != nil {
			add("ipv6", "accept_ra", strconv.Itoa(*in.AcceptRA))
		}
		if in.Autoconf != nil {
			add("ipv6", "autoconf", b01(*in.Autoconf))
		}
	}
	return out
}

func b01(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// Observed is what the host says of the settings.
type Observed struct {
	// Now maps a key to its value in /proc/sys; a key without a file is
	// absent.
	Now map[Key]string
	// File maps the keys ConfFile sets to their values; nil when the file
	// does not exist.
	File map[Key]string
	// Netdevs are the spec's netdevs that exist (their
	// /proc/sys/net/ipv4/conf directory is there).
	Netdevs map[string]bool
}

// Observe implements plan.TypedProvider: each spec key's /proc/sys file
// and ConfFile (for show, ConfFile's keys). Nothing is written.
//
// Equivalent to: sysctl -n KEY...; cat /etc/sysctl.d/90-rdmaform.conf
func (p *Provider) Observe(_ context.Context, h *host.Host, req *plan.Request) (*Observed, error) {
	if req.Spec.Sysctl == nil && !req.Full {
		return nil, nil
	}
	obs := &Observed{Now: map[Key]string{}, Netdevs: map[string]bool{}}
	b, err := h.FS.ReadFile(ConfFile)
	switch {
	case err == nil:
		obs.File = parseConf(string(b))
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("reading %s: %w", ConfFile, err)
	}
	var keys []Key
	for _, s := range settings(req.Spec) {
		if s.iface != "" && !obs.Netdevs[s.iface] && host.Exists(h.FS, "/proc/sys/net/ipv4/conf/"+s.iface) {
			obs.Netdevs[s.iface] = true
		}
		keys = append(keys, s.key)
		if k, ok := allKey(s.key); ok {
			keys = append(keys, k)
		}
	}
	if req.Full {
		for k := range obs.File {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		if _, done := obs.Now[k]; done || !safeKey(k) {
			continue
		}
		v, err := host.ReadAttr(h.FS, k.Proc())
		switch {
		case err == nil:
			obs.Now[k] = v
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("reading %s: %w", k.Proc(), err)
		}
	}
	return obs, nil
}

// maxOfAll are the IPv4 settings whose effective value for a netdev is
// the larger of conf/all's and the netdev's (Documentation/networking/
// ip-sysctl.rst: "The max value from conf/{all,interface}/... is used").
var maxOfAll = map[string]bool{"arp_ignore": true, "arp_announce": true, "rp_filter": true}

// allKey is the conf/all key of a netdev key in maxOfAll.
func allKey(k Key) (Key, bool) {
	e := strings.Split(string(k), "/")
	if len(e) != 5 || e[0] != "net" || e[1] != "ipv4" || e[2] != "conf" || !maxOfAll[e[4]] {
		return "", false
	}
	return Key("net/ipv4/conf/all/" + e[4]), true
}

// safeKey: a key read from the file stays below /proc/sys.
func safeKey(k Key) bool {
	for _, e := range strings.Split(string(k), "/") {
		if e == "" || e == "." || e == ".." {
			return false
		}
	}
	return true
}

// parseConf reads a sysctl.d file as systemd-sysctl does (sysctl.d(5)):
// "key = value" a line, white space around both ignored; lines starting
// with '#' or ';' and blank lines ignored; a later line for a key wins.
func parseConf(s string) map[Key]string {
	out := map[Key]string{}
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || l[0] == '#' || l[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			continue
		}
		out[ParseKey(k)] = strings.TrimSpace(v)
	}
	return out
}

// renderConf is ConfFile's content for a set of values: the header, then
// "key = value" lines sorted by key.
func renderConf(set map[Key]string) []byte {
	keys := make([]Key, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	var b strings.Builder
	b.WriteString(header)
	for _, k := range keys {
		b.WriteString(k.Name() + " = " + set[k] + "\n")
	}
	return []byte(b.String())
}

// payload is what Make does to one key.
type payload struct {
	key Key
	// now: the value to write to /proc/sys ("" leaves it).
	now string
	// file: whether to change ConfFile's line, and its value ("" removes it).
	file      bool
	fileValue string
	// before, for a revert: the value now and in the file ("" absent).
	nowBefore, fileBefore string
}
