package plan

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rdmaform/rdmaform/linklayer"
)

// Facts are what earlier stages tell later ones during Diff, as typed
// answers to the questions later stages ask: what link layer a port will
// have, which module or RDMA device this plan brings, what a firmware
// value will be after the next boot. No provider imports another.
type Facts struct {
	links   map[linkKey]LinkChange
	params  map[string]string
	modules map[string]Address
	devices map[string]Address
}

type linkKey struct {
	device string
	port   int
	when   Activation
}

// NewFacts returns empty facts.
func NewFacts() *Facts {
	return &Facts{links: map[linkKey]LinkChange{}, params: map[string]string{},
		modules: map[string]Address{}, devices: map[string]Address{}}
}

// LinkChange is a port whose link layer changes: now, by an mlx4 port
// type this plan writes (When Runtime), or at the next boot, by a
// firmware LINK_TYPE this plan sets or that is already staged (When
// NextBoot).
type LinkChange struct {
	Device string // PCI address of the port's function
	Port   int
	// To is InfiniBand or Ethernet; "" for a setting with no fixed link
	// layer (an mlx4 port on auto).
	To   linklayer.LinkLayer
	When Activation
	// Staged: the value is already written for the next boot (pending);
	// otherwise this plan writes it.
	Staged bool
	// Cause is the address of the resource that makes the change
	// (firmware[PCI], mlx4_port[PCI/N]).
	Cause Address
	// Setting is the setting in the operator's words: LINK_TYPE_P1=ETH,
	// type=eth.
	Setting string
	// Via is how the staged setting becomes current when a reboot is not
	// the way ("" : a reboot), e.g. after a reboot that did not load it.
	Via string
}

// Reason words a deferral on a change at the next boot.
func (l LinkChange) Reason() string {
	via := l.Via
	if via == "" {
		via = "reboot"
	}
	return fmt.Sprintf("waits for %s on %s (%s)", l.Setting, l.Device, via)
}

// ChangeLink publishes a link-layer change of a port.
func (f *Facts) ChangeLink(l LinkChange) {
	f.links[linkKey{l.Device, l.Port, l.When}] = l
}

// LinkAtBoot returns the link-layer change a port gets at the next boot,
// if any.
func (f *Facts) LinkAtBoot(pci string, port int) (LinkChange, bool) {
	l, ok := f.links[linkKey{pci, port, NextBoot}]
	return l, ok
}

// LinkNow returns the link-layer change this plan makes to a port at once
// (an mlx4 port type), if any.
func (f *Facts) LinkNow(pci string, port int) (LinkChange, bool) {
	l, ok := f.links[linkKey{pci, port, Runtime}]
	return l, ok
}

// LinkChanges lists every published link-layer change, by device, port
// and activation.
func (f *Facts) LinkChanges() []LinkChange {
	out := make([]LinkChange, 0, len(f.links))
	for _, l := range f.links {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Device != b.Device {
			return a.Device < b.Device
		}
		if a.Port != b.Port {
			return a.Port < b.Port
		}
		return a.When < b.When
	})
	return out
}

// BootReason says why a netdev that does not exist yet may appear after
// the next boot: a port whose link layer changes then gets the netdev of
// its new link layer. It reports false when no port changes at the boot.
func (f *Facts) BootReason() (string, bool) {
	var reasons []string
	for _, l := range f.links {
		if l.When == NextBoot {
			reasons = append(reasons, l.Reason())
		}
	}
	if len(reasons) == 0 {
		return "", false
	}
	sort.Strings(reasons)
	return strings.Join(reasons, "; "), true
}

// StageParam publishes a firmware parameter value that becomes current at
// the next boot (planned now or already staged), for the adapter function
// pci; later stages defer what waits for it (NUM_OF_VFS caps SR-IOV).
func (f *Facts) StageParam(pci, name, value string) {
	f.params[pci+"\x00"+name] = value
}

// StagedParam returns the value a firmware parameter of the function pci
// will have after the next boot, if one is planned or staged.
func (f *Facts) StagedParam(pci, name string) (string, bool) {
	v, ok := f.params[pci+"\x00"+name]
	return v, ok
}

// LoadModule publishes a kernel module this plan loads, or keeps loaded
// and lists for boot, by the change at cause.
func (f *Facts) LoadModule(name string, cause Address) { f.modules[name] = cause }

// ModuleLoad returns the address of the change that loads a module in
// this plan, if one does.
func (f *Facts) ModuleLoad(name string) (Address, bool) {
	c, ok := f.modules[name]
	return c, ok
}

// CreateDevice publishes an RDMA device this plan creates, or deletes
// and creates again (a Soft-RoCE link; a ConnectX-3 whose port type
// changes, which mlx4_core registers anew with its netdevs), by the change
// at cause: it comes with the kernel's defaults.
func (f *Facts) CreateDevice(name string, cause Address) { f.devices[name] = cause }

// DeviceCreated returns the address of the change that creates an RDMA
// device in this plan, if one does.
func (f *Facts) DeviceCreated(name string) (Address, bool) {
	c, ok := f.devices[name]
	return c, ok
}
