// Package gpudriver manages the NVIDIA GPU driver side of GPUDirect RDMA
// (the spec's gpu: section): the peer-memory path and the driver's NVreg_
// module parameters.
//
//   - peer_memory: nvidia-peermem loads the nvidia_peermem module now
//     (modprobe) and lists it in /etc/modules-load.d/rdmaform-gpu.conf,
//     rdmaform's own file there, for every boot; it is proven by the
//     RDMA core's list of peer-memory clients
//     (/sys/kernel/mm/memory_peers/nv_mem/version). dma-buf needs NVIDIA's
//     open kernel module, told from the driver's own files (inventory's
//     ReadNVIDIA: the "Open Kernel Module" of /proc/driver/nvidia/version,
//     else the P taint the proprietary module alone has), and no
//     nvidia_peermem: rdmaform's file stops loading it.
//   - driver_params are written as one "options nvidia NAME=VALUE ..."
//     line to /etc/modprobe.d/rdmaform-nvidia.conf, rdmaform's own file
//     there. modprobe hands them to the module when it loads, so a new
//     value is pending until the driver loads again (a driver reload or a
//     reboot); /proc/driver/nvidia/params says when it has. Each pending
//     value is recorded in a staged ledger with the boot it was written
//     in: a value still not there after a reboot is an activation failure,
//     named and never written again.
package gpudriver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// Files rdmaform reads and writes.
const (
	// ConfFile is the modprobe.d file rdmaform owns for the nvidia module.
	ConfFile = "/etc/modprobe.d/rdmaform-nvidia.conf"
	// LoadFile is the modules-load.d file rdmaform owns for nvidia_peermem.
	LoadFile = "/etc/modules-load.d/rdmaform-gpu.conf"
	// BootIDPath changes on every boot.
	BootIDPath = "/proc/sys/kernel/random/boot_id"
	// PeermemModule is nvidia-peermem's module name.
	PeermemModule = "nvidia_peermem"
)

// modprobeDirs are the directories modprobe reads its configuration from
// (kmod's libkmod-config.c default_config_paths), for other files that
// set the nvidia module's options.
var modprobeDirs = []string{"/etc/modprobe.d", "/run/modprobe.d", "/usr/local/lib/modprobe.d", "/lib/modprobe.d", "/usr/lib/modprobe.d"}

const confHeader = "# Managed by rdmaform (gpu.driver_params): the nvidia module's options at its next load.\n" +
	"# The spec is the source; edits here are overwritten. The values take effect when the driver loads again.\n"

const loadHeader = "# Managed by rdmaform (gpu.peer_memory: nvidia-peermem): loaded by systemd-modules-load at boot.\n" +
	"# The spec is the source; edits here are overwritten.\n"

// Kinds of this provider's addresses.
const (
	// Kind is the driver's modprobe.d file and the peer-memory module.
	Kind = "gpu_driver"
	// ParamKind is one driver parameter (what pending items and audits
	// name).
	ParamKind = "gpu_param"
)

// Addresses.
var (
	ConfAddress    = plan.Addr(Kind, "modprobe.d")
	PeermemAddress = plan.Addr(Kind, PeermemModule)
)

// ParamAddress is the address of one driver parameter.
func ParamAddress(name string) plan.Address { return plan.Addr(ParamKind, name) }

// Provider is the GPU driver provider.
type Provider struct {
	// nics reads the NICs' firmware (nil: the relaxed-ordering check
	// knows only the spec's values and what the firmware stage stages).
	nics NICReader
}

// NICReader reads the Next Boot values of a NIC function's firmware
// parameters, as the tool prints them (providers.GPUPath: the firmware
// provider's query; a provider does not import another).
type NICReader interface {
	NICNextBoot(ctx context.Context, h *host.Host, pci string, names []string) (map[string]string, error)
}

var _ plan.TypedProvider[*Observed, *payload] = (*Provider)(nil)

// New is the provider as plan.Build and apply take it, without a NIC
// firmware reader.
func New() plan.Provider { return NewWith(nil) }

// NewWith is the provider with the NIC firmware reader r.
func NewWith(r NICReader) plan.Provider {
	return plan.Adapt[*Observed, *payload](&Provider{nics: r})
}

// Name implements plan.Provider.
func (*Provider) Name() string { return "gpu" }

