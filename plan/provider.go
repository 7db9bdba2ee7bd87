package plan

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/schema"
)

// Provider manages one kind of resource through one tool or kernel
// interface. Discover reads the host (in parallel with other providers);
// Diff is a pure function of the spec, the observation and the facts
// earlier stages published; Apply carries out one change.
type Provider interface {
	// Name identifies the provider in changes and messages.
	Name() string
	// Discover reads what the provider manages for this spec. It returns
	// nil, nil when the spec has nothing for it. It must leave no trace.
	Discover(ctx context.Context, h *host.Host, req *Request) (any, error)
	// Diff compares the spec with the observation. It may read and publish
	// facts (for later stages) but does not touch the host.
	Diff(req *Request, observed any, facts *Facts) Proposal
	// Apply carries out one change this provider proposed.
	Apply(ctx context.Context, h *host.Host, c *Change) error
}

// Parallel is implemented by a provider whose changes may be applied at
// the same time: consecutive changes of it whose keys differ run
// concurrently (a bounded number at once), changes with one key one
// after another, and "" runs alone. Results and output stay in plan order.
type Parallel interface {
	ParallelKey(c *Change) string
}

// Batcher is a Parallel provider that can carry out several changes of
// one key in one go (one tool run for an adapter's two PCI functions).
// ApplyBatch returns each change's error in the order of cs; a change it
// cannot join to the others it applies on its own.
type Batcher interface {
	Parallel
	ApplyBatch(ctx context.Context, h *host.Host, cs []*Change) []error
}

// Request is what every provider gets: the spec and the host's RDMA
// inventory, with each spec device resolved.
type Request struct {
	Spec *schema.Spec
	Inv  *inventory.Inventory
	// Devices[i] is the inventory device spec.Devices[i] selects, or nil.
	Devices []*inventory.Device
	// Full asks Observe for everything the provider could manage on the
	// host, not only what the spec names: the scope of show.
	Full bool
	// Capture holds show's options when Full is set: the firmware
	// parameters, extra netdevs and extra units it asks for by name.
	Capture CaptureOptions
	// netdevNow and rdmaNow take the names a rename stage of this plan
	// gives to the names the host has now (Renamed).
	netdevNow, rdmaNow map[string]string
	renames            Renames
}

// DevicePort is a port of a device the request resolved: Index is the
// device's spec index.
type DevicePort struct {
	Index  int
	Device *inventory.Device
	Port   *inventory.Port
}

// PortsOf lists the ports whose link layer is ll now, of every device the
// request resolved, in spec order (show's scope for per-port settings).
func (r *Request) PortsOf(ll linklayer.LinkLayer) []DevicePort {
	var out []DevicePort
	for i, d := range r.Devices {
		if d == nil {
			continue
		}
		for _, p := range d.Ports {
			if p.LinkLayer == ll {
				out = append(out, DevicePort{Index: i, Device: d, Port: p})
			}
		}
	}
	return out
}

// Pos returns the spec position of a logical path, for a change's Source.
func (r *Request) Pos(path string) *Source {
	p := r.Spec.Src.Lookup(path)
	if p.Line == 0 {
		return nil
	}
	return &p
}

// Finding returns a host-dependent finding at a spec path.
func (r *Request) Finding(path, format string, args ...any) schema.Finding {
	return schema.Finding{Path: path, Pos: r.Spec.Src.Lookup(path), Message: fmt.Sprintf(format, args...)}
}

// Unreadable is a finding that part of the host could not be read at
// path (a tool that failed, a service manager that did not answer): plan
// still fails on it, and an audit reports it as an error, not as drift.
func (r *Request) Unreadable(path, format string, args ...any) schema.Finding {
	f := r.Finding(path, format, args...)
	f.Unreadable = true
	return f
}

// Proposal is one provider's part of a plan.
type Proposal struct {
	Changes  []*Change
	Pending  []Pending
	Deferred []Deferred
	Errors   []schema.Finding
	// ActivationFailures are staged values a reboot did not activate.
	ActivationFailures []ActivationFailure
	// Managed lists every resource the spec asks of the provider, changed
	// or not, with the spec path it comes from: what an audit reports on.
	Managed []Managed
}

