package bench

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/fabrictest"
	"github.com/rdmaform/rdmaform/fleet"
)

// FabricHosts is the fabric test schedule benchmark's size: one fabric,
// one link layer, so one group of 999 rounds of 500 pairs (the largest
// schedule of 1,000 hosts).
const FabricHosts = 1000

// FabricInventory is rdmaform's inventory of n InfiniBand hosts of one
// fabric.
func FabricInventory(n int) []byte {
	var b bytes.Buffer
	b.WriteString("hosts:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - {name: node%05d, domain: leaf%03d, fabric: ib0, link_layer: InfiniBand}\n", i, i/32)
	}
	return b.Bytes()
}

// FabricSchedule is `rdmaform fabric-test schedule` without its output:
// read the inventory, group the hosts and make the rounds.
func FabricSchedule(b *testing.B, inv []byte) {
	b.ReportAllocs()
	b.SetBytes(int64(len(inv)))
	for b.Loop() {
		i, err := fleet.ReadInventory("fabric.yaml", inv)
		if err != nil {
			b.Fatal(err)
		}
		rounds := fabrictest.Schedule(fabrictest.Groups(i))
		if len(rounds) != len(i.Hosts)-1+len(i.Hosts)%2 {
			b.Fatalf("%d rounds for %d hosts", len(rounds), len(i.Hosts))
		}
	}
}

// FabricScheduleJSON is the whole command in this process, -o json
// included.
func FabricScheduleJSON(b *testing.B, file string) {
	b.ReportAllocs()
	for b.Loop() {
		if code := cli.Run([]string{"fabric-test", "schedule", "--inventory", file, "-o", "json"}, cli.Env{Stdout: io.Discard, Stderr: io.Discard}); code != 0 {
			b.Fatalf("rdmaform fabric-test schedule: exit %d", code)
		}
	}
}
