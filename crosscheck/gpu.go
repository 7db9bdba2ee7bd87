package crosscheck

import (
	"strconv"

	"github.com/rdmaform/rdmaform/schema"
)

// gpuSetting is one of the three settings relaxed ordering depends on,
// as a spec gives it: its value (on or off), the text written and its
// path.
type gpuSetting struct {
	on         bool
	text, path string
}

// driverRO is the spec's NVreg_EnablePCIERelaxedOrderingMode.
func driverRO(h *Host) (gpuSetting, bool) {
	g := h.Spec.GPU
	v, ok := g.DriverParam(schema.RelaxedOrderingParam)
	if !ok {
		return gpuSetting{}, false
	}
	for i, p := range g.DriverParams {
		if p.Name == schema.RelaxedOrderingParam {
			return gpuSetting{on: v == 1, text: p.Name + "=" + strconv.Itoa(v), path: schema.Path("gpu", "driver_params", i)}, true
		}
	}
	return gpuSetting{}, false
}

// firmwareSettings lists a firmware parameter every device entry of the
// spec gives, read by read (false: a value lint does not read).
func firmwareSettings(h *Host, name string, read func(string) (bool, bool)) []gpuSetting {
	var out []gpuSetting
	for i := range h.Spec.Devices {
		v, path, ok := h.Spec.Devices[i].FirmwareParam(i, name)
		if !ok {
			continue
		}
		if on, ok := read(v); ok {
			out = append(out, gpuSetting{on: on, text: name + "=" + v, path: path})
		}
	}
	return out
}

// gpuOrdering checks relaxed ordering in each GPU node's spec (a spec
// with gpu:) and across the GPU nodes of the set, the class lint is given:
//
//   - in one spec, each NIC's PCI_WR_ORDERING (force_relax on, per_mkey
//     off) and the GPU driver's NVreg_EnablePCIERelaxedOrderingMode are
//     on both or off both, and the NICs give one ATS_ENABLED;
//   - across the specs, each of the three settings has one value: each
//     spec is compared with the first earlier GPU node's spec that gives
//     the setting, and the finding is at the later spec's key.
func (l *linter) gpuOrdering() {
	type nodeSettings struct {
		ro        *gpuSetting
		wr, ats   []gpuSetting
		hostIndex int
	}
	var nodes []nodeSettings
	for i, h := range l.hosts {
		if h.Spec.GPU == nil {
			continue
		}
		n := nodeSettings{hostIndex: i}
		if ro, ok := driverRO(h); ok {
			n.ro = &ro
		}
		n.wr = firmwareSettings(h, schema.FirmwareWrOrdering, schema.WrOrderingRelaxed)
		n.ats = firmwareSettings(h, schema.FirmwareATS, schema.FirmwareBool)
		if n.ro != nil {
			for _, w := range n.wr {
				if w.on != n.ro.on {
					l.add(h, w.path, "relaxed ordering disagrees in this GPU node's spec: %s, but %s at %s: set PCI_WR_ORDERING force_relax with %s=1, or per_mkey with 0",
						w.text, n.ro.text, h.pos(n.ro.path), schema.RelaxedOrderingParam)
				}
			}
		}
		for _, a := range n.ats[min(1, len(n.ats)):] {
			if a.on != n.ats[0].on {
				l.add(h, a.path, "ATS disagrees between the NICs of this GPU node's spec: %s, but %s at %s: a GPU node's NICs need one ATS setting",
					a.text, n.ats[0].text, h.pos(n.ats[0].path))
				break
			}
		}
		nodes = append(nodes, n)
	}
	// Across the class: the first node that gives a setting is the
	// reference of the later ones.
	compare := func(what string, get func(n nodeSettings) *gpuSetting) {
		var ref *gpuSetting
		var refHost *Host
		for _, n := range nodes {
			s := get(n)
			if s == nil {
				continue
			}
			if ref == nil {
				ref, refHost = s, l.hosts[n.hostIndex]
				continue
			}
			if s.on != ref.on {
				l.add(l.hosts[n.hostIndex], s.path, "%s differs between the GPU nodes given together: %s here, but %s on %s at %s: one class of GPU nodes needs one value of it, or GPUDirect bandwidth differs from node to node",
					what, s.text, ref.text, refHost.Name, refHost.pos(ref.path))
			}
		}
	}
	first := func(s []gpuSetting) *gpuSetting {
		if len(s) == 0 {
			return nil
		}
		return &s[0]
	}
	compare("the GPU driver's relaxed ordering", func(n nodeSettings) *gpuSetting { return n.ro })
	compare("the NIC firmware's PCI_WR_ORDERING", func(n nodeSettings) *gpuSetting { return first(n.wr) })
	compare("the NIC firmware's ATS_ENABLED", func(n nodeSettings) *gpuSetting { return first(n.ats) })
}
