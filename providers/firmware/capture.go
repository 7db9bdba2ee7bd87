package firmware

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/firmware/mlxfmt"
	"github.com/rdmaform/rdmaform/schema"
)

// CaptureParams are the parameters show captures when not told which: the
// link types of both ports and SR-IOV. A card that does not know one (an
// Ethernet-only ConnectX-5 has no LINK_TYPE_Pn) simply has no row for it.
var CaptureParams = []string{"LINK_TYPE_P1", "LINK_TYPE_P2", "SRIOV_EN", "NUM_OF_VFS"}

// GPUDirectCaptureParams are captured besides CaptureParams on an
// adapter function with GPUs on its PCIe path (inventory's gpu_affinity):
// the PCIe write ordering and ATS that GPUDirect RDMA depends on, which
// plan and lint check against the GPU driver's relaxed ordering.
var GPUDirectCaptureParams = []string{"PCI_WR_ORDERING", "ATS_ENABLED"}

// defaultCaptureParams are the parameters show asks a device for when
// not told which.
func defaultCaptureParams(gpus bool) []string {
	if !gpus {
		return CaptureParams
	}
	return append(append([]string(nil), CaptureParams...), GPUDirectCaptureParams...)
}

var _ plan.TypedCapturer[*Observed] = (*Provider)(nil)

// CaptureFrom implements plan.TypedCapturer. Observe queried only the
// named parameters (o.FirmwareParams, or CaptureParams) of one PCI
// function per card, in parallel; each parameter's Next Boot value is
// written: what the card will run, so a value staged for the next boot is
// reported as pending by plan, never set again. A LINK_TYPE_Pn staged for
// the next boot also sets the link_layer of the port it affects to the
// coming one, as a spec states it ("expected after a reboot").
//
// A host without mlxconfig or mstconfig has nothing captured unless
// parameters were asked for by name (then it is an error). A parameter
// asked for by name that an adapter lacks is left out of that adapter and
// noted (o.Notes).
//
// Equivalent to: mlxconfig -d 0000:3b:00.0 -e q LINK_TYPE_P1 LINK_TYPE_P2 SRIOV_EN NUM_OF_VFS
func (p *Provider) CaptureFrom(obs *Observed, req *plan.Request, spec *schema.Spec, o plan.CaptureOptions) error {
	if obs == nil {
		return nil
	}
	names, explicit := o.FirmwareParams, len(o.FirmwareParams) > 0
	if !explicit {
		names = CaptureParams
	}
	captureVersions(req, spec)
	for i, dev := range req.Devices {
		a := obs.Adapters[i]
		if a == nil {
			continue // not a card's first function
		}
		if a.Err != nil {
			return fmt.Errorf("reading firmware of %s: %w", dev.PCI, a.Err)
		}
		fw := &schema.Firmware{}
		devNames := names
		if !explicit {
			devNames = defaultCaptureParams(len(dev.GPUAffinity) > 0)
		}
		for _, name := range devNames {
			if te := a.Unknown[name]; te != nil {
				// An adapter that lacks a parameter asked for by name (an
				// Ethernet-only ConnectX-5 has no LINK_TYPE_Pn) is noted,
				// not an error: the others are still captured.
				if explicit && o.Notes != nil {
					o.Notes.Add(i, fmt.Sprintf("no %s on this adapter (%s; %s: -E- %s)", name, a.deviceType(), a.Tool, te.Message))
				}
				continue
			}
			prm, ok := a.Params[name]
			if !ok {
				continue
			}
			v := SpecValue(prm.NextBoot)
			if v == "" {
				continue // N/A, an array summary: nothing a spec can hold
			}
			fw.Params = append(fw.Params, schema.Param{Name: name, Value: v})
			if m := linkTypeRE.FindStringSubmatch(name); m != nil {
				if ll := linklayer.OfLinkType(v); ll != "" {
					n, _ := strconv.Atoi(m[1])
					fn, port := AffectedPort(dev.PCI, n, dev)
					setLinkLayer(req, spec, fn, port, ll)
				}
			}
		}
		if len(fw.Params) > 0 {
			if spec.Devices[i].Firmware != nil {
				fw.Version = spec.Devices[i].Firmware.Version
			}
			spec.Devices[i].Firmware = fw
		}
	}
	return nil
}

// captureVersions writes the running firmware version (fw_ver) of every
// PCI adapter function as firmware.version, so that an audit against the
// capture finds a firmware that changed since. A version a spec cannot
// hold (not three numbers of 0..65535) is left to show's comment.
func captureVersions(req *plan.Request, spec *schema.Spec) {
	for i, dev := range req.Devices {
		if dev == nil || dev.PCI == "" {
			continue
		}
		if _, err := schema.ParseFirmwareVersion(dev.FWVer, 3, 3); err != nil {
			continue
		}
		spec.Devices[i].Firmware = &schema.Firmware{Version: dev.FWVer}
	}
}

// setLinkLayer sets the spec link layer of one port, if the spec lists it.
func setLinkLayer(req *plan.Request, spec *schema.Spec, pci string, port int, ll linklayer.LinkLayer) {
	for i, d := range req.Devices {
		if d == nil || d.PCI != pci {
			continue
		}
		for j := range spec.Devices[i].Ports {
			if spec.Devices[i].Ports[j].Port == port {
				spec.Devices[i].Ports[j].LinkLayer = ll
			}
		}
	}
}

var specValueRE = regexp.MustCompile(`^[A-Za-z0-9_.x-]+$`)

// SpecValue is a table value as an operator writes it in a spec: the enum
// name (ETH), true/false for True(1)/False(0), or the number; "" for what
// a spec cannot hold (N/A, Array[0..15], absent).
func SpecValue(v mlxfmt.Value) string {
	switch v.Kind {
	case mlxfmt.KindEnum:
		switch {
		case strings.EqualFold(v.Text, "true"), strings.EqualFold(v.Text, "false"):
			return strings.ToLower(v.Text)
		case specValueRE.MatchString(v.Text):
			return v.Text
		}
		return strconv.FormatInt(v.Num, 10)
	case mlxfmt.KindNumber:
		return strconv.FormatInt(v.Num, 10)
	case mlxfmt.KindHex, mlxfmt.KindText:
		if specValueRE.MatchString(v.Text) {
			return v.Text
		}
	}
	return ""
}
