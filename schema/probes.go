package schema

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"time"

	"github.com/rdmaform/rdmaform/linklayer"
)

// Kind is the probe's kind key: ping, rdma_cm, verbs, ib, bandwidth or
// latency ("" when none is given; Validate reports that).
func (p *Probe) Kind() string {
	switch {
	case p.Ping != nil:
		return "ping"
	case p.RdmaCM != nil:
		return "rdma_cm"
	case p.Verbs != nil:
		return "verbs"
	case p.IB != nil:
		return "ib"
	case p.Bandwidth != nil:
		return "bandwidth"
	case p.Latency != nil:
		return "latency"
	}
	return ""
}

// Target is what the probe reaches: an address, a LID or a GUID.
func (p *Probe) Target() string {
	switch {
	case p.Ping != nil:
		return p.Ping.To
	case p.RdmaCM != nil:
		return p.RdmaCM.To
	case p.Verbs != nil:
		return p.Verbs.To
	case p.IB != nil && p.IB.ToLID != nil:
		return fmt.Sprintf("lid %d", *p.IB.ToLID)
	case p.IB != nil:
		return "guid " + p.IB.ToGUID
	case p.Bandwidth != nil:
		return p.Bandwidth.To
	case p.Latency != nil:
		return p.Latency.To
	}
	return ""
}

// limits returns the kind's count and timeout fields as written.
func (p *Probe) limits() (count *int, timeout string) {
	switch {
	case p.Ping != nil:
		return p.Ping.Count, p.Ping.Timeout
	case p.RdmaCM != nil:
		return p.RdmaCM.Count, p.RdmaCM.Timeout
	case p.Verbs != nil:
		return p.Verbs.Count, p.Verbs.Timeout
	case p.IB != nil:
		return p.IB.Count, p.IB.Timeout
	}
	return nil, ""
}

// Count is the number of round trips the probe makes (default 3).
func (p *Probe) Count() int {
	if c, _ := p.limits(); c != nil {
		return *c
	}
	return DefaultProbeCount
}

// Timeout is the probe's whole deadline (default 5s). Validate has
// checked the text; an unchecked bad value gives the default.
func (p *Probe) Timeout() time.Duration {
	_, t := p.limits()
	if t == "" {
		t = DefaultProbeTimeout
	}
	d, err := time.ParseDuration(t)
	if err != nil || d <= 0 {
		d, _ = time.ParseDuration(DefaultProbeTimeout)
	}
	return d
}

// PortOr is *n, or 1 when the port is not given.
func PortOr(n *int) int {
	if n == nil {
		return 1
	}
	return *n
}

var probeNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// CheckProbeName says what is wrong with a probe name, or "" when it is
// fine. It becomes a label value and a JUnit test name.
func CheckProbeName(s string) string {
	if !probeNameRE.MatchString(s) {
		return fmt.Sprintf("%q is not a probe name: 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", truncate(s))
	}
	return ""
}

var portGUIDRE = regexp.MustCompile(`^(0x)?[0-9a-fA-F]{1,16}$`)

func (v *validator) probes() {
	names := map[string]string{}
	for i := range v.spec.Probes {
		pr := &v.spec.Probes[i]
		p := fmt.Sprintf("$.probes[%d]", i)
		v.uniqueName(p, "name", pr.Name, "e.g. ipoib-to-node2", "probe", CheckProbeName, names)
		kinds := 0
		for _, k := range []bool{pr.Ping != nil, pr.RdmaCM != nil, pr.Verbs != nil, pr.IB != nil, pr.Bandwidth != nil, pr.Latency != nil} {
			if k {
				kinds++
			}
		}
		if kinds != 1 {
			v.add(p, "give exactly one of ping, rdma_cm, verbs, ib, bandwidth or latency, not %d", kinds)
			continue
		}
		kp := p + "." + pr.Kind()
		if pr.Bandwidth != nil || pr.Latency != nil {
			v.perfProbe(kp, pr)
			continue
		}
		if _, t := pr.limits(); t != "" {
			d, err := time.ParseDuration(t)
			switch {
			case err != nil:
				v.add(kp+".timeout", "%q is not a duration (e.g. 5s, 1500ms)", truncate(t))
			case d < time.Second:
				v.add(kp+".timeout", "%s is below the minimum 1s", t)
			case d > MaxProbeTimeoutSecs*time.Second:
				v.add(kp+".timeout", "%s is above the maximum %ds", t, MaxProbeTimeoutSecs)
			}
		}
		switch {
		case pr.Ping != nil:
			v.probeAddr(kp, pr.Ping.To)
			if pr.Ping.Interface != "" {
				v.check(kp+".interface", CheckNetdev(pr.Ping.Interface))
			}
		case pr.RdmaCM != nil:
			v.probeAddr(kp, pr.RdmaCM.To)
			if pr.RdmaCM.Device != "" {
				v.check(kp+".device", CheckRDMAName(pr.RdmaCM.Device))
			}
		case pr.Verbs != nil:
			v.probeAddr(kp, pr.Verbs.To)
			v.probeDevice(kp, pr.Verbs.Device)
		case pr.IB != nil:
			v.probeDevice(kp, pr.IB.Device)
			switch {
			case pr.IB.ToLID == nil && pr.IB.ToGUID == "":
				v.add(kp, "give to_lid or to_guid")
			case pr.IB.ToLID != nil && pr.IB.ToGUID != "":
				v.add(kp+".to_guid", "give to_lid or to_guid, not both")
			case pr.IB.ToGUID != "" && !portGUIDRE.MatchString(pr.IB.ToGUID):
				v.add(kp+".to_guid", "%q is not a port GUID (up to 16 hex digits, e.g. 0x0002c903000e0b72)", truncate(pr.IB.ToGUID))
			}
			if ll, where := v.specLinkLayer(pr.IB.Device, PortOr(pr.IB.Port)); ll == linklayer.Ethernet {
				v.add(kp+".device", "ibping needs an InfiniBand port, but %s port %d is Ethernet (%s); probe it with rdma_cm or verbs", pr.IB.Device, PortOr(pr.IB.Port), where)
			}
		}
	}
}

func (v *validator) probeAddr(kp, to string) {
	if !v.spec.Src.Has(kp + ".to") {
		v.add(kp, "to: is required (the peer's IP address)")
		return
	}
	if _, err := netip.ParseAddr(to); err != nil || strings.Contains(to, "%") {
		v.add(kp+".to", "%q is not an IP address", truncate(to))
	}
}

func (v *validator) probeDevice(kp, dev string) {
	if !v.spec.Src.Has(kp + ".device") {
		v.add(kp, "device: is required (the local RDMA device, e.g. mlx5_0)")
		return
	}
	v.check(kp+".device", CheckRDMAName(dev))
}

// specLinkLayer is what the spec itself says of a device's port: its
// link_layer, or Ethernet when the port has RoCE settings. where names
// the spec line; "" when the spec says nothing.
func (v *validator) specLinkLayer(dev string, port int) (ll linklayer.LinkLayer, where string) {
	for i, d := range v.spec.Devices {
		if d.Name != dev {
			continue
		}
		for j, pt := range d.Ports {
			if pt.Port != port {
				continue
			}
			pp := fmt.Sprintf("$.devices[%d].ports[%d]", i, j)
			switch {
			case pt.LinkLayer != "":
				return pt.LinkLayer, "link_layer at " + v.spec.Src.Lookup(pp+".link_layer").String()
			case pt.Roce != nil:
				return linklayer.Ethernet, "roce settings at " + v.spec.Src.Lookup(pp+".roce").String()
			}
		}
	}
	return "", ""
}
