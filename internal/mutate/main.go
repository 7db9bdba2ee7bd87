// Command mutate is rdmaform's hand-mutation runner: it reads a list of
// mutants (mutants.yaml: a file, an exact snippet of it, what replaces
// the snippet, and the tests that should fail), applies each one alone
// to a copy of the source tree, never to the working tree, runs its
// tests, and prints a table and the kill rate.
//
//	go run ./internal/mutate [-list FILE] [-only REGEXP] [-timeout 5m] [-baseline=true] [-min 90] [-check]
//
// (make mutate). A mutant is:
//
//   - killed: its tests fail (or do not end within -timeout: "timeout");
//   - survived: its tests pass; "equivalent" when the list says why no
//     test can tell it from the original;
//   - stale: its snippet is not in the file exactly once (the code moved
//     on; the list must follow), never skipped silently;
//   - no-compile: the mutated package does not build (a bad mutant);
//   - baseline-fail: its tests fail on the unmutated tree too (a broken
//     or missing lab), so a failure proves nothing.
//
// The kill rate is killed over valid mutants (neither stale, no-compile
// nor baseline-fail), and the same leaving out the equivalent ones. Lab
// tests run with RDMAFORM_REQUIRE_LAB=1 (a lab that is not there fails
// the baseline instead of passing as a skip). The exit status is 1 when
// a mutant is stale, does not compile or has a failing baseline, or the
// rate (without equivalents) is under -min.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"gopkg.in/yaml.v3"
)

// Mutant is one entry of the list.
type Mutant struct {
	ID   string `yaml:"id"`
	Area string `yaml:"area"`
	// File is relative to the module's root.
	File string `yaml:"file"`
	// Find is the exact original text (once in File); Replace what the
	// mutant puts there.
	Find    string `yaml:"find"`
	Replace string `yaml:"replace"`
	// What the mutant means, for the table's reader.
	Means string `yaml:"means"`
	// Pkgs are go test's packages (./providers/pcie); Run its -run.
	Pkgs []string `yaml:"pkgs"`
	Run  string   `yaml:"run"`
	// Equivalent, when set, says why no test can tell the mutant from
	// the original.
	Equivalent string `yaml:"equivalent"`
}

// Result is what one mutant came to.
type Result struct {
	M      Mutant
	Status string // killed, timeout, survived, equivalent, stale, no-compile, baseline-fail
	By     string // the first failing test, or why
	Took   time.Duration
}

func main() {
	list := flag.String("list", "internal/mutate/mutants.yaml", "the list of mutants")
	only := flag.String("only", "", "run only the mutants whose id or area matches this regular expression")
	timeout := flag.Duration("timeout", 5*time.Minute, "bound on one mutant's tests")
	baseline := flag.Bool("baseline", true, "run each test selection once on the unmutated tree first")
	min := flag.Float64("min", 0, "exit 1 when the kill rate (equivalent mutants left out) is under this percentage")
	root := flag.String("root", ".", "the module's root (the tree that is copied)")
	check := flag.Bool("check", false, "only check that every mutant's snippet is in its file once")
	flag.Parse()
	if err := run(*list, *only, *root, *timeout, *baseline, *min, *check); err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(1)
	}
}

// treeRoot is the working tree the table's line numbers are read in.
var treeRoot = "."

func run(list, only, root string, timeout time.Duration, baseline bool, min float64, check bool) error {
	treeRoot = root
	ms, err := load(list)
	if err != nil {
		return err
	}
	if only != "" {
		re, err := regexp.Compile(only)
		if err != nil {
			return fmt.Errorf("-only: %w", err)
		}
		ms = slices.DeleteFunc(ms, func(m Mutant) bool { return !re.MatchString(m.ID) && !re.MatchString(m.Area) })
	}
	if len(ms) == 0 {
		return errors.New("no mutant to run")
	}
	if check {
		return checkList(root, ms)
	}
	results, err := runAll(os.Stdout, root, ms, timeout, baseline)
	if err != nil {
		return err
	}
	fmt.Println()
	bad := report(os.Stdout, results)
	rate := killRate(results, true)
	if bad {
		return errors.New("stale, non-compiling or baseline-failing mutants (above): the list or the labs need attention")
	}
	if rate < min {
		return fmt.Errorf("kill rate %.1f %% is under %.1f %%", rate, min)
	}
	return nil
}

