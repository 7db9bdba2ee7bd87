package cli_test

import (
	"context"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/sim"
)

var update = flag.Bool("update", false, "rewrite the expected outputs in scenario files")

func TestMain(m *testing.M) {
	os.Exit(testscript.RunMain(m, map[string]func() int{
		"rdmaform": func() int { return cli.Run(os.Args[1:], cli.OSEnv()) },
		"holdlock": holdLock,
	}))
}

// TestScenarios runs every scenario in testdata/scenarios: one readable
// file each holding the spec, the simulated host, the expected plan, the
// expected tool calls and the expected state after apply; each ends with
// "apply, then plan is empty".
//
// Commands besides testscript's own:
//
//	run CODE PROGRAM ARGS...  run a program, require exit code CODE
//	tree DIR PATH...       print the files below DIR/PATH with their content
func TestScenarios(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/scenarios",
		UpdateScripts: *update,
		Setup: func(env *testscript.Env) error {
			env.Setenv("RDMAFORM_SIM_CALLS", filepath.Join(env.WorkDir, "calls"))
			env.Setenv("NO_COLOR", "1")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"run":      run,
			"tree":     tree,
			"waitfile": waitFile,
		},
		RequireExplicitExec: true,
	})
}

func run(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: run CODE PROGRAM ARGS...")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("run: first argument must be the expected exit code, not %q", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		ts.Fatalf("run: %v", err)
	}
	if got != want {
		ts.Fatalf("%s: exit code %d, want %d", strings.Join(args[1:], " "), got, want)
	}
}

// tree prints every regular file below DIR/PATH (symlinks as links), in
// sorted order, so a scenario can compare a host tree after apply.
func tree(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: tree DIR PATH...")
	}
	root := ts.MkAbs(args[0])
	var lines []string
	for _, p := range args[1:] {
		base := filepath.Join(root, p)
		if _, err := os.Lstat(base); errors.Is(err, os.ErrNotExist) {
			lines = append(lines, p+": (absent)")
			continue
		}
		ts.Check(filepath.Walk(base, func(path string, fi os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			switch {
			case fi.Mode()&os.ModeSymlink != 0:
				target, _ := os.Readlink(path)
				lines = append(lines, rel+" -> "+target)
			case fi.Mode().IsRegular():
				b, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				lines = append(lines, rel+": "+strings.TrimSuffix(string(b), "\n"))
			}
			return nil
		}))
	}
	sort.Strings(lines)
	w := ts.Stdout() // even with no lines: an empty tree is an output too
	for _, l := range lines {
		w.Write([]byte(l + "\n"))
	}
}

// holdLock takes a simulated host's apply lock and holds it until killed:
// a stand-in for an apply that dies while holding it. `holdlock DIR
// READY` also makes the file READY once it holds the lock; `holdlock DIR
// READY RELEASE` exits once the file RELEASE appears.
func holdLock() int {
	s, err := sim.Open(os.Args[1])
	if err != nil {
		return 1
	}
	h, err := s.Host()
	if err != nil {
		return 1
	}
	unlock, err := h.Lock(context.Background(), time.Second, "test holder")
	if err != nil {
		return 1
	}
	// The lock lives as long as its open file, and the file as long as
	// unlock can be reached: dropped, the garbage collector would close
	// the file in the polling loop below and let an apply in (it did,
	// in a full cli run). The deferred call keeps it reachable.
	defer unlock()
	if len(os.Args) > 2 {
		// holdlock DIR READY: READY appears once the lock is held.
		if err := os.WriteFile(os.Args[2], nil, 0o644); err != nil {
			return 1
		}
	}
	if len(os.Args) > 3 {
		// holdlock DIR READY RELEASE: the holder exits (and the
		// kernel releases its lock) once RELEASE appears.
		for {
			if _, err := os.Stat(os.Args[3]); err == nil {
				return 0
			}
			time.Sleep(20 * time.Millisecond)
			// A collection each round: a holder that let its lock
			// become garbage loses it here at once, not by chance.
			runtime.GC()
		}
	}
	// Sleep, not select {}: with no other goroutine the runtime would
	// end the holder as deadlocked (it did on a PATH without some tools).
	for {
		time.Sleep(time.Hour)
	}
}

// waitfile PATH waits up to 20 s for a file to appear (a background
// command reaching a point).
func waitFile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: waitfile PATH")
	}
	p := ts.MkAbs(args[0])
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(p); (err == nil) != neg {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	ts.Fatalf("waitfile %s: timed out", args[0])
}
