package audit

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/schema"
)

// GPUDirect readiness: for each RDMA device the spec names and each of
// its nearest GPUs, whether GPUDirect RDMA can run at line rate between
// them. The pairs are a device's GPUs of its nearest relation (PIX, PXB,
// PHB or NODE); a device whose nearest GPU is across sockets (SYS) has
// none, as NCCL does not use GPUDirect RDMA across sockets by default.
// Each pair is the resource gpudirect[DEV/GPU]; its checks:
const (
	// CheckGPURelation is the relation and the bridges between (always
	// passes: it is the report).
	CheckGPURelation = "gpu_relation"
	// CheckGPUACS fails when a bridge of a path below one host bridge
	// (PIX, PXB, PHB) has P2P Request Redirect, Completion Redirect or
	// Egress Control on; across host bridges it reports ACS only.
	CheckGPUACS = "gpu_acs"
	// CheckGPUATS reports the NIC firmware's ATS_ENABLED.
	CheckGPUATS = "gpu_ats"
	// CheckGPURelaxedOrdering fails when the NIC firmware's
	// PCI_WR_ORDERING and the GPU driver's EnablePCIERelaxedOrderingMode
	// disagree.
	CheckGPURelaxedOrdering = "gpu_relaxed_ordering"
	// CheckGPUPeerMemory fails when neither DMA-BUF (the open kernel
	// module) nor nvidia-peermem gives the NIC the GPU's memory.
	CheckGPUPeerMemory = "gpu_peer_memory"
	// CheckGPUDriverParams fails when a driver parameter GPUDirect needs
	// is not set: NVreg_GrdmaPciTopoCheckOverride=1 on a coherent system
	// with a driver before R595.
	CheckGPUDriverParams = "gpu_driver_params"
	// CheckGPUNUMA fails when the NIC and the GPU are on different NUMA
	// nodes.
	CheckGPUNUMA = "gpu_numa"
)

// GPUDirectChecks are the checks of a GPU-NIC pair, in report order.
var GPUDirectChecks = []string{CheckGPURelation, CheckGPUACS, CheckGPUATS, CheckGPURelaxedOrdering,
	CheckGPUPeerMemory, CheckGPUDriverParams, CheckGPUNUMA}

// Firmware parameters of the NIC's PCIe side.
const (
	paramATS        = "ATS_ENABLED"
	paramWrOrdering = "PCI_WR_ORDERING"
)

// grdmaFixedMajor is the first driver branch whose topology check
// accepts GPUDirect on coherent systems without
// NVreg_GrdmaPciTopoCheckOverride (NVIDIA aicr docs/user/validation.md).
const grdmaFixedMajor = 595

// GPUPathReader reads what only the providers know how to read: a
// bridge's ACS Control register and a NIC's firmware parameters. The
// command line gives providers.GPUPath; without one (nil) the checks that
// need it fail saying so.
type GPUPathReader interface {
	// ACSControl: ok is false when the bridge has no ACS capability; text
	// names the bits that are on.
	ACSControl(h *host.Host, bridge string) (ok bool, control uint16, text string, err error)
	// P2PMask is the Control bits peer-to-peer needs off.
	P2PMask() uint16
	// NICParams reads the current values of firmware parameters, as the
	// tool prints them and as numbers; a parameter it cannot tell is
	// missing from both.
	NICParams(ctx context.Context, h *host.Host, pci string, names []string) (text map[string]string, num map[string]int64, err error)
}

// GPUDirectAddress is the resource of a pair's checks.
func GPUDirectAddress(dev, gpu string) string { return "gpudirect[" + dev + "/" + gpu + "]" }

// gpuPair is one RDMA device and one of its nearest GPUs.
type gpuPair struct {
	dev *inventory.Device
	aff inventory.Affinity
	src *schema.Pos
}

// gpuPairs are the pairs of the spec's devices, by device then GPU.
func (a *auditor) gpuPairs() []gpuPair {
	var out []gpuPair
	seen := map[string]bool{}
	for i, dev := range a.req.Devices {
		if dev == nil || seen[dev.Name] || len(dev.GPUAffinity) == 0 {
			continue
		}
		seen[dev.Name] = true
		best := dev.GPUAffinity[0].Relation
		for _, x := range dev.GPUAffinity {
			best = min(best, x.Relation)
		}
		if best == inventory.RelationSYS {
			continue
		}
		for _, x := range dev.GPUAffinity {
			if x.Relation == best {
				out = append(out, gpuPair{dev: dev, aff: x, src: a.pos(schemaDevicePath(i))})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].dev.Name != out[j].dev.Name {
			return out[i].dev.Name < out[j].dev.Name
		}
		return out[i].aff.GPU < out[j].aff.GPU
	})
	return out
}

func schemaDevicePath(i int) string { return schema.Path("devices", i) }

