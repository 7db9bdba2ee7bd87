package sysctl

import (
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.TypedCapturer[*Observed] = (*Provider)(nil)

// CaptureFrom implements plan.TypedCapturer: the settings ConfFile holds
// that the spec can say, with the values of the file (what the host has
// at every boot). A host without the file has no sysctl section.
//
// Equivalent to: cat /etc/sysctl.d/90-rdmaform.conf
func (p *Provider) CaptureFrom(obs *Observed, _ *plan.Request, spec *schema.Spec, _ plan.CaptureOptions) error {
	if obs == nil || len(obs.File) == 0 {
		return nil
	}
	sc := &schema.Sysctl{}
	ifaces := map[string]*schema.SysctlInterface{}
	var order []string
	iface := func(name string) *schema.SysctlInterface {
		if ifaces[name] == nil {
			ifaces[name] = &schema.SysctlInterface{Name: name}
			order = append(order, name)
		}
		return ifaces[name]
	}
	any := false
	for _, k := range sortedKeys(obs.File) {
		v := obs.File[k]
		n, err := strconv.Atoi(v)
		if err != nil {
			continue
		}
		b := n != 0
		if k == "kernel/numa_balancing" && (n == 0 || n == 1) {
			sc.NumaBalancing, any = &b, true
			continue
		}
		e := strings.Split(string(k), "/")
		if len(e) != 5 || e[0] != "net" || e[2] != "conf" || schema.CheckNetdev(e[3]) != "" {
			continue
		}
		name, attr := e[3], e[1]+"/"+e[4]
		switch {
		case attr == "ipv4/arp_ignore" && (n >= 0 && n <= 3 || n == 8):
			iface(name).ArpIgnore = &n
		case attr == "ipv4/arp_announce" && n >= 0 && n <= 2:
			iface(name).ArpAnnounce = &n
		case attr == "ipv4/rp_filter" && n >= 0 && n <= 2:
			iface(name).RpFilter = &n
		case attr == "ipv4/accept_local" && (n == 0 || n == 1):
			iface(name).AcceptLocal = &b
		case attr == "ipv6/disable_ipv6" && (n == 0 || n == 1):
			iface(name).DisableIPv6 = &b
		case attr == "ipv6/accept_ra" && n >= 0 && n <= 2:
			iface(name).AcceptRA = &n
		case attr == "ipv6/autoconf" && (n == 0 || n == 1):
			iface(name).Autoconf = &b
		default:
			continue
		}
		any = true
	}
	for _, n := range order {
		sc.Interfaces = append(sc.Interfaces, *ifaces[n])
	}
	if any {
		spec.Sysctl = sc
	}
	return nil
}

func sortedKeys(m map[Key]string) []Key {
	out := make([]Key, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
