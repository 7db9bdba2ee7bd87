package cli

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
)

func (a *app) showCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "show [-o yaml|json]",
		Short: "Print the host as a spec (capture a golden config)",
		Long: `Print the discovered RDMA adapters as a spec-shaped YAML document:
each adapter by PCI address (name, node GUID, firmware version in a
comment), each port with its link layer and, under expect, its state and
physical state (rate and netdevs in a comment). -o json prints the full
inventory. Read-only.

` + exitCodesHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := a.host()
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			inv, err := inventory.Discover(cmd.Context(), h)
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			hostname, _ := h.Hostname()
			switch output {
			case "json":
				b, err := json.MarshalIndent(map[string]any{"hostname": hostname, "devices": nonNil(inv.Devices)}, "", "  ")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(a.env.Stdout, "%s\n", b)
				return err
			case "yaml", "":
				b, err := showYAML(hostname, inv)
				if err != nil {
					return err
				}
				_, err = a.env.Stdout.Write(b)
				return err
			}
			return &exitError{code: plan.ExitError, err: fmt.Errorf("unknown output format %q (yaml or json)", output)}
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "yaml", "output format: yaml or json")
	return cmd
}

func nonNil(d []*inventory.Device) []*inventory.Device {
	if d == nil {
		return []*inventory.Device{}
	}
	return d
}

func scalar(v string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Value: v}
}

func quoted(v string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Value: v, Style: yaml.DoubleQuotedStyle}
}

func mapping(kv ...any) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i+1 < len(kv); i += 2 {
		m.Content = append(m.Content, scalar(kv[i].(string)), kv[i+1].(*yaml.Node))
	}
	return m
}

// showYAML renders the inventory as a spec. Devices are selected by PCI
// address (stable across reboots), software devices by name; the rest of
// each identity goes in comments so the document validates as a spec.
func showYAML(hostname string, inv *inventory.Inventory) ([]byte, error) {
	devs := &yaml.Node{Kind: yaml.SequenceNode}
	for _, d := range inv.Devices {
		var dev *yaml.Node
		if d.PCI != "" {
			dev = mapping("pci", quoted(d.PCI))
		} else {
			dev = mapping("name", scalar(d.Name))
		}
		var info []string
		info = append(info, d.Name)
		if d.NodeGUID != "" {
			info = append(info, "node_guid "+d.NodeGUID)
		}
		if d.FWVer != "" {
			info = append(info, "fw "+d.FWVer)
		}
		if d.HCAType != "" {
			info = append(info, d.HCAType)
		}
		if d.Parent != "" {
			info = append(info, "netdev "+d.Parent)
		}
		dev.Content[0].LineComment = strings.Join(info, ", ")
		ports := &yaml.Node{Kind: yaml.SequenceNode}
		for _, p := range d.Ports {
			pn := mapping("port", scalar(strconv.Itoa(p.Num)))
			var pinfo []string
			if p.Rate != "" {
				pinfo = append(pinfo, "rate "+p.Rate)
			}
			if len(p.Netdevs) > 0 {
				pinfo = append(pinfo, "netdev "+strings.Join(p.Netdevs, " "))
			}
			if p.LinkLayer == "InfiniBand" {
				pinfo = append(pinfo, fmt.Sprintf("lid 0x%x, sm_lid 0x%x", p.LID, p.SMLID))
			}
			pn.Content[0].LineComment = strings.Join(pinfo, ", ")
			if p.LinkLayer == "InfiniBand" || p.LinkLayer == "Ethernet" {
				pn.Content = append(pn.Content, scalar("link_layer"), scalar(p.LinkLayer))
			}
			exp := mapping()
			if p.State != "" {
				exp.Content = append(exp.Content, scalar("state"), scalar(p.State))
			}
			if p.PhysState != "" {
				exp.Content = append(exp.Content, scalar("phys_state"), scalar(p.PhysState))
			}
			if len(exp.Content) > 0 {
				pn.Content = append(pn.Content, scalar("expect"), exp)
			}
			ports.Content = append(ports.Content, pn)
		}
		if len(ports.Content) > 0 {
			dev.Content = append(dev.Content, scalar("ports"), ports)
		}
		devs.Content = append(devs.Content, dev)
	}
	doc := mapping("version", scalar("1"))
	if hostname != "" {
		doc.Content = append(doc.Content, scalar("host"), mapping("hostname", scalar(hostname)))
	}
	if len(devs.Content) > 0 {
		doc.Content = append(doc.Content, scalar("devices"), devs)
	}
	doc.HeadComment = "Captured by rdmaform show."
	return yaml.Marshal(doc)
}
