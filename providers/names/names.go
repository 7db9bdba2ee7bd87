// Package names gives RDMA devices and their netdevs the names a spec
// asks for (devices[].names): now, through RDMA netlink (rdma dev set OLD
// name NEW) and netlink (ip link set OLD name NEW, with the netdev down:
// the kernel refuses to rename an up netdev with EBUSY), and at every boot,
// through udev rules in RulesFile, the one rules file rdmaform owns.
//
// The rules, rendered from the spec alone and sorted by device:
//
//	ACTION=="add", SUBSYSTEM=="net", KERNELS=="PCI", ATTR{type}=="T", ATTR{dev_port}=="N", NAME="NEW"
//	ACTION=="add", SUBSYSTEM=="net", [DRIVERS=="?*", ]ATTR{address}=="MAC", ATTR{type}=="1", ENV{DEVTYPE}=="T", NAME="NEW"   (no PCI: rxe's netdev)
//	ACTION=="add", SUBSYSTEM=="infiniband", KERNELS=="PCI", PROGRAM="rdma_rename %k NAME_FIXED NEW"
//
// rdma_rename is rdma-core's udev helper (its NAME_FIXED policy renames
// the device through RDMA netlink). The file sorts before rdma-core's
// 60-rdma-persistent-naming.rules and systemd's 80-net-setup-link.rules,
// so its names win. A software (rxe) device gets no rule: the rxe stage
// creates it at boot under the name it is given.
package names

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// Files rdmaform reads and writes.
const (
	RulesFile = "/etc/udev/rules.d/59-rdmaform-names.rules"
	rulesName = "59-rdmaform-names.rules"
)

// RdmaRename are where rdma-core installs its udev helper.
var RdmaRename = []string{"/usr/lib/udev/rdma_rename", "/lib/udev/rdma_rename"}

// header opens RulesFile.
const header = "# Written by rdmaform (devices[].names). rdmaform apply rewrites this file.\n"

// Kinds of this provider's addresses: an RDMA device's name, a netdev's
// name (keyed by the PCI function, or the node GUID of a device without
// one) and the rules file.
const (
	KindRDMA   = "rdma_name"
	KindNetdev = "netdev_name"
	KindRules  = "udev_rules"
)

// RulesAddress is the plan address of the rules file.
var RulesAddress = plan.Addr(KindRules, rulesName)

// Provider is the names provider.
type Provider struct{}

var _ plan.TypedProvider[*Observed, *payload] = (*Provider)(nil)

// New is the provider as plan.Build and apply take it.
func New() plan.Provider { return plan.Adapt[*Observed, *payload](&Provider{}) }

// Name implements plan.Provider.
func (*Provider) Name() string { return "names" }

// Observed is what the host says.
type Observed struct {
	// Netdevs are each named spec device's own netdevs, by spec index.
	Netdevs map[int][]Netdev
	// All are every netdev's name (/sys/class/net).
	All map[string]bool
	// Rules is RulesFile's content, nil when it does not exist.
	Rules []byte `json:",omitempty"`
	// RdmaRename: rdma-core's udev helper is installed.
	RdmaRename bool
}

// Netdev is one netdev of a device.
type Netdev struct {
	Name    string
	MAC     string
	Type    string // ARPHRD: 1 Ethernet, 32 InfiniBand
	DevPort string
	Up      bool
	// DevType is the kernel's DEVTYPE of the netdev (its uevent): vlan,
	// bond, bridge; "" for a NIC, veth or macvlan.
	DevType string
	// Driver: a driver is bound to the netdev's parent device (a NIC,
	// virtio); a virtual netdev has no parent device.
	Driver bool
}

// Observe implements plan.TypedProvider: each named device's netdevs
// (/sys/bus/pci/devices/PCI/net, or an rxe device's parent), their state,
// every netdev's name, and RulesFile.
//
// Equivalent to: ls /sys/bus/pci/devices/PCI/net /sys/class/net; ip link show NAME; cat RulesFile
func (p *Provider) Observe(_ context.Context, h *host.Host, req *plan.Request) (*Observed, error) {
	any := false
	for i := range req.Spec.Devices {
		if req.Spec.Devices[i].Names != nil {
			any = true
		}
	}
	if !any {
		return nil, nil
	}
	obs := &Observed{Netdevs: map[int][]Netdev{}, All: map[string]bool{}}
	ents, err := h.FS.ReadDir("/sys/class/net")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range ents {
		obs.All[e.Name()] = true
	}
	for i, d := range req.Devices {
		if d == nil || req.Spec.Devices[i].Names == nil {
			continue
		}
		var names []string
		if d.PCI != "" {
			ents, err := h.FS.ReadDir(path.Join("/sys/bus/pci/devices", d.PCI, "net"))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
			for _, e := range ents {
				names = append(names, e.Name())
			}
		} else if d.Parent != "" {
			names = []string{d.Parent}
		}
		for _, n := range names {
			obs.Netdevs[i] = append(obs.Netdevs[i], readNetdev(h, n))
		}
	}
	b, err := h.FS.ReadFile(RulesFile)
	switch {
	case err == nil:
		obs.Rules = b
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("reading %s: %w", RulesFile, err)
	}
	for _, f := range RdmaRename {
		if host.Exists(h.FS, f) {
			obs.RdmaRename = true
		}
	}
	return obs, nil
}