// runAll copies the tree at root and runs each mutant on the copy,
// printing a line per mutant to w.
func runAll(w io.Writer, root string, ms []Mutant, timeout time.Duration, baseline bool) ([]Result, error) {
	tmp, err := os.MkdirTemp("", "rdmaform-mutate-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	tree := filepath.Join(tmp, "rdmaform")
	if err := copyTree(root, tree); err != nil {
		return nil, fmt.Errorf("copying the tree: %w", err)
	}
	// The tree's siblings (../shared) resolve as in a checkout.
	if abs, err := filepath.Abs(root); err == nil {
		if _, err := os.Stat(filepath.Join(abs, "..", "shared")); err == nil {
			_ = os.Symlink(filepath.Join(abs, "..", "shared"), filepath.Join(tmp, "shared"))
		}
	}
	fmt.Fprintf(w, "%d mutants, tree copied to %s\n", len(ms), tree)
	base := map[string]string{} // selection -> "" (passes) or why not
	var results []Result
	for i, m := range ms {
		r := one(tree, m, timeout, baseline, base)
		results = append(results, r)
		fmt.Fprintf(w, "[%d/%d] %-6s %-13s %6.1fs %s\n", i+1, len(ms), m.ID, r.Status, r.Took.Seconds(), r.By)
	}
	fmt.Fprintln(w)
	return results, nil
}

// checkList reports each mutant whose snippet is not in its file exactly
// once (what a run would call stale), without running anything.
func checkList(root string, ms []Mutant) error {
	n := 0
	for _, m := range ms {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(m.File)))
		if c := bytes.Count(b, []byte(m.Find)); err != nil || c != 1 {
			fmt.Printf("stale: %s (%s): the snippet is there %d times (%v)\n", m.ID, m.File, c, err)
			n++
		}
	}
	fmt.Printf("%d mutants, %d stale\n", len(ms), n)
	if n > 0 {
		return fmt.Errorf("%d stale mutants", n)
	}
	return nil
}

func load(path string) ([]Mutant, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ms []Mutant
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&ms); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	seen := map[string]bool{}
	for i, m := range ms {
		switch {
		case m.ID == "" || m.File == "" || m.Find == "" || len(m.Pkgs) == 0 || m.Run == "":
			return nil, fmt.Errorf("%s: mutant %d (%q): id, file, find, pkgs and run are required", path, i+1, m.ID)
		case m.Find == m.Replace:
			return nil, fmt.Errorf("%s: mutant %s replaces its snippet with itself", path, m.ID)
		case seen[m.ID]:
			return nil, fmt.Errorf("%s: mutant id %s twice", path, m.ID)
		}
		seen[m.ID] = true
		if _, err := regexp.Compile(m.Run); err != nil {
			return nil, fmt.Errorf("%s: mutant %s: run: %w", path, m.ID, err)
		}
	}
	return ms, nil
}

// one applies m to tree, runs its tests and puts the file back.
func one(tree string, m Mutant, timeout time.Duration, baseline bool, base map[string]string) (r Result) {
	start := time.Now()
	r.M = m
	defer func() { r.Took = time.Since(start) }()
	file := filepath.Join(tree, filepath.FromSlash(m.File))
	orig, err := os.ReadFile(file)
	if err != nil {
		r.Status, r.By = "stale", "file: "+err.Error()
		return r
	}
	if n := bytes.Count(orig, []byte(m.Find)); n != 1 {
		r.Status, r.By = "stale", fmt.Sprintf("the snippet is in %s %d times, not once", m.File, n)
		return r
	}
	if baseline {
		key := strings.Join(m.Pkgs, " ") + " -run " + m.Run
		why, ok := base[key]
		if !ok {
			code, out := goTest(tree, m, timeout)
			why = ""
			if code != 0 {
				why = "unmutated: " + firstFailure(out, code)
			}
			base[key] = why
		}
		if why != "" {
			r.Status, r.By = "baseline-fail", why
			return r
		}
	}
	mutated := bytes.Replace(orig, []byte(m.Find), []byte(m.Replace), 1)
	if err := os.WriteFile(file, mutated, 0o644); err != nil {
		r.Status, r.By = "stale", err.Error()
		return r
	}
	defer os.WriteFile(file, orig, 0o644) //nolint:errcheck // the copy is thrown away
	pkg := "./" + filepath.ToSlash(filepath.Dir(m.File))
	if out, err := goCmd(tree, timeout, "build", "-o", os.DevNull, pkg); err != nil {
		r.Status, r.By = "no-compile", firstLine(out)
		return r
	}
	code, out := goTest(tree, m, timeout)
	switch {
	case code == 0:
		r.Status = "survived"
		if m.Equivalent != "" {
			r.Status, r.By = "equivalent", m.Equivalent
		}
	case code == -1:
		r.Status, r.By = "timeout", fmt.Sprintf("tests still running after %s", timeout)
	case strings.Contains(out, "[build failed]") || strings.Contains(out, "[setup failed]"):
		r.Status, r.By = "no-compile", firstLine(out)
	default:
		r.Status, r.By = "killed", firstFailure(out, code)
	}
	return r
}

