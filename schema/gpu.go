package schema

import (
	"fmt"
	"strings"
)

// GPU is the NVIDIA GPU driver side of GPUDirect RDMA on a node: how GPU
// memory reaches the RDMA core, and the driver's module parameters.
type GPU struct {
	PeerMemory   string           `yaml:"peer_memory,omitempty" enum:"dma-buf,nvidia-peermem" doc:"how the RDMA core reaches GPU memory: dma-buf (the kernel's DMA-BUF; needs NVIDIA's open kernel module, and no nvidia-peermem) or nvidia-peermem (the nvidia_peermem module loaded now and at every boot, from /etc/modules-load.d/rdmaform-gpu.conf, and registered with the RDMA core: /sys/kernel/mm/memory_peers/nv_mem/version)"`
	DriverParams []GPUDriverParam `yaml:"driver_params,omitempty" doc:"the nvidia module's NVreg_ parameters, written as 'options nvidia NAME=VALUE' to /etc/modprobe.d/rdmaform-nvidia.conf and checked in /proc/driver/nvidia/params; each takes effect when the driver loads again (a driver reload or a reboot); at most 16"`
}

// GPUDriverParam is one NVreg_ parameter of the nvidia module.
type GPUDriverParam struct {
	Name  string `yaml:"name" doc:"the module parameter, spelled as NVIDIA's kernel-open/nvidia/nv-reg.h declares it: NVreg_EnablePCIERelaxedOrderingMode, NVreg_GrdmaPciTopoCheckOverride, ..."`
	Value *int   `yaml:"value" min:"-2147483648" max:"2147483647" doc:"the value: an integer the kernel's int module parameter takes (-2147483648 to 2147483647, hex with 0x); /proc/driver/nvidia/params shows it as unsigned (-1 is 4294967295)"`
}

// MaxGPUDriverParams bounds gpu.driver_params.
const MaxGPUDriverParams = 16

// Peer-memory paths.
const (
	PeerMemoryDMABuf  = "dma-buf"
	PeerMemoryPeermem = "nvidia-peermem"
)

// NVregPrefix opens every nvidia module parameter.
const NVregPrefix = "NVreg_"

// nvidiaParams are the nvidia module's integer parameters and the names
// /proc/driver/nvidia/params prints them under, after NVIDIA's
// open-gpu-kernel-modules 595.45.04: kernel-open/nvidia/nv-reg.h declares
// each with NV_DEFINE_REG_ENTRY(_GLOBAL), a module parameter NVreg_<key>
// (__NV_REG_VAR) of type int (nv-linux.h: NV_MODULE_PARAMETER(x) is
// module_param(x, int, 0)), and lists it in nv_parms[] under <key>, the
// name nv_procfs_read_params prints; the one parameter whose module name
// differs from its key (NV_DEFINE_PARAMS_TABLE_ENTRY_CUSTOM_NAME) is
// RestrictProfilingToAdminUsers, printed as RmProfilingAdminOnly. The
// string parameters (NVreg_RegistryDwords, ...) are not managed here.
var nvidiaParams = map[string]string{
	"ResmanDebugLevel": "ResmanDebugLevel", "RmLogonRC": "RmLogonRC", "ModifyDeviceFiles": "ModifyDeviceFiles",
	"DeviceFileUID": "DeviceFileUID", "DeviceFileGID": "DeviceFileGID", "DeviceFileMode": "DeviceFileMode",
	"InitializeSystemMemoryAllocations": "InitializeSystemMemoryAllocations", "UsePageAttributeTable": "UsePageAttributeTable",
	"EnableMSI": "EnableMSI", "EnablePCIeGen3": "EnablePCIeGen3", "MemoryPoolSize": "MemoryPoolSize",
	"KMallocHeapMaxSize": "KMallocHeapMaxSize", "VMallocHeapMaxSize": "VMallocHeapMaxSize", "IgnoreMMIOCheck": "IgnoreMMIOCheck",
	"EnableStreamMemOPs": "EnableStreamMemOPs", "EnableUserNUMAManagement": "EnableUserNUMAManagement", "NvLinkDisable": "NvLinkDisable",
	"RestrictProfilingToAdminUsers": "RmProfilingAdminOnly", "PreserveVideoMemoryAllocations": "PreserveVideoMemoryAllocations",
	"UseKernelSuspendNotifiers": "UseKernelSuspendNotifiers", "EnableS0ixPowerManagement": "EnableS0ixPowerManagement",
	"S0ixPowerManagementVideoMemoryThreshold": "S0ixPowerManagementVideoMemoryThreshold", "DynamicPowerManagement": "DynamicPowerManagement",
	"DynamicPowerManagementVideoMemoryThreshold": "DynamicPowerManagementVideoMemoryThreshold", "TegraGpuPgMask": "TegraGpuPgMask",
	"RegisterPCIDriver": "RegisterPCIDriver", "EnablePCIERelaxedOrderingMode": "EnablePCIERelaxedOrderingMode", "EnableResizableBar": "EnableResizableBar",
	"EnableGpuFirmware": "EnableGpuFirmware", "EnableGpuFirmwareLogs": "EnableGpuFirmwareLogs", "RmNvlinkBandwidthLinkCount": "RmNvlinkBandwidthLinkCount",
	"EnableDbgBreakpoint": "EnableDbgBreakpoint", "OpenRmEnableUnsupportedGpus": "OpenRmEnableUnsupportedGpus", "DmaRemapPeerMmio": "DmaRemapPeerMmio",
	"ImexChannelCount": "ImexChannelCount", "CreateImexChannel0": "CreateImexChannel0", "GrdmaPciTopoCheckOverride": "GrdmaPciTopoCheckOverride",
	"EnableSystemMemoryPools": "EnableSystemMemoryPools",
}

