package audit_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/audit"
	"github.com/rdmaform/rdmaform/providers"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// gpu-switch's first pair: mlx5_0 (0000:18:00.0) and GPU 0000:19:00.0
// below downstream ports 0000:17:00.0 and 0000:17:01.0 of one switch
// (upstream port 0000:16:00.0, no ACS) below root port 0000:15:01.0.
const (
	gdNIC  = "0000:18:00.0"
	gdGPU  = "0000:19:00.0"
	gdPair = "gpudirect[mlx5_0/0000:19:00.0]"
)

// gpuAudit audits a GPU profile, changed by mutate, against a spec naming
// the devices at pcis, and returns the report's gpudirect checks by
// resource and check.
func gpuAudit(t *testing.T, profile string, mutate func(st *sim.State), pcis ...string) (map[string]audit.Result, *audit.Report) {
	t.Helper()
	_, h := simtest.New(t, profile, 0, mutate)
	text := "version: 1\ndevices:\n"
	for _, p := range pcis {
		text += "  - pci: \"" + p + "\"\n"
	}
	r, err := audit.Run(context.Background(), h, parse(t, text), providers.All(), audit.Options{Now: now, GPUPath: &providers.GPUPath{}})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]audit.Result{}
	for _, c := range r.Checks {
		if strings.HasPrefix(c.Resource, "gpudirect[") {
			out[c.Resource+" "+c.Check] = c
		}
	}
	return out, r
}

func want(t *testing.T, got map[string]audit.Result, key string, status audit.Status, words ...string) {
	t.Helper()
	c, ok := got[key]
	if !ok {
		t.Errorf("no check %s; have %v", key, keys(got))
		return
	}
	if c.Status != status {
		t.Errorf("%s: %s (%s), want %s", key, c.Status, c.Message, status)
	}
	for _, w := range words {
		if !strings.Contains(c.Message, w) {
			t.Errorf("%s: message %q does not name %q", key, c.Message, w)
		}
	}
}

func keys(m map[string]audit.Result) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func setParam(st *sim.State, name string, cur int64) {
	for _, a := range st.Firmware {
		for i := range a.Params {
			if a.Params[i].Name == name {
				a.Params[i].Current, a.Params[i].Next = cur, cur
			}
		}
	}
}

func openACS(st *sim.State) {
	for _, b := range st.Bridges {
		b.ACSControl = 0
	}
}

// TestGPUDirectFresh: a fresh gpu-switch node has ACS redirecting on the
// switch's downstream port and the root port (the kernel's boot value),
// and every other check passes; each device has one pair, its PIX GPU.
func TestGPUDirectFresh(t *testing.T) {
	got, _ := gpuAudit(t, "gpu-switch", nil, gdNIC)
	if len(got) != len(audit.GPUDirectChecks) {
		t.Fatalf("want the %d checks of one pair, got %v", len(audit.GPUDirectChecks), keys(got))
	}
	want(t, got, gdPair+" gpu_relation", audit.Pass, "PIX", "0000:17:00.0 0000:16:00.0 0000:17:01.0")
	want(t, got, gdPair+" gpu_acs", audit.Fail, "bridge 0000:17:00.0 ACS Control 0x001d", "bridge 0000:17:01.0")
	if strings.Contains(got[gdPair+" gpu_acs"].Message, "0000:16:00.0 ACS") {
		t.Errorf("the upstream port has no ACS capability, yet: %s", got[gdPair+" gpu_acs"].Message)
	}
	want(t, got, gdPair+" gpu_ats", audit.Pass, "ATS_ENABLED=False(0)")
	want(t, got, gdPair+" gpu_relaxed_ordering", audit.Pass, "per_mkey(0)", "NVreg_EnablePCIERelaxedOrderingMode=0")
	want(t, got, gdPair+" gpu_peer_memory", audit.Pass, "dma-buf", "/proc/driver/nvidia/version")
	want(t, got, gdPair+" gpu_driver_params", audit.Pass, "not a coherent system")
	want(t, got, gdPair+" gpu_numa", audit.Pass, "NUMA node 0")

	got, r := gpuAudit(t, "gpu-switch", openACS, gdNIC)
	want(t, got, gdPair+" gpu_acs", audit.Pass, "no redirect", "no ACS capability: 0000:16:00.0")
	if !r.Summary.Compliant {
		t.Errorf("with ACS off the pair is not compliant: %+v", r.Checks)
	}
}

