package doccheck

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/rdmaform/rdmaform/audit"
)

// root is the repository, from this package's directory.
const root = "../.."

// docFiles are README.md and every Markdown file under docs/, as paths
// relative to the repository.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("only %d Markdown files: %v", len(files), files)
	}
	return files
}

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docBlock is a fenced block and the file it is in.
type docBlock struct {
	File string
	Block
}

func (b docBlock) String() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

func allBlocks(t *testing.T) []docBlock {
	t.Helper()
	var out []docBlock
	for _, f := range docFiles(t) {
		bs, err := Blocks(read(t, f))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, b := range bs {
			out = append(out, docBlock{File: f, Block: b})
		}
	}
	return out
}

// checkLinks returns what is wrong with the links of the Markdown file
// rel (relative to dir): a target file or directory that does not exist,
// a target outside dir, or an anchor its Markdown target lacks.
func checkLinks(dir, rel, text string, exists func(string) (bool, bool), anchorsOf func(string) map[string]bool) []string {
	var bad []string
	for _, l := range Links(text) {
		target := l.Target
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		file, anchor, _ := strings.Cut(target, "#")
		where := fmt.Sprintf("%s:%d: %s", rel, l.Line, target)
		path := rel
		if file != "" {
			if strings.HasPrefix(file, "/") {
				bad = append(bad, where+": an absolute path (GitHub reads it from the site's root): link relative to the file")
				continue
			}
			path = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(rel), file)))
			if path == ".." || strings.HasPrefix(path, "../") {
				bad = append(bad, where+": outside the repository")
				continue
			}
		}
		ok, isDir := exists(path)
		if !ok {
			bad = append(bad, where+": no such file "+path)
			continue
		}
		if anchor == "" {
			continue
		}
		if isDir || !strings.HasSuffix(path, ".md") {
			bad = append(bad, where+": an anchor into something that is not Markdown")
			continue
		}
		if !anchorsOf(path)[anchor] {
			bad = append(bad, fmt.Sprintf("%s: %s has no heading or anchor %q", where, path, anchor))
		}
	}
	return bad
}

