package schema

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
)

// Limits are the resource limits of login sessions (pam_limits), in a
// file of rdmaform's own in /etc/security/limits.d.
type Limits struct {
	Memlock string `yaml:"memlock,omitempty" doc:"locked-memory limit of every login (soft and hard, the * and root domains), in /etc/security/limits.d/90-rdmaform.conf: unlimited, or a size with a K, M, G or T suffix (base 1024) from 64K to 1024T; RDMA registers memory (ibv_reg_mr), which a small limit refuses"`
}

// ServiceLimits are a systemd unit's resource limits, in a drop-in of
// rdmaform's own.
type ServiceLimits struct {
	Memlock string `yaml:"memlock,omitempty" doc:"LimitMEMLOCK of the unit (soft and hard) in /etc/systemd/system/UNIT.d/rdmaform.conf: unlimited, or a size with a K, M, G or T suffix (base 1024) from 64K to 1024T; the processes the unit starts inherit it (slurmd's jobs); apply reloads systemd and restarts the unit when it runs, for its processes to get the new limit"`
}

// Sysctl are the kernel settings of /proc/sys an RDMA host needs, set
// now and in /etc/sysctl.d/90-rdmaform.conf.
type Sysctl struct {
	NumaBalancing *bool             `yaml:"numa_balancing,omitempty" doc:"kernel.numa_balancing: automatic NUMA balancing moves pages between nodes, and registered (pinned) RDMA memory cannot follow; false (0) stops its scans and page faults on RDMA hosts"`
	Interfaces    []SysctlInterface `yaml:"interfaces,omitempty" doc:"per-netdev settings (net.ipv4.conf.IF and net.ipv6.conf.IF), each netdev once; the netdev must exist (a VF exists once sriov made it)"`
}

// SysctlInterface is one netdev's ARP, reverse-path and IPv6 settings.
type SysctlInterface struct {
	Name        string `yaml:"name" doc:"netdev name: 1-15 of letters, digits, _ . - (it becomes a /proc/sys path and a sysctl.d key)"`
	ArpIgnore   *int   `yaml:"arp_ignore,omitempty" min:"0" max:"8" doc:"net.ipv4.conf.IF.arp_ignore: 0, 1, 2, 3 or 8; 1 answers ARP only for addresses of this netdev, so that with several RoCE rails on one subnet each rail answers for its own address"`
	ArpAnnounce *int   `yaml:"arp_announce,omitempty" min:"0" max:"2" doc:"net.ipv4.conf.IF.arp_announce: 0-2; 2 uses the best local address of the outgoing netdev as ARP source, never another rail's"`
	RpFilter    *int   `yaml:"rp_filter,omitempty" min:"0" max:"2" doc:"net.ipv4.conf.IF.rp_filter: 0 off, 1 strict, 2 loose; strict reverse-path filtering drops a rail's traffic that the routing table would send by another rail"`
	AcceptLocal *bool  `yaml:"accept_local,omitempty" doc:"net.ipv4.conf.IF.accept_local: accept packets with a local source address (rails of one host that reach each other)"`
	DisableIPv6 *bool  `yaml:"disable_ipv6,omitempty" doc:"net.ipv6.conf.IF.disable_ipv6: true removes IPv6 from the netdev (and its RoCE GIDs of IPv6 addresses)"`
	AcceptRA    *int   `yaml:"accept_ra,omitempty" min:"0" max:"2" doc:"net.ipv6.conf.IF.accept_ra: 0-2; 0 ignores router advertisements, so that a SLAAC fabric adds no addresses (and GIDs) to a RoCE VF"`
	Autoconf    *bool  `yaml:"autoconf,omitempty" doc:"net.ipv6.conf.IF.autoconf: false makes no SLAAC addresses from router advertisements"`
}

// Memlock bounds: 64 KiB (the kernel's limit before Linux 5.16) to
// 1024 TiB.
const (
	MinMemlock = 64 << 10
	MaxMemlock = 1 << 50
)

// Unlimited is the memlock value with no limit.
const Unlimited = "unlimited"

var memlockRE = regexp.MustCompile(`^([0-9]{1,20})([KMGT])$`)

// ParseMemlock reads a memlock value of the spec: the limit in bytes, or
// math.MaxUint64 for unlimited (RLIM_INFINITY).
func ParseMemlock(s string) (uint64, error) {
	if s == Unlimited {
		return math.MaxUint64, nil
	}
	m := memlockRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q is not a memlock limit: unlimited, or a size with a K, M, G or T suffix (e.g. 64G)", truncate(s))
	}
	n, err := strconv.ParseUint(m[1], 10, 64)
	shift := map[string]uint{"K": 10, "M": 20, "G": 30, "T": 40}[m[2]]
	if err != nil || n > MaxMemlock>>shift || n<<shift < MinMemlock {
		return 0, fmt.Errorf("%s is out of range: from 64K to 1024T, or unlimited", s)
	}
	return n << shift, nil
}

// sysctlNameRE is what a netdev name may hold to become a sysctl key: a
// sysctl.d line is "key = value", '#' and ';' start comments, and '/'
// separates path elements.
var sysctlNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

func (v *validator) hostSettings() {
	if l := v.spec.Limits; l != nil {
		if l.Memlock == "" {
			v.add("$.limits", "give memlock")
		} else if _, err := ParseMemlock(l.Memlock); err != nil {
			v.add("$.limits.memlock", "%v", err)
		}
	}
	for i, s := range v.spec.Services {
		if s.Limits == nil {
			continue
		}
		p := Path("services", i, "limits")
		if s.Limits.Memlock == "" {
			v.add(p, "give memlock")
		} else if _, err := ParseMemlock(s.Limits.Memlock); err != nil {
			v.add(p+".memlock", "%v", err)
		}
	}
	if v.spec.Sysctl == nil {
		return
	}
	seen := map[string]string{}
	for i, in := range v.spec.Sysctl.Interfaces {
		p := Path("sysctl", "interfaces", i)
		switch {
		case !v.spec.Src.Has(p + ".name"):
			v.add(p, "name: is required (a netdev, e.g. ens1f0v0)")
			continue
		case CheckNetdev(in.Name) != "":
			v.add(p+".name", "%s", CheckNetdev(in.Name))
			continue
		case !sysctlNameRE.MatchString(in.Name):
			v.add(p+".name", "%q: a netdev whose settings go in sysctl.d has a name of letters, digits, _ . -", in.Name)
			continue
		case seen[in.Name] != "":
			v.add(p+".name", "netdev %s is listed twice (first at %s)", in.Name, seen[in.Name])
			continue
		}
		seen[in.Name] = p
		if in.ArpIgnore != nil && *in.ArpIgnore > 3 && *in.ArpIgnore < 8 {
			v.add(p+".arp_ignore", "%d is reserved: 0, 1, 2, 3 or 8", *in.ArpIgnore)
		}
		if in.ArpIgnore == nil && in.ArpAnnounce == nil && in.RpFilter == nil && in.AcceptLocal == nil &&
			in.DisableIPv6 == nil && in.AcceptRA == nil && in.Autoconf == nil {
			v.add(p, "give at least one setting")
		}
	}
}
