// Command testsum runs `go test -json ...` (its arguments are the
// command) and prints what go test prints without -v: the output of
// failed tests, and each package's closing line ("ok", "FAIL", "?")
// unchanged. Then it says which tests skipped, on two lines that always
// appear:
//
//	N lab tests skipped: PKG.TestName, ...
//	N other tests skipped: PKG.TestName, ...
//
// each followed by the reason of each skip, indented. A lab skip is one
// that need.Skip made (its message begins with need.Marker): a real
// component of this machine is missing, and RDMAFORM_REQUIRE_LAB=1 would
// have failed the test. It exits with go test's exit status.
//
// make test runs it: build/testsum go test -json -count=1 -timeout 60m ./...
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"

	"github.com/rdmaform/rdmaform/internal/testlab/need"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command args (go test -json ...), prints its summary to
// stdout, and returns go test's exit status (2 when it could not run).
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) < 1 {
		fmt.Fprintln(stderr, "usage: testsum go test -json [flags] [packages]")
		return 2
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(stderr, "testsum:", err)
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "testsum:", err)
		return 2
	}
	s := newSummary(stdout)
	if err := s.read(out); err != nil {
		fmt.Fprintln(stderr, "testsum: reading go test's output:", err)
	}
	err = cmd.Wait()
	code := 0
	var xe *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &xe):
		code = xe.ExitCode()
	default:
		fmt.Fprintln(stderr, "testsum:", err)
		code = 2
	}
	s.finish(code != 0)
	return code
}

// event is one line of go test -json (cmd/test2json's TestEvent).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// line is one output line of a test, and the test (full name) it is of.
type line struct {
	test, text string
}

// group is a top-level test with its subtests, held until it ends.
type group struct {
	lines  []line
	failed map[string]bool
}

// skip is one skipped test and why.
type skip struct {
	name, reason string
	lab          bool
}

type summary struct {
	w       io.Writer
	groups  map[string]*group // package + "\x00" + top-level test
	order   map[string][]string
	pending map[string][]line // a test's own lines, for its skip reason
	skips   []skip
}

func newSummary(w io.Writer) *summary {
	return &summary{w: w, groups: map[string]*group{}, order: map[string][]string{}, pending: map[string][]line{}}
}

// read consumes go test -json's output; a line that is not an event is
// printed as it is.
func (s *summary) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1024*1024), 64*1024*1024)
	for sc.Scan() {
		var e event
		if b := sc.Bytes(); len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &e) != nil {
			fmt.Fprintln(s.w, sc.Text())
			continue
		}
		s.event(e)
	}
	return sc.Err()
}

// verboseOnly are the lines go test prints only with -v.
var verboseOnly = []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME"}

func (s *summary) event(e event) {
	switch {
	case e.Action == "build-output":
		io.WriteString(s.w, e.Output)
	case e.Test == "":
		s.packageEvent(e)
	default:
		s.testEvent(e)
	}
}

func (s *summary) packageEvent(e event) {
	switch e.Action {
	case "output":
		// go test without -v leaves out the binary's PASS of a package
		// that passed.
		if e.Output != "PASS\n" {
			io.WriteString(s.w, e.Output)
		}
	case "pass", "fail", "skip":
		// Tests still open when the package ended (a panic, the
		// -timeout) are printed: they are what the failure is about.
		for _, top := range s.order[e.Package] {
			key := e.Package + "\x00" + top
			if g := s.groups[key]; g != nil {
				for _, l := range g.lines {
					io.WriteString(s.w, l.text)
				}
				delete(s.groups, key)
			}
		}
		delete(s.order, e.Package)
	}
}

func (s *summary) testEvent(e event) {
	top, _, _ := strings.Cut(e.Test, "/")
	key := e.Package + "\x00" + top
	g := s.groups[key]
	if g == nil {
		g = &group{failed: map[string]bool{}}
		s.groups[key] = g
		s.order[e.Package] = append(s.order[e.Package], top)
	}
	full := e.Package + "\x00" + e.Test
	switch e.Action {
	case "output":
		for _, p := range verboseOnly {
			if strings.HasPrefix(e.Output, p) {
				return
			}
		}
		g.lines = append(g.lines, line{e.Test, e.Output})
		s.pending[full] = append(s.pending[full], line{e.Test, e.Output})
		return
	case "fail":
		g.failed[e.Test] = true
	case "skip":
		s.skips = append(s.skips, skipOf(e, s.pending[full]))
	case "pass":
	default:
		return
	}
	delete(s.pending, full)
	if e.Test != top {
		return
	}
	if g.failed[top] {
		g.write(s.w, top, 0)
	}
	delete(s.groups, key)
}

// write prints a failed test as go test without -v does: its "--- FAIL"
// line, what it logged, then its failed subtests, each level indented
// four more spaces (go test -json gives every level's lines unindented).
func (g *group) write(w io.Writer, test string, depth int) {
	indent := strings.Repeat("    ", depth)
	var report string
	var logs, children []string
	seen := map[string]bool{}
	for _, l := range g.lines {
		switch {
		case l.test == test && strings.HasPrefix(l.text, "--- "):
			report = l.text
		case l.test == test:
			logs = append(logs, l.text)
		case strings.HasPrefix(l.test, test+"/") && !strings.Contains(l.test[len(test)+1:], "/") && !seen[l.test]:
			seen[l.test] = true
			if g.failed[l.test] {
				children = append(children, l.test)
			}
		}
	}
	io.WriteString(w, indent+report)
	for _, l := range logs {
		io.WriteString(w, indent+l)
	}
	for _, c := range children {
		g.write(w, c, depth+1)
	}
}

// skipOf is a skipped test with its reason: what it printed besides its
// "--- SKIP" line, the file:line of each log line left off.
func skipOf(e event, lines []line) skip {
	sk := skip{name: shortPkg(e.Package) + "." + e.Test}
	var reason []string
	for _, l := range lines {
		t := strings.TrimSpace(l.text)
		if t == "" || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		if i := strings.Index(t, ": "); i > 0 && strings.Contains(t[:i], ".go:") && !strings.Contains(t[:i], " ") {
			t = t[i+2:]
		}
		if strings.HasPrefix(t, need.Marker) {
			sk.lab = true
			t = strings.TrimPrefix(t, need.Marker)
		}
		reason = append(reason, t)
	}
	sk.reason = strings.Join(reason, " ")
	return sk
}

// shortPkg is a package path without the module's (host, cli, ...).
func shortPkg(p string) string {
	const mod = "github.com/rdmaform/rdmaform/"
	return strings.TrimPrefix(p, mod)
}

// finish prints what is still held (a test of a package whose end never
// came), FAIL when go test failed (as go test ends), and the two skip
// lines.
func (s *summary) finish(failed bool) {
	var keys []string
	for k := range s.groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, l := range s.groups[k].lines {
			io.WriteString(s.w, l.text)
		}
	}
	if failed {
		fmt.Fprintln(s.w, "FAIL")
	}
	for _, lab := range []bool{true, false} {
		var names, reasons []string
		for _, sk := range s.skips {
			if sk.lab == lab {
				names = append(names, sk.name)
				reasons = append(reasons, "    "+sk.name+": "+sk.reason)
			}
		}
		what := "other"
		if lab {
			what = "lab"
		}
		fmt.Fprintf(s.w, "%d %s %s skipped", len(names), what, plural(len(names), "test", "tests"))
		if len(names) > 0 {
			fmt.Fprintf(s.w, ": %s", strings.Join(names, ", "))
		}
		fmt.Fprintln(s.w)
		for _, r := range reasons {
			fmt.Fprintln(s.w, r)
		}
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