// TestLinks: every link of README.md and docs/ to a file of the
// repository points at one that exists, and every #anchor at a heading
// (GitHub's slug) or an HTML anchor of its target.
func TestLinks(t *testing.T) {
	exists := func(p string) (bool, bool) {
		st, err := os.Stat(filepath.Join(root, p))
		return err == nil, err == nil && st.IsDir()
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(p string) map[string]bool {
		if anchors[p] == nil {
			anchors[p] = Anchors(read(t, p))
		}
		return anchors[p]
	}
	n := 0
	for _, f := range docFiles(t) {
		text := read(t, f)
		n += len(Links(text))
		for _, b := range checkLinks(root, f, text, exists, anchorsOf) {
			t.Error(b)
		}
	}
	if n < 50 {
		t.Errorf("only %d links in README.md and docs/", n)
	}
}

// TestCheckLinksFindsBrokenOnes: the checker reports a missing file, a
// missing anchor, a link out of the repository and an absolute path, and
// passes good links, an anchor of a repeated heading and a heading with
// code.
func TestCheckLinksFindsBrokenOnes(t *testing.T) {
	files := map[string]string{
		"README.md": "# rdmaform\n\n" +
			"[ok](docs/a.md) [ok](docs/a.md#the-plan-rdmaform-plan) [ok](docs/a.md#notes-1) [ok](#rdmaform) [dir](docs/)\n" +
			"`[not a link](nowhere.md)`\n" +
			"[missing](docs/b.md)\n[anchor](docs/a.md#nope)\n[out](../x.md)\n[abs](/docs/a.md)\n" +
			"```\n[in code](nowhere.md)\n```\n",
		"docs/a.md": "# A\n\n## The plan: `rdmaform plan`\n\n## Notes\n\n## Notes\n\n```sh\n# not a heading\n```\n",
	}
	exists := func(p string) (bool, bool) {
		if p == "docs" {
			return true, true
		}
		_, ok := files[p]
		return ok, false
	}
	got := checkLinks(".", "README.md", files["README.md"], exists, func(p string) map[string]bool { return Anchors(files[p]) })
	want := []string{
		"README.md:5: docs/b.md: no such file docs/b.md",
		`README.md:6: docs/a.md#nope: docs/a.md has no heading or anchor "nope"`,
		"README.md:7: ../x.md: outside the repository",
		"README.md:8: /docs/a.md: an absolute path (GitHub reads it from the site's root): link relative to the file",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if a := Anchors(files["docs/a.md"]); !a["notes"] || !a["notes-1"] || a["not-a-heading"] {
		t.Errorf("anchors of docs/a.md: %v", a)
	}
}

// topLevelKeys are the keys a spec has at its top (a fragment made only
// of them is validated as a spec).
var topLevelKeys = map[string]bool{
	"host": true, "rdma": true, "devices": true, "ipoib": true, "rxe": true, "interfaces": true,
	"modules": true, "services": true, "subnet_manager": true, "probes": true, "persistence": true,
}

// The kinds of YAML block, by the info string's second word.
const (
	kindSpec     = ""         // a whole spec (the default)
	kindFragment = "fragment" // part of a spec
	kindValidate = "validate" // a whole spec that is validated, not planned (a tour of the fields)
	kindAnsible  = "ansible"  // an Ansible playbook or task list
	kindK8s      = "kubernetes"
	kindWaivers  = "waivers"
	kindOther    = "data" // any other YAML document (an inventory, ...)
)

func yamlKind(b Block) (string, error) {
	kind := ""
	for _, tag := range b.Tags {
		switch tag {
		case kindFragment, kindValidate, kindAnsible, kindK8s, kindWaivers, kindOther:
			if kind != "" {
				return "", fmt.Errorf("two kinds, %s and %s", kind, tag)
			}
			kind = tag
		default:
			if !strings.HasPrefix(tag, "file=") {
				return "", fmt.Errorf("unknown word %q in the info string (kinds: fragment, validate, ansible, kubernetes, waivers, data; file=PATH)", tag)
			}
		}
	}
	return kind, nil
}

// headerValue is the value of a "# key: value" comment line at the top of
// a YAML block.
func headerValue(text, key string) (string, bool) {
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(l, "#") {
			break
		}
		if v, ok := strings.CutPrefix(l, "# "+key+": "); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// withoutHeader is a file's text without its leading comment lines.
func withoutHeader(text string) string {
	lines := strings.Split(text, "\n")
	i := 0
	for i < len(lines) && (strings.HasPrefix(lines[i], "#") || strings.TrimSpace(lines[i]) == "") {
		i++
	}
	return strings.Join(lines[i:], "\n")
}

// TestYAMLBlocks: every YAML block of README.md and docs/ is of a known
// kind and parses; a spec (whole, or a fragment made of top-level keys)
// passes rdmaform validate; a spec names the simulated host it is planned
// on (TestSpecExamples plans it); an RDMAHostConfig's hostSpec passes
// rdmaform validate; a block with file=PATH is that file after its
// header comment; waivers load as audit's waiver file.
func TestYAMLBlocks(t *testing.T) {
	bin := binary(t)
	n := 0
	for _, b := range allBlocks(t) {
		if b.Lang != "yaml" && b.Lang != "yml" {
			continue
		}
		n++
		t.Run(b.String(), func(t *testing.T) {
			kind, err := yamlKind(b.Block)
			if err != nil {
				t.Fatal(err)
			}
			var doc any
			if err := yaml.Unmarshal([]byte(b.Text), &doc); err != nil {
				t.Fatalf("not YAML: %v\n%s", err, b.Text)
			}
			if f, ok := b.Value("file"); ok {
				if want := withoutHeader(read(t, f)); withoutHeader(b.Text) != want {
					t.Errorf("the block is not %s after its header comment:\n%s", f, b.Text)
				}
			}
			spec := ""
			switch kind {
			case kindSpec, kindValidate:
				spec = b.Text
				_, hasHost := headerValue(b.Text, "host")
				if kind == kindSpec && !hasHost {
					t.Errorf("a spec names its simulated host in a first comment \"# host: examples/hosts/NAME\" (or its block is marked yaml validate)")
				}
				if kind == kindValidate && hasHost {
					t.Errorf("a block marked validate names a host: drop the mark, so that it is planned there")
				}
			case kindFragment:
				m, ok := doc.(map[string]any)
				top := ok && len(m) > 0
				for k := range m {
					top = top && topLevelKeys[k]
				}
				if top {
					spec = "version: 1\n" + b.Text
				}
			case kindK8s:
				// An RDMAHostConfig's hostSpec is a spec.
				m, _ := doc.(map[string]any)
				if sp, ok := m["spec"].(map[string]any); ok && m["kind"] == "RDMAHostConfig" {
					hs, err := yaml.Marshal(sp["hostSpec"])
					if err != nil || sp["hostSpec"] == nil {
						t.Fatalf("an RDMAHostConfig without a hostSpec: %v", err)
					}
					spec = string(hs)
				}
			case kindWaivers:
				if _, rep := audit.LoadWaivers(b.String(), []byte(b.Text)); len(rep) > 0 {
					t.Errorf("not a waiver file: %v", rep)
				}
			}
			if spec != "" {
				f := filepath.Join(t.TempDir(), "spec.yaml")
				writeFile(t, f, spec)
				if code, out := run(t, bin, "validate", "-f", f); code != 0 {
					t.Errorf("rdmaform validate: exit %d\n%s\n%s", code, out, spec)
				}
			}
		})
	}
	if n < 15 {
		t.Errorf("only %d YAML blocks", n)
	}
}

// TestSpecExamples: every whole-spec YAML block is planned on a fresh
// simulated host its "# host:" comment names (a copy of
// examples/hosts/NAME, or one "sim new --profile NAME [--adapters N]"
// makes): the plan exits
// as its "# plan: exit N" comment says (2, changes, by default); a plan
// with changes is applied (with the flags of "# apply flags:", a
// simulated reboot when firmware asks for one), and the plan after it is
// empty.
func TestSpecExamples(t *testing.T) {
	bin := binary(t)
	n := 0
	for _, b := range allBlocks(t) {
		if b.Lang != "yaml" {
			continue
		}
		if kind, err := yamlKind(b.Block); err != nil || kind != kindSpec {
			continue
		}
		hostDir, ok := headerValue(b.Text, "host")
		if !ok {
			continue // TestYAMLBlocks reports it
		}
		n++
		t.Run(b.String(), func(t *testing.T) {
			if err := planExample(t, bin, hostDir, b); err != nil {
				t.Error(err)
			}
		})
	}
	if n < 5 {
		t.Errorf("only %d spec examples", n)
	}
}

func planExample(t *testing.T, bin, hostDir string, b docBlock) error {
	var dir string
	switch f := strings.Fields(hostDir); {
	case strings.HasPrefix(hostDir, "examples/hosts/"):
		dir = copyHost(t, hostDir)
	case len(f) >= 4 && f[0] == "sim" && f[1] == "new" && f[2] == "--profile":
		dir = filepath.Join(t.TempDir(), "host")
		if code, out := run(t, bin, append([]string{"sim", "new", dir}, f[2:]...)...); code != 0 {
			return fmt.Errorf("rdmaform sim new %s: exit %d\n%s", strings.Join(f[2:], " "), code, out)
		}
	default:
		return fmt.Errorf("# host: %s is neither a simulated host of examples/hosts/ nor \"sim new --profile NAME ...\"", hostDir)
	}
	spec := filepath.Join(t.TempDir(), "spec.yaml")
	writeFile(t, spec, b.Text)
	want := 2
	if v, ok := headerValue(b.Text, "plan"); ok {
		n, err := strconv.Atoi(strings.TrimPrefix(v, "exit "))
		if err != nil {
			return fmt.Errorf("# plan: %s, want \"exit N\"", v)
		}
		want = n
	}
	code, out := run(t, bin, "--sim", dir, "plan", "-f", spec)
	if code != want {
		return fmt.Errorf("plan on a fresh %s: exit %d, want %d\n%s", hostDir, code, want, out)
	}
	if want != 2 {
		return nil
	}
	var flags []string
	if v, ok := headerValue(b.Text, "apply flags"); ok {
		flags = strings.Fields(v)
	}
	args := append(append([]string{"--sim", dir, "apply", "--yes"}, flags...), "-f", spec)
	code, out = run(t, bin, args...)
	if code == 3 {
		if c, o := run(t, bin, "sim", "reboot", dir); c != 0 {
			return fmt.Errorf("sim reboot: exit %d\n%s", c, o)
		}
		code, out = run(t, bin, args...)
	}
	if code != 0 {
		return fmt.Errorf("apply: exit %d\n%s", code, out)
	}
	if code, out = run(t, bin, "--sim", dir, "plan", "-f", spec); code != 0 || !strings.Contains(out, "No changes.") {
		return fmt.Errorf("plan after apply: exit %d, want 0 and no changes\n%s", code, out)
	}
	return nil
}

// TestRunBlocks: every console block marked "run" runs, command by
// command, on simulated hosts with the built binary (see runBlock).
func TestRunBlocks(t *testing.T) {
	bin := binary(t)
	n := 0
	for _, b := range allBlocks(t) {
		if !b.Tag("run") {
			continue
		}
		n++
		t.Run(b.String(), func(t *testing.T) {
			if b.Lang != "console" {
				t.Fatalf("a block marked run is a console block (%q)", b.Lang)
			}
			if err := runBlock(t, bin, b.Text); err != nil {
				t.Error(err)
			}
		})
	}
	if n < 5 {
		t.Errorf("only %d console blocks marked run", n)
	}
}

// TestRunBlockFails: the runner fails a block whose command exits other
// than it says, prints other lines than it shows, or is not one it runs.
func TestRunBlockFails(t *testing.T) {
	bin := binary(t)
	for _, block := range []string{
		"$ bin/rdmaform version --bogus\n",                              // exit 1, 0 expected
		"$ bin/rdmaform sim new /tmp/h --profile cx5-roce   # exit 2\n", // exit 0
		"$ bin/rdmaform validate -f examples/roce.yaml\nsomething else\n",
		"$ rm -rf /tmp\n",
		"$ bin/rdmaform version --bogus\n$ echo $?\n0\n",
	} {
		if err := runBlock(t, bin, block); err == nil {
			t.Errorf("no error for\n%s", block)
		}
	}
	if err := runBlock(t, bin, "$ bin/rdmaform version --bogus\n$ echo $?\n1\n"); err != nil {
		t.Errorf("echo $? after an exit 1: %v", err)
	}
}

var (
	exitRE = regexp.MustCompile(`#.*\bexit (\d+)`)
	rttRE  = regexp.MustCompile(`\d+\.\d{3} ms`)
)

// runBlock runs the commands of a console block: lines that start with
// "$ " are commands, the lines after one its output. The commands it
// runs are "cp -r SRC DST" (a simulated host of examples/hosts/),
// "bin/rdmaform ARGS" or "rdmaform ARGS" (the built binary, from the
// repository's top, so examples/ resolves) and "echo $?" (the last exit
// code). Paths under /tmp/ are under a temporary directory instead. A
// command exits as its comment's "exit N" says, else as the "echo $?"
// after it shows, else 0. Output shown under a command is the whole of
// its stdout and stderr, where a line "..." stands for any lines and
// round trips ("0.050 ms") for any; a command with no output shown may
// print anything.
func runBlock(t *testing.T, bin, block string) error {
	type step struct {
		line string
		args []string
		exit int
		want []string
	}
	var steps []*step
	for _, l := range strings.Split(strings.TrimRight(block, "\n"), "\n") {
		cmd, ok := strings.CutPrefix(l, "$ ")
		if !ok {
			if len(steps) == 0 {
				return fmt.Errorf("output before the first command: %q", l)
			}
			steps[len(steps)-1].want = append(steps[len(steps)-1].want, l)
			continue
		}
		s := &step{line: cmd, exit: -1}
		if m := exitRE.FindStringSubmatch(cmd); m != nil {
			s.exit, _ = strconv.Atoi(m[1])
		}
		if i := strings.Index(cmd, " #"); i >= 0 {
			cmd = cmd[:i]
		}
		s.args = strings.Fields(cmd)
		steps = append(steps, s)
	}
	tmp := t.TempDir()
	last := 0
	for i, s := range steps {
		args := make([]string, len(s.args))
		for j, a := range s.args {
			if rest, ok := strings.CutPrefix(a, "/tmp/"); ok {
				a = filepath.Join(tmp, rest)
			}
			args[j] = a
		}
		var code int
		var out string
		switch {
		case len(args) == 2 && args[0] == "echo" && args[1] == "$?":
			code, out = 0, strconv.Itoa(last)+"\n"
		case len(args) == 4 && args[0] == "cp" && args[1] == "-r" && strings.HasPrefix(args[2], "examples/hosts/") && strings.HasPrefix(args[3], tmp+"/"):
			b, err := os.ReadFile(filepath.Join(root, args[2], "sim.yaml"))
			if err != nil {
				return fmt.Errorf("%s: %v", s.line, err)
			}
			if err := os.MkdirAll(args[3], 0o755); err != nil {
				return err
			}
			writeFile(t, filepath.Join(args[3], "sim.yaml"), string(b))
		case len(args) > 0 && (args[0] == "bin/rdmaform" || args[0] == "rdmaform"):
			code, out = run(t, bin, args[1:]...)
		default:
			return fmt.Errorf("%q: the runner runs cp -r examples/hosts/..., rdmaform and echo $? only", s.line)
		}
		want := s.exit
		if want < 0 {
			want = 0
			if i+1 < len(steps) && strings.Join(steps[i+1].args, " ") == "echo $?" && len(steps[i+1].want) == 1 {
				want, _ = strconv.Atoi(steps[i+1].want[0])
			}
		}
		if code != want {
			return fmt.Errorf("%s: exit %d, the block says %d\n%s", s.line, code, want, out)
		}
		last = code
		if len(s.want) == 0 {
			continue
		}
		got := strings.Split(strings.TrimSuffix(strings.ReplaceAll(out, tmp+"/", "/tmp/"), "\n"), "\n")
		if !linesMatch(got, s.want) {
			return fmt.Errorf("%s: printed\n%s\nthe block shows\n%s", s.line, strings.Join(got, "\n"), strings.Join(s.want, "\n"))
		}
	}
	return nil
}

// linesMatch: got is want, where a "..." line of want stands for any
// number of lines, and round trips are masked.
func linesMatch(got, want []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == "..." {
		for k := 0; k <= len(got); k++ {
			if linesMatch(got[k:], want[1:]) {
				return true
			}
		}
		return false
	}
	mask := func(s string) string { return rttRE.ReplaceAllString(s, "N ms") }
	return len(got) > 0 && mask(got[0]) == mask(want[0]) && linesMatch(got[1:], want[1:])
}

var (
	buildOnce sync.Once
	built     string
	buildErr  error
)

// binary builds rdmaform once for the package's tests.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rdmaform-doccheck-")
		if err != nil {
			buildErr = err
			return
		}
		built = filepath.Join(dir, "rdmaform")
		gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
		out, err := exec.Command(gobin, "build", "-o", built, "../../cmd/rdmaform").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return built
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built != "" {
		os.RemoveAll(filepath.Dir(built))
	}
	os.Exit(code)
}

// run runs the built rdmaform from the repository's top, without
// colour, and returns its exit code and its stdout and stderr together.
func run(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = root
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "NO_COLOR=1", "TMPDIR=" + os.TempDir()}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String()
	}
	t.Fatalf("rdmaform %s: %v", strings.Join(args, " "), err)
	return 0, ""
}