// TestGPUDirectOneBridge: one bridge redirecting is named alone.
func TestGPUDirectOneBridge(t *testing.T) {
	got, _ := gpuAudit(t, "gpu-switch", func(st *sim.State) {
		openACS(st)
		st.Bridge("0000:17:01.0").ACSControl = 0x0020
	}, gdNIC)
	want(t, got, gdPair+" gpu_acs", audit.Fail, "bridge 0000:17:01.0 ACS Control 0x0020 (EgressCtrl)")
	if m := got[gdPair+" gpu_acs"].Message; strings.Contains(m, "0000:17:00.0 ACS") {
		t.Errorf("names a bridge that is open: %s", m)
	}
}

// TestGPUDirectRelaxedOrdering: the NIC's PCI_WR_ORDERING and the GPU
// driver's EnablePCIERelaxedOrderingMode must agree.
func TestGPUDirectRelaxedOrdering(t *testing.T) {
	gpuOn := func(st *sim.State) { st.NVIDIA.Params = map[string]uint32{"EnablePCIERelaxedOrderingMode": 1} }
	nicOn := func(st *sim.State) { setParam(st, "PCI_WR_ORDERING", 1) }
	got, _ := gpuAudit(t, "gpu-switch", gpuOn, gdNIC)
	want(t, got, gdPair+" gpu_relaxed_ordering", audit.Fail, "PCI_WR_ORDERING=per_mkey(0)", "NVreg_EnablePCIERelaxedOrderingMode=1")
	got, _ = gpuAudit(t, "gpu-switch", nicOn, gdNIC)
	want(t, got, gdPair+" gpu_relaxed_ordering", audit.Fail, "PCI_WR_ORDERING=force_relax(1)", "NVreg_EnablePCIERelaxedOrderingMode=0")
	got, _ = gpuAudit(t, "gpu-switch", func(st *sim.State) { gpuOn(st); nicOn(st) }, gdNIC)
	want(t, got, gdPair+" gpu_relaxed_ordering", audit.Pass, "agree")
	got, _ = gpuAudit(t, "gpu-switch", func(st *sim.State) { setParam(st, "ATS_ENABLED", 1) }, gdNIC)
	want(t, got, gdPair+" gpu_ats", audit.Pass, "ATS_ENABLED=True(1)")
}

// TestGPUDirectPeerMemory: DMA-BUF needs the open module; the
// proprietary one needs nvidia-peermem; no driver fails every driver
// check.
func TestGPUDirectPeerMemory(t *testing.T) {
	prop := func(st *sim.State) { st.NVIDIA.Open = false }
	got, _ := gpuAudit(t, "gpu-switch", prop, gdNIC)
	want(t, got, gdPair+" gpu_peer_memory", audit.Fail, "proprietary", "/sys/kernel/mm/memory_peers/nv_mem/version")
	got, _ = gpuAudit(t, "gpu-switch", func(st *sim.State) { prop(st); st.Modules = append(st.Modules, "nvidia_peermem") }, gdNIC)
	want(t, got, gdPair+" gpu_peer_memory", audit.Pass, "nvidia-peermem (/sys/kernel/mm/memory_peers/nv_mem/version)")
	got, _ = gpuAudit(t, "gpu-switch", func(st *sim.State) {
		st.Modules = slices.DeleteFunc(st.Modules, func(m string) bool { return m == "nvidia" })
	}, gdNIC)
	for _, c := range []string{"gpu_peer_memory", "gpu_driver_params", "gpu_relaxed_ordering"} {
		want(t, got, gdPair+" "+c, audit.Fail, "not loaded")
	}
}

