package cli

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
)

func (a *app) factsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "facts [-o text|json|env|affinity]",
		Short: "List the host's RDMA adapters with what a fleet needs to know of them; changes nothing",
		Long: `List every RDMA device of the host: PCI address, RDMA name, netdevs,
link layer of each port, node and port GUIDs, running firmware version,
PSID, part number and serial (the PN and SN of the card's PCI VPD, read
by root only), NUMA node, and the firmware values staged for the next
boot (queried from every card, as status does). These are the values a
devices[].match compares: part_number, psid and model (hca_type).

-o env prints what NCCL needs as shell-safe KEY=value lines: NCCL_IB_HCA
(the rails in rail order: by NUMA node, then PCI address, then port;
software devices last; virtual functions left out), NCCL_IB_GID_INDEX
(the RoCE v2 GID index of the rails' address, from the GID table),
NCCL_IB_TC (rdma_cm's default_roce_tos of the rails) and
NCCL_SOCKET_IFNAME (the netdevs of the default routes). A value that
cannot be told is left out with a warning. -o affinity prints, as JSON,
each GPU and its nearest rails.

Exit codes: 0 listed; 1 the host could not be read.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := a.host()
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			defer a.recordSimCalls()
			inv, err := inventory.Discover(cmd.Context(), h)
			if err != nil {
				return &exitError{code: plan.ExitError, err: fmt.Errorf("reading RDMA devices from sysfs: %w", err)}
			}
			switch a.output {
			case "env":
				a.factsEnv(cmd.Context(), h, inv)
				return nil
			case "affinity":
				return a.writeJSON(affinityOf(h.FS, inv))
			}
			pending, err := pendingAll(cmd.Context(), h, a.env.Stderr)
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			doc := factsOf(inv, pending)
			a.results.Facts = &doc
			if a.jsonOut() {
				return a.writeJSON(doc)
			}
			a.factsText(doc)
			return nil
		},
	}
	a.outputFlag(cmd, "text", "text", "json", "env", "affinity")
	a.hostFlags(cmd)
	return cmd
}

// FactsDoc is `facts -o json`: the host's RDMA devices.
type FactsDoc struct {
	FormatVersion int          `json:"format_version"`
	Devices       []DeviceFact `json:"devices"`
	// GPUs are the host's GPUs (inventory/gpu.go).
	GPUs []*inventory.GPU `json:"gpus"`
}

// DeviceFact is one RDMA device (a PCI function, or a software device
// such as rxe, which has no PCI address, VPD or firmware).
type DeviceFact struct {
	PCI        string   `json:"pci"`
	RDMA       string   `json:"rdma"`
	Netdevs    []string `json:"netdevs"`
	LinkLayers []string `json:"link_layers"` // by port, from port 1
	GUIDs      GUIDs    `json:"guids"`
	FWVersion  string   `json:"fw_version"`
	PSID       string   `json:"psid"`
	PartNumber string   `json:"part_number"`
	Serial     string   `json:"serial"`
	Model      string   `json:"model"`     // hca_type
	NUMANode   int      `json:"numa_node"` // -1: none or unknown
	// Pending are the card's firmware values staged for the next boot
	// (every function of the card lists them).
	Pending []plan.Pending `json:"pending"`
	// GPUAffinity is the function's relation to each GPU (PIX ... SYS)
	// and the bridges between them.
	GPUAffinity []inventory.Affinity `json:"gpu_affinity"`
	// Bridges are the PCI bridges above the function, nearest first, to
	// its root port.
	Bridges []string `json:"bridges"`
}

// GUIDs are a device's node GUID and its InfiniBand ports' GUIDs by
// port number.
type GUIDs struct {
	Node  string            `json:"node"`
	Ports map[string]string `json:"ports"`
}

// factsOf is the facts of every device of the inventory, sorted by RDMA
// name, each function with the pending values of its card.
func factsOf(inv *inventory.Inventory, pending []plan.Pending) FactsDoc {
	doc := FactsDoc{FormatVersion: FormatVersion, Devices: []DeviceFact{}, GPUs: append([]*inventory.GPU{}, inv.GPUs...)}
	for _, d := range inv.Devices {
		f := DeviceFact{
			PCI: d.PCI, RDMA: d.Name, Netdevs: []string{}, LinkLayers: []string{},
			GUIDs:     GUIDs{Node: d.NodeGUID, Ports: map[string]string{}},
			FWVersion: d.FWVer, PSID: d.PSID, PartNumber: d.PartNumber, Serial: d.Serial, Model: d.HCAType,
			NUMANode: d.NUMANode, Pending: []plan.Pending{}, GPUAffinity: append([]inventory.Affinity{}, d.GPUAffinity...),
			Bridges: append([]string{}, d.Bridges...),
		}
		seen := map[string]bool{}
		for _, p := range d.Ports {
			f.LinkLayers = append(f.LinkLayers, string(p.LinkLayer))
			if p.GUID != "" {
				f.GUIDs.Ports[strconv.Itoa(p.Num)] = p.GUID
			}
			for _, n := range p.Netdevs {
				if !seen[n] {
					seen[n] = true
					f.Netdevs = append(f.Netdevs, n)
				}
			}
		}
		sort.Strings(f.Netdevs)
		for _, p := range pending {
			if d.PCI != "" && slotOf(p.Address.Key) == slotOf(d.PCI) {
				f.Pending = append(f.Pending, p)
			}
		}
		doc.Devices = append(doc.Devices, f)
	}
	return doc
}

// slotOf is a PCI address without its function: the card.
func slotOf(pci string) string {
	if i := strings.LastIndexByte(pci, '.'); i >= 0 {
		return pci[:i]
	}
	return pci
}

func (a *app) factsText(doc FactsDoc) {
	out := a.env.Stdout
	if len(doc.Devices) == 0 {
		fmt.Fprintln(out, "No RDMA devices.")
		return
	}
	for i, d := range doc.Devices {
		if i > 0 {
			fmt.Fprintln(out)
		}
		pci := d.PCI
		if pci == "" {
			pci = "no PCI address"
		}
		fmt.Fprintf(out, "%s (%s)\n", d.RDMA, pci)
		numa := strconv.Itoa(d.NUMANode)
		if d.NUMANode < 0 {
			numa = "none"
		}
		for _, kv := range [][2]string{
			{"netdevs", strings.Join(d.Netdevs, " ")},
			{"link layers", strings.Join(d.LinkLayers, " ")},
			{"node GUID", d.GUIDs.Node},
			{"firmware", d.FWVersion},
			{"PSID", d.PSID},
			{"part number", d.PartNumber},
			{"serial", d.Serial},
			{"model", d.Model},
			{"NUMA node", numa},
		} {
			if kv[1] != "" {
				fmt.Fprintf(out, "  %-12s %s\n", kv[0]+":", kv[1])
			}
		}
		for _, g := range d.GPUAffinity {
			fmt.Fprintf(out, "  GPU:         %s %s\n", g.GPU, g.Relation)
		}
		for _, p := range d.Pending {
			v := plan.TextValues(p.Current, p.NextBoot)
			fmt.Fprintf(out, "  pending:     %s %s: %s -> %s (next boot)\n", p.Address, p.Attribute, v[0], v[1])
		}
	}
}