// NVIDIAParamKey is the name /proc/driver/nvidia/params prints a module
// parameter (NVreg_...) under; ok is false for a name the driver does not
// have as an integer parameter.
func NVIDIAParamKey(name string) (string, bool) {
	k, ok := strings.CutPrefix(name, NVregPrefix)
	if !ok {
		return "", false
	}
	key, ok := nvidiaParams[k]
	return key, ok
}

// RelaxedOrderingParam is the driver parameter of PCIe relaxed ordering
// (nv-reg.h: EnablePCIERelaxedOrderingMode, 0 off by default, 1 on).
const RelaxedOrderingParam = NVregPrefix + "EnablePCIERelaxedOrderingMode"

// DriverParam returns the spec's value of a driver parameter.
func (g *GPU) DriverParam(name string) (int, bool) {
	if g == nil {
		return 0, false
	}
	for _, p := range g.DriverParams {
		if p.Name == name && p.Value != nil {
			return *p.Value, true
		}
	}
	return 0, false
}

// gpu checks the gpu section: something to do, the parameters' names
// (those of nv-reg.h, the case included: modprobe passes a name as
// written, and the kernel ignores one the module lacks) and count.
func (v *validator) gpu() {
	g := v.spec.GPU
	if g == nil {
		return
	}
	if g.PeerMemory == "" && g.DriverParams == nil {
		v.add("$.gpu", "give peer_memory (dma-buf or nvidia-peermem) or driver_params")
		return
	}
	if len(g.DriverParams) > MaxGPUDriverParams {
		v.add("$.gpu.driver_params", "%d driver parameters: at most %d", len(g.DriverParams), MaxGPUDriverParams)
		return
	}
	seen := map[string]int{}
	for i, p := range g.DriverParams {
		np := Path("gpu", "driver_params", i, "name")
		if p.Value == nil && !v.spec.Src.Has(Path("gpu", "driver_params", i, "value")) {
			v.add(Path("gpu", "driver_params", i), "value: is required")
		}
		if _, ok := NVIDIAParamKey(p.Name); !ok {
			v.add(np, "%s", unknownNVIDIAParam(p.Name))
			continue
		}
		if j, dup := seen[p.Name]; dup {
			v.add(np, "%s is listed twice (first at driver_params[%d])", p.Name, j)
		}
		seen[p.Name] = i
	}
}

// unknownNVIDIAParam says why a name is not one of the driver's integer
// parameters, with the spelling it may have meant.
func unknownNVIDIAParam(name string) string {
	k, has := strings.CutPrefix(name, NVregPrefix)
	if !has {
		k = name
	}
	for m := range nvidiaParams {
		if strings.EqualFold(m, k) {
			return fmt.Sprintf("%q is not a parameter of the nvidia module: NVIDIA's nv-reg.h spells it %s%s (modprobe passes the name as written, and the kernel ignores a name the module lacks)", truncate(name), NVregPrefix, m)
		}
	}
	if !has {
		return fmt.Sprintf("%q is not a parameter of the nvidia module: its parameters are NVreg_<name> (NVreg_EnablePCIERelaxedOrderingMode)", truncate(name))
	}
	return fmt.Sprintf("%q is not an integer parameter of the nvidia module (NVIDIA's kernel-open/nvidia/nv-reg.h, 595.45.04)", truncate(name))
}

// NIC firmware parameters of the GPU path (NVIDIA's mlxconfig
// documentation): PCI_WR_ORDERING per_mkey(0), the default, leaves
// relaxed ordering to each memory key, force_relax(1) sets it on every
// PCIe write; ATS_ENABLED turns PCIe Address Translation Services on.
const (
	FirmwareWrOrdering = "PCI_WR_ORDERING"
	FirmwareATS        = "ATS_ENABLED"
)

// WrOrderingRelaxed reads a PCI_WR_ORDERING value as the spec or the
// tool gives it: force_relax or 1 is relaxed, per_mkey or 0 is not; ok
// is false for anything else.
func WrOrderingRelaxed(v string) (relaxed, ok bool) {
	switch strings.ToLower(v) {
	case "force_relax", "force_relax(1)", "1":
		return true, true
	case "per_mkey", "per_mkey(0)", "0":
		return false, true
	}
	return false, false
}

// FirmwareBool reads a boolean firmware parameter's value (ATS_ENABLED)
// as the spec or the tool gives it: true, True(1), 1; ok is false for
// anything else.
func FirmwareBool(v string) (on, ok bool) {
	switch strings.ToLower(v) {
	case "true", "true(1)", "1":
		return true, true
	case "false", "false(0)", "0":
		return false, true
	}
	return false, false
}

// FirmwareParam returns a device's firmware parameter as the spec gives
// it, and its spec path.
func (d *Device) FirmwareParam(index int, name string) (value, path string, ok bool) {
	if d.Firmware == nil {
		return "", "", false
	}
	for _, p := range d.Firmware.Params {
		if strings.EqualFold(p.Name, name) {
			return p.Value, Path("devices", index, "firmware", "params") + "." + p.Name, true
		}
	}
	return "", "", false
}
