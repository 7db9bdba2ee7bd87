package qos

import (
	"errors"
	"fmt"

	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.TypedCapturer[*Observed] = (*Provider)(nil)

// CaptureFrom implements plan.TypedCapturer: the QoS of every Ethernet
// port with a netdev (Observe read each at once, as plan reads them) that
// the capture keeps Ethernet. A driver without DCB gives no DCB keys, one
// without readable pause no pause, one without the OFED tree no ecn; a
// port with nothing readable gets no qos. A firmware-owned port is
// captured as dcbx: firmware alone (its trust, PFC and ETS are the
// switch's). Without dcb or ethtool a port's qos is left out and noted.
//
// Equivalent to: dcb -j {pfc,ets,app,dcbx} show dev X; ethtool -a X; cat /sys/class/net/X/ecn/...
func (p *Provider) CaptureFrom(obs *Observed, req *plan.Request, spec *schema.Spec, o plan.CaptureOptions) error {
	if obs == nil {
		return nil
	}
	var errs []error
	for i, d := range req.Devices {
		if d == nil {
			continue
		}
		for j := range spec.Devices[i].Ports {
			pt := &spec.Devices[i].Ports[j]
			if pt.LinkLayer != linklayer.Ethernet {
				continue
			}
			k := key(d.Name, pt.Port)
			if e, ok := obs.NoTool[k]; ok {
				// No dcb or ethtool on the host: nothing to capture, and
				// nothing a plan could set either.
				o.Notes.Add(i, fmt.Sprintf("%s: qos left out: %s", PortNetdev(d, pt.Port), e))
				continue
			}
			if e, ok := obs.Errs[k]; ok {
				errs = append(errs, fmt.Errorf("reading the QoS of %s: %s", PortNetdev(d, pt.Port), e))
				continue
			}
			if have := obs.Ports[k]; have != nil {
				q, note := captureQoS(have)
				pt.QoS = q
				if note != "" {
					o.Notes.Add(i, note)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// captureQoS is the spec form of a port's state, and a note on what it
// leaves out.
func captureQoS(p *Port) (*schema.QoS, string) {
	q := &schema.QoS{}
	var note string
	if p.NoDCB == "" {
		if !p.DCBXHost {
			q.DCBX = "firmware"
		} else {
			q.DCBX = "host"
			q.Trust = p.Trust()
			if q.Trust == "dscp" {
				missing := 0
				for d := 0; d < 64; d++ {
					cur := p.App[d]
					switch {
					case len(cur) == 0:
						missing++
					case cur[0] != d>>3:
						q.DSCPMap = append(q.DSCPMap, schema.DSCPPrio{DSCP: d, Prio: cur[0]})
					}
				}
				if missing > 0 {
					note = fmt.Sprintf("%s: the DSCP map has %d of 64 entries; apply writes the %d missing ones (priority dscp>>3 unless dscp_map says otherwise)", p.Netdev, 64-missing, missing)
				}
			}
			var pfc []int
			for i, on := range p.PFC {
				if on {
					pfc = append(pfc, i)
				}
			}
			if pfc == nil {
				pfc = []int{}
			}
			q.PFC = &pfc
			if p.Delay > 0 && p.Delay < 1000 {
				d := p.Delay
				q.CableLength = &d
			}
			// Classes on the driver's own scheduler (tsa vendor, mlx5's
			// default) have no spec form: ETS is left to the driver then.
			if e, ok := specETS(p.ETS); ok {
				q.ETS = e
			}
		}
	}
	if p.NoPause == "" {
		v := p.PauseRX && p.PauseTX
		if p.PauseRX == p.PauseTX {
			q.Pause = &v
		}
	}
	if p.ECNTree && p.ECNRP == p.ECNNP {
		var ecn []int
		for i, on := range p.ECNRP {
			if on {
				ecn = append(ecn, i)
			}
		}
		if ecn == nil {
			ecn = []int{}
		}
		q.ECN = &ecn
	}
	if p.CNPTree {
		d, pr := p.CNPDSCP, p.CNPPrio
		q.CNP = &schema.CNP{DSCP: &d, Priority: &pr}
	}
	if q.DCBX == "" && q.Pause == nil && q.ECN == nil && q.CNP == nil {
		return nil, note
	}
	return q, note
}

// specETS is an ETS table in spec form, when every class is ets or strict
// (strict classes with bandwidth 0, as the spec writes them).
func specETS(e ETS) (*schema.ETS, bool) {
	out := &schema.ETS{}
	for i := 0; i < 8; i++ {
		switch e.TSA[i] {
		case "ets":
			out.BW = append(out.BW, e.BW[i])
		case "strict":
			out.BW = append(out.BW, 0)
		default:
			return nil, false
		}
		out.TSA = append(out.TSA, e.TSA[i])
		out.PrioTC = append(out.PrioTC, e.PrioTC[i])
	}
	return out, true
}
