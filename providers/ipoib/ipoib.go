// Package ipoib manages the spec's ipoib section: NetworkManager
// connections of type infiniband (IPoIB), through NetworkManager's D-Bus
// API (host.NetworkManager: no nmcli process runs). A connection is
// identified by its name (connection.id); profiles with other names are
// never read beyond the list, never changed.
//
// What it decides, so operators can rely on it:
//
//   - P_Keys are written with the full-membership bit (0x0002 and 0x8002
//     are the same partition; the interface is parent.8002) and are looked
//     up in the port's P_Key table by the partition number alone.
//   - ipv4/ipv6 without a method: manual with addresses, disabled without,
//     so a declared interface never waits for DHCP.
//   - state: down saves the profile with autoconnect no (a reboot would
//     otherwise bring it up again); up sets autoconnect yes.
//   - Fields the spec leaves out (mode, mtu, ipv4, ipv6) are not enforced
//     on an existing profile; they take NetworkManager's defaults when the
//     profile is created.
//   - Profiles are saved as `nmcli connection add` and `nmcli connection
//     modify` save them: the keyfiles are the same byte for byte
//     (TestRealKeyfilesEqualNmcli).
//   - NetworkManager applies a modified profile only when it is activated
//     again, so a modify of an active profile is followed by an
//     activation (`nmcli connection up`), which re-activates it: the interface is
//     re-configured at once (a short interruption of its traffic). The
//     plan says so with "state: up -> re-activate". A change of autoconnect
//     alone does not re-activate.
package ipoib

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/ipoib/nmcli"
	"github.com/rdmaform/rdmaform/schema"
)

// Provider is the IPoIB provider.
type Provider struct{}

var _ plan.TypedProvider[*Observed, *payload] = (*Provider)(nil)

// New is the provider as plan.Build and apply take it.
func New() plan.Provider { return plan.Adapt[*Observed, *payload](&Provider{}) }

// Name implements plan.Provider.
func (*Provider) Name() string { return "ipoib" }

// Kind is the kind of this provider's addresses.
const Kind = "ipoib"

// Address is the plan address of one connection.
func Address(name string) plan.Address { return plan.Addr(Kind, name) }

// Observed is what Observe found.
type Observed struct {
	// Profiles is every infiniband profile, sorted by name then UUID.
	Profiles []nmcli.Profile
	// Links holds the netdevs the spec names as parents, by name; a
	// missing netdev has no entry.
	Links map[string]inventory.Netdev
	// PKeys holds the P_Key table (non-zero entries, sorted) of each port
	// that carries a parent, by "dev/port": ports/N/pkeys/*.
	PKeys map[string][]int
}

func portKey(dev string, port int) string { return fmt.Sprintf("%s/%d", dev, port) }

// errNoNM is the error of a host without a NetworkManager door.
var errNoNM = &host.NMError{Method: "ListConnections", Name: host.NMErrNoBus, Message: "this host has no NetworkManager to ask"}

// nm is the host's NetworkManager door.
func nm(h *host.Host) (host.NetworkManager, error) {
	if h.NM == nil {
		return nil, errNoNM
	}
	return h.NM, nil
}

// list reads every infiniband profile, sorted by name then UUID.
func list(ctx context.Context, h *host.Host) ([]nmcli.Profile, error) {
	n, err := nm(h)
	if err != nil {
		return nil, err
	}
	conns, err := n.Connections(ctx)
	if err != nil {
		return nil, err
	}
	var ps []nmcli.Profile
	for _, c := range conns {
		if p, ok := profileOf(c); ok {
			ps = append(ps, p)
		}
	}
	slices.SortFunc(ps, func(a, b nmcli.Profile) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.UUID, b.UUID)
	})
	return ps, nil
}

// Observe implements plan.TypedProvider: NetworkManager's profiles through
// its D-Bus API in two round trips, whatever their number (the list and
// the active connections, then every profile's settings at once), plus
// the sysfs files of the parents the spec names and the P_Key tables of
// their ports. show (Request.Full) reads the profiles alone.
func (p *Provider) Observe(ctx context.Context, h *host.Host, req *plan.Request) (*Observed, error) {
	if len(req.Spec.IPoIB) == 0 && !req.Full {
		return nil, nil
	}
	obs := &Observed{Links: map[string]inventory.Netdev{}, PKeys: map[string][]int{}}
	profiles, err := list(ctx, h)
	if req.Full {
		// show: the profiles alone. A host without NetworkManager, or
		// with NetworkManager stopped, has none to describe.
		switch {
		case host.IsNMNotRunning(err):
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("listing NetworkManager connections: %w", err)
		}
		obs.Profiles = profiles
		return obs, nil
	}
	if err != nil {
		if host.IsNMNotRunning(err) {
			return nil, fmt.Errorf("NetworkManager is not running; the ipoib section needs it (systemctl start NetworkManager): %w", err)
		}
		return nil, fmt.Errorf("listing NetworkManager connections: %w", err)
	}
	obs.Profiles = profiles
	// A netdev or port can vanish between listing and reading (driver
	// reload, hot unplug; a simulated host re-rendering its tree): read
	// again rather than report a half-read table.
	for attempt := 1; ; attempt++ {
		err := readSysfs(h, req, obs)
		if err == nil {
			return obs, nil
		}
		if !errors.Is(err, fs.ErrNotExist) || attempt == 3 {
			return nil, err
		}
	}
}

// readSysfs fills obs.Links and obs.PKeys for the parents the spec names.
func readSysfs(h *host.Host, req *plan.Request, obs *Observed) error {
	obs.Links, obs.PKeys = map[string]inventory.Netdev{}, map[string][]int{}
	for _, c := range req.Spec.IPoIB {
		name := c.Parent
		if schema.CheckNetdev(name) != "" {
			continue // reported by validation
		}
		if _, done := obs.Links[name]; done {
			continue
		}
		l, ok, err := inventory.ReadNetdev(h.FS, req.NetdevNow(name)) // before the names stage renames it
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		obs.Links[name] = l
		dev, port := req.Inv.PortOfNetdev(name)
		if port == nil || port.LinkLayer != linklayer.InfiniBand {
			continue
		}
		k := portKey(dev.Name, port.Num)
		if _, done := obs.PKeys[k]; done {
			continue
		}
		keys, err := inventory.ReadPKeys(h.FS, req.RDMANow(dev.Name), port.Num)
		if err != nil {
			return err
		}
		obs.PKeys[k] = keys
	}
	return nil
}
