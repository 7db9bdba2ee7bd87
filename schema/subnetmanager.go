package schema

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// SubnetManager is the opensm running on this host: its priority among
// the fabric's subnet managers, the port it binds to, the partitions it
// programs (rdmaform writes the whole partitions.conf) and the
// opensm.conf options rdmaform manages.
type SubnetManager struct {
	Priority   *int        `yaml:"priority,omitempty" min:"0" max:"15" doc:"sm_priority, 0-15: the highest priority is master, a tie goes to the lowest port GUID; updated without a restart"`
	Port       *SMPort     `yaml:"port,omitempty" doc:"the port opensm binds to (opensm.conf guid, resolved to its port GUID; needs a restart); absent: the distribution's default"`
	Partitions []Partition `yaml:"partitions,omitempty" doc:"partitions.conf, in order; without a partition named Default, opensm adds Default=0x7fff : ALL=limited, SELF=full"`
	Options    *SMOptions  `yaml:"options,omitempty" doc:"opensm.conf keys rdmaform manages (an allow-list); each is updated on SIGHUP or needs a restart, as opensm's option table says"`
	// Fabric names the fabric for rdmaform lint; hosts with the same
	// fabric share one subnet.
	Fabric string `yaml:"fabric,omitempty" default:"default" doc:"lint-only: the fabric this subnet manager serves (default: default); rdmaform lint checks each fabric's managers and partitions together"`
}

// SMPort is the port opensm binds to.
type SMPort struct {
	Device string `yaml:"device" doc:"local RDMA device, e.g. mlx5_0"`
	Port   int    `yaml:"port" min:"1" max:"255" doc:"port number, from 1"`
}

// Partition is one partitions.conf entry.
type Partition struct {
	Name string `yaml:"name" doc:"partition name, 1-31 characters of A-Z a-z 0-9 _ . -; Default is the default partition (P_Key 0x7fff)"`
	PKey *PKey  `yaml:"pkey" doc:"P_Key 0x0001-0x7ffe (0x8001-0xfffe: opensm uses the low 15 bits); 0x7fff only for Default"`
	// IPoIB makes opensm create the partition's IPoIB broadcast group;
	// true or {rate, mtu, sl}.
	IPoIB             *PartitionIPoIB   `yaml:"ipoib,omitempty" doc:"true, or {rate, mtu, sl}: opensm creates the partition's IPoIB broadcast group"`
	DefaultMembership string            `yaml:"default_membership,omitempty" enum:"full,limited,both" default:"limited" doc:"membership of members that give none (opensm's defmember; default limited); both needs options.allow_both_pkeys"`
	Members           []PartitionMember `yaml:"members,omitempty" doc:"member ports; none: the partition has no member"`
}

// PartitionIPoIB is the IPoIB broadcast group of a partition; written
// "ipoib: true" when no field is given.
type PartitionIPoIB struct {
	Rate *int `yaml:"rate,omitempty" min:"2" max:"24" doc:"IBTA rate code of the broadcast group, 2-24 (3: 10 Gb/s, 7: 40 Gb/s, 16: 100 Gb/s, 17: 200 Gb/s, 21: 400 Gb/s)"`
	MTU  *int `yaml:"mtu,omitempty" doc:"broadcast group MTU in bytes: 256, 512, 1024, 2048 or 4096 (written as the IBTA code 1-5)"`
	SL   *int `yaml:"sl,omitempty" min:"0" max:"15" doc:"service level, 0-15"`
}

// PartitionMember is one port of a partition.
type PartitionMember struct {
	GUID       string `yaml:"guid" doc:"port GUID (0x0002c903000a1b2c) or all, all_cas, all_switches, all_routers, self"`
	Membership string `yaml:"membership,omitempty" enum:"full,limited,both" doc:"full, limited or both (needs options.allow_both_pkeys); default: the partition's default_membership"`
}

