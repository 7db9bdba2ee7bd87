package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers"
	"github.com/rdmaform/rdmaform/schema"
	"github.com/rdmaform/rdmaform/sim"
)

// PlanRun is one `rdmaform plan` on a simulated host.
type PlanRun struct {
	Wall  time.Duration
	Exit  int
	Calls []string // tool command lines the plan ran
}

var callFiles atomic.Int64

// Plan runs `rdmaform --sim DIR plan -f -` in this process, exactly as the
// command line does, with the spec on stdin, and records the emulated
// tool runs (RDMAFORM_SIM_CALLS). Exit 2 (changes needed) is the expected
// answer for the benchmark specs.
func Plan(ctx context.Context, dir string, spec []byte) (PlanRun, error) {
	calls := filepath.Join(dir, fmt.Sprintf("bench-calls-%d", callFiles.Add(1)))
	var stderr bytes.Buffer
	env := cli.Env{Stdin: bytes.NewReader(spec), Stdout: io.Discard, Stderr: &stderr,
		Environ: []string{"RDMAFORM_SIM_CALLS=" + calls, "NO_COLOR=1"}, Ctx: ctx}
	start := time.Now()
	code := cli.Run([]string{"--sim", dir, "plan", "-f", "-"}, env)
	r := PlanRun{Wall: time.Since(start), Exit: code}
	if code != plan.ExitChanges && code != plan.ExitOK {
		return r, fmt.Errorf("rdmaform plan: exit %d: %s", code, stderr.String())
	}
	b, err := host.ReadLocalFile(calls, nil)
	if err != nil && !errors.Is(err, fs.ErrNotExist) { // no file: no tool ran
		return r, fmt.Errorf("reading the recorded tool runs: %w", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" {
			r.Calls = append(r.Calls, l)
		}
	}
	return r, nil
}

// Sequential is the by-hand baseline: one `mlxconfig -d DEV q NAMES` per
// adapter function, each after the previous one finished, as a shell loop
// over the adapters runs them. It returns the loop's wall time.
//
// Equivalent to: for d in $FUNCTIONS; do mlxconfig -d $d q LINK_TYPE_P1 ...; done
func Sequential(ctx context.Context, s *sim.Sim, targets []FirmwareTarget) (time.Duration, error) {
	start := time.Now()
	for _, t := range targets {
		res, err := s.RunTool(ctx, append([]string{"mlxconfig", "-d", t.PCI, "q"}, t.Params...))
		if err != nil {
			return 0, fmt.Errorf("mlxconfig -d %s q: %w\n%s", t.PCI, err, res.Stdout)
		}
	}
	return time.Since(start), nil
}

// Runs counts tool runs by program, and the mlxconfig -v probes apart.
type Runs struct {
	Mlxconfig int // every mlxconfig run
	Probe     int // of which mlxconfig -v (tool detection)
	Nmcli     int
	Other     int
}

// CountRuns counts a plan's recorded tool runs.
func CountRuns(calls []string) Runs {
	var r Runs
	for _, c := range calls {
		switch prog, _, _ := strings.Cut(c, " "); prog {
		case "mlxconfig":
			r.Mlxconfig++
			if c == "mlxconfig -v" {
				r.Probe++
			}
		case "nmcli":
			r.Nmcli++
		default:
			r.Other++
		}
	}
	return r
}

// Apply runs `rdmaform --sim DIR apply --yes -f -` in this process.
func Apply(ctx context.Context, dir string, spec []byte) error {
	var stderr bytes.Buffer
	env := cli.Env{Stdin: bytes.NewReader(spec), Stdout: io.Discard, Stderr: &stderr, Environ: []string{"NO_COLOR=1"}, Ctx: ctx}
	if code := cli.Run([]string{"--sim", dir, "apply", "--yes", "-f", "-"}, env); code != plan.ExitOK && code != plan.ExitReboot {
		return fmt.Errorf("rdmaform apply: exit %d: %s", code, stderr.String())
	}
	return nil
}

// Validate is what `rdmaform validate` does to a spec, without the
// optional parameter-database check: load with positions, then every
// host-independent check.
func Validate(b *testing.B, spec []byte) {
	b.ReportAllocs()
	b.SetBytes(int64(len(spec)))
	for b.Loop() {
		if _, rep := schema.Parse("big.yaml", spec); len(rep) > 0 {
			b.Fatalf("spec: %v", rep[0])
		}
	}
}