// goTest runs m's tests in tree: the exit code (-1 after the timeout)
// and the output.
func goTest(tree string, m Mutant, timeout time.Duration) (int, string) {
	args := append([]string{"test", "-count=1", "-timeout", timeout.String(), "-run", m.Run}, m.Pkgs...)
	out, err := goCmd(tree, timeout+30*time.Second, args...)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out
	case errors.Is(err, context.DeadlineExceeded):
		return -1, out
	case errors.As(err, &ee):
		if strings.Contains(out, "panic: test timed out after") {
			return -1, out
		}
		return ee.ExitCode(), out
	}
	return 1, out + err.Error()
}

// goCmd runs the go tool in dir, in a process group of its own that is
// killed whole at the timeout (test binaries and the labs they start).
func goCmd(dir string, timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RDMAFORM_REQUIRE_LAB=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	if ctx.Err() != nil {
		return b.String(), context.DeadlineExceeded
	}
	return b.String(), err
}

var failRE = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)

// firstFailure names the first failing test, else the output's first
// line.
func firstFailure(out string, code int) string {
	if m := failRE.FindStringSubmatch(out); m != nil {
		return m[1]
	}
	if i := strings.Index(out, "panic: "); i >= 0 {
		return firstLine(out[i:])
	}
	return fmt.Sprintf("exit %d: %s", code, firstLine(out))
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}

// report prints the table by area and the survivors; it says whether
// any mutant was stale, did not compile or had a failing baseline.
func report(w io.Writer, rs []Result) bool {
	type tally struct{ valid, killed, equiv int }
	var areas []string
	by := map[string]*tally{}
	bad := false
	for _, r := range rs {
		t := by[r.M.Area]
		if t == nil {
			t = &tally{}
			by[r.M.Area] = t
			areas = append(areas, r.M.Area)
		}
		switch r.Status {
		case "killed", "timeout":
			t.valid++
			t.killed++
		case "survived":
			t.valid++
		case "equivalent":
			t.valid++
			t.equiv++
		default:
			bad = true
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "area\tvalid\tkilled\tequivalent\trate\t")
	var all tally
	for _, a := range areas {
		t := by[a]
		all.valid += t.valid
		all.killed += t.killed
		all.equiv += t.equiv
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t\n", a, t.valid, t.killed, t.equiv, pct(t.killed, t.valid-t.equiv))
	}
	fmt.Fprintf(tw, "total\t%d\t%d\t%d\t%s\t\n", all.valid, all.killed, all.equiv, pct(all.killed, all.valid-all.equiv))
	tw.Flush()
	fmt.Fprintf(w, "\nkill rate: %d/%d = %s of the valid mutants; %d/%d = %s leaving out the %d equivalent\n",
		all.killed, all.valid, pct(all.killed, all.valid), all.killed, all.valid-all.equiv, pct(all.killed, all.valid-all.equiv), all.equiv)
	for _, st := range []string{"survived", "equivalent", "stale", "no-compile", "baseline-fail", "timeout"} {
		var lines []string
		for _, r := range rs {
			if r.Status == st {
				lines = append(lines, fmt.Sprintf("  %s (%s:%s) %s: %s", r.M.ID, r.M.File, lineOf(r.M), r.M.Means, r.By))
			}
		}
		if len(lines) > 0 {
			fmt.Fprintf(w, "\n%s (%d):\n%s\n", st, len(lines), strings.Join(lines, "\n"))
		}
	}
	return bad
}

// lineOf is the line the mutant's snippet starts at in the working tree's
// file, "?" when it is not there.
func lineOf(m Mutant) string {
	b, err := os.ReadFile(filepath.Join(treeRoot, filepath.FromSlash(m.File)))
	if err != nil {
		return "?"
	}
	i := bytes.Index(b, []byte(m.Find))
	if i < 0 {
		return "?"
	}
	return fmt.Sprint(bytes.Count(b[:i], []byte("\n")) + 1)
}

func killRate(rs []Result, leaveOutEquivalent bool) float64 {
	valid, killed := 0, 0
	for _, r := range rs {
		switch r.Status {
		case "killed", "timeout":
			valid++
			killed++
		case "survived":
			valid++
		case "equivalent":
			if !leaveOutEquivalent {
				valid++
			}
		}
	}
	if valid == 0 {
		return 0
	}
	return 100 * float64(killed) / float64(valid)
}

func pct(n, d int) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f %%", 100*float64(n)/float64(d))
}

// copyTree copies the files git knows of (tracked, and untracked ones not
// ignored: work not yet committed counts) from root to dst.
func copyTree(root, dst string) error {
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		src := filepath.Join(root, name)
		fi, err := os.Lstat(src)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the working tree, not yet in the index
		}
		if err != nil {
			return err
		}
		to := filepath.Join(dst, name)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(src)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, to); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(src)
			if err != nil {
				return err
			}
			if err := os.WriteFile(to, b, fi.Mode().Perm()); err != nil {
				return err
			}
		}
	}
	return nil
}