// Managed is one resource the spec asks for: its address and the spec
// path it comes from.
type Managed struct {
	Address Address
	Path    string
}

// Settler is implemented by providers that keep a record of their own on
// the host (the firmware provider's staged ledger): apply calls Settle with
// the plan it ended on, when that plan has no errors, to drop what the
// host and the spec no longer need.
type Settler interface {
	Settle(ctx context.Context, h *host.Host, res *Result) error
}

// Reverter is implemented by providers whose changes can be undone, for
// apply --confirm-timeout: Revert returns the change that puts back what c
// replaced (nil when nothing needs undoing), built from the before-values
// the plan recorded.
type Reverter interface {
	Revert(c *Change) (*Change, error)
}

// RDMANetdevs are the netdevs show describes: those of RDMA ports (IPoIB
// interfaces and their P_Key children, RoCE netdevs) and the parents of
// Soft-RoCE links, sorted. Other netdevs (the management NIC, bridges,
// veths, container interfaces) are not the RDMA side of the host.
func (r *Request) RDMANetdevs() []string {
	seen := map[string]bool{}
	var out []string
	add := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, d := range r.Inv.Devices {
		add(d.Parent)
		for _, p := range d.Ports {
			for _, n := range p.Netdevs {
				add(n)
			}
		}
	}
	sort.Strings(out)
	return out
}

// ShowNetdevs are RDMANetdevs and the netdevs show is asked for besides
// (Capture.Netdevs: a rollback journal records every interface its plan
// touches).
func (r *Request) ShowNetdevs() []string {
	names := r.RDMANetdevs()
	for _, n := range r.Capture.Netdevs {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// CaptureOptions tune show.
type CaptureOptions struct {
	// FirmwareParams are the mlxconfig parameters to capture; empty means
	// the firmware provider's default set.
	FirmwareParams []string
	// Netdevs are interfaces to capture besides those of the RDMA
	// devices (a rollback journal records every interface its plan
	// touches).
	Netdevs []string
	// Units are systemd units to capture besides the usual RDMA ones
	// (for the same reason).
	Units []string
	// Notes, when set, receives what a capture left out on purpose (a
	// named firmware parameter an adapter lacks), by spec device index.
	Notes *CaptureNotes
}

// CaptureNotes collects notes of a capture, by spec device index. It is
// safe for concurrent use.
type CaptureNotes struct {
	mu       sync.Mutex
	byDevice map[int][]string
}

// Add records a note on spec device i.
func (n *CaptureNotes) Add(i int, note string) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.byDevice == nil {
		n.byDevice = map[int][]string{}
	}
	n.byDevice[i] = append(n.byDevice[i], note)
}

// Device returns the notes of spec device i.
func (n *CaptureNotes) Device(i int) []string {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.byDevice[i]...)
}

// DeviceTarget is one PCI function a device-scoped provider works on: a
// spec device's (Index, and Path its block's logical path) or, for show,
// an inventory function's.
type DeviceTarget struct {
	// PCI is the inventory function's address, else the spec's (normalized:
	// the device was not found); Dev its RDMA device name, if any.
	PCI, Path, Dev string
	Index          int
}

// DeviceTargets are the spec's devices that has selects, each with the
// logical path of its block key, or for show (Full) every inventory
// function with a PCI address.
func DeviceTargets(req *Request, key string, has func(*schema.Device) bool) []DeviceTarget {
	var out []DeviceTarget
	if req.Full {
		for i, d := range req.Devices {
			if d != nil && d.PCI != "" {
				out = append(out, DeviceTarget{PCI: d.PCI, Dev: d.Name, Index: i})
			}
		}
		return out
	}
	for i := range req.Spec.Devices {
		d := &req.Spec.Devices[i]
		if !has(d) {
			continue
		}
		t := DeviceTarget{Path: schema.Path("devices", i, key), Index: i, PCI: schema.NormalizePCI(d.PCI)}
		if i < len(req.Devices) && req.Devices[i] != nil {
			t.PCI, t.Dev = req.Devices[i].PCI, req.Devices[i].Name
		}
		out = append(out, t)
	}
	return out
}
