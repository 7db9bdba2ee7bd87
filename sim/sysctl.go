package sim

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// The simulated kernel's /proc/sys settings an RDMA host tunes: automatic
// NUMA balancing, and per netdev the IPv4 ARP and reverse-path settings
// and the IPv6 ones. State.Sysctl holds the values written since boot,
// by path below /proc/sys; every other file has the kernel's default.

// sysctlDefaults are the kernel's values at boot (Documentation/
// admin-guide/sysctl/kernel.rst, networking/ip-sysctl.rst): automatic
// NUMA balancing on for a multi-node server; ARP, reverse-path filter and
// accept_local off; IPv6 on, router advertisements accepted (1) and SLAAC
// on.
var (
	kernelSysctlDefaults = map[string]string{"kernel/numa_balancing": "1"}
	ipv4ConfDefaults     = map[string]string{"arp_ignore": "0", "arp_announce": "0", "rp_filter": "0", "accept_local": "0"}
	ipv6ConfDefaults     = map[string]string{"disable_ipv6": "0", "accept_ra": "1", "autoconf": "1"}
)

var sysctlRE = regexp.MustCompile(`^/proc/sys/(kernel/numa_balancing|net/ipv[46]/conf/[^/]+/[a-z_0-9]+)$`)

// sysctlFiles are the /proc/sys files of the simulated kernel, by path
// below /proc/sys, with their values now.
func (s *State) sysctlFiles() map[string]string {
	out := map[string]string{}
	for k, v := range kernelSysctlDefaults {
		out[k] = v
	}
	// conf/all and conf/default are there whatever netdevs exist.
	names := []string{"all", "default"}
	for _, n := range s.Netdevs {
		names = append(names, n.Name)
	}
	for _, n := range names {
		for a, v := range ipv4ConfDefaults {
			out["net/ipv4/conf/"+n+"/"+a] = v
		}
		for a, v := range ipv6ConfDefaults {
			out["net/ipv6/conf/"+n+"/"+a] = v
		}
	}
	for k, v := range s.Sysctl {
		if _, ok := out[k]; ok {
			out[k] = v
		}
	}
	return out
}

func (s *State) renderSysctl(t *tree) {
	t.dir("/proc/sys/net/ipv4/conf")
	t.dir("/proc/sys/net/ipv6/conf")
	for k, v := range s.sysctlFiles() {
		t.file("/proc/sys/"+k, v+"\n")
	}
}

// writeSysctl takes a write to a /proc/sys file as proc_dointvec does: one
// decimal integer, white space around it allowed; anything else is
// EINVAL. kernel.numa_balancing takes 0-3 (its bits: normal balancing and
// memory tiering), as its proc_dointvec_minmax bounds say.
func (s *State) writeSysctl(name, key, data string) error {
	if _, ok := s.sysctlFiles()[key]; !ok {
		return perr("open", name, syscall.ENOENT)
	}
	n, err := strconv.Atoi(strings.TrimSpace(data))
	if err != nil {
		return perr("write", name, syscall.EINVAL)
	}
	if key == "kernel/numa_balancing" && (n < 0 || n > 3) {
		return perr("write", name, syscall.EINVAL)
	}
	if s.Sysctl == nil {
		s.Sysctl = map[string]string{}
	}
	s.Sysctl[key] = strconv.Itoa(n)
	return nil
}

// rebootSysctl is a boot's /proc/sys: the kernel's defaults, then what
// systemd-sysctl applies from /etc/sysctl.d/*.conf (files in name order,
// a later line winning), for the files that exist then: a netdev made
// later in the boot (a VF) gets nothing from it.
func (s *Sim) rebootSysctl(st *State) {
	st.Sysctl = nil
	files, _ := filepath.Glob(filepath.Join(s.Dir, "etc/sysctl.d/*.conf"))
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			l = strings.TrimSpace(l)
			if l == "" || l[0] == '#' || l[0] == ';' {
				continue
			}
			eq := strings.IndexByte(l, '=')
			if eq < 0 {
				continue
			}
			key := strings.TrimPrefix(strings.TrimSpace(l[:eq]), "-")
			// sysctl.d(5): dots separate, unless the first separator
			// is a slash.
			if sep := strings.IndexAny(key, "./"); sep >= 0 && key[sep] == '.' {
				key = strings.ReplaceAll(key, ".", "/")
			}
			_ = st.writeSysctl("/proc/sys/"+key, key, l[eq+1:])
		}
	}
}

// renameSysctl moves a renamed netdev's values: its conf directories are
// the netdev's, and keep what was written.
func (s *State) renameSysctl(old, name string) {
	for _, fam := range []string{"net/ipv4/conf/", "net/ipv6/conf/"} {
		for k, v := range s.Sysctl {
			if rest, ok := strings.CutPrefix(k, fam+old+"/"); ok {
				delete(s.Sysctl, k)
				s.Sysctl[fam+name+"/"+rest] = v
			}
		}
	}
}

// pruneSysctl drops the values of netdevs that are gone: one made again
// (a VF after sriov_numvfs 0, a card's netdevs after a reset) starts from
// the defaults, as the kernel's new conf directories do.
func (s *State) pruneSysctl() {
	files := s.sysctlFiles()
	for k := range s.Sysctl {
		if _, ok := files[k]; !ok {
			delete(s.Sysctl, k)
		}
	}
	if len(s.Sysctl) == 0 {
		s.Sysctl = nil
	}
}