// readNetdev is what the rules need of a netdev.
//
// Equivalent to: cat /sys/class/net/N/{type,dev_port,address,uevent}; ls /sys/class/net/N/device/driver; ip link show N
func readNetdev(h *host.Host, n string) Netdev {
	dir := path.Join("/sys/class/net", n)
	nd := Netdev{Name: n}
	// What goes into a udev rule between quotes is only what the kernel
	// writes there (a number, a MAC): a tree under --root is anyone's.
	nd.Type, _ = host.ReadAttr(h.FS, path.Join(dir, "type"))
	if !numberRE.MatchString(nd.Type) {
		nd.Type = ""
	}
	nd.DevPort, _ = host.ReadAttr(h.FS, path.Join(dir, "dev_port"))
	if !numberRE.MatchString(nd.DevPort) {
		nd.DevPort = ""
	}
	if l, err := h.Net.LinkByName(n); err == nil {
		nd.Up, nd.MAC = l.AdminUp, l.HWAddr
	} else {
		nd.MAC, _ = host.ReadAttr(h.FS, path.Join(dir, "address"))
	}
	if !macRE.MatchString(nd.MAC) {
		nd.MAC = ""
	}
	if b, err := h.FS.ReadFile(path.Join(dir, "uevent")); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "DEVTYPE="); ok && devTypeRE.MatchString(v) {
				nd.DevType = v
			}
		}
	}
	nd.Driver = host.Exists(h.FS, path.Join(dir, "device", "driver"))
	return nd
}

// numberRE is a sysfs number (type, dev_port); macRE a link-layer
// address as sysfs and netlink print it (6 bytes Ethernet, 20 IPoIB).
var (
	numberRE = regexp.MustCompile(`^[0-9]{1,10}$`)
	macRE    = regexp.MustCompile(`^[0-9a-f]{2}(:[0-9a-f]{2}){0,31}$`)
)

// devTypeRE is a DEVTYPE a rule may name (the kernel's are words: vlan,
// bond, bridge, wlan).
var devTypeRE = regexp.MustCompile(`^[a-z0-9_-]{1,32}$`)

// own is the netdev a device's names.netdev names: its one netdev, not
// counting IPoIB P_Key children (NAME.8001); ok false with the candidates
// when it has none or several.
func own(nds []Netdev) (Netdev, []string, bool) {
	var main []Netdev
	var all []string
	for _, n := range nds {
		all = append(all, n.Name)
		if n.Type == "32" && strings.Contains(n.Name, ".") {
			continue
		}
		main = append(main, n)
	}
	if len(main) != 1 {
		sort.Strings(all)
		return Netdev{}, all, false
	}
	return main[0], nil, true
}

// rule is one line of RulesFile, with the key it sorts by.
type rule struct {
	key, line string
}

func netdevRule(pci string, nd Netdev, name string) rule {
	if pci != "" {
		t := nd.Type
		if t == "" {
			t = "1"
		}
		port := nd.DevPort
		if _, err := strconv.Atoi(port); err != nil {
			port = "0"
		}
		return rule{pci + " net", fmt.Sprintf(`ACTION=="add", SUBSYSTEM=="net", KERNELS=="%s", ATTR{type}=="%s", ATTR{dev_port}=="%s", NAME="%s"`, pci, t, port, name)}
	}
	// By MAC (rxe's netdev): a VLAN, bridge, bond or macvlan on the
	// netdev may have its MAC too, and a MAC alone would rename the first
	// of them udev sees (the parent of an rxe on a VLAN, at every boot).
	// A netdev with a driver is matched only where DRIVERS finds one above
	// it, which no virtual netdev has (70-persistent-net.rules' form); a
	// virtual one by its own DEVTYPE, which leaves out VLANs, bridges and
	// bonds but not a macvlan or ipvlan given its MAC (they have none).
	drivers := ""
	if nd.Driver {
		drivers = `DRIVERS=="?*", `
	}
	return rule{nd.MAC + " net", fmt.Sprintf(`ACTION=="add", SUBSYSTEM=="net", %sATTR{address}=="%s", ATTR{type}=="1", ENV{DEVTYPE}=="%s", NAME="%s"`, drivers, nd.MAC, nd.DevType, name)}
}

func rdmaRule(pci, name string) rule {
	return rule{pci + " rdma", fmt.Sprintf(`ACTION=="add", SUBSYSTEM=="infiniband", KERNELS=="%s", PROGRAM="rdma_rename %%k NAME_FIXED %s"`, pci, name)}
}

// renderRules is RulesFile's content: the header and the rules sorted.
func renderRules(rs []rule) []byte {
	sort.Slice(rs, func(i, j int) bool { return rs[i].key < rs[j].key })
	var b strings.Builder
	b.WriteString(header)
	for _, r := range rs {
		b.WriteString(r.line + "\n")
	}
	return []byte(b.String())
}

// payload is what Make needs.
type payload struct {
	// rdma or netdev rename: old to name; up: the netdev is up and is
	// brought back up after.
	rdma, netdev bool
	old, name    string
	up           bool
	// rules: RulesFile's new content (nil removes it) and the old.
	rules, before []byte
	file          bool
}
