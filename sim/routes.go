package sim

import (
	"fmt"
	"net/netip"
	"sort"
	"syscall"

	"github.com/rdmaform/rdmaform/host"
)

var _ host.RouteLister = (*simNet)(nil)

// DefaultRouteLinks implements host.RouteLister: the simulated host's
// default route leaves through State.DefaultRoute, while that netdev is up.
func (n *simNet) DefaultRouteLinks() ([]string, error) {
	var out []string
	err := n.read(func(st *State) error {
		if nd := st.Netdev(st.DefaultRoute); nd != nil && nd.Up {
			out = []string{nd.Name}
		}
		return nil
	})
	return out, err
}

// PolicyRule is one IPv4 rule the simulated kernel holds besides its
// three default ones (0 local, 32766 main, 32767 default), which it
// always lists and never deletes here.
type PolicyRule struct {
	Priority int    `yaml:"priority"`
	From     string `yaml:"from,omitempty"` // CIDR; "" is from all
	Table    int    `yaml:"table"`
	// Other is a selector rdmaform never makes (iif, fwmark ...), as ip
	// rule prints it; set by tests that put a foreign rule on the host.
	Other string `yaml:"other,omitempty"`
}

// TableRoute is one IPv4 route of a table other than main and local.
type TableRoute struct {
	Table int    `yaml:"table"`
	Dst   string `yaml:"dst"` // CIDR
	Dev   string `yaml:"dev"`
	Src   string `yaml:"src,omitempty"`
	Gw    string `yaml:"gw,omitempty"`
}

// The kernel's default rules (fib_default_rules_init in
// net/ipv4/fib_rules.c): they are listed by every dump.
var defaultRules = []host.Rule{{Priority: 0, Table: 255}, {Priority: 32766, Table: 254}, {Priority: 32767, Table: 253}}

// RuleList implements host.Router: the default rules and the state's,
// by priority.
func (n *simNet) RuleList() ([]host.Rule, error) {
	out := append([]host.Rule(nil), defaultRules...)
	err := n.read(func(st *State) error {
		for _, r := range st.Rules {
			hr := host.Rule{Priority: r.Priority, Table: r.Table, Other: r.Other}
			if r.From != "" {
				p, err := netip.ParsePrefix(r.From)
				if err != nil {
					return fmt.Errorf("state: rule from %q: %w", r.From, err)
				}
				hr.Src = p
			}
			out = append(out, hr)
		}
		return nil
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].Priority < out[j].Priority })
	return out, err
}

func ruleFrom(r host.Rule) string {
	if !r.Src.IsValid() {
		return ""
	}
	return r.Src.String()
}

// RuleAdd implements host.Router with the kernel's EEXIST for a rule it
// holds already (NLM_F_EXCL) and EINVAL for table 0.
func (n *simNet) RuleAdd(r host.Rule) error {
	if err := n.sim.inject(faultNetlink, "RuleAdd", r.String()); err != nil {
		return unlessDropped(err)
	}
	return n.sim.mutate(false, func(st *State) error {
		if r.Table <= 0 || r.Other != "" {
			return fmt.Errorf("ip rule add %s: %w", r, syscall.EINVAL)
		}
		for _, x := range st.Rules {
			if x.Priority == r.Priority && x.From == ruleFrom(r) && x.Table == r.Table && x.Other == "" {
				return fmt.Errorf("ip rule add %s: %w", r, syscall.EEXIST)
			}
		}
		st.Rules = append(st.Rules, PolicyRule{Priority: r.Priority, From: ruleFrom(r), Table: r.Table})
		return nil
	})
}

// RuleDel implements host.Router: the first rule with the priority,
// source and table; ENOENT when there is none.
func (n *simNet) RuleDel(r host.Rule) error {
	if err := n.sim.inject(faultNetlink, "RuleDel", r.String()); err != nil {
		return unlessDropped(err)
	}
	return n.sim.mutate(false, func(st *State) error {
		for i, x := range st.Rules {
			if x.Priority == r.Priority && x.From == ruleFrom(r) && x.Table == r.Table {
				st.Rules = append(st.Rules[:i], st.Rules[i+1:]...)
				return nil
			}
		}
		return fmt.Errorf("ip rule del %s: %w", r, syscall.ENOENT)
	})
}

