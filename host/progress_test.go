package host

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestExecRunnerStreamsProgress: Cmd.Progress gets each line while the
// command runs. The tool prints two percentages as mstflint does ("\r"
// before each: a percentage is known to be whole when the next one
// starts) and then waits until the test has seen the first (a file the
// callback creates): a runner that handed the lines on only at the end
// would keep the tool waiting until its timeout. The output is still
// collected whole.
func TestExecRunnerStreamsProgress(t *testing.T) {
	dir := t.TempDir()
	seen := filepath.Join(dir, "seen")
	tool := filepath.Join(dir, "rdmaform-test-burn")
	script := "#!/bin/sh\nprintf '\\rBurning FW image without signatures -  10%%\\rBurning FW image without signatures -  20%%'\n" +
		"while [ ! -e '" + seen + "' ]; do sleep 0.05; done\n" +
		"printf '\\rBurning FW image without signatures - OK  \\n\\rRestoring signature                     - OK\\n'\nprintf 'tail'\n"
	if err := os.WriteFile(tool, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lines []string
	progress := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, line)
		if strings.HasSuffix(line, "10%") {
			_ = os.WriteFile(seen, nil, 0o644)
		}
	}
	r := &ExecRunner{}
	res, err := r.Run(context.Background(), Cmd{Args: []string{tool}, Timeout: 2 * time.Minute, Progress: progress})
	if err != nil {
		t.Fatalf("the tool never saw its progress line handed on while it ran: %v", err)
	}
	want := []string{"Burning FW image without signatures -  10%", "Burning FW image without signatures -  20%", "Burning FW image without signatures - OK", "Restoring signature                     - OK", "tail"}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("progress lines %q, want %q", lines, want)
	}
	if !strings.HasPrefix(string(res.Stdout), "\rBurning FW image without signatures -  10%\rBurning") || !strings.HasSuffix(string(res.Stdout), "tail") {
		t.Errorf("stdout not collected whole: %q", res.Stdout)
	}
}

// TestLineWriter: lines end at \n or \r, split across writes, trimmed,
// empty ones left out, the rest handed on by Flush.
func TestLineWriter(t *testing.T) {
	var got []string
	w := NewLineWriter(func(l string) { got = append(got, l) })
	for _, p := range []string{"\r a -   0%", "\r a -  5", "0%\r\r\n", "  \n", "b\r\nc"} {
		_, _ = w.Write([]byte(p))
	}
	if want := []string{"a -   0%", "a -  50%", "b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("before Flush: %q, want %q", got, want)
	}
	w.Flush()
	if want := []string{"a -   0%", "a -  50%", "b", "c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after Flush: %q, want %q", got, want)
	}
}
