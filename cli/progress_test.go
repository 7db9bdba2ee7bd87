package cli

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// clockedProgress is a live progress on a fake clock: step moves the
// clock on by d, ticks, and waits until the redraw ends with s.
func clockedProgress(t *testing.T) (p *liveProgress, out *syncBuffer, step func(d time.Duration, s string)) {
	out = &syncBuffer{}
	tick := make(chan time.Time)
	clock := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	p = newLiveProgress(out, tick, now)
	step = func(d time.Duration, s string) {
		t.Helper()
		mu.Lock()
		clock = clock.Add(d)
		c := clock
		mu.Unlock()
		tick <- c
		// A tick is handled by the goroutine: wait for its redraw to land.
		for i := 0; i < 1000 && !strings.HasSuffix(out.String(), s); i++ {
			time.Sleep(time.Millisecond)
		}
	}
	return p, out, step
}

// TestLiveProgress: on a terminal the change in progress stays on one
// line with its elapsed time, redrawn at each tick, and its outcome
// replaces it; other lines pass through.
func TestLiveProgress(t *testing.T) {
	p, out, step := clockedProgress(t)
	fmt.Fprintf(p, "firmware[0000:3b:00.0]: updating...\n")
	step(3*time.Second, "updating... 3s")
	step(2*time.Second, "updating... 5s")
	fmt.Fprintf(p, "firmware[0000:3b:00.0]: updated after 5.2s\n")
	fmt.Fprintf(p, "ipoib[ib0]: skipped (depends on x, which failed)\n")
	fmt.Fprintf(p, "ipoib[ib1]: creating...\n")
	p.Close()

	want := "firmware[0000:3b:00.0]: updating..." +
		clearLine + "firmware[0000:3b:00.0]: updating... 3s" +
		clearLine + "firmware[0000:3b:00.0]: updating... 5s" +
		clearLine + "firmware[0000:3b:00.0]: updated after 5.2s\n" +
		"ipoib[ib0]: skipped (depends on x, which failed)\n" +
		"ipoib[ib1]: creating...\n"
	if got := out.String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestQuietVerbose: -v logs each external command with its duration on
// stderr; -q leaves stderr empty on success (no progress, no remarks);
// the two exclude each other; commands that do not read the host have
// neither.
func TestQuietVerbose(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vpi")
	run := func(want int, args ...string) (string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		if code := Run(args, Env{Stdout: &out, Stderr: &errb, Environ: []string{"NO_COLOR=1"}}); code != want {
			t.Fatalf("rdmaform %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out.String(), errb.String())
		}
		return out.String(), errb.String()
	}
	run(0, "sim", "new", dir, "--profile", "cx6-vpi-ib")
	spec := "../examples/ib-to-eth.yaml"

	_, stderr := run(2, "--sim", dir, "plan", "-v", "-f", spec)
	if !regexp.MustCompile(`(?m)^rdmaform: ran mlxconfig -d 0000:3b:00.0 -e q LINK_TYPE_P1 \([0-9.]+m?s, exit 0\)$`).MatchString(stderr) {
		t.Errorf("plan -v does not log the firmware query:\n%s", stderr)
	}
	_, stderr = run(2, "--sim", dir, "plan", "-f", spec)
	if stderr != "" {
		t.Errorf("plan without -v wrote to stderr:\n%s", stderr)
	}

	out, stderr := run(3, "--sim", dir, "apply", "--yes", "-q", "-f", spec)
	if stderr != "" {
		t.Errorf("apply -q wrote to stderr:\n%s", stderr)
	}
	if !strings.Contains(out, "Apply: 1 applied, 0 failed, 0 skipped.") {
		t.Errorf("apply -q lost its result:\n%s", out)
	}
	_, stderr = run(3, "--sim", dir, "status", "--verbose")
	if !strings.Contains(stderr, "rdmaform: ran mlxconfig") {
		t.Errorf("status --verbose logged no command:\n%s", stderr)
	}

	_, stderr = run(1, "--sim", dir, "plan", "-q", "-v", "-f", spec)
	if !strings.Contains(stderr, "[quiet verbose] were all set") {
		t.Errorf("-q -v together: %s", stderr)
	}
	_, stderr = run(1, "validate", "-v", "-f", spec)
	if !strings.Contains(stderr, "unknown shorthand flag: 'v'") {
		t.Errorf("validate -v: %s", stderr)
	}
}

// TestColor: colours only on a terminal, and never with NO_COLOR set,
// --no-color or TERM=dumb.
func TestColor(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "roce")
	if code := Run([]string{"sim", "new", dir, "--profile", "cx5-roce"}, Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}); code != 0 {
		t.Fatal("sim new failed")
	}
	for _, tt := range []struct {
		name  string
		tty   bool
		env   []string
		flags []string
		color bool
	}{
		{"terminal", true, []string{"TERM=xterm-256color"}, nil, true},
		{"terminal, NO_COLOR empty", true, []string{"NO_COLOR="}, nil, true},
		{"not a terminal", false, nil, nil, false},
		{"NO_COLOR=1", true, []string{"NO_COLOR=1"}, nil, false},
		{"TERM=dumb", true, []string{"TERM=dumb"}, nil, false},
		{"--no-color", true, nil, []string{"--no-color"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			args := append(append([]string{"--sim", dir}, tt.flags...), "plan", "-f", "../examples/roce.yaml")
			if code := Run(args, Env{Stdout: &out, Stderr: &bytes.Buffer{}, Environ: tt.env, StdoutTTY: tt.tty}); code != 2 {
				t.Fatalf("plan: exit %d, want 2\n%s", code, out.String())
			}
			if got := strings.Contains(out.String(), "\x1b["); got != tt.color {
				t.Errorf("colour %v, want %v:\n%q", got, tt.color, out.String())
			}
		})
	}
}

