package rdmanetns

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/rdmaform/rdmaform/plan"
)

// Plan implements plan.TypedProvider.
func (p *Provider) Plan(req *plan.Request, obs *Observed, _ *plan.Facts) plan.Proposal {
	var prop plan.Proposal
	if req.Spec.Rdma == nil || req.Spec.Rdma.NetnsMode == "" || obs == nil {
		return prop
	}
	const path = "$.rdma.netns_mode"
	want := req.Spec.Rdma.NetnsMode
	src := req.Pos(path)
	prop.Managed = []plan.Managed{{Address: BootAddress, Path: path}, {Address: RuntimeAddress, Path: path}}
	conf := renderConf(want)
	if !bytes.Equal(obs.Conf, conf) {
		action := plan.Update
		if obs.Conf == nil {
			action = plan.Create
		}
		prop.Changes = append(prop.Changes, &plan.Change{Address: BootAddress, Action: action, Activation: plan.Now, Source: src,
			Attributes: []plan.Attr{{Name: "netns_mode_at_boot", Before: confMode(obs.Conf), After: want}},
			Payload:    &payload{file: true, conf: conf, beforeConf: obs.Conf}})
	}
	if obs.NoRDMA || obs.Mode == want {
		// Without ib_core loaded the file gives the mode at its load.
		return prop
	}
	if len(obs.Namespaces) > 0 {
		prop.Deferred = append(prop.Deferred, plan.Deferred{Address: RuntimeAddress, Source: src,
			Reason: fmt.Sprintf("the kernel refuses to switch the RDMA netns mode from %s to %s while other network namespaces exist (EBUSY; %d: %s); ib_core's netns_mode=%s in %s makes it %s at the next boot",
				obs.Mode, want, len(obs.Namespaces), strings.Join(obs.Namespaces, ", "), ParamValue(want), ConfFile, want)})
		return prop
	}
	prop.Changes = append(prop.Changes, &plan.Change{Address: RuntimeAddress, Action: plan.Update, Activation: plan.Runtime, Source: src,
		Attributes: []plan.Attr{{Name: "netns_mode", Before: obs.Mode, After: want}},
		Payload:    &payload{mode: want, beforeMode: obs.Mode}})
	return prop
}