// gpuDirectChecks reads the driver once and each device's firmware once,
// then checks every pair.
func (a *auditor) gpuDirectChecks(ctx context.Context) ([]Result, []schema.Finding) {
	pairs := a.gpuPairs()
	if len(pairs) == 0 {
		return nil, nil
	}
	var errs []schema.Finding
	drv, derr := inventory.ReadNVIDIA(a.h.FS)
	if derr != nil {
		errs = append(errs, schema.Finding{Message: "reading the NVIDIA driver: " + derr.Error()})
	}
	type nicParams struct {
		text map[string]string
		num  map[string]int64
		err  error
	}
	fw := map[string]*nicParams{}
	var out []Result
	for _, p := range pairs {
		fa, ok := fw[p.dev.PCI]
		if !ok {
			fa = &nicParams{err: errNoReader}
			if a.gpuPath != nil {
				fa.text, fa.num, fa.err = a.gpuPath.NICParams(ctx, a.h, p.dev.PCI, []string{paramATS, paramWrOrdering})
			}
			fw[p.dev.PCI] = fa
		}
		param := func(name string) (string, int64, error) {
			if fa.err != nil {
				return "", 0, fa.err
			}
			t, ok := fa.text[name]
			if !ok {
				return "", 0, fmt.Errorf("the firmware tool does not report %s with a value", name)
			}
			return t, fa.num[name], nil
		}
		out = append(out, a.gpuPairChecks(p, drv, derr, param)...)
	}
	return out, errs
}

// errNoReader: the audit was given no GPUPathReader.
var errNoReader = errors.New("no reader of ACS and firmware parameters was given to the audit")

func (a *auditor) gpuPairChecks(p gpuPair, drv *inventory.NVIDIADriver, derr error, param func(string) (string, int64, error)) []Result {
	addr := GPUDirectAddress(p.dev.Name, p.aff.GPU)
	res := func(check string) Result { return Result{Resource: addr, Check: check, Source: p.src} }
	fail := func(r Result, format string, args ...any) Result {
		r.Status, r.Message = Fail, fmt.Sprintf(format, args...)
		return r
	}
	var out []Result

	rel := res(CheckGPURelation)
	rel.Message = fmt.Sprintf("%s %s GPU %s through %s", p.dev.Name, p.aff.Relation, p.aff.GPU, bridgeList(p.aff.Bridges))
	out = append(out, rel)

	out = append(out, a.acsCheck(res(CheckGPUACS), p.aff, fail))

	ats := res(CheckGPUATS)
	if txt, _, err := param(paramATS); err != nil {
		ats = fail(ats, "%s: reading %s: %v", p.dev.PCI, paramATS, err)
	} else {
		ats.Message = fmt.Sprintf("%s %s=%s", p.dev.PCI, paramATS, txt)
	}
	out = append(out, ats)

	ro := res(CheckGPURelaxedOrdering)
	txt, nicRO, err := param(paramWrOrdering)
	switch {
	case err != nil:
		ro = fail(ro, "%s: reading %s: %v", p.dev.PCI, paramWrOrdering, err)
	case derr != nil || !drv.Loaded:
		ro = fail(ro, "%s=%s; the GPU driver's NVreg_EnablePCIERelaxedOrderingMode cannot be read: %s", paramWrOrdering, txt, driverMissing(derr))
	default:
		gpuRO, ok := drv.Params["EnablePCIERelaxedOrderingMode"]
		switch {
		case !ok:
			ro = fail(ro, "%s lists no EnablePCIERelaxedOrderingMode", inventory.NVIDIAParamsPath)
		case (nicRO == 1) != (gpuRO == 1):
			ro = fail(ro, "%s %s=%s but NVreg_EnablePCIERelaxedOrderingMode=%d: relaxed ordering must be on both or off both", p.dev.PCI, paramWrOrdering, txt, gpuRO)
		default:
			ro.Message = fmt.Sprintf("%s %s=%s and NVreg_EnablePCIERelaxedOrderingMode=%d agree", p.dev.PCI, paramWrOrdering, txt, gpuRO)
		}
	}
	out = append(out, ro)

	pm := res(CheckGPUPeerMemory)
	switch {
	case derr != nil || !drv.Loaded:
		pm = fail(pm, "the NVIDIA driver: %s", driverMissing(derr))
	case drv.Open:
		pm.Message = "dma-buf: the open kernel module (" + drv.OpenFrom + ")"
		if drv.Peermem {
			pm.Message += "; nvidia-peermem is loaded too (" + drv.PeermemFrom + ")"
		}
	case drv.Peermem:
		pm.Message = "nvidia-peermem (" + drv.PeermemFrom + ")"
	default:
		pm = fail(pm, "no peer-memory path: the proprietary module has no dma-buf (%s) and nvidia-peermem is not loaded (no %s, no %s)",
			drv.OpenFrom, inventory.PeermemVersion, inventory.PeermemModuleDir)
	}
	out = append(out, pm)

	dp := res(CheckGPUDriverParams)
	switch {
	case derr != nil || !drv.Loaded:
		dp = fail(dp, "the NVIDIA driver: %s", driverMissing(derr))
	default:
		coherent, why := a.coherent(p.aff.GPU)
		v, ok := drv.Params["GrdmaPciTopoCheckOverride"]
		switch {
		case !coherent:
			dp.Message = "not a coherent system (" + why + ")"
		case drv.Major() >= grdmaFixedMajor:
			dp.Message = fmt.Sprintf("coherent system (%s), driver %s (R%d or later needs no override)", why, drv.Version, grdmaFixedMajor)
		case !ok || v != 1:
			dp = fail(dp, "coherent system (%s) with driver %s: NVreg_GrdmaPciTopoCheckOverride is %s, needs 1 before R%d (else dma-buf attach fails and NCCL falls back to sockets)",
				why, drv.Version, paramText(v, ok), grdmaFixedMajor)
		default:
			dp.Message = fmt.Sprintf("coherent system (%s): NVreg_GrdmaPciTopoCheckOverride=1", why)
		}
	}
	out = append(out, dp)

	nm := res(CheckGPUNUMA)
	g := a.req.Inv.GPU(p.aff.GPU)
	switch {
	case g == nil:
		nm = fail(nm, "GPU %s is not in the inventory", p.aff.GPU)
	case p.dev.NUMANode < 0 || g.NUMANode < 0:
		nm.Message = fmt.Sprintf("the kernel knows no NUMA node of %s (%d) or GPU %s (%d): one node", p.dev.Name, p.dev.NUMANode, g.PCI, g.NUMANode)
	case p.dev.NUMANode != g.NUMANode:
		nm = fail(nm, "%s is on NUMA node %d, GPU %s on %d", p.dev.Name, p.dev.NUMANode, g.PCI, g.NUMANode)
	default:
		nm.Message = fmt.Sprintf("NUMA node %d", g.NUMANode)
	}
	out = append(out, nm)
	return out
}

