package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/rdmaform/rdmaform/schema"
	"github.com/rdmaform/rdmaform/sim"
)

// big is the 2,000-resource host, made once per test binary: rendering
// its ~16,000 sysfs files is the slow part, and it is the simulator's cost.
var big struct {
	once sync.Once
	dir  string
	spec []byte
	err  error
}

func bigHost(tb testing.TB) (dir string, spec []byte) {
	tb.Helper()
	big.once.Do(func() {
		d, err := os.MkdirTemp("", "rdmaform-bench-big-")
		if err != nil {
			big.err = err
			return
		}
		big.dir = filepath.Join(d, "host")
		s, err := BigHost(big.dir, filepath.Join(d, "scratch"))
		if err != nil {
			big.err = err
			return
		}
		var resources map[string]int
		big.spec, resources = BigSpec(s.State())
		if n := Total(resources); n != 2000 {
			big.err = fmt.Errorf("the spec declares %d resources, want 2000: %v", n, resources)
		}
	})
	if big.err != nil {
		tb.Fatal(big.err)
	}
	return big.dir, big.spec
}

func TestMain(m *testing.M) {
	code := m.Run()
	if big.dir != "" {
		os.RemoveAll(filepath.Dir(big.dir))
	}
	os.Exit(code)
}

// TestSpecsValidate: the generated specs pass validation.
func TestSpecsValidate(t *testing.T) {
	st, err := sim.NewState("gpu-node", "bench", 8)
	if err != nil {
		t.Fatal(err)
	}
	conns, err := IPoIBConns(st, 16)
	if err != nil {
		t.Fatal(err)
	}
	for name, spec := range map[string][]byte{"firmware": FirmwareSpec(st), "ipoib": IPoIBSpec(conns)} {
		if _, rep := schema.Parse(name+".yaml", spec); len(rep) > 0 {
			t.Errorf("%s spec: %v\n%s", name, rep, spec)
		}
	}
}

// TestFirmwarePlanRuns: one named query per spec device with firmware
// parameters, whatever the number of adapters (counts, not timings).
func TestFirmwarePlanRuns(t *testing.T) {
	for _, cards := range []int{1, 32} {
		dir := filepath.Join(t.TempDir(), "h")
		s, err := GPUNode(dir, cards, 0)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Plan(context.Background(), dir, FirmwareSpec(s.State()))
		if err != nil {
			t.Fatal(err)
		}
		runs := CountRuns(r.Calls)
		if got, want := runs.Mlxconfig-runs.Probe, 2*cards; got != want {
			t.Errorf("%d cards: %d mlxconfig queries, want %d\n%v", cards, got, want, r.Calls)
		}
	}
}

func BenchmarkValidate2000(b *testing.B) {
	_, spec := bigHost(b)
	Validate(b, spec)
}

func BenchmarkPlan2000(b *testing.B) {
	dir, spec := bigHost(b)
	s, err := sim.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	PlanBuild(b, s, spec)
}

// BenchmarkPlanGPUNode is the whole plan command on gpu-node hosts with no
// tool latency: what rdmaform itself costs around the tool runs.
func BenchmarkPlanGPUNode(b *testing.B) {
	for _, cards := range []int{1, 8, 32} {
		b.Run(cardsName(cards), func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "h")
			s, err := GPUNode(dir, cards, 0)
			if err != nil {
				b.Fatal(err)
			}
			spec := FirmwareSpec(s.State())
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Plan(context.Background(), dir, spec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWaves10000: rdmaform waves on 10,000 hosts over 250 leaves.
func BenchmarkWaves10000(b *testing.B) {
	Waves(b, FleetInventory(FleetHosts, FleetLeaves, FleetFabrics))
}

// BenchmarkFabricSchedule1000: the fabric test's schedule of 1,000 hosts
// of one fabric (999 rounds of 500 pairs).
func BenchmarkFabricSchedule1000(b *testing.B) {
	FabricSchedule(b, FabricInventory(FabricHosts))
}

// BenchmarkFabricScheduleJSON1000: the same, the command with -o json.
func BenchmarkFabricScheduleJSON1000(b *testing.B) {
	file := filepath.Join(b.TempDir(), "fabric.yaml")
	if err := os.WriteFile(file, FabricInventory(FabricHosts), 0o644); err != nil {
		b.Fatal(err)
	}
	FabricScheduleJSON(b, file)
}
