package rdmacm

import (
	"context"
	"errors"
	"io/fs"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.Capturer = (*Provider)(nil)

// Capture implements plan.Capturer: the RoCE mode and ToS of every port
// that is Ethernet now and stays so (the spec's link_layer, which a staged
// firmware link type has already set). Reading a device's values needs its
// configfs group; one that did not exist is created and removed again.
//
// When configfs shows no rdma_cm (the module is not loaded), nothing is
// captured: show loads no module, and without rdma_cm no connection uses
// the defaults anyway.
//
// Equivalent to: mkdir /sys/kernel/config/rdma_cm/DEV; cat .../ports/N/default_roce_{mode,tos}; rmdir /sys/kernel/config/rdma_cm/DEV
func (p *Provider) Capture(_ context.Context, h *host.Host, req *plan.Request, spec *schema.Spec, _ plan.CaptureOptions) error {
	if !host.Exists(h.FS, Root) {
		return nil
	}
	for i, d := range req.Devices {
		if d == nil {
			continue
		}
		var ports []int
		for j, pt := range spec.Devices[i].Ports {
			if ip := d.Port(pt.Port); pt.LinkLayer == linklayer.Ethernet && ip != nil && ip.LinkLayer == linklayer.Ethernet {
				ports = append(ports, j)
			}
		}
		if len(ports) == 0 {
			continue
		}
		err := withGroup(h, d.Name, func(group string) error {
			for _, j := range ports {
				pt := &spec.Devices[i].Ports[j]
				v, err := readPort(h, group, pt.Port)
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				if err != nil {
					return err
				}
				tos := v.Tos
				pt.Roce = &schema.Roce{Tos: &tos}
				if m := SpecMode(v.Mode); m == "v1" || m == "v2" {
					pt.Roce.Mode = m
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