func copyHost(t *testing.T, hostDir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, hostDir, "sim.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "sim.yaml"), string(b))
	return dir
}

func writeFile(t *testing.T, name, text string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// maxREADMELines bounds the landing page (issue 43: about 250 lines).
const maxREADMELines = 250

// TestREADMEIsALandingPage: README.md is at most maxREADMELines lines, its
// first block gives the two commands (the demo and the tests), and the
// test command is the one .ci/run ends with.
func TestREADMEIsALandingPage(t *testing.T) {
	text := read(t, "README.md")
	if n := strings.Count(text, "\n"); n > maxREADMELines {
		t.Errorf("README.md has %d lines, more than %d: move the detail into docs/", n, maxREADMELines)
	}
	bs, err := Blocks(text)
	if err != nil || len(bs) == 0 {
		t.Fatalf("README.md has no code block: %v", err)
	}
	var cmds []string
	for _, l := range strings.Split(strings.TrimSpace(bs[0].Text), "\n") {
		cmd, _, _ := strings.Cut(l, "#")
		cmds = append(cmds, strings.TrimSpace(cmd))
	}
	if strings.Join(cmds, "\n") != "make demo\nmake test" {
		t.Errorf("README.md's first block is not the two commands make demo and make test:\n%s", bs[0].Text)
	}
	ci := strings.Split(strings.TrimSpace(read(t, ".ci/run")), "\n")
	if last := ci[len(ci)-1]; last != "make test" {
		t.Errorf(".ci/run ends with %q, not README.md's test command make test", last)
	}
}