// acsCheck names the bridges of a path below one host bridge (PIX, PXB,
// PHB) whose ACS redirects peer-to-peer. A path across host bridges
// (NODE, as on Grace) goes through the root complex whatever ACS says;
// the masks its root ports need are the platform's (rdma_topo's
// asymmetric masks), so they are reported, not judged.
func (a *auditor) acsCheck(r Result, aff inventory.Affinity, fail func(Result, string, ...any) Result) Result {
	if a.gpuPath == nil {
		return fail(r, "%v", errNoReader)
	}
	bridges := aff.Bridges
	if !aff.Relation.BelowHostBridge() {
		var parts []string
		for _, b := range bridges {
			ok, _, text, err := a.gpuPath.ACSControl(a.h, b)
			switch {
			case err != nil:
				parts = append(parts, fmt.Sprintf("%s: %v", b, err))
			case !ok:
				parts = append(parts, b+" no ACS")
			default:
				parts = append(parts, b+" "+text)
			}
		}
		r.Message = fmt.Sprintf("%s: the path crosses host bridges, whose ACS is the platform's (not checked): %s", aff.Relation, strings.Join(parts, "; "))
		return r
	}
	var bad, noACS []string
	for _, b := range bridges {
		ok, ctl, text, err := a.gpuPath.ACSControl(a.h, b)
		if err != nil {
			return fail(r, "bridge %s: %v", b, err)
		}
		if !ok {
			noACS = append(noACS, b)
			continue
		}
		if ctl&a.gpuPath.P2PMask() != 0 {
			bad = append(bad, fmt.Sprintf("bridge %s ACS Control %s", b, text))
		}
	}
	if len(bad) > 0 {
		return fail(r, "%s: P2P Request Redirect, Completion Redirect and Egress Control must be off", strings.Join(bad, "; "))
	}
	r.Message = "no redirect on " + bridgeList(bridges)
	if len(noACS) > 0 {
		r.Message += " (no ACS capability: " + strings.Join(noACS, " ") + ")"
	}
	return r
}

// coherent tells a coherent CPU-GPU system: the GPU's root port is
// NVIDIA's (vendor 0x10de), as on Grace, whose GPUs reach the CPU over
// NVLink-C2C; why names the root port.
func (a *auditor) coherent(gpu string) (bool, string) {
	bridges, _, ok := a.req.Inv.FunctionPath(a.h.FS, gpu)
	if !ok || len(bridges) == 0 {
		return false, "GPU " + gpu + " has no root port in sysfs"
	}
	root := bridges[len(bridges)-1]
	v, _ := host.ReadAttr(a.h.FS, path.Join(inventory.BusPCI, root, "vendor"))
	if v == "0x10de" {
		return true, "GPU " + gpu + " below NVIDIA root port " + root
	}
	return false, "GPU " + gpu + " root port " + root + " vendor " + v
}

func bridgeList(bs []string) string {
	if len(bs) == 0 {
		return "no bridge"
	}
	return "bridges " + strings.Join(bs, " ")
}

func driverMissing(err error) string {
	if err != nil {
		return err.Error()
	}
	return "not loaded (no " + inventory.NVIDIAParamsPath + ")"
}

func paramText(v uint32, ok bool) string {
	if !ok {
		return "not listed"
	}
	return fmt.Sprint(v)
}