// TestLiveProgressNamesEveryChangeInFlight: changes in flight at once
// (parallel firmware sets, one per card) are a block of lines, one per
// change, each redrawn with its elapsed time; an outcome takes its own
// line out of the block and the others stay.
func TestLiveProgressNamesEveryChangeInFlight(t *testing.T) {
	p, out, step := clockedProgress(t)
	fmt.Fprintf(p, "firmware[0000:3b:00.0]: updating...\n")
	fmt.Fprintf(p, "firmware[0000:5e:00.0]: updating...\n")
	step(2*time.Second, "5e:00.0]: updating... 2s")
	fmt.Fprintf(p, "firmware[0000:3b:00.0]: updated (effective after reboot) after 2.1s\n")
	fmt.Fprintf(p, "firmware[0000:5e:00.0]: updated (effective after reboot) after 2.2s\n")
	p.Close()

	const up1 = "\r\x1b[1A\x1b[J" // back to the block's first line, clear below
	want := "firmware[0000:3b:00.0]: updating..." +
		clearLine + "firmware[0000:3b:00.0]: updating...\nfirmware[0000:5e:00.0]: updating..." +
		up1 + "firmware[0000:3b:00.0]: updating... 2s\nfirmware[0000:5e:00.0]: updating... 2s" +
		up1 + "firmware[0000:3b:00.0]: updated (effective after reboot) after 2.1s\nfirmware[0000:5e:00.0]: updating... 2s" +
		clearLine + "firmware[0000:5e:00.0]: updated (effective after reboot) after 2.2s\n"
	if got := out.String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestReadProgress: on a terminal, plan and show put each command that
// reads the host in flight on stderr while it runs (the firmware query
// names its card) and take the block away before the result; off a
// terminal, and with -q, stderr stays empty.
func TestReadProgress(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vpi")
	if code := Run([]string{"sim", "new", dir, "--profile", "cx6-vpi-ib"}, Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}); code != 0 {
		t.Fatal("sim new")
	}
	const spec = "../examples/ib-to-eth.yaml"
	for _, tc := range []struct {
		args []string
		tty  bool
		want int
	}{
		{[]string{"--sim", dir, "plan", "-f", spec}, true, 2},
		{[]string{"--sim", dir, "show"}, true, 0},
		{[]string{"--sim", dir, "plan", "-f", spec}, false, 2},
		{[]string{"--sim", dir, "plan", "-q", "-f", spec}, true, 2},
	} {
		var stdout, stderr bytes.Buffer
		code := Run(tc.args, Env{Stdout: &stdout, Stderr: &stderr, StderrTTY: tc.tty, Environ: []string{"NO_COLOR=1"}})
		name := fmt.Sprintf("%s (terminal: %v)", strings.Join(tc.args[2:], " "), tc.tty)
		if code != tc.want {
			t.Fatalf("%s: exit %d\n%s%s", name, code, stdout.String(), stderr.String())
		}
		live := tc.tty && !strings.Contains(strings.Join(tc.args, " "), " -q")
		if !live {
			if stderr.Len() != 0 {
				t.Errorf("%s: stderr %q, want nothing", name, stderr.String())
			}
			continue
		}
		e := stderr.String()
		query := regexp.MustCompile(`reading the host: \S*(mlxconfig|mstconfig) -d 0000:3b:00\.0 [^\r\n]*\.\.\.`)
		if !query.MatchString(e) {
			t.Errorf("%s: no firmware query of 0000:3b:00.0 in flight on stderr:\n%q", name, e)
		}
		if !strings.HasSuffix(e, clearLine) && !regexp.MustCompile(`\x1b\[J$`).MatchString(e) {
			t.Errorf("%s: the block is still on screen at the end: %q", name, e[max(0, len(e)-200):])
		}
		if strings.Contains(stdout.String(), "reading the host") {
			t.Errorf("%s: progress on stdout", name)
		}
	}
}

// TestLiveProgressKeepsStart: a change in flight that says how far it is
// (a burn's percentage) is redrawn with the new text and the elapsed time
// since it started, not since its last report.
func TestLiveProgressKeepsStart(t *testing.T) {
	p, out, step := clockedProgress(t)
	fmt.Fprintf(p, "firmware_image[0000:3b:00.0]: updating...\n")
	step(3*time.Second, "updating... 3s")
	fmt.Fprintf(p, "firmware_image[0000:3b:00.0]: Burning FW image without signatures 40%%...\n")
	want := "Burning FW image without signatures 40%... 5s"
	step(2*time.Second, want)
	if got := out.String(); !strings.HasSuffix(got, want) {
		t.Errorf("got %q, want it to end with %q", got, want)
	}
	p.Close()
}
