package schema

// RailRouting is one netdev of a multi-rail host given a routing table of its
// own: `ip rule add from ADDR lookup TABLE` for each of its IPv4 addresses
// and, in TABLE, the route of each of its subnets through it.
type RailRouting struct {
	Interface string `yaml:"interface" doc:"the rail's netdev (1-15 bytes); its IPv4 addresses are those interfaces[] gives it, or else those it has"`
	Table     int    `yaml:"table" min:"1" max:"2147483647" doc:"the rail's routing table, 1-2147483647 but 252-255 (compat, default, main and local are the kernel's); rdmaform owns it: its rules and routes are the rail's alone"`
	Priority  *int   `yaml:"priority,omitempty" min:"1" max:"32765" default:"2000" doc:"priority of the rail's rules, 1-32765: before the main table's rule (32766); 0 is the local table's"`
}

// Rail table and priority bounds. The kernel takes tables up to
// 4294967295 (FRA_TABLE is a u32); a spec's integers end at 2147483647.
// Tables 252-255 are RT_TABLE_COMPAT,
// RT_TABLE_DEFAULT, RT_TABLE_MAIN and RT_TABLE_LOCAL
// (include/uapi/linux/rtnetlink.h); the kernel's own rules have the
// priorities 0 (local), 32766 (main) and 32767 (default)
// (net/ipv4/fib_rules.c, fib_default_rules_init).
const (
	MinRailTable        = 1
	MaxRailTable        = 1<<31 - 1
	MinRailPriority     = 1
	MaxRailPriority     = 32765
	DefaultRailPriority = 2000
)

// RailPriority is the priority of a rail's rules.
func (r RailRouting) RailPriority() int {
	if r.Priority == nil {
		return DefaultRailPriority
	}
	return *r.Priority
}

func (v *validator) rails() {
	netdevs := map[string]string{}
	tables := map[int]string{}
	for i, r := range v.spec.Rails {
		p := Path("rails", i)
		switch {
		case !v.spec.Src.Has(p + ".interface"):
			v.add(p, "interface: is required (the rail's netdev, e.g. ens1f0np0)")
		case CheckNetdev(r.Interface) != "":
			v.add(p+".interface", "%s", CheckNetdev(r.Interface))
		case netdevs[r.Interface] != "":
			v.add(p+".interface", "netdev %s is a rail twice (first at %s)", r.Interface, netdevs[r.Interface])
		default:
			netdevs[r.Interface] = p
		}
		switch {
		case !v.spec.Src.Has(p + ".table"):
			v.add(p, "table: is required (a routing table of the rail's own, e.g. 101)")
		case r.Table < MinRailTable || r.Table > MaxRailTable:
			// the min and max tags report it
		case r.Table >= 252 && r.Table <= 255:
			v.add(p+".table", "%d is the kernel's (252 compat, 253 default, 254 main, 255 local): give the rail a table of its own", r.Table)
		case tables[r.Table] != "":
			v.add(p+".table", "table %d is another rail's (%s): each rail has a table of its own", r.Table, tables[r.Table])
		default:
			tables[r.Table] = p
		}
	}
}