// SMOptions are the opensm.conf keys rdmaform manages.
type SMOptions struct {
	PartEnforce            string `yaml:"part_enforce,omitempty" enum:"both,in,out,off" doc:"partition enforcement on switch external ports (updated on SIGHUP)"`
	NoPartitionEnforcement *bool  `yaml:"no_partition_enforcement,omitempty" doc:"disable partition enforcement by switches (updated on SIGHUP)"`
	AllowBothPKeys         *bool  `yaml:"allow_both_pkeys,omitempty" doc:"allow full and limited membership of one port in one partition (needs a restart)"`
	RoutingEngine          string `yaml:"routing_engine,omitempty" doc:"routing engines, comma-separated, tried in order: none, minhop, updn, dnup, file, ftree, lash, dor, torus-2QoS, nue, dfsssp, sssp (needs a restart)"`
	QoS                    *bool  `yaml:"qos,omitempty" doc:"QoS (updated on SIGHUP)"`
	SweepInterval          *int   `yaml:"sweep_interval,omitempty" min:"0" max:"86400" doc:"seconds between light sweeps, 0 disables them (updated on SIGHUP)"`
	LMC                    *int   `yaml:"lmc,omitempty" min:"0" max:"7" doc:"LID mask control, 0-7 (needs a restart)"`
	// A standby takes over after polling_retry_number unanswered polls of
	// the master, sminfo_polling_timeout apart.
	SMInfoPollingTimeout *int `yaml:"sminfo_polling_timeout,omitempty" min:"100" max:"3600000" doc:"milliseconds between a standby's polls of the master (updated on SIGHUP)"`
	PollingRetryNumber   *int `yaml:"polling_retry_number,omitempty" min:"1" max:"100" doc:"unanswered polls after which a standby takes over (updated on SIGHUP)"`
}

// Partition keys and names, from opensm: only the low 15 bits of a P_Key
// count (doc/partition-config.txt), the default partition is 0x7fff, and
// a partition's name is a char[32] (include/opensm/osm_partition.h).
const (
	DefaultPartition     = "Default"
	DefaultPartitionPKey = 0x7fff
	MaxPartitionName     = 31
)

// SMKeywords are the member keywords opensm knows, as the spec spells
// them (partitions.conf spells them upper case).
var SMKeywords = []string{"all", "all_cas", "all_switches", "all_routers", "self"}

// RoutingEngines are opensm's routing engines (opensm/osm_opensm.c,
// static_routing_modules).
var RoutingEngines = []string{"none", "minhop", "updn", "dnup", "file", "ftree", "lash", "dor", "torus-2QoS", "nue", "dfsssp", "sssp"}

// MTUCodes maps an MTU in bytes to its IBTA code (include/iba/ib_types.h,
// IB_MTU_LEN_*).
var MTUCodes = map[int]int{256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}

// PartitionKey is the partition's key as opensm uses it: the low 15 bits.
func (p *Partition) PartitionKey() int {
	if p.PKey == nil {
		return 0
	}
	return p.PKey.Value & 0x7fff
}

var (
	partitionNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
	memberGUIDRE    = regexp.MustCompile(`^0x[0-9a-fA-F]{16}$`)
)

// subnetManager checks the subnet_manager section: every rule that needs
// no host. Whether the host has an InfiniBand port, and whether a member
// GUID is one of its Ethernet ports, is the provider's to say.
func (v *validator) subnetManager() {
	sm := v.spec.SubnetManager
	if sm == nil {
		return
	}
	const p = "$.subnet_manager"
	if sm.Port != nil {
		if !v.spec.Src.Has(p + ".port.device") {
			v.add(p+".port", "device: is required (e.g. mlx5_0)")
		} else {
			v.check(p+".port.device", CheckRDMAName(sm.Port.Device))
		}
		if !v.spec.Src.Has(p + ".port.port") {
			v.add(p+".port", "port: is required (e.g. 1)")
		}
	}
	if sm.Fabric != "" && !partitionNameRE.MatchString(sm.Fabric) {
		v.add(p+".fabric", "%q is not a fabric name (letters, digits, _ . -)", truncate(sm.Fabric))
	}
	if o := sm.Options; o != nil && o.RoutingEngine != "" {
		// One line of opensm.conf: the engines, commas and spaces (which
		// the file drops), no other white space.
		for _, e := range strings.Split(o.RoutingEngine, ",") {
			if !slices.Contains(RoutingEngines, strings.Trim(e, " ")) {
				v.add(p+".options.routing_engine", "unknown routing engine %q: opensm knows %s", truncate(e), strings.Join(RoutingEngines, ", "))
			}
		}
	}
	both := sm.Options != nil && sm.Options.AllowBothPKeys != nil && *sm.Options.AllowBothPKeys
	names := map[string]string{}
	keys := map[int]string{}
	for i := range sm.Partitions {
		pt := &sm.Partitions[i]
		pp := Path("subnet_manager", "partitions", i)
		v.partition(pt, pp, both, names, keys)
	}
}

