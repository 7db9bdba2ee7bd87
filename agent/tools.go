package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rdmaform/rdmaform/api/v1alpha1"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/providers/firmware"
	"github.com/rdmaform/rdmaform/schema"
)

// The tool check: before it plans, the agent looks up every program the
// node's hostSpec (and its policy) will have rdmaform run, on the PATH
// rdmaform runs them from (in the DaemonSet's pod, the image's; with
// --sim, the simulated host's). A program that is not there is the
// condition Degraded, reason ToolMissing, naming the program and the spec
// item that needs it: nothing is planned or applied, the agent stays up
// and looks again (every toolRecheck at most), and the condition clears
// when the program appears. Without the check, the plan would fail deep in
// a provider, or worse, apply the items before it and stop half way.
//
// Which programs: what the providers run for each item, where each
// provider decides it (a program they only run when the host has some
// other feature is left to the plan to report):
//   - firmware params, image or catalog: the configuration tool the
//     spec's tool picks (providers/firmware ToolPicker.Pick: auto takes
//     mlxconfig, else mstconfig); an image or a catalog also the burning
//     tool (image.go pickFlint: flint beside mlxconfig, else mstflint);
//     with policy activation fw-reset, the reset tool of the configuration
//     tool (fwreset.go ResetToolOf);
//   - modules: modprobe (host.LoadModule);
//   - a port's qos: dcb for anything DCB negotiates (qos/diff.go want.need:
//     dcbx, trust, pfc, cable_length, ets), ethtool -A for pause;
//   - interfaces[].ethtool: ethtool (ethtool/read.go);
//   - subnet_manager: sminfo (subnetmanager/fabric.go ReadFabric);
//   - ipoib: not a program but NetworkManager's D-Bus API (providers/ipoib
//     talks to it through host.NetworkManager, on the system bus the
//     DaemonSet mounts with /run): it must answer a list of connections,
//     the read the provider starts with;
//   - services: systemd's manager on the same bus (providers/services
//     through host.Systemd): the host must run systemd, and the manager
//     must answer the read of the first unit the spec names.

// ReasonToolMissing is the Degraded condition's reason when a program the
// spec needs is not on PATH.
const ReasonToolMissing = "ToolMissing"

// toolRecheck bounds the time between two checks while a tool is
// missing, when the interval is longer.
const toolRecheck = time.Minute

// toolNeed is one program a spec item needs: any one of tools will do.
type toolNeed struct {
	item  string
	why   string
	tools []string
}

// missingTool is a need none of whose tools is on PATH, or a service
// that does not answer on the system bus (err says how it failed).
type missingTool struct {
	toolNeed
	err error
}

func (m missingTool) String() string {
	if m.err != nil {
		return fmt.Sprintf("%s does not answer on the system bus (%v): %s needs it (%s)", m.tools[0], m.err, m.item, m.why)
	}
	which, needs := m.tools[0]+" is not on PATH", "it"
	switch len(m.tools) {
	case 1:
	case 2:
		which, needs = "neither "+m.tools[0]+" nor "+m.tools[1]+" is on PATH", "one"
	default:
		which, needs = "none of "+strings.Join(m.tools, ", ")+" is on PATH", "one"
	}
	return fmt.Sprintf("%s: %s needs %s (%s)", which, m.item, needs, m.why)
}

