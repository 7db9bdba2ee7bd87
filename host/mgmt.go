package host

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"sort"
	"strings"

	"github.com/vishvananda/netlink"
)

// RouteLister is implemented by a Net that can tell where default routes
// leave.
type RouteLister interface {
	// DefaultRouteLinks names the netdevs the IPv4 and IPv6 default routes
	// leave through. Equivalent to: ip route show default; ip -6 route show default
	DefaultRouteLinks() ([]string, error)
}

var _ RouteLister = (*Netlink)(nil)

// DefaultRouteLinks implements RouteLister.
func (n *Netlink) DefaultRouteLinks() ([]string, error) {
	seen := map[string]bool{}
	for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		routes, err := redump(func() ([]netlink.Route, error) { return n.h.RouteList(nil, fam) })
		if err != nil {
			return nil, err
		}
		for _, r := range routes {
			if r.Dst != nil {
				if ones, _ := r.Dst.Mask.Size(); ones != 0 {
					continue
				}
			}
			idx := []int{r.LinkIndex}
			for _, nh := range r.MultiPath {
				idx = append(idx, nh.LinkIndex)
			}
			for _, i := range idx {
				if i == 0 {
					continue
				}
				if l, err := n.h.LinkByIndex(i); err == nil {
					seen[l.Attrs().Name] = true
				}
			}
		}
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}

// ManagementNetdevs names the netdevs an operator reaches this host
// through, with why: the default route's, and the one holding the local
// address of the SSH session (SSH_CONNECTION in environ). Taking one of
// them down, or re-addressing it, can cut the operator off.
func (h *Host) ManagementNetdevs(environ []string) (map[string]string, error) {
	out := map[string]string{}
	if h.Net == nil {
		return out, nil
	}
	if rl, ok := h.Net.(RouteLister); ok {
		links, err := rl.DefaultRouteLinks()
		if err != nil {
			return nil, fmt.Errorf("reading default routes: %w", err)
		}
		for _, l := range links {
			out[l] = "it carries the default route"
		}
	}
	for _, kv := range environ {
		v, ok := strings.CutPrefix(kv, "SSH_CONNECTION=")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 4 {
			continue
		}
		local, err := netip.ParseAddr(f[2])
		if err != nil {
			continue
		}
		nd, err := h.netdevWithAddr(local.Unmap())
		if err != nil {
			return nil, err
		}
		if nd != "" {
			why := "this SSH session (from " + f[0] + ") comes in through it"
			if prev, ok := out[nd]; ok {
				why = prev + ", and " + why
			}
			out[nd] = why
		}
	}
	return out, nil
}

func (h *Host) netdevWithAddr(a netip.Addr) (string, error) {
	entries, err := h.FS.ReadDir("/sys/class/net")
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		addrs, err := h.Net.AddrList(e.Name())
		if err != nil {
			continue
		}
		for _, ad := range addrs {
			if ad.Prefix.Addr() == a {
				return e.Name(), nil
			}
		}
	}
	return "", nil
}
