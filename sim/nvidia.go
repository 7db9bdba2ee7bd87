package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/sim/mlxemu"
)

// The NVIDIA GPU driver as a GPU node shows it, for the GPUDirect
// readiness audit. The files are the simulator's own rendering of what
// NVIDIA's open-gpu-kernel-modules (595.45.04) writes:
//
//   - /proc/driver/nvidia/params: kernel-open/nvidia/nv-procfs.c,
//     nv_procfs_read_params: one "Name: %u" line per entry of nv_parms[]
//     (kernel-open/nvidia/nv-reg.h, the names without NVreg_), then the
//     string parameters as `Name: "value"`.
//   - /proc/driver/nvidia/version: nv_procfs_read_version, "NVRM version:
//     %s" of pNVRM_ID, which utils.mk's GENERATE_NVIDSTRING builds as
//     "NVIDIA <kind> for <arch>  <version>  ..."; the open module's kind
//     is "UNIX Open Kernel Module" (src/nvidia/Makefile), the proprietary
//     one's "UNIX Kernel Module".
//   - /sys/module/nvidia/version and /sys/module/nvidia_peermem/version:
//     MODULE_VERSION(NV_VERSION_STRING) in kernel-open/nvidia/nv.c and
//     kernel-open/nvidia-peermem/nvidia-peermem.c; /sys/module/nvidia/taint
//     has P (proprietary) only for the proprietary module (the open one is
//     MODULE_LICENSE("Dual MIT/GPL")), O for any out-of-tree module.
//   - /sys/kernel/mm/memory_peers/nv_mem/version: the peer-memory client
//     nvidia-peermem registers as "nv_mem" with version DRV_VERSION
//     (nvidia-peermem.c, nv_mem_client_ex), listed by MLNX_OFED's ib_core.
//
// The driver is loaded when the module "nvidia" is in Modules;
// nvidia-peermem when "nvidia_peermem" is.

// NVIDIADriver is the GPU driver's build and parameters.
type NVIDIADriver struct {
	// Version is the driver's version: 570.133.20.
	Version string `yaml:"version"`
	// Open: the open kernel module (DMA-BUF capable); false: proprietary.
	Open bool `yaml:"open,omitempty"`
	// Arch is the architecture the build names: x86_64, aarch64.
	Arch string `yaml:"arch,omitempty"`
	// Params are the nv_parms values that differ from the driver's
	// defaults, by name without NVreg_: EnablePCIERelaxedOrderingMode: 1.
	Params map[string]uint32 `yaml:"params,omitempty"`
	// StaleInitramfs models an initramfs that carries the nvidia module
	// and an older copy of /etc/modprobe.d: when set, the driver loads at
	// boot with these parameters (by params name), not modprobe.d's.
	StaleInitramfs map[string]uint32 `yaml:"stale_initramfs,omitempty"`
}

// nvParmDefaults are the numeric parameters of nv_parms[] in their table
// order, with the defaults the simulator gives them.
var nvParmDefaults = []struct {
	name string
	def  uint32
}{
	{"ResmanDebugLevel", 4294967295}, {"RmLogonRC", 1}, {"ModifyDeviceFiles", 1},
	{"DeviceFileUID", 0}, {"DeviceFileGID", 0}, {"DeviceFileMode", 438},
	{"InitializeSystemMemoryAllocations", 1}, {"UsePageAttributeTable", 4294967295},
	{"EnableMSI", 1}, {"EnablePCIeGen3", 0}, {"MemoryPoolSize", 0},
	{"KMallocHeapMaxSize", 0}, {"VMallocHeapMaxSize", 0}, {"IgnoreMMIOCheck", 0},
	{"EnableStreamMemOPs", 0}, {"EnableUserNUMAManagement", 1}, {"NvLinkDisable", 0},
	{"RmProfilingAdminOnly", 1}, {"PreserveVideoMemoryAllocations", 0},
	{"UseKernelSuspendNotifiers", 0}, {"EnableS0ixPowerManagement", 0},
	{"S0ixPowerManagementVideoMemoryThreshold", 256}, {"DynamicPowerManagement", 3},
	{"DynamicPowerManagementVideoMemoryThreshold", 200}, {"TegraGpuPgMask", 0},
	{"RegisterPCIDriver", 1}, {"EnablePCIERelaxedOrderingMode", 0}, {"EnableResizableBar", 0},
	{"EnableGpuFirmware", 18}, {"EnableGpuFirmwareLogs", 2}, {"RmNvlinkBandwidthLinkCount", 0},
	{"EnableDbgBreakpoint", 0}, {"OpenRmEnableUnsupportedGpus", 1}, {"DmaRemapPeerMmio", 1},
	{"ImexChannelCount", 2048}, {"CreateImexChannel0", 0}, {"GrdmaPciTopoCheckOverride", 0},
	{"EnableSystemMemoryPools", 19},
}

// nvStringParms are the string parameters nv_procfs_read_params prints
// after the table, in its order.
var nvStringParms = []string{"CoherentGPUMemoryMode", "RegistryDwords", "RegistryDwordsPerDevice",
	"RmMsg", "GpuBlacklist", "TemporaryFilePath", "ExcludedGpus"}

// NVParmKnown reports whether the simulated driver has a numeric
// parameter of that name.
func NVParmKnown(name string) bool {
	for _, p := range nvParmDefaults {
		if p.name == name {
			return true
		}
	}
	return false
}