// TestGPUDirectGrace: a Grace node (the GPU below NVIDIA's root port) with
// a driver before R595 needs NVreg_GrdmaPciTopoCheckOverride=1.
func TestGPUDirectGrace(t *testing.T) {
	const pair = "gpudirect[mlx5_0/0009:01:00.0]"
	got, _ := gpuAudit(t, "gpu-grace", nil, "0000:01:00.0")
	want(t, got, pair+" gpu_relation", audit.Pass, "NODE")
	// Across host bridges ACS is reported, not judged.
	want(t, got, pair+" gpu_acs", audit.Pass, "not checked", "0000:00:00.0 0x001d", "0009:00:00.0 0x001d")
	want(t, got, pair+" gpu_driver_params", audit.Fail, "NVreg_GrdmaPciTopoCheckOverride is 0", "0009:00:00.0", "570.133.20")
	got, _ = gpuAudit(t, "gpu-grace", func(st *sim.State) { st.NVIDIA.Params = map[string]uint32{"GrdmaPciTopoCheckOverride": 1} }, "0000:01:00.0")
	want(t, got, pair+" gpu_driver_params", audit.Pass, "NVreg_GrdmaPciTopoCheckOverride=1")
	// 2 (deny) is not 1.
	got, _ = gpuAudit(t, "gpu-grace", func(st *sim.State) { st.NVIDIA.Params = map[string]uint32{"GrdmaPciTopoCheckOverride": 2} }, "0000:01:00.0")
	want(t, got, pair+" gpu_driver_params", audit.Fail, "is 2")
	// R594 still needs it; R595 does not.
	got, _ = gpuAudit(t, "gpu-grace", func(st *sim.State) { st.NVIDIA.Version = "594.99.01" }, "0000:01:00.0")
	want(t, got, pair+" gpu_driver_params", audit.Fail, "594.99.01")
	got, _ = gpuAudit(t, "gpu-grace", func(st *sim.State) { st.NVIDIA.Version = "595.45.04" }, "0000:01:00.0")
	want(t, got, pair+" gpu_driver_params", audit.Pass, "R595 or later")
}

// TestGPUDirectNUMA: a NIC and its GPU on different NUMA nodes fail,
// naming both nodes.
func TestGPUDirectNUMA(t *testing.T) {
	got, _ := gpuAudit(t, "gpu-switch", func(st *sim.State) {
		for _, g := range st.GPUs {
			if g.PCI == gdGPU {
				g.NUMANode = 1
			}
		}
	}, gdNIC)
	want(t, got, gdPair+" gpu_numa", audit.Fail, "mlx5_0 is on NUMA node 0, GPU 0000:19:00.0 on 1")
}

// TestGPUDirectShapes: the checks go through waivers, JUnit and
// Prometheus as every check does, and a host without GPUs has none.
func TestGPUDirectShapes(t *testing.T) {
	_, h := simtest.New(t, "gpu-switch", 0, nil)
	spec := parse(t, "version: 1\ndevices:\n  - pci: \""+gdNIC+"\"\n")
	ws, rep := audit.LoadWaivers("waivers.yaml", []byte("- {resource: \""+gdPair+"\", check: gpu_acs, reason: the BIOS sets ACS here, expires: 2026-06-01}\n"))
	if len(rep) > 0 {
		t.Fatal(rep)
	}
	r, err := audit.Run(context.Background(), h, spec, providers.All(), audit.Options{Now: now, Waivers: ws, GPUPath: &providers.GPUPath{}})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Summary.Compliant || r.Summary.Waived != 1 {
		t.Errorf("the waived gpu_acs: %+v", r.Summary)
	}
	for _, f := range []string{"junit", "prometheus"} {
		var b bytes.Buffer
		if err := audit.Render(&b, r, f); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "gpu_relaxed_ordering") {
			t.Errorf("%s lacks the gpudirect checks:\n%s", f, b.String())
		}
	}
	// Without a reader (a caller that gives none), the checks that need
	// one fail saying so.
	r, err = audit.Run(context.Background(), h, spec, providers.All(), audit.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Checks {
		if c.Resource == gdPair && (c.Check == "gpu_acs" || c.Check == "gpu_ats") && (c.Status != audit.Fail || !strings.Contains(c.Message, "no reader")) {
			t.Errorf("without a reader: %+v", c)
		}
	}
	got, _ := gpuAudit(t, "cx5-roce", nil, "0000:5e:00.0")
	if len(got) != 0 {
		t.Errorf("a host without GPUs has gpudirect checks: %v", keys(got))
	}
}
