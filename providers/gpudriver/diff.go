package gpudriver

import (
	"bytes"
	"strconv"

	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// Attribute names.
const (
	attrLoaded = "loaded"
	attrAtBoot = "load_at_boot"
)

// reloadWhy is a pending parameter's way to become current.
var reloadWhy = plan.ActivateBy{By: plan.ByDriverReload,
	Why: ConfFile + " is written: the nvidia module reads it when it loads again (a reboot, or the nvidia modules unloaded with no GPU process running and loaded again)"}

// Plan implements plan.TypedProvider.
func (p *Provider) Plan(req *plan.Request, obs *Observed, facts *plan.Facts) plan.Proposal {
	var prop plan.Proposal
	g := req.Spec.GPU
	if g == nil || obs == nil {
		return prop
	}
	if g.PeerMemory != "" {
		prop.Managed = append(prop.Managed, plan.Managed{Address: PeermemAddress, Path: "$.gpu.peer_memory"})
	}
	for i, prm := range g.DriverParams {
		prop.Managed = append(prop.Managed, plan.Managed{Address: ParamAddress(prm.Name), Path: schema.Path("gpu", "driver_params", i)})
	}
	d := obs.Driver
	if d == nil || !d.Loaded {
		prop.Errors = append(prop.Errors, req.Finding("$.gpu",
			"the NVIDIA driver is not loaded here (no %s): rdmaform checks the peer-memory path and the driver parameters against the running driver; install and load it (modprobe nvidia) first", inventory.NVIDIAParamsPath))
		return prop
	}
	if obs.LedgerErr != nil {
		prop.Errors = append(prop.Errors, req.Unreadable("$.gpu", "%v", obs.LedgerErr))
		return prop
	}
	p.peerMemory(req, obs, &prop)
	p.params(req, obs, &prop)
	p.ordering(req, obs, facts, &prop)
	return prop
}

// peerMemory plans gpu.peer_memory.
func (p *Provider) peerMemory(req *plan.Request, obs *Observed, prop *plan.Proposal) {
	g, d := req.Spec.GPU, obs.Driver
	src := req.Pos("$.gpu.peer_memory")
	switch g.PeerMemory {
	case schema.PeerMemoryDMABuf:
		switch {
		case d.OpenFrom == "":
			prop.Errors = append(prop.Errors, req.Finding("$.gpu.peer_memory",
				"dma-buf needs NVIDIA's open kernel module, and rdmaform cannot tell which module this is: %s does not name its build and %s/taint is not readable", inventory.NVIDIAVersionPath, inventory.NVIDIAModuleDir))
		case !d.Open && d.OpenFrom == inventory.NVIDIAVersionPath:
			prop.Errors = append(prop.Errors, req.Finding("$.gpu.peer_memory",
				"dma-buf needs NVIDIA's open kernel module, and this driver (%s) is the proprietary one: %s does not say \"Open Kernel Module\"; install the open module (nvidia-open, or the .run installer's -m=kernel-open), or use nvidia-peermem", d.Version, inventory.NVIDIAVersionPath))
		case !d.Open:
			prop.Errors = append(prop.Errors, req.Finding("$.gpu.peer_memory",
				"dma-buf needs NVIDIA's open kernel module, and this driver (%s) is the proprietary one: %s/taint has P (a proprietary licence; the open module is MODULE_LICENSE(\"Dual MIT/GPL\")); install the open module, or use nvidia-peermem", d.Version, inventory.NVIDIAModuleDir))
		}
		if obs.LoadsPeermem {
			// DMA-BUF needs no nvidia_peermem: rdmaform's file stops
			// loading it at boot (a loaded module is left loaded).
			prop.Changes = append(prop.Changes, &plan.Change{
				Address: PeermemAddress, Action: plan.Delete, Activation: plan.Now, Source: src,
				Attributes: []plan.Attr{{Name: attrAtBoot, Before: "true", After: "false"}},
				Payload:    &payload{file: LoadFile, before: obs.Load},
			})
		}
	case schema.PeerMemoryPeermem:
		var attrs []plan.Attr
		if !obs.PeermemLoaded {
			attrs = append(attrs, plan.Attr{Name: attrLoaded, Before: "false", After: "true"})
		}
		if !bytes.Equal(obs.Load, renderLoad()) {
			attrs = append(attrs, plan.Attr{Name: attrAtBoot, Before: strconv.FormatBool(obs.LoadsPeermem), After: "true"})
		}
		if len(attrs) > 0 {
			action := plan.Update
			if !obs.PeermemLoaded {
				action = plan.Create
			}
			prop.Changes = append(prop.Changes, &plan.Change{
				Address: PeermemAddress, Action: action, Activation: plan.Now, Source: src, Attributes: attrs,
				Payload: &payload{file: LoadFile, content: renderLoad(), before: obs.Load, loadModule: !obs.PeermemLoaded},
			})
		} else if !obs.PeermemRegistered {
			prop.Errors = append(prop.Errors, req.Finding("$.gpu.peer_memory",
				"nvidia_peermem is loaded, but the RDMA core lists no peer-memory client nv_mem (no %s): GPU memory cannot be registered for RDMA through it. The peer-memory API is MLNX_OFED's ib_core (DOCA-OFED); with the kernel's own ib_core use dma-buf", inventory.PeermemVersion))
		}
	}
}

// params plans gpu.driver_params: rdmaform's modprobe.d file, then what
// the running driver does not have yet.
func (p *Provider) params(req *plan.Request, obs *Observed, prop *plan.Proposal) {
	g, d := req.Spec.GPU, obs.Driver
	if g.DriverParams == nil && obs.Conf == nil {
		return
	}
	for i, prm := range g.DriverParams {
		if o, ok := obs.Elsewhere[prm.Name]; ok {
			if v, ok := parseValue(o.Value); !ok || v != shown(*prm.Value) {
				prop.Errors = append(prop.Errors, req.Finding(schema.Path("gpu", "driver_params", i),
					"%s sets %s=%s: modprobe passes the nvidia module both values and the one read last wins; remove it from %s", o.File, prm.Name, o.Value, o.File))
			}
		}
	}
	listed := map[string]string{}
	for _, o := range obs.Listed {
		listed[o.Name] = o.Value
	}
	changed := map[string]bool{}
	want := renderConf(g.DriverParams)
	if !bytes.Equal(want, obs.Conf) {
		var attrs []plan.Attr
		inSpec := map[string]bool{}
		for _, prm := range g.DriverParams {
			inSpec[prm.Name] = true
			v := strconv.Itoa(*prm.Value)
			if listed[prm.Name] != v {
				attrs = append(attrs, plan.Attr{Name: prm.Name, Before: listed[prm.Name], After: v})
				changed[prm.Name] = true
			}
		}
		for _, o := range obs.Listed {
			if !inSpec[o.Name] {
				attrs = append(attrs, plan.Attr{Name: o.Name, Before: o.Value, After: ""})
			}
		}
		if len(attrs) == 0 {
			attrs = append(attrs, plan.Attr{Name: "content", Before: "edited", After: "rdmaform's"})
		}
		action := plan.Update
		switch {
		case obs.Conf == nil:
			action = plan.Create
		case want == nil:
			action = plan.Delete
		}
		prop.Changes = append(prop.Changes, &plan.Change{
			Address: ConfAddress, Action: action, Activation: plan.NextBoot, Source: req.Pos("$.gpu.driver_params"), Attributes: attrs,
			Payload: &payload{file: ConfFile, content: want, before: obs.Conf, params: g.DriverParams, running: runningOf(d, g.DriverParams)},
		})
	}
	// What the written file gives waits for the driver's next load, or is
	// an activation failure when it was written in an earlier boot.
	for i, prm := range g.DriverParams {
		if changed[prm.Name] {
			continue
		}
		key, _ := schema.NVIDIAParamKey(prm.Name)
		cur, ok := d.Params[key]
		if ok && cur == shown(*prm.Value) {
			continue
		}
		current := "absent"
		if ok {
			current = strconv.FormatUint(uint64(cur), 10)
		}
		path := schema.Path("gpu", "driver_params", i)
		if e := obs.Ledger.Find(prm.Name, *prm.Value); e != nil && obs.BootID != "" && e.BootID != obs.BootID {
			prop.ActivationFailures = append(prop.ActivationFailures, plan.ActivationFailure{
				Address: ParamAddress(prm.Name), Attribute: "value", Current: current, Staged: strconv.Itoa(*prm.Value),
				StagedAt: e.StagedAt.Format("2006-01-02T15:04:05Z07:00"), BootID: e.BootID, Tool: "modprobe.d", Source: req.Pos(path),
				Activation: &plan.ActivateBy{By: plan.ByReboot, Why: "the driver's modprobe.d file was written; the driver loaded again at a reboot without it"},
			})
			prop.Errors = append(prop.Errors, req.Finding(path, "%s", e.DidNotTake(obs.BootID, current)))
			continue
		}
		why := reloadWhy
		prop.Pending = append(prop.Pending, plan.Pending{
			Address: ParamAddress(prm.Name), Attribute: "value", Current: current, NextBoot: strconv.FormatUint(uint64(shown(*prm.Value)), 10), Source: req.Pos(path),
			Activation: &why,
		})
	}
}

// runningOf is the running driver's value of each parameter the spec
// names (absent: the driver does not print it).
func runningOf(d *inventory.NVIDIADriver, params []schema.GPUDriverParam) map[string]uint32 {
	out := map[string]uint32{}
	for _, p := range params {
		key, _ := schema.NVIDIAParamKey(p.Name)
		if v, ok := d.Params[key]; ok {
			out[p.Name] = v
		}
	}
	return out
}
