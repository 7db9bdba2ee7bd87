package gpudriver

import (
	"fmt"
	"strings"

	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// nicValue is one NIC's setting as the host will have it after this plan
// and the next boot: the spec's, a value the firmware stage plans or has
// staged, or the firmware's Next Boot value; from says which.
type nicValue struct {
	pci, value, from, path string
}

// nicValues lists a firmware parameter of every NIC with GPUs on its path.
func nicValues(req *plan.Request, obs *Observed, facts *plan.Facts, name string, observed func(NICFirmware) string) []nicValue {
	var out []nicValue
	for _, n := range obs.NICs {
		v := nicValue{pci: n.PCI}
		for i, d := range req.Devices {
			if d == nil || d.PCI != n.PCI || i >= len(req.Spec.Devices) {
				continue
			}
			if val, path, ok := req.Spec.Devices[i].FirmwareParam(i, name); ok {
				v.value, v.from, v.path = val, "the spec", path
			}
		}
		if v.value == "" && facts != nil {
			if val, ok := facts.StagedParam(n.PCI, name); ok {
				v.value, v.from = val, "staged"
			}
		}
		if v.value == "" {
			v.value, v.from = observed(n), "the firmware"
		}
		if v.value != "" {
			out = append(out, v)
		}
	}
	return out
}

// ordering checks that relaxed ordering agrees on the host: each NIC's
// PCI_WR_ORDERING (force_relax on, per_mkey off) and the GPU driver's
// NVreg_EnablePCIERelaxedOrderingMode are on both or off both, and every
// NIC with GPUs on its path has one ATS_ENABLED. The values are those the
// host has after this plan: the spec's, else what is staged, else what
// runs. Only a spec that sets one of them is checked.
func (p *Provider) ordering(req *plan.Request, obs *Observed, facts *plan.Facts, prop *plan.Proposal) {
	if !orderingAsked(req.Spec) || obs.Driver == nil || !obs.Driver.Loaded {
		return
	}
	g := req.Spec.GPU
	gpuPath, gpuFrom := "$.gpu", "the running driver ("+"/proc/driver/nvidia/params)"
	var gpuRO bool
	if v, ok := g.DriverParam(schema.RelaxedOrderingParam); ok {
		gpuRO, gpuFrom = v == 1, "the spec"
		for i, prm := range g.DriverParams {
			if prm.Name == schema.RelaxedOrderingParam {
				gpuPath = schema.Path("gpu", "driver_params", i)
			}
		}
	} else {
		key, _ := schema.NVIDIAParamKey(schema.RelaxedOrderingParam)
		v, ok := obs.Driver.Params[key]
		if !ok {
			return
		}
		gpuRO = v == 1
	}
	onOff := map[bool]string{true: "on", false: "off"}
	var bad []string
	path := gpuPath
	for _, n := range nicValues(req, obs, facts, schema.FirmwareWrOrdering, func(f NICFirmware) string { return f.WrOrdering }) {
		relaxed, ok := schema.WrOrderingRelaxed(n.value)
		if !ok || relaxed == gpuRO {
			continue
		}
		bad = append(bad, fmt.Sprintf("%s %s=%s (%s)", n.pci, schema.FirmwareWrOrdering, n.value, n.from))
		if gpuFrom != "the spec" && n.path != "" && path == "$.gpu" {
			path = n.path
		}
	}
	if len(bad) > 0 {
		prop.Errors = append(prop.Errors, req.Finding(path,
			"relaxed ordering disagrees: the GPU driver's %s is %s (%s), but %s: a NIC that relaxes its writes to GPU memory while the GPU driver does not (or the reverse) runs GPUDirect at a fraction of line rate; set PCI_WR_ORDERING force_relax with %s 1, or per_mkey with 0",
			schema.RelaxedOrderingParam, onOff[gpuRO], gpuFrom, strings.Join(bad, ", "), schema.RelaxedOrderingParam))
	}
	ats := nicValues(req, obs, facts, schema.FirmwareATS, func(f NICFirmware) string { return f.ATS })
	var first *nicValue
	for i := range ats {
		on, ok := schema.FirmwareBool(ats[i].value)
		if !ok {
			continue
		}
		if first == nil {
			first = &ats[i]
			continue
		}
		if was, _ := schema.FirmwareBool(first.value); was != on {
			a, b := *first, ats[i]
			where := b.path
			if where == "" {
				where = a.path
			}
			if where == "" {
				where = "$.gpu"
			}
			prop.Errors = append(prop.Errors, req.Finding(where,
				"ATS disagrees between the NICs of this GPU node: %s %s=%s (%s), %s %s=%s (%s); the GPU node's NICs need one ATS setting (off on bare metal, on where a hypervisor's IOMMU translates)",
				b.pci, schema.FirmwareATS, b.value, b.from, a.pci, schema.FirmwareATS, a.value, a.from))
			break
		}
	}
}