// Observed is what the host says about its GPU driver.
type Observed struct {
	Driver *inventory.NVIDIADriver
	// PeermemLoaded: /sys/module/nvidia_peermem exists; PeermemRegistered:
	// the RDMA core lists the client nv_mem.
	PeermemLoaded, PeermemRegistered bool
	// Conf is ConfFile as read (nil: absent), Listed its parameters.
	Conf   []byte `json:"-"`
	Listed []Option
	// Load is LoadFile as read (nil: absent); LoadsPeermem: it lists
	// nvidia_peermem.
	Load         []byte `json:"-"`
	LoadsPeermem bool
	// Elsewhere maps a parameter to the other modprobe.d file that sets it
	// and the value it sets there.
	Elsewhere map[string]Option
	BootID    string
	Ledger    *Ledger
	LedgerErr error `json:"-"`
	// NICs are the firmware's PCIe ordering and ATS of each RDMA
	// function with GPUs on its path, read when the spec sets one of the
	// three relaxed-ordering settings.
	NICs []NICFirmware `json:",omitempty"`
}

// NICFirmware is a NIC function's PCI_WR_ORDERING and ATS_ENABLED as the
// next boot will have them (the Next Boot column: the current value, or
// the one staged); "" where the tool did not give it.
type NICFirmware struct {
	PCI        string
	WrOrdering string
	ATS        string
}

// Option is one NAME=VALUE of an options line; File is where it was read.
type Option struct {
	Name  string
	Value string
	File  string `json:",omitempty"`
}

// Observe implements plan.TypedProvider.
//
// Equivalent to: cat /proc/driver/nvidia/params /proc/driver/nvidia/version /etc/modprobe.d/*.conf; ls /sys/module/nvidia_peermem /sys/kernel/mm/memory_peers/nv_mem
func (p *Provider) Observe(ctx context.Context, h *host.Host, req *plan.Request) (*Observed, error) {
	if req.Spec.GPU == nil && !req.Full {
		return nil, nil
	}
	d, err := inventory.ReadNVIDIA(h.FS)
	if err != nil {
		return nil, err
	}
	obs := &Observed{Driver: d, Elsewhere: map[string]Option{}}
	obs.PeermemLoaded = host.Exists(h.FS, inventory.PeermemModuleDir)
	obs.PeermemRegistered = host.Exists(h.FS, inventory.PeermemVersion)
	if obs.Conf, err = readOptional(h, ConfFile); err != nil {
		return nil, err
	}
	if obs.Conf != nil {
		obs.Listed = nvidiaOptions(string(obs.Conf), ConfFile)
	}
	if obs.Load, err = readOptional(h, LoadFile); err != nil {
		return nil, err
	}
	obs.LoadsPeermem = loadsPeermem(string(obs.Load))
	for _, dir := range modprobeDirs {
		ents, err := h.FS.ReadDir(dir)
		if err != nil {
			continue
		}
		var names []string
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".conf") && path.Join(dir, e.Name()) != ConfFile {
				names = append(names, path.Join(dir, e.Name()))
			}
		}
		sort.Strings(names)
		for _, f := range names {
			b, err := h.FS.ReadFile(f)
			if err != nil {
				continue
			}
			for _, o := range nvidiaOptions(string(b), f) {
				obs.Elsewhere[o.Name] = o
			}
		}
	}
	obs.BootID, _ = host.ReadAttr(h.FS, BootIDPath)
	obs.Ledger, obs.LedgerErr = ReadLedger(h.FS)
	if req.Inv != nil && orderingAsked(req.Spec) {
		for _, dev := range req.Inv.Devices {
			if dev.PCI == "" || len(dev.GPUAffinity) == 0 || slices.ContainsFunc(obs.NICs, func(n NICFirmware) bool { return n.PCI == dev.PCI }) {
				continue
			}
			if specGivesBoth(req, dev.PCI) || p.nics == nil {
				// The spec's values are the ones checked: no query (one
				// mlxconfig run per NIC otherwise).
				obs.NICs = append(obs.NICs, NICFirmware{PCI: dev.PCI})
				continue
			}
			vals, err := p.nics.NICNextBoot(ctx, h, dev.PCI, []string{schema.FirmwareWrOrdering, schema.FirmwareATS})
			if err != nil {
				continue // not a card whose firmware rdmaform reads (a VF, another vendor's)
			}
			obs.NICs = append(obs.NICs, NICFirmware{PCI: dev.PCI, WrOrdering: vals[schema.FirmwareWrOrdering], ATS: vals[schema.FirmwareATS]})
		}
	}
	return obs, nil
}