// RouteList implements host.Router.
func (n *simNet) RouteList(table int) ([]host.Route, error) {
	var out []host.Route
	err := n.read(func(st *State) error {
		for _, r := range st.TableRoutes {
			if r.Table != table {
				continue
			}
			hr := host.Route{Table: r.Table, Dev: r.Dev}
			var err error
			if hr.Dst, err = netip.ParsePrefix(r.Dst); err != nil {
				return fmt.Errorf("state: route %q: %w", r.Dst, err)
			}
			if r.Src != "" {
				hr.Src, _ = netip.ParseAddr(r.Src)
			}
			if r.Gw != "" {
				hr.Gw, _ = netip.ParseAddr(r.Gw)
			}
			out = append(out, hr)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, err
}

func addrOrEmpty(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

// RouteAdd implements host.Router with the kernel's errors
// (net/ipv4/fib_semantics.c, fib_trie.c): ErrLinkNotFound for a missing
// netdev (its name does not resolve to an index),
// ENETDOWN for one that is down ("Device for nexthop is not up"), EINVAL
// for a preferred source that is no address of the host ("Invalid
// prefsrc address"), EEXIST for a destination the table has already
// (NLM_F_EXCL).
func (n *simNet) RouteAdd(r host.Route) error {
	if err := n.sim.inject(faultNetlink, "RouteAdd", r.String()); err != nil {
		return unlessDropped(err)
	}
	return n.sim.mutate(false, func(st *State) error {
		nd := st.Netdev(r.Dev)
		if nd == nil {
			return notFound(r.Dev)
		}
		if !nd.Up {
			return fmt.Errorf("ip route add %s: %w", r, syscall.ENETDOWN)
		}
		if r.Src.IsValid() && !st.localAddr(r.Src) {
			return fmt.Errorf("ip route add %s: %w", r, syscall.EINVAL)
		}
		dst := r.Dst.Masked().String()
		for _, x := range st.TableRoutes {
			if x.Table == r.Table && x.Dst == dst {
				return fmt.Errorf("ip route add %s: %w", r, syscall.EEXIST)
			}
		}
		st.TableRoutes = append(st.TableRoutes, TableRoute{Table: r.Table, Dst: dst, Dev: r.Dev, Src: addrOrEmpty(r.Src), Gw: addrOrEmpty(r.Gw)})
		return nil
	})
}

// RouteDel implements host.Router: ESRCH when the table has no such route.
func (n *simNet) RouteDel(r host.Route) error {
	if err := n.sim.inject(faultNetlink, "RouteDel", r.String()); err != nil {
		return unlessDropped(err)
	}
	return n.sim.mutate(false, func(st *State) error {
		for i, x := range st.TableRoutes {
			if x.Table == r.Table && x.Dst == r.Dst.Masked().String() && x.Dev == r.Dev {
				st.TableRoutes = append(st.TableRoutes[:i], st.TableRoutes[i+1:]...)
				return nil
			}
		}
		return fmt.Errorf("ip route del %s: %w", r, syscall.ESRCH)
	})
}

// localAddr: an address one of the host's netdevs has.
func (st *State) localAddr(a netip.Addr) bool {
	for _, nd := range st.Netdevs {
		for _, s := range append(append([]string(nil), nd.Addrs...), nd.DynAddrs...) {
			if p, err := netip.ParsePrefix(s); err == nil && p.Addr() == a {
				return true
			}
		}
	}
	return false
}

// flushRoutes drops the table routes the kernel drops when a netdev goes
// down or away (fib_sync_down_dev), or when the address a route prefers
// as its source goes (fib_sync_down_addr); dev or src "" matches none.
func (st *State) flushRoutes(dev, src string) {
	var keep []TableRoute
	for _, r := range st.TableRoutes {
		if (dev != "" && r.Dev == dev) || (src != "" && r.Src == src) {
			continue
		}
		keep = append(keep, r)
	}
	st.TableRoutes = keep
}
