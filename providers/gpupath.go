package providers

import (
	"context"
	"sync"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/providers/acs"
	"github.com/rdmaform/rdmaform/providers/firmware"
)

// GPUPath reads, for the audit's GPUDirect checks, what the providers
// know how to read: a bridge's ACS Control register (the acs provider's
// config-space walk) and a NIC's firmware parameters (the firmware
// provider's query, mlxconfig or mstconfig). It implements
// audit.GPUPathReader; one value serves one audit.
type GPUPath struct {
	mu    sync.Mutex
	tools firmware.ToolPicker
	mst   firmware.MSTMap
}

// ACSControl reads the bridge's ACS Control register; ok is false when the
// bridge has no ACS capability. text names the bits that are on.
func (*GPUPath) ACSControl(h *host.Host, bridge string) (ok bool, control uint16, text string, err error) {
	cfg, err := h.FS.ReadFile(acs.ConfigPath(bridge))
	if err != nil {
		return false, 0, "", err
	}
	c, err := acs.ParseACS(cfg)
	if err != nil {
		return false, 0, "", err
	}
	if c.Offset == 0 {
		return false, 0, "", nil
	}
	return true, c.Control, acs.Describe(c.Control), nil
}

// P2PMask is the ACS Control bits peer-to-peer needs off.
func (*GPUPath) P2PMask() uint16 { return acs.P2PMask }

// NICParams queries the current values of the named firmware parameters
// of the NIC function at pci: as the tool prints them (per_mkey(0)) and
// as numbers. A parameter the tool does not know or prints without a
// number is missing from both maps.
func (g *GPUPath) NICParams(ctx context.Context, h *host.Host, pci string, names []string) (map[string]string, map[string]int64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	a := firmware.ReadAdapter(ctx, h, &g.tools, &g.mst, "auto", pci, names)
	if a.Err != nil {
		return nil, nil, a.Err
	}
	text, num := map[string]string{}, map[string]int64{}
	for _, n := range names {
		p, ok := a.Params[n]
		if !ok {
			continue
		}
		v, ok := p.Current.Number()
		if !ok {
			continue
		}
		text[n], num[n] = p.Current.String(), v
	}
	return text, num, nil
}

// NICNextBoot queries the named firmware parameters of the NIC function
// at pci: each one's Next Boot value as the tool prints it (per_mkey(0)),
// what the card runs after the next boot. A parameter the tool does not
// know is missing. It implements gpudriver.NICReader (a provider does not
// import another: providers.All hands it to the GPU driver provider).
func (g *GPUPath) NICNextBoot(ctx context.Context, h *host.Host, pci string, names []string) (map[string]string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	a := firmware.ReadAdapter(ctx, h, &g.tools, &g.mst, "auto", pci, names)
	if a.Err != nil {
		return nil, a.Err
	}
	out := map[string]string{}
	for _, n := range names {
		if p, ok := a.Params[n]; ok {
			out[n] = p.NextBoot.String()
		}
	}
	return out, nil
}
