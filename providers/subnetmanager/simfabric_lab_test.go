package subnetmanager

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/smlab"
	"github.com/rdmaform/rdmaform/internal/testlab/systemdlab"
	"github.com/rdmaform/rdmaform/inventory"
)

// TestSimMatchesFabric: the simulator's subnet manager (sim/opensm.go,
// its own reading of opensm) and the real opensm on the lab's fabric do
// the same with the same spec: after rdmaform applies it to each, the
// subnet manager's own port has the same P_Key table, and sminfo the same
// priority and state. SELF stands for the host's port; SMPORT is replaced
// by its GUID on each side.
func TestSimMatchesFabric(t *testing.T) {
	f := smlab.Start(t)
	l := systemdlab.Start(t)
	a := newLabHost(t, f, l, "Hca1")
	a.start(t)
	f.WaitSMInfo(t, "Hca1", regexp.MustCompile(`SMINFO_MASTER`), 30*time.Second)
	_, s := simSM(t, "debian")
	simGUID := "0xb8599f030022626e" // mlx5_0's, the simulated host's first InfiniBand port
	other := f.PortGUID(t, "Hca2")

	specs := []struct{ name, body string }{
		{"priority, partitions left out", "  priority: 3\n"},
		{"full by GUID, limited for all", "  priority: 5\n  partitions:\n    - {name: storage, pkey: 0x8002, members: [{guid: SMPORT, membership: full}, {guid: all_cas, membership: limited}]}\n"},
		{"limited only", "  priority: 5\n  partitions:\n    - {name: storage, pkey: 0x0002, members: [{guid: all, membership: limited}]}\n"},
		{"default membership", "  priority: 5\n  partitions:\n    - {name: s, pkey: 0x0004, default_membership: full, members: [{guid: self}]}\n    - {name: t, pkey: 0x0005, members: [{guid: self}]}\n"},
		{"another port only", "  priority: 7\n  partitions:\n    - {name: s, pkey: 0x0006, members: [{guid: " + other + ", membership: full}]}\n"},
		{"the default partition limited", "  priority: 7\n  partitions:\n    - {name: Default, pkey: 0x7fff, members: [{guid: all, membership: limited}]}\n    - {name: s, pkey: 0x0006, members: [{guid: all, membership: full}]}\n"},
		{"both", "  priority: 7\n  options: {allow_both_pkeys: true}\n  partitions:\n    - {name: s, pkey: 0x0008, members: [{guid: SMPORT, membership: both}]}\n"},
	}
	for _, sp := range specs {
		t.Run(sp.name, func(t *testing.T) {
			src := "version: 1\nsubnet_manager:\n  options: {sminfo_polling_timeout: 500, polling_retry_number: 2}\n" + sp.body
			if strings.Contains(sp.body, "options:") {
				src = "version: 1\nsubnet_manager:\n" + sp.body
			}
			a.applyThenEmpty(t, strings.ReplaceAll(src, "SMPORT", a.guid))
			simApplyThenEmpty(t, s, strings.ReplaceAll(src, "SMPORT", simGUID))

			real, err := ParsePKeys(f.PKeys(t, "Hca1"))
			if err != nil {
				t.Fatal(err)
			}
			simulated, err := inventory.ReadPKeys(s.FS, "mlx5_0", 1)
			if err != nil {
				t.Fatal(err)
			}
			if !cmp.Equal(real, simulated) {
				t.Errorf("the SM port's P_Key table: real %s, simulated %s", formatPKeys(real), formatPKeys(simulated))
			}
			realInfo, err := ParseSMInfo(f.WaitSMInfo(t, "Hca1", regexp.MustCompile(`SMINFO_`), 10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.Runner.Run(context.Background(), host.Cmd{Args: []string{"sminfo"}})
			if err != nil {
				t.Fatal(err)
			}
			simInfo, err := ParseSMInfo(string(res.Stdout))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := fmt.Sprint(simInfo.Priority, simInfo.State), fmt.Sprint(realInfo.Priority, realInfo.State); got != want {
				t.Errorf("sminfo: real %s, simulated %s", want, got)
			}
		})
	}
}
