package ipoib

import (
	"fmt"

	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/ipoib/nmcli"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.TypedCapturer[*Observed] = (*Provider)(nil)

// CaptureFrom implements plan.TypedCapturer: every NetworkManager connection of
// type infiniband, in the order nmcli lists them (name, then UUID), as a
// spec entry whose plan is empty:
//
//   - mode is always written; mtu only when the profile sets one;
//   - ipv4/ipv6 with method manual give their addresses, gateway and DNS,
//     method disabled gives an empty block; any other method (auto,
//     link-local, ...) has no spec form and the family is left out
//     (unmanaged);
//   - state is up for an active connection, down for an inactive one.
//     A spec's down means autoconnect no and up autoconnect yes; a
//     profile that differs (inactive with autoconnect yes, say, because
//     its device is absent) gets autoconnect written, so that planning
//     the capture never changes it;
//   - a second profile of the same name is left out (rdmaform manages one
//     connection per name; plan reports the duplicate), as is a profile
//     bound to no interface.
//
// A host without nmcli or with NetworkManager stopped has none captured.
//
// Equivalent to: nmcli -t -f NAME,UUID,TYPE,DEVICE,ACTIVE connection show; nmcli -t -f ... connection show uuid U...
func (p *Provider) CaptureFrom(obs *Observed, _ *plan.Request, spec *schema.Spec, _ plan.CaptureOptions) error {
	if obs == nil {
		return nil
	}
	seen := map[string]bool{}
	for _, pr := range obs.Profiles {
		if seen[pr.Name] {
			continue
		}
		seen[pr.Name] = true
		if c, ok := captureProfile(pr); ok {
			spec.IPoIB = append(spec.IPoIB, c)
		}
	}
	return nil
}

// captureProfile is the spec entry of one profile; false when it has none.
func captureProfile(pr nmcli.Profile) (schema.IPoIB, bool) {
	pr = pr.Normalized()
	c := schema.IPoIB{Name: pr.Name, Parent: pr.InterfaceName, Mode: string(pr.Mode), State: StateDown}
	if pr.PKey >= 0 {
		if pr.Parent == "" {
			return c, false
		}
		c.Parent = pr.Parent
		c.PKey = &schema.PKey{Value: pr.PKey, Text: fmt.Sprintf("0x%04x", pr.PKey)}
		if pr.PKey < 0x8000 {
			c.Membership = "limited"
		}
	}
	if c.Parent == "" || schema.CheckConnName(c.Name) != "" || schema.CheckNetdev(c.Parent) != "" {
		return c, false
	}
	if pr.Active {
		c.State = StateUp
	}
	if pr.NoAutoconnect != (c.State == StateDown) {
		auto := !pr.NoAutoconnect
		c.Autoconnect = &auto
	}
	if pr.MTU > 0 {
		mtu := pr.MTU
		c.MTU = &mtu
	}
	c.IPv4 = captureIP(pr.IPv4)
	c.IPv6 = captureIP(pr.IPv6)
	return c, true
}

func captureIP(ic nmcli.IPConfig) *schema.IPConf {
	switch ic.Method {
	case nmcli.MethodDisabled:
		return &schema.IPConf{}
	case nmcli.MethodManual:
		return &schema.IPConf{Addresses: ic.Addresses, Gateway: ic.Gateway, DNS: ic.DNS}
	}
	return nil
}
