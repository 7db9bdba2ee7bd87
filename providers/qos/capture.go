package qos

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.Capturer = (*Provider)(nil)

// Capture implements plan.Capturer: the QoS of every Ethernet port with a
// netdev. A driver without DCB gives no DCB keys, one without readable
// pause no pause, one without the OFED tree no ecn; a port with nothing
// readable gets no qos. A firmware-owned port is captured as dcbx:
// firmware alone (its trust, PFC and ETS are the switch's).
//
// Equivalent to: dcb -j {pfc,ets,app,dcbx} show dev X; ethtool -a X; cat /sys/class/net/X/ecn/...
func (p *Provider) Capture(ctx context.Context, h *host.Host, req *plan.Request, spec *schema.Spec, o plan.CaptureOptions) error {
	if h.Offline() {
		return nil
	}
	// Every port is read at once, as plan reads them.
	sem := make(chan struct{}, MaxReads)
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	// notes keeps each port's note in port order, so show prints them in
	// the same order whatever order the reads finish in.
	type portNote struct {
		dev  int
		note string
	}
	var notes []*portNote
	for i, d := range req.Devices {
		if d == nil {
			continue
		}
		for j := range spec.Devices[i].Ports {
			pt := &spec.Devices[i].Ports[j]
			ip := d.Port(pt.Port)
			if ip == nil || ip.LinkLayer != linklayer.Ethernet || pt.LinkLayer != linklayer.Ethernet {
				continue
			}
			nd := PortNetdev(d, pt.Port)
			if nd == "" || !host.Exists(h.FS, "/sys/class/net/"+nd) {
				continue
			}
			pn := &portNote{dev: i}
			notes = append(notes, pn)
			wg.Add(1)
			go func() {
				defer wg.Done()
				note, err := capturePort(ctx, h, nd, pt, sem)
				if err != nil {
					select {
					case errs <- err:
					default:
					}
				}
				pn.note = note
			}()
		}
	}
	wg.Wait()
	for _, pn := range notes {
		if pn.note != "" && o.Notes != nil {
			o.Notes.Add(pn.dev, pn.note)
		}
	}
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// capturePort reads one port and writes its qos into pt; the note says
// what it left out.
func capturePort(ctx context.Context, h *host.Host, nd string, pt *schema.Port, sem chan struct{}) (string, error) {
	have, err := readPort(ctx, h, nd, need{dcb: true, pause: true, ecn: true}, sem)
	if errors.Is(err, host.ErrNotFound) {
		// No dcb or ethtool on the host: nothing to capture, and nothing
		// a plan could set either.
		return fmt.Sprintf("%s: qos left out: %v", nd, err), nil
	}
	if err != nil {
		return "", err
	}
	q, note := captureQoS(have)
	pt.QoS = q
	return note, nil
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
	if q.DCBX == "" && q.Pause == nil && q.ECN == nil {
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
