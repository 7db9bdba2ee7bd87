package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers"
	"github.com/rdmaform/rdmaform/providers/firmware"
	"github.com/rdmaform/rdmaform/schema"
)

func (a *app) showCmd() *cobra.Command {
	var fwParams []string
	cmd := &cobra.Command{
		Use:   "show [-o yaml|json] [--firmware P1,P2]",
		Short: "Print the host as a spec (capture a golden config)",
		Long: `Print the host as a complete spec of every section rdmaform manages, so
that 'rdmaform show > golden.yaml' captures a golden config and
'rdmaform plan -f golden.yaml' on the same host plans nothing (exit 0;
3 while firmware values wait for a reboot):

  host         the hostname
  devices      every RDMA device, PCI adapters by PCI address and software
               devices by name (name, node GUID, firmware version, HCA type
               in a comment); firmware parameters (--firmware, default
               ` + strings.Join(firmware.CaptureParams, ", ") + ` where the
               card has them, and ` + strings.Join(firmware.GPUDirectCaptureParams, ", ") + `
               on a function with GPUs on its PCIe path; Next Boot values);
               SR-IOV of a PF with VFs
               enabled (num_vfs, drivers_autoprobe, what was set on single
               VFs); each port's link layer, mlx4 port type, RoCE mode and
               ToS (Ethernet ports, when the rdma_cm module is loaded), qos
               (Ethernet ports: DCB trust, DSCP map, PFC, ETS, pause, ECN,
               as far as the driver and dcb/ethtool tell), and under expect
               its state, physical state and rate
  ipoib        every NetworkManager connection of type infiniband
  rxe          every Soft-RoCE link
  interfaces   the netdevs of RDMA ports and of Soft-RoCE links (not the
               management NIC, bridges or container interfaces): state,
               MTU and static addresses, unless an ipoib connection owns them
  modules      what /etc/modules-load.d/rdmaform.conf lists
  services     the RDMA stack's units that are installed (opensm, ibacm,
               srp_daemon, rdma-ndd, iwpmd)
  gpu          peer_memory: nvidia-peermem when nvidia_peermem is loaded or
               rdmaform's modules-load.d file loads it (dma-buf needs
               nothing on the host and is not captured); driver_params
               from rdmaform's /etc/modprobe.d/rdmaform-nvidia.conf

persistence is left out: the boot unit holds a copy of the spec it was
installed with, which no captured spec matches byte for byte.

Read-only: nothing is loaded, mounted or written; reading rdma_cm creates
a device's configfs group and removes it again. -o json prints the same
spec as JSON (which validate and plan read too).

` + exitCodesHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := a.host()
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			defer a.recordSimCalls()
			stop := a.readProgress(h)
			c, capErr := plan.Capture(cmd.Context(), h, providers.All(), plan.CaptureOptions{FirmwareParams: fwParams})
			stop()
			if c == nil {
				return &exitError{code: plan.ExitError, err: capErr}
			}
			var b []byte
			if a.output == "json" {
				b, err = showJSON(c.Spec)
			} else {
				b, err = showYAML(c)
			}
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			if _, err := a.env.Stdout.Write(b); err != nil {
				return err
			}
			a.wroteDoc = true
			for i := range c.Spec.Devices {
				kind, value := c.Spec.Devices[i].Selector()
				for _, n := range c.Notes.Device(i) {
					fmt.Fprintf(a.env.Stderr, "rdmaform: note: device %s %s: %s\n", kind, value, n)
				}
			}
			if capErr != nil {
				return &exitError{code: plan.ExitError, err: fmt.Errorf("part of the host could not be read and is missing from the capture:\n%v", capErr)}
			}
			return nil
		},
	}
	a.outputFlag(cmd, "yaml", "yaml", "json")
	a.hostFlags(cmd)
	cmd.Flags().StringSliceVar(&fwParams, "firmware", nil, "firmware parameters to capture, comma-separated (`P1,P2`); one an adapter lacks is left out of it and noted")
	return cmd
}

// showYAML renders the captured spec with each device's identity and each
// port's live details in comments, which a spec ignores.
func showYAML(c *plan.Captured) ([]byte, error) {
	doc := schema.Node(c.Spec)
	doc.HeadComment = "Captured by rdmaform show."
	if devs := schema.MappingValue(doc, "devices"); devs != nil {
		for i, dn := range devs.Content {
			if i >= len(c.Inv.Devices) || len(dn.Content) == 0 {
				break
			}
			d := c.Inv.Devices[i]
			dn.Content[0].LineComment = deviceComment(d)
			if notes := c.Notes.Device(i); len(notes) > 0 {
				note := "left out: " + strings.Join(notes, "; ")
				if k := mappingKey(dn, "firmware"); k != nil {
					k.HeadComment = note
				} else {
					dn.Content[0].LineComment += "; " + note
				}
			}
			ports := schema.MappingValue(dn, "ports")
			if ports == nil {
				continue
			}
			for j, pn := range ports.Content {
				if j < len(d.Ports) && len(pn.Content) > 0 {
					pn.Content[0].LineComment = portComment(d.Ports[j])
				}
			}
		}
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// mappingKey is the key node of key in a mapping node, or nil.
func mappingKey(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i]
		}
	}
	return nil
}

func deviceComment(d *inventory.Device) string {
	info := []string{d.Name}
	if d.NodeGUID != "" {
		info = append(info, "node_guid "+d.NodeGUID)
	}
	if d.FWVer != "" {
		info = append(info, "fw "+d.FWVer)
	}
	if d.HCAType != "" {
		info = append(info, d.HCAType)
	}
	if d.PSID != "" {
		info = append(info, "psid "+d.PSID)
	}
	if d.PartNumber != "" {
		info = append(info, "part "+d.PartNumber)
	}
	if d.Serial != "" {
		info = append(info, "serial "+d.Serial)
	}
	if d.Parent != "" {
		info = append(info, "netdev "+d.Parent)
	}
	if a := d.AffinityText(); a != "" {
		info = append(info, a)
	}
	return strings.Join(info, ", ")
}

func portComment(p *inventory.Port) string {
	var info []string
	if p.Rate != "" {
		info = append(info, "rate "+p.Rate)
	}
	if len(p.Netdevs) > 0 {
		info = append(info, "netdev "+strings.Join(p.Netdevs, " "))
	}
	if p.LinkLayer == linklayer.InfiniBand {
		info = append(info, fmt.Sprintf("lid 0x%x, sm_lid 0x%x", p.LID, p.SMLID))
	}
	return strings.Join(info, ", ")
}

// showJSON renders the spec as JSON, keys in spec order. Numbers and
// booleans the spec types hold stay numbers and booleans; firmware values
// and P_Keys (0x8002) are strings, which the spec loader reads alike.
func showJSON(s *schema.Spec) ([]byte, error) {
	var b bytes.Buffer
	if err := writeJSON(&b, schema.Node(s)); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func writeJSON(b *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(n.Content[i].Value)
			b.Write(k)
			b.WriteByte(':')
			if err := writeJSON(b, n.Content[i+1]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSON(b, c); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!int":
			if _, err := strconv.Atoi(n.Value); err == nil {
				b.WriteString(n.Value)
				return nil
			}
		case "!!bool":
			b.WriteString(n.Value)
			return nil
		}
		v, _ := json.Marshal(n.Value)
		b.Write(v)
	default:
		return fmt.Errorf("cannot render YAML node kind %d as JSON", n.Kind)
	}
	return nil
}