func (v *validator) partition(pt *Partition, pp string, both bool, names map[string]string, keys map[int]string) {
	switch {
	case !v.spec.Src.Has(pp + ".name"):
		v.add(pp, "name: is required (e.g. storage)")
	case len(pt.Name) > MaxPartitionName:
		v.add(pp+".name", "partition name is %d characters, opensm keeps at most %d", len(pt.Name), MaxPartitionName)
	case !partitionNameRE.MatchString(pt.Name):
		v.add(pp+".name", "%q is not a partition name: use letters, digits, _ . - (partitions.conf reserves , : ; = # and spaces)", truncate(pt.Name))
	default:
		if prev, dup := names[pt.Name]; dup {
			v.add(pp+".name", "partition %q is defined twice (first at %s)", pt.Name, prev)
		}
		names[pt.Name] = pp
	}
	if pt.PKey == nil {
		if !v.spec.Src.Has(pp + ".pkey") {
			v.add(pp, "pkey: is required (e.g. 0x8002)")
		}
	} else {
		k := pt.PartitionKey()
		isDefault := pt.Name == DefaultPartition
		switch {
		case k == 0:
			v.add(pp+".pkey", "P_Key %s is invalid: its low 15 bits are 0 (use 0x0001-0x7ffe)", pt.PKey.Text)
		case k == DefaultPartitionPKey && !isDefault:
			v.add(pp+".pkey", "P_Key %s is the default partition's: only the partition named Default may use it", pt.PKey.Text)
		case isDefault && k != DefaultPartitionPKey:
			v.add(pp+".pkey", "the partition named Default has P_Key 0x7fff, not %s", pt.PKey.Text)
		default:
			if prev, dup := keys[k]; dup {
				v.add(pp+".pkey", "P_Key 0x%04x is defined twice (first at %s): opensm would merge the two partitions", k, prev)
			}
			keys[k] = pp
		}
	}
	if ip := pt.IPoIB; ip != nil && ip.MTU != nil {
		if _, ok := MTUCodes[*ip.MTU]; !ok {
			v.add(pp+".ipoib.mtu", "MTU %d is not an InfiniBand MTU: use 256, 512, 1024, 2048 or 4096", *ip.MTU)
		}
	}
	if pt.DefaultMembership == "both" && !both {
		v.add(pp+".default_membership", "membership both needs options.allow_both_pkeys: true (opensm ignores both without it)")
	}
	seen := map[string]string{}
	for j, m := range pt.Members {
		mp := fmt.Sprintf("%s.members[%d]", pp, j)
		if !v.spec.Src.Has(mp + ".guid") {
			v.add(mp, "guid: is required (a port GUID such as 0x0002c903000a1b2c, or all, all_cas, all_switches, all_routers, self)")
			continue
		}
		g := strings.ToLower(m.GUID)
		if !slices.Contains(SMKeywords, g) && !memberGUIDRE.MatchString(m.GUID) {
			v.add(mp+".guid", "%q is not a port GUID (0x and 16 hex digits, e.g. 0x0002c903000a1b2c) nor one of all, all_cas, all_switches, all_routers, self", truncate(m.GUID))
			continue
		}
		if prev, dup := seen[g]; dup {
			v.add(mp+".guid", "member %s is listed twice in this partition (first at %s)", m.GUID, prev)
		}
		seen[g] = mp
		if m.Membership == "both" && !both {
			v.add(mp+".membership", "membership both needs options.allow_both_pkeys: true (opensm ignores both without it)")
		}
	}
}