// PlanBuild is the plan proper: discovery of the simulated host by every
// provider, the diff in stage order, and the text rendering, for a spec
// already validated (Validate measures that).
func PlanBuild(b *testing.B, s *sim.Sim, spec []byte) {
	parsed, rep := schema.Parse("big.yaml", spec)
	if len(rep) > 0 {
		b.Fatalf("spec: %v", rep[0])
	}
	h, err := s.Host()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := plan.Build(ctx, h, parsed, providers.All())
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Plan.Errors) > 0 {
			b.Fatalf("plan findings: %v", res.Plan.Errors[0])
		}
		if err := plan.WriteText(io.Discard, res.Plan, plan.TextOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func cardsName(n int) string { return fmt.Sprintf("cards=%d", n) }

// Total adds up resources by kind.
func Total(resources map[string]int) int {
	n := 0
	for _, v := range resources {
		n += v
	}
	return n
}

// ApplyRun is one timed apply.
type ApplyRun struct {
	Wall  time.Duration
	Stage time.Duration // first firmware set started to last one done
}

// ApplyTimed runs `rdmaform --sim DIR apply --yes -f -` in this process,
// timing the firmware stage from its progress lines as they arrive.
func ApplyTimed(ctx context.Context, dir string, spec []byte) (ApplyRun, error) {
	wall, stage, err := timed(ctx, spec, []string{"--sim", dir, "apply", "--yes", "-f", "-"}, "firmware[", " after ", plan.ExitOK, plan.ExitReboot)
	return ApplyRun{Wall: wall, Stage: stage}, err
}

// timed runs rdmaform with args and spec on stdin in this process, and
// times its stage from its progress lines as they arrive: from the
// first line starting with prefix and ending in "..." to the last one
// holding end. ok are the exit codes of a run that went as it should.
func timed(ctx context.Context, spec []byte, args []string, prefix, end string, ok ...int) (wall, stage time.Duration, err error) {
	tw := &stampWriter{}
	env := cli.Env{Stdin: bytes.NewReader(spec), Stdout: io.Discard, Stderr: tw, Environ: []string{"NO_COLOR=1"}, Ctx: ctx}
	start := time.Now()
	code := cli.Run(args, env)
	wall = time.Since(start)
	if !slices.Contains(ok, code) {
		return wall, 0, fmt.Errorf("rdmaform %s: exit %d: %s", args[2], code, tw.text())
	}
	var first, last time.Time
	for _, l := range tw.lines {
		if !strings.HasPrefix(l.text, prefix) {
			continue
		}
		if strings.HasSuffix(l.text, "...") && first.IsZero() {
			first = l.at
		}
		if strings.Contains(l.text, end) {
			last = l.at
		}
	}
	if first.IsZero() || last.IsZero() {
		return wall, 0, fmt.Errorf("rdmaform %s printed no %q progress lines:\n%s", args[2], prefix, tw.text())
	}
	return wall, last.Sub(first), nil
}

// stampWriter keeps each line written with the time it arrived.
type stampWriter struct {
	mu    sync.Mutex
	part  string
	lines []stamped
}

type stamped struct {
	at   time.Time
	text string
}

func (w *stampWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	w.part += string(b)
	for {
		i := strings.IndexByte(w.part, '\n')
		if i < 0 {
			break
		}
		w.lines = append(w.lines, stamped{now, w.part[:i]})
		w.part = w.part[i+1:]
	}
	return len(b), nil
}

func (w *stampWriter) text() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	for _, l := range w.lines {
		b.WriteString(l.text + "\n")
	}
	return b.String() + w.part
}

// ActivateRun is one timed activate.
type ActivateRun struct {
	Wall  time.Duration
	Stage time.Duration // first firmware reset started to last one ended
}

// ActivateTimed runs `rdmaform --sim DIR activate --by fw-reset -f -` in
// this process, timing the reset stage from its progress lines as they
// arrive.
func ActivateTimed(ctx context.Context, dir string, spec []byte) (ActivateRun, error) {
	wall, stage, err := timed(ctx, spec, []string{"--sim", dir, "activate", "--by", "fw-reset", "-f", "-"}, "firmware reset ", " ended after ", plan.ExitOK)
	return ActivateRun{Wall: wall, Stage: stage}, err
}
