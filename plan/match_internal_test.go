package plan

import (
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/schema"
)

// TestRailNamesSafeInUdevRule: each name a rail template expands to is
// checked again, on the host, as a netdev name rdmaform writes into a
// udev rule (schema.CheckNetdevName), not by the kernel's rules alone:
// a template that reached the plan without its load check (a spec made
// in code) gives no name holding udev's quote or substitution
// characters, and the 15-byte name of a rail is taken where the 16-byte
// one of the next is refused.
func TestRailNamesSafeInUdevRule(t *testing.T) {
	inv := &inventory.Inventory{}
	for _, pci := range []string{"0000:10:00.0", "0000:10:00.1"} {
		inv.Devices = append(inv.Devices, &inventory.Device{Name: "mlx5_" + pci[len(pci)-1:], PCI: pci, PartNumber: "P1"})
	}
	expand := func(tmpl string, first int) (*schema.Spec, []schema.Finding) {
		spec := &schema.Spec{Devices: []schema.Device{{Match: &schema.Match{PartNumber: "P1"}, Names: &schema.Names{Netdev: tmpl, FirstRail: &first}}}}
		return expandMatches(spec, inv)
	}
	for _, tmpl := range []string{`r{rail}",RUN+="x`, `$kernel{rail}`, `%k{rail}`, `r{rail}\`} {
		x, f := expand(tmpl, 0)
		if len(f) != 2 {
			t.Errorf("template %q: %d findings, want one for each rail: %v", tmpl, len(f), f)
		}
		for _, d := range x.Devices {
			if d.Names != nil && strings.ContainsAny(d.Names.Netdev, `"\$%`) {
				t.Errorf("template %q gave the name %q", tmpl, d.Names.Netdev)
			}
		}
	}
	// Rails 9 and 10: "abcdefghijklmn9" is 15 bytes, "abcdefghijklmn10" 16.
	x, f := expand("abcdefghijklmn{rail}", 9)
	if len(f) != 1 || !strings.Contains(f[0].Message, `rail 10 (mlx5_1 at 0000:10:00.1): "abcdefghijklmn10" is longer than`) {
		t.Errorf("findings %v, want rail 10 refused", f)
	}
	if got := x.Devices[1].Names; got == nil || got.Netdev != "abcdefghijklmn9" {
		t.Errorf("rail 9: %+v, want abcdefghijklmn9", got)
	}
}
