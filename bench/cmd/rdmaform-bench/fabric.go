package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/bench"
	"github.com/rdmaform/rdmaform/internal/testlab/benchlab"
)

// fabric: the fabric test's schedule of 1,000 hosts of one fabric (999
// rounds of 500 pairs), in this process and as the command's process;
// the goal is under a second.
func (r *report) fabric(ctx context.Context, dir string, log io.Writer) error {
	n := bench.FabricHosts
	inv := bench.FabricInventory(n)
	file := filepath.Join(dir, "fabric.yaml")
	if err := benchlab.WriteFile(file, inv); err != nil {
		return err
	}
	rounds, pairs := n-1+n%2, n*(n-1)/2
	sec := section{
		title: fmt.Sprintf("rdmaform fabric-test schedule: %d hosts of one fabric and link layer, %d rounds of %d pairs (%d pairs); the goal: under 1 s", n, rounds, n/2, pairs),
		head:  []string{"what", "time/op", "CPU", "allocs/op", "bytes/op", "peak RSS"},
		notes: []string{"The test's wall time is about rounds × the time of one pair's measurement (its bandwidth and latency runs), plus one such time per retest round: " +
			fmt.Sprintf("%d rounds × 10 s = %s for these hosts.", rounds, (time.Duration(rounds)*10*time.Second).String())},
	}
	fmt.Fprintln(log, "   go benchmarks")
	s := testing.Benchmark(func(b *testing.B) { bench.FabricSchedule(b, inv) })
	j := testing.Benchmark(func(b *testing.B) { bench.FabricScheduleJSON(b, file) })
	if s.N == 0 || j.N == 0 {
		return fmt.Errorf("a benchmark failed (run go test -bench FabricSchedule ./bench for its message)")
	}
	name := strconv.Itoa(n)
	sec.raw = append(sec.raw, "BenchmarkFabricSchedule"+name+"\t"+s.String()+"\t"+s.MemString(), "BenchmarkFabricScheduleJSON"+name+"\t"+j.String()+"\t"+j.MemString())
	sec.rows = append(sec.rows,
		[]string{"BenchmarkFabricSchedule" + name + " (read the inventory + make the rounds)", ms(time.Duration(s.NsPerOp())), "", strconv.FormatInt(s.AllocsPerOp(), 10), mib(s.AllocedBytesPerOp()), ""},
		[]string{"BenchmarkFabricScheduleJSON" + name + " (the command, -o json)", ms(time.Duration(j.NsPerOp())), "", strconv.FormatInt(j.AllocsPerOp(), 10), mib(j.AllocedBytesPerOp()), ""})
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if benchlab.Exists(r.opts.rdmaform) {
		fmt.Fprintln(log, "   rdmaform fabric-test schedule process")
		run, err := benchlab.ExecFresh(ctx, self, []string{r.opts.rdmaform, "fabric-test", "schedule", "--inventory", file, "-o", "json"}, []string{"NO_COLOR=1"}, nil)
		if err != nil {
			return err
		}
		if run.Exit != 0 {
			return fmt.Errorf("rdmaform fabric-test schedule: exit %d\n%s", run.Exit, run.Stderr)
		}
		sec.rows = append(sec.rows, []string{"`rdmaform fabric-test schedule --inventory fabric.yaml -o json` (process)", ms(run.Wall), ms(run.CPU()), "", "", mib(run.MaxRSS)})
	}
	r.sections = append(r.sections, sec)
	return nil
}