// specGivesBoth tells whether a device entry of the spec that selects the
// function pci gives both PCI_WR_ORDERING and ATS_ENABLED.
func specGivesBoth(req *plan.Request, pci string) bool {
	for i, d := range req.Devices {
		if d == nil || d.PCI != pci || i >= len(req.Spec.Devices) {
			continue
		}
		_, _, wr := req.Spec.Devices[i].FirmwareParam(i, schema.FirmwareWrOrdering)
		_, _, ats := req.Spec.Devices[i].FirmwareParam(i, schema.FirmwareATS)
		if wr && ats {
			return true
		}
	}
	return false
}

// orderingAsked tells whether the spec sets one of the settings that must
// agree: the GPU driver's relaxed ordering, or a NIC's PCI_WR_ORDERING or
// ATS_ENABLED.
func orderingAsked(s *schema.Spec) bool {
	if _, ok := s.GPU.DriverParam(schema.RelaxedOrderingParam); ok {
		return true
	}
	for i := range s.Devices {
		if _, _, ok := s.Devices[i].FirmwareParam(i, schema.FirmwareWrOrdering); ok {
			return true
		}
		if _, _, ok := s.Devices[i].FirmwareParam(i, schema.FirmwareATS); ok {
			return true
		}
	}
	return false
}

func readOptional(h *host.Host, f string) ([]byte, error) {
	b, err := h.FS.ReadFile(f)
	switch {
	case err == nil:
		if b == nil {
			b = []byte{}
		}
		return b, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	}
	return nil, fmt.Errorf("reading %s: %w", f, err)
}

// nvidiaOptions reads the NAME=VALUE words of a modprobe.d file's
// "options nvidia ..." lines (modprobe.d(5): "options modulename
// option..."; '-' and '_' alike in the module name; '#' starts a comment
// line; a trailing '\' continues a line).
func nvidiaOptions(s, file string) []Option {
	var out []Option
	s = strings.ReplaceAll(s, "\\\n", " ")
	for _, l := range strings.Split(s, "\n") {
		w := strings.Fields(l)
		if len(w) < 3 || w[0] != "options" || strings.ReplaceAll(w[1], "-", "_") != "nvidia" {
			continue
		}
		for _, o := range w[2:] {
			n, v, _ := strings.Cut(o, "=")
			out = append(out, Option{Name: n, Value: v, File: file})
		}
	}
	return out
}

// loadsPeermem tells whether a modules-load.d file lists nvidia_peermem.
func loadsPeermem(s string) bool {
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l != "" && l[0] != '#' && l[0] != ';' && strings.ReplaceAll(l, "-", "_") == PeermemModule {
			return true
		}
	}
	return false
}

// renderConf is ConfFile for the spec's parameters; nil for none.
func renderConf(params []schema.GPUDriverParam) []byte {
	if len(params) == 0 {
		return nil
	}
	var w []string
	for _, p := range params {
		w = append(w, p.Name+"="+strconv.Itoa(*p.Value))
	}
	return []byte(confHeader + "options nvidia " + strings.Join(w, " ") + "\n")
}

// renderLoad is LoadFile's content.
func renderLoad() []byte { return []byte(loadHeader + PeermemModule + "\n") }

// shown is how /proc/driver/nvidia/params prints a value: nv_procfs_read_params
// prints the NvU32 with %u, so -1 is 4294967295.
func shown(v int) uint32 { return uint32(int32(v)) }

// parseValue reads an option's value as the kernel's param_set_int does
// (kstrtoint, base 0: decimal, 0x hex, 0 octal).
func parseValue(s string) (uint32, bool) {
	n, err := strconv.ParseInt(s, 0, 32)
	if err != nil {
		return 0, false
	}
	return uint32(int32(n)), true
}

// payload is what Make needs.
type payload struct {
	// conf is ConfFile's new content (nil: remove it) and confBefore what
	// it replaces; params are the spec's, for the ledger.
	file       string
	content    []byte
	before     []byte
	params     []schema.GPUDriverParam
	running    map[string]uint32
	loadModule bool
	unload     bool
}
