package inventory

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/host"
)

// The NVIDIA GPU driver as GPUDirect RDMA depends on it. The formats are
// those of NVIDIA's open-gpu-kernel-modules (595.45.04):
//
//   - /proc/driver/nvidia/params is written by nv_procfs_read_params
//     (kernel-open/nvidia/nv-procfs.c): for each entry of nv_parms[]
//     (kernel-open/nvidia/nv-reg.h) `seq_printf(s, "%s: %u\n", name,
//     value)`, the name without the NVreg_ of its module parameter; then
//     the string parameters as `Name: "value"`.
//   - /proc/driver/nvidia/version's first line is `NVRM version: %s` of
//     pNVRM_ID (nv_procfs_read_version), built by utils.mk's
//     GENERATE_NVIDSTRING as "NVIDIA <kind> for <arch>  <version> ...";
//     the open kernel module's kind is "UNIX Open Kernel Module"
//     (src/nvidia/Makefile). Only the open module exports DMA-BUF for GPU
//     memory (NVIDIA's GPUDirect RDMA documentation); without that line
//     the proprietary module is told by /sys/module/nvidia/taint, whose P
//     (proprietary licence) the open module, MODULE_LICENSE("Dual
//     MIT/GPL") in kernel-open/nvidia/nv.c, never sets.
//   - nvidia-peermem is loaded when /sys/module/nvidia_peermem exists,
//     and registered with the RDMA core's peer-memory API when
//     /sys/kernel/mm/memory_peers/nv_mem/version exists (the client
//     "nv_mem" of kernel-open/nvidia-peermem/nvidia-peermem.c).

// NVIDIA driver paths.
const (
	NVIDIAParamsPath  = "/proc/driver/nvidia/params"
	NVIDIAVersionPath = "/proc/driver/nvidia/version"
	NVIDIAModuleDir   = "/sys/module/nvidia"
	PeermemModuleDir  = "/sys/module/nvidia_peermem"
	PeermemVersion    = "/sys/kernel/mm/memory_peers/nv_mem/version"
)

// NVIDIADriver is what the loaded NVIDIA driver says of itself.
type NVIDIADriver struct {
	// Loaded: /proc/driver/nvidia/params is there.
	Loaded bool
	// Version is the driver's version (/sys/module/nvidia/version).
	Version string
	// Open: the open kernel module, which has DMA-BUF; OpenFrom says how
	// that was told (the version line, or the module's taint).
	Open     bool
	OpenFrom string
	// Params are the numeric parameters by name without NVreg_.
	Params map[string]uint32
	// Strings are the string parameters, unquoted.
	Strings map[string]string
	// Peermem: nvidia-peermem is loaded; PeermemFrom names the file.
	Peermem     bool
	PeermemFrom string
}

// Major is the driver's major version (570 of 570.133.20), 0 when
// unknown.
func (d *NVIDIADriver) Major() int {
	m, _, _ := strings.Cut(d.Version, ".")
	n, err := strconv.Atoi(m)
	if err != nil {
		return 0
	}
	return n
}

// ParseNVIDIAParams reads /proc/driver/nvidia/params. A line that is not
// `Name: number` or `Name: "text"` is an error naming its line.
func ParseNVIDIAParams(data string) (map[string]uint32, map[string]string, error) {
	nums, strs := map[string]uint32{}, map[string]string{}
	for i, line := range strings.Split(strings.TrimRight(data, "\n"), "\n") {
		if line == "" {
			continue
		}
		name, val, ok := strings.Cut(line, ": ")
		if !ok || name == "" || strings.ContainsAny(name, " \t:\"") {
			return nil, nil, fmt.Errorf("%s:%d: %q is not \"Name: value\"", NVIDIAParamsPath, i+1, line)
		}
		if len(val) >= 2 && val[0] == '"' && val[len(val)-1] == '"' {
			strs[name] = val[1 : len(val)-1]
			continue
		}
		n, err := strconv.ParseUint(val, 10, 32)
		if err != nil {
			return nil, nil, fmt.Errorf("%s:%d: %s: %q is neither a number nor a quoted string", NVIDIAParamsPath, i+1, name, val)
		}
		nums[name] = uint32(n)
	}
	return nums, strs, nil
}

// ReadNVIDIA reads the NVIDIA driver's state. A host without the driver
// gives Loaded false and no error; a params file in another format is an
// error.
func ReadNVIDIA(f host.FS) (*NVIDIADriver, error) {
	d := &NVIDIADriver{}
	data, err := f.ReadFile(NVIDIAParamsPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		d.Loaded = true
		d.Params, d.Strings, err = ParseNVIDIAParams(string(data))
		if err != nil {
			return nil, err
		}
	}
	d.Version, _ = host.ReadAttr(f, NVIDIAModuleDir+"/version")
	if v, err := host.ReadAttr(f, NVIDIAVersionPath); err == nil {
		first, _, _ := strings.Cut(v, "\n")
		if strings.HasPrefix(first, "NVRM version: NVIDIA ") {
			d.Open = strings.Contains(first, " Open Kernel Module ")
			d.OpenFrom = NVIDIAVersionPath
			if d.Version == "" {
				// "... for x86_64  570.133.20  Release Build ..."
				if _, rest, ok := strings.Cut(first, " for "); ok {
					if fs := strings.Fields(rest); len(fs) > 1 {
						d.Version = fs[1]
					}
				}
			}
		}
	}
	if d.OpenFrom == "" {
		if t, err := host.ReadAttr(f, NVIDIAModuleDir+"/taint"); err == nil {
			d.Open = !strings.Contains(t, "P")
			d.OpenFrom = NVIDIAModuleDir + "/taint"
		}
	}
	for _, p := range []string{PeermemVersion, PeermemModuleDir} {
		if host.Exists(f, p) {
			d.Peermem, d.PeermemFrom = true, p
			break
		}
	}
	return d, nil
}
