// Package rdmanetns manages the RDMA subsystem's network namespace mode
// (spec rdma.netns_mode): shared, where every network namespace sees every
// RDMA device, or exclusive, where a device belongs to one namespace. It
// switches the running kernel through RDMA netlink (rdma system set netns)
// and writes ib_core's netns_mode option to /etc/modprobe.d/rdmaform.conf,
// the one file rdmaform owns there, for the next load of ib_core (boot).
//
// The kernel refuses a runtime switch with EBUSY while any network
// namespace other than the initial one exists (rdma_compatdev_set; seen on
// Debian's 6.1 kernel in the kernel lab, both directions): the plan then
// defers the runtime part to the reboot the file makes it at, with that
// reason.
package rdmanetns

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"syscall"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// Files rdmaform reads and writes.
const (
	// ConfFile is the modprobe.d file rdmaform owns.
	ConfFile = "/etc/modprobe.d/rdmaform.conf"
	// NetnsDir holds the named network namespaces (ip netns add).
	NetnsDir = "/run/netns"
)

// header opens ConfFile.
const header = "# Managed by rdmaform (rdma.netns_mode): ib_core's options at its next load.\n" +
	"# The spec is the source; edits here are overwritten.\n"

// Kind is the kind of this provider's addresses.
const Kind = "rdma_netns"

// The two resources: the running kernel's mode and the boot's option.
var (
	RuntimeAddress = plan.Addr(Kind, "runtime")
	BootAddress    = plan.Addr(Kind, "boot")
)

// Provider is the RDMA netns mode provider.
type Provider struct{}

var _ plan.TypedProvider[*Observed, *payload] = (*Provider)(nil)

// New is the provider as plan.Build and apply take it.
func New() plan.Provider { return plan.Adapt[*Observed, *payload](&Provider{}) }

// Name implements plan.Provider.
func (*Provider) Name() string { return "rdma_netns" }

// Observed is what the host says.
type Observed struct {
	// Mode is the running kernel's mode: shared or exclusive; "" when
	// ib_core is not loaded (NoRDMA).
	Mode   string
	NoRDMA bool `json:",omitempty"`
	// Namespaces are the network namespaces other than the initial one
	// (/proc/1/ns/net): ids net:[INODE] of processes' namespaces and names
	// under /run/netns, sorted.
	Namespaces []string `json:",omitempty"`
	// Conf is ConfFile's content; nil when it does not exist.
	Conf []byte `json:",omitempty"`
}

// Observe implements plan.TypedProvider: the mode through RDMA netlink,
// the network namespaces from /proc and /run/netns, and ConfFile.
//
// Equivalent to: rdma system show netns; readlink /proc/*/ns/net; ls /run/netns; cat /etc/modprobe.d/rdmaform.conf
func (p *Provider) Observe(_ context.Context, h *host.Host, req *plan.Request) (*Observed, error) {
	if req.Spec.Rdma == nil && !req.Full {
		return nil, nil
	}
	obs := &Observed{}
	m, err := h.Net.RdmaNetnsMode()
	switch {
	case errors.Is(err, host.ErrNoRDMA):
		obs.NoRDMA = true
	case err != nil:
		return nil, err
	default:
		obs.Mode = m
	}
	ns, err := namespaces(h.FS)
	if err != nil {
		return nil, err
	}
	obs.Namespaces = ns
	b, err := h.FS.ReadFile(ConfFile)
	switch {
	case err == nil:
		obs.Conf = b
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("reading %s: %w", ConfFile, err)
	}
	return obs, nil
}

// namespaces lists the network namespaces other than the initial one:
// every process's (/proc/PID/ns/net reads net:[INODE]) and the named ones
// (/run/netns/NAME, a bind mount of the namespace; its inode is the id).
// A namespace held only by an open file elsewhere is not seen: the kernel
// then refuses the switch at apply, and apply says so.
func namespaces(fsys host.FS) ([]string, error) {
	initNS, _ := fsys.Readlink("/proc/1/ns/net")
	seen := map[string]bool{}
	ents, err := fsys.ReadDir("/proc")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading /proc: %w", err)
	}
	for _, e := range ents {
		if !isPID(e.Name()) {
			continue
		}
		id, err := fsys.Readlink("/proc/" + e.Name() + "/ns/net")
		if err != nil || id == initNS {
			continue // a process that ended, or one in the initial namespace
		}
		seen[id] = true
	}
	ents, err = fsys.ReadDir(NetnsDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading %s: %w", NetnsDir, err)
	}
	for _, e := range ents {
		fi, err := fsys.Stat(NetnsDir + "/" + e.Name())
		if err != nil {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			id := fmt.Sprintf("net:[%d]", st.Ino)
			if id == initNS {
				continue
			}
			delete(seen, id) // named: the name says more than the id
		}
		seen[NetnsDir+"/"+e.Name()] = true
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}

func isPID(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// shared is the kernel's default mode, as RDMA netlink names it.
const shared = host.NetnsShared

// ParamValue is ib_core's netns_mode parameter for a mode: 1 shared, 0
// exclusive (MODULE_PARM_DESC: "Share device among net namespaces;
// default=1 (shared)").
func ParamValue(mode string) string {
	if mode == host.NetnsExclusive {
		return "0"
	}
	return "1"
}

// renderConf is ConfFile's content for a mode.
func renderConf(mode string) []byte {
	return []byte(header + "options ib_core netns_mode=" + ParamValue(mode) + "\n")
}

// confMode reads the mode ConfFile gives ib_core, "" when it gives none.
func confMode(b []byte) string {
	mode := ""
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 || f[0] != "options" || f[1] != "ib_core" {
			continue
		}
		for _, o := range f[2:] {
			switch o {
			case "netns_mode=1", "netns_mode=Y", "netns_mode=y":
				mode = host.NetnsShared
			case "netns_mode=0", "netns_mode=N", "netns_mode=n":
				mode = host.NetnsExclusive
			}
		}
	}
	return mode
}

// payload is what Make needs.
type payload struct {
	// mode is the runtime mode to set; "" for the file.
	mode string
	// conf is ConfFile's new content (nil removes it, in a revert).
	conf []byte
	// before is what the change replaces: the mode, or the file (nil:
	// there was none).
	beforeMode string
	beforeConf []byte
	file       bool
}
