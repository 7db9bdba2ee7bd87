package bench

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/fleet"
)

// Fleet sizes of the waves benchmark: hosts, leaves (failure domains)
// and fabrics (each with two subnet manager hosts).
const (
	FleetHosts   = 10000
	FleetLeaves  = 250
	FleetFabrics = 4
)

// FleetInventory is rdmaform's inventory of n hosts, spread over leaves
// domains, two subnet manager hosts per fabric, every tenth host with
// nothing pending.
func FleetInventory(n, leaves, fabrics int) []byte {
	var b bytes.Buffer
	b.WriteString("hosts:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - {name: node%05d, domain: leaf%03d, fabric: ib%d", i, i%leaves, i%fabrics)
		if i < 2*fabrics {
			b.WriteString(", roles: [sm]")
		}
		if i%10 == 9 {
			b.WriteString(", pending: false")
		}
		b.WriteString("}\n")
	}
	return b.Bytes()
}

// Waves is `rdmaform waves` without its output: read the inventory and
// cut it into waves of at most 5% of the hosts, one per leaf.
func Waves(b *testing.B, inv []byte) {
	b.ReportAllocs()
	b.SetBytes(int64(len(inv)))
	p := fleet.Policy{MaxUnavailable: fleet.Limit{Percent: 5}, MaxPerDomain: 1}
	for b.Loop() {
		i, err := fleet.ReadInventory("fleet.yaml", inv)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := fleet.Plan(i, p); err != nil {
			b.Fatal(err)
		}
	}
}

// WavesJSON is the whole command in this process, -o json included.
func WavesJSON(b *testing.B, file string) {
	b.ReportAllocs()
	for b.Loop() {
		if code := cli.Run([]string{"waves", "--inventory", file, "--max-unavailable", "5%", "-o", "json"}, cli.Env{Stdout: io.Discard, Stderr: io.Discard}); code != 0 {
			b.Fatalf("rdmaform waves: exit %d", code)
		}
	}
}