// renderNVIDIA writes the driver's files while it is loaded.
func (s *State) renderNVIDIA(t *tree) {
	d := s.NVIDIA
	if d == nil || !s.ModuleLoaded("nvidia") {
		return
	}
	var b strings.Builder
	for _, p := range nvParmDefaults {
		v := p.def
		if x, ok := d.Params[p.name]; ok {
			v = x
		}
		fmt.Fprintf(&b, "%s: %d\n", p.name, v)
	}
	for _, n := range nvStringParms {
		fmt.Fprintf(&b, "%s: \"\"\n", n)
	}
	t.file("/proc/driver/nvidia/params", b.String())
	kind, taint := "UNIX Kernel Module", "PO"
	if d.Open {
		kind, taint = "UNIX Open Kernel Module", "O"
	}
	arch := d.Arch
	if arch == "" {
		arch = "x86_64"
	}
	t.file("/proc/driver/nvidia/version", fmt.Sprintf("NVRM version: NVIDIA %s for %s  %s  Release Build  (dvs-builder@U16-I3-B03-4-3)  Thu Mar  5 09:01:55 UTC 2026\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14+deb12u1) \n", kind, arch, d.Version))
	t.file("/sys/module/nvidia/version", d.Version+"\n")
	t.file("/sys/module/nvidia/taint", taint+"\n")
	if s.ModuleLoaded("nvidia_peermem") {
		t.file("/sys/module/nvidia_peermem/version", d.Version+"\n")
		t.file("/sys/kernel/mm/memory_peers/nv_mem/version", d.Version+"\n")
	}
}

// gpuDirectParams are the ConnectX-7 firmware parameters of the PCIe
// path to a GPU, at their defaults: ATS_ENABLED False(0) and
// PCI_WR_ORDERING per_mkey(0) (force_relax(1) sets relaxed ordering on
// every write; NVIDIA's mlxconfig documentation).
func gpuDirectParams() []mlxemu.Param {
	ats := mlxemu.Param{Name: "ATS_ENABLED", Type: mlxemu.TypeBool, TLV: "nv_pci_conf"}
	wr := mlxemu.Param{Name: "PCI_WR_ORDERING", Type: mlxemu.TypeEnum, TLV: "nv_pci_conf",
		Enum: []mlxemu.EnumValue{{Name: "per_mkey", Value: 0}, {Name: "force_relax", Value: 1}}}
	return []mlxemu.Param{ats, wr}
}

// newNVIDIADriver is a GPU profile's driver: the open kernel module,
// loaded, nvidia-peermem not loaded (NVIDIA recommends DMA-BUF).
func (s *State) newNVIDIADriver(version, arch string) {
	s.NVIDIA = &NVIDIADriver{Version: version, Open: true, Arch: arch}
	s.Modules = append(s.Modules, "nvidia")
	s.Available = append(append([]string(nil), s.Available...), "nvidia", "nvidia_peermem")
}

// nvModuleParamKey is the nv_parms name of a module parameter without its
// NVreg_: the same, but for NV_DEFINE_PARAMS_TABLE_ENTRY_CUSTOM_NAME's
// RmProfilingAdminOnly, whose module parameter is
// NVreg_RestrictProfilingToAdminUsers (nv-reg.h).
func nvModuleParamKey(param string) string {
	if param == "RestrictProfilingToAdminUsers" {
		return "RmProfilingAdminOnly"
	}
	return param
}

// driverLoadParams is what the nvidia module gets when modprobe loads it:
// the NVreg_ options of the "options nvidia" lines of
// /etc/modprobe.d/*.conf, files in name order, a later value of one
// parameter winning (the kernel's parse_args sets it again). A name the
// module lacks is ignored (the kernel logs "unknown parameter ... ignored");
// a value kstrtoint (base 0) refuses makes the load fail (ok false), as
// the kernel's "invalid for parameter" does.
func (s *Sim) driverLoadParams() (map[string]uint32, bool) {
	files, _ := filepath.Glob(filepath.Join(s.Dir, "etc/modprobe.d/*.conf"))
	sort.Strings(files)
	out := map[string]uint32{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		text := strings.ReplaceAll(string(b), "\\\n", " ")
		for _, line := range strings.Split(text, "\n") {
			w := strings.Fields(line)
			if len(w) < 3 || w[0] != "options" || strings.ReplaceAll(w[1], "-", "_") != "nvidia" {
				continue
			}
			for _, o := range w[2:] {
				name, val, _ := strings.Cut(o, "=")
				param, isNV := strings.CutPrefix(name, "NVreg_")
				if !isNV || !NVParmKnown(nvModuleParamKey(param)) {
					continue
				}
				n, err := strconv.ParseInt(val, 0, 32)
				if err != nil {
					return nil, false
				}
				out[nvModuleParamKey(param)] = uint32(int32(n))
			}
		}
	}
	return out, true
}

// loadNVIDIA is the nvidia module loading: its parameters from modprobe.d
// (or a stale initramfs at boot); a load that fails leaves it unloaded.
func (s *Sim) loadNVIDIA(st *State, boot bool) {
	if st.NVIDIA == nil {
		return
	}
	if boot && st.NVIDIA.StaleInitramfs != nil {
		st.NVIDIA.Params = st.NVIDIA.StaleInitramfs
		return
	}
	p, ok := s.driverLoadParams()
	if !ok {
		st.Modules = without(st.Modules, "nvidia")
		return
	}
	st.NVIDIA.Params = p
}

// rebootNVIDIA is the boot's load of the GPU driver, when the boot loads
// it (the profile's boot modules).
func (s *Sim) rebootNVIDIA(st *State) {
	if st.NVIDIA != nil && st.ModuleLoaded("nvidia") {
		s.loadNVIDIA(st, true)
	}
}