// toolNeeds lists the programs spec needs on h under policy p.
func toolNeeds(ctx context.Context, h *host.Host, spec *schema.Spec, p v1alpha1.Policy) []toolNeed {
	var out []toolNeed
	fwReset := p.Mode == v1alpha1.ModeApply && p.Activation == v1alpha1.ActivationFWReset
	picker := &firmware.ToolPicker{}
	for i, d := range spec.Devices {
		if fw := d.Firmware; fw != nil && (len(fw.Params) > 0 || fw.Image != "" || fw.Catalog != nil) {
			item := fmt.Sprintf("$.devices[%d].firmware", i)
			cfgTools := []string{firmware.MLXConfig, firmware.MSTConfig}
			if fw.Tool == firmware.MLXConfig || fw.Tool == firmware.MSTConfig {
				cfgTools = []string{fw.Tool}
			}
			out = append(out, toolNeed{item, "firmware parameters, tool " + orAuto(fw.Tool), cfgTools})
			// The other tools follow the one the picker takes; when it
			// takes none, the need above says so.
			if cfg, err := picker.Pick(ctx, h, fw.Tool); err == nil {
				if fw.Image != "" || fw.Catalog != nil {
					burn := []string{firmware.MSTFlint}
					if cfg == firmware.MLXConfig {
						burn = []string{firmware.Flint, firmware.MSTFlint}
					}
					out = append(out, toolNeed{item, "burning a firmware image", burn})
				}
				if fwReset {
					out = append(out, toolNeed{item, "policy.activation fw-reset with " + cfg, []string{firmware.ResetToolOf(cfg)}})
				}
			}
		}
		for j, port := range d.Ports {
			q := port.QoS
			if q == nil {
				continue
			}
			item := fmt.Sprintf("$.devices[%d].ports[%d].qos", i, j)
			if q.DCBX != "" || q.Trust != "" || q.PFC != nil || q.CableLength != nil || q.ETS != nil {
				out = append(out, toolNeed{item, "DCB settings", []string{"dcb"}})
			}
			if q.Pause != nil {
				out = append(out, toolNeed{item + ".pause", "pause frames", []string{"ethtool"}})
			}
		}
	}
	if len(spec.Modules) > 0 {
		out = append(out, toolNeed{"$.modules", "loading modules", []string{"modprobe"}})
	}
	for i, in := range spec.Interfaces {
		if in.Ethtool != nil {
			out = append(out, toolNeed{fmt.Sprintf("$.interfaces[%d].ethtool", i), "rings and channels", []string{"ethtool"}})
		}
	}
	if spec.SubnetManager != nil {
		out = append(out, toolNeed{"$.subnet_manager", "asking the fabric for its subnet manager", []string{"sminfo"}})
	}
	return out
}

func orAuto(tool string) string {
	if tool == "" {
		return "auto"
	}
	return tool
}

// missingTools returns the needs of spec that h cannot meet. A runner
// that cannot tell whether a program is installed counts it as there
// (the plan then says what it finds).
func missingTools(ctx context.Context, h *host.Host, spec *schema.Spec, p v1alpha1.Policy) []missingTool {
	var out []missingTool
	for _, n := range toolNeeds(ctx, h, spec, p) {
		found := false
		for _, t := range n.tools {
			if ok, can := host.Installed(h.Runner, t); ok || !can {
				found = true
				break
			}
		}
		if !found {
			out = append(out, missingTool{toolNeed: n})
		}
	}
	if len(spec.IPoIB) > 0 {
		err := errors.New("no NetworkManager door on this host")
		if h.NM != nil {
			_, err = h.NM.Connections(ctx)
		}
		if err != nil {
			out = append(out, missingTool{toolNeed{"$.ipoib", "IPoIB connections", []string{"NetworkManager"}}, err})
		}
	}
	if len(spec.Services) > 0 {
		err := errors.New("the host was not booted with systemd, or its /run/systemd is not mounted")
		if h.Systemd != nil {
			unit := spec.Services[0].Name
			if !strings.Contains(unit, ".") {
				unit += ".service"
			}
			_, err = h.Systemd.Unit(ctx, unit)
		}
		if err != nil {
			out = append(out, missingTool{toolNeed{"$.services", "unit states", []string{"systemd"}}, err})
		}
	}
	return out
}

// toolCheck checks the tools spec needs. When one is missing it records
// Degraded (ToolMissing) in st and returns true: the reconcile stops
// there and comes back after the returned interval.
func (r *Reconciler) toolCheck(ctx context.Context, st *v1alpha1.RDMAHostState, gen int64, spec *schema.Spec, p v1alpha1.Policy, interval time.Duration) (bool, time.Duration, error) {
	h, err := r.open()
	if err != nil {
		return false, interval, nil // the plan reports a host that cannot be opened
	}
	missing := missingTools(ctx, h, spec, p)
	if len(missing) == 0 {
		return false, interval, nil
	}
	lines := make([]string, len(missing))
	for i, m := range missing {
		lines[i] = m.String()
	}
	again := min(interval, toolRecheck)
	msg := fmt.Sprintf("%s\nNothing is planned or applied until the agent finds it (in its image, or on the host as the DaemonSet mounts it); it looks again every %s.", strings.Join(lines, "\n"), again)
	st.Status.Plan = v1alpha1.PlanSummary{}
	st.Status.Pending, st.Status.Drift = nil, nil
	cond(st, gen, v1alpha1.ConditionDegraded, true, ReasonToolMissing, msg)
	cond(st, gen, v1alpha1.ConditionInSync, false, ReasonToolMissing, msg)
	cond(st, gen, v1alpha1.ConditionProgressing, false, ReasonToolMissing, msg)
	return true, again, r.write(ctx, st)
}
