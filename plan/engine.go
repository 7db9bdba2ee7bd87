package plan

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/schema"
)

// Result is a built plan and what it was built from.
type Result struct {
	Plan    *Plan
	Request *Request
	// Observed holds each provider's observation, by provider name.
	Observed map[string]any
	// Facts are what the providers published while planning (link-layer
	// changes, modules and devices to come), for the audit's questions.
	Facts *Facts
	// Managed lists every resource the spec asks for, in stage order, as
	// the providers declared them (an audit's list of what it checks).
	Managed []Managed
}

// Build discovers the host and plans the spec: one parallel round of
// discovery, then each provider's pure diff in stage order. It changes
// nothing on the host. A provider's stage is its position in providers:
// its changes apply after those of every provider before it.
func Build(ctx context.Context, h *host.Host, spec *schema.Spec, providers []Provider) (*Result, error) {
	inv, err := inventory.Discover(ctx, h)
	if err != nil {
		return nil, fmt.Errorf("reading RDMA devices from sysfs: %w", err)
	}
	spec, matchErrs := expandMatches(spec, inv)
	req := &Request{Spec: spec, Inv: inv}
	p := &Plan{}
	p.Errors = append(p.Errors, matchErrs...)
	p.Errors = append(p.Errors, resolveDevices(req)...)

	obs := make([]any, len(providers))
	errs := make([]error, len(providers))
	// The rename stage observes first: the stages after it observe and
	// plan with the names it gives (Request.Renamed), so one apply
	// renames and configures the renamed devices and netdevs.
	reqs := make([]*Request, len(providers))
	renamedAt := -1
	for i, pr := range providers {
		reqs[i] = req
		if _, ok := renamesOf(pr); ok && renamedAt < 0 {
			renamedAt = i
			obs[i], errs[i] = pr.Discover(ctx, h, req)
		}
	}
	view := req
	if renamedAt >= 0 && errs[renamedAt] == nil {
		r, _ := renamesOf(providers[renamedAt])
		view = req.Renamed(r.renames(req, obs[renamedAt]))
		for i := renamedAt + 1; i < len(providers); i++ {
			reqs[i] = view
		}
	}
	var wg sync.WaitGroup
	for i, pr := range providers {
		if i == renamedAt {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			obs[i], errs[i] = pr.Discover(ctx, h, reqs[i])
		}()
	}
	wg.Wait()

	facts := NewFacts()
	observed := map[string]any{}
	var managed []Managed
	for i, pr := range providers {
		if errs[i] != nil {
			p.Errors = append(p.Errors, req.Finding("$", "%s: %v", pr.Name(), errs[i]))
			continue
		}
		observed[pr.Name()] = obs[i]
		prop := pr.Diff(reqs[i], obs[i], facts)
		for _, c := range prop.Changes {
			c.Provider, c.stage = pr.Name(), i
		}
		p.Changes = append(p.Changes, prop.Changes...)
		p.Pending = append(p.Pending, prop.Pending...)
		p.Deferred = append(p.Deferred, prop.Deferred...)
		p.Errors = append(p.Errors, prop.Errors...)
		p.ActivationFailures = append(p.ActivationFailures, prop.ActivationFailures...)
		managed = append(managed, prop.Managed...)
	}
	p.Finish()
	return &Result{Plan: p, Request: view, Observed: observed, Facts: facts, Managed: managed}, nil
}

// resolveDevices maps each spec device to an inventory device. A name that
// an rxe entry of the spec will create is not an error: the providers plan
// it as a device to come. Nor is a PCI address whose entry sets only pcie
// (a GPU or NVMe drive next to the adapters): the pcie stage needs no RDMA
// device.
func resolveDevices(req *Request) []schema.Finding {
	var out []schema.Finding
	req.Devices = make([]*inventory.Device, len(req.Spec.Devices))
	for i := range req.Spec.Devices {
		kind, val := req.Spec.Devices[i].Selector()
		if kind == "" {
			continue
		}
		if d := req.Inv.Find(kind, val); d != nil {
			req.Devices[i] = d
			continue
		}
		if kind == "name" && WillCreateRxe(req.Spec, val) {
			continue
		}
		if kind == "pci" && req.Spec.Devices[i].PCIeOnly() {
			continue // any PCI function: the pcie stage reads it
		}
		out = append(out, req.Finding(schema.Path("devices", i, kind),
			"no RDMA device with %s %s on this host (found: %s)", kind, val, describe(req.Inv)))
	}
	return out
}

// WillCreateRxe reports whether the spec asks for an rxe link of that name.
func WillCreateRxe(spec *schema.Spec, name string) bool {
	for _, r := range spec.Rxe {
		if r.Name == name && r.State != "absent" {
			return true
		}
	}
	return false
}

func describe(inv *inventory.Inventory) string {
	if len(inv.Devices) == 0 {
		return "none"
	}
	var s []string
	for _, d := range inv.Devices {
		if d.PCI != "" {
			s = append(s, fmt.Sprintf("%s at %s", d.Name, d.PCI))
		} else {
			s = append(s, d.Name)
		}
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}
