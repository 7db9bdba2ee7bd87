package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The lint's messages, as a user reads them.
const (
	osDoor     = "only host/ and sim/ touch the OS"
	fsDoor     = "file access goes through host.FS"
	simSide    = "the simulator shares no code with the providers' parsers"
	parserSide = "a parser does not depend on the simulator"
	auditList  = "the audit checks what the providers declare (plan.Result.Managed, plan.Facts) and keeps no list of them"
	crossProv  = "a provider does not import another: earlier stages tell later ones through plan.Facts"
	capture    = "CaptureFrom builds show from what Observe read; capture.go reads nothing itself"
	layout     = " (every provider: NAME.go Observe, diff.go Plan, apply.go Make, revert.go Revert, capture.go CaptureFrom)"
	payload    = "asserts a payload; use plan.PayloadOf"
	observed   = "asserts an observation; use plan.Observation"
	attrRead   = "; an attribute is for people: keep the value in the payload (plan.Reversed swaps attributes for a revert)"
	upLayer    = "only the programs (cmd/), the front ends (ansible/, bench/), the docs generator (internal/docgen/) and cli's own packages import the command line; a lab or a library under it does not"
	byHand     = "builds a plan.Address by hand; make it with plan.Addr(kind, key)"
	mod        = "github.com/rdmaform/rdmaform"
)

// wantProblems is every problem in testdata/tree: a case for each rule
// (each forbidden import, each os function, each Provider method, each
// parser, each side of each separation). The tree's files also hold what
// each rule lets pass (say so in their comments): the boundary's own
// directories, tests, a type switch, time.After, plan's own addresses,
// a provider's own packages and the parsers it may import, methods of
// other types, packages under a provider, and the directories the walk
// skips (hidden, vendor, testdata) and files that are not Go.
var wantProblems = []string{
	"apply/files.go:10:9: os.Open; " + fsDoor,
	"apply/files.go:11:9: os.OpenFile; " + fsDoor,
	"apply/files.go:12:9: os.Create; " + fsDoor,
	"apply/files.go:13:9: os.CreateTemp; " + fsDoor,
	"apply/files.go:14:9: os.ReadFile; " + fsDoor,
	"apply/files.go:15:6: os.WriteFile; " + fsDoor,
	"apply/files.go:16:9: os.ReadDir; " + fsDoor,
	"apply/files.go:17:6: os.Mkdir; " + fsDoor,
	"apply/files.go:18:6: os.MkdirAll; " + fsDoor,
	"apply/files.go:19:9: os.MkdirTemp; " + fsDoor,
	"apply/files.go:20:6: os.Remove; " + fsDoor,
	"apply/files.go:21:6: os.RemoveAll; " + fsDoor,
	"apply/files.go:22:6: os.Rename; " + fsDoor,
	"apply/files.go:23:9: os.Stat; " + fsDoor,
	"apply/files.go:24:9: os.Lstat; " + fsDoor,
	"apply/files.go:25:9: os.Readlink; " + fsDoor,
	"apply/files.go:26:6: os.Symlink; " + fsDoor,
	"apply/files.go:27:6: os.Link; " + fsDoor,
	"apply/files.go:28:6: os.Chmod; " + fsDoor,
	"apply/files.go:29:6: os.Chown; " + fsDoor,
	"apply/files.go:30:6: os.Lchown; " + fsDoor,
	"apply/files.go:31:6: os.Truncate; " + fsDoor,
	"apply/files.go:32:6: os.Chdir; " + fsDoor,
	"apply/files.go:33:6: os.DirFS; " + fsDoor,
	"apply/files.go:34:9: os.StartProcess; " + fsDoor,
	"apply/files.go:35:6: os.Chtimes; " + fsDoor,
	"apply/imports.go:5:2: imports github.com/Mellanox/rdmamap; " + osDoor,
	"apply/imports.go:6:2: imports github.com/coreos/go-systemd/v22/dbus; " + osDoor,
	"apply/imports.go:7:2: imports github.com/godbus/dbus/v5; " + osDoor,
	"apply/imports.go:8:2: imports github.com/vishvananda/netlink; " + osDoor,
	"apply/imports.go:9:2: imports github.com/vishvananda/netns; " + osDoor,
	"apply/imports.go:10:2: imports syscall/exec; " + osDoor,
	"apply/renamed.go:6:25: os.Stat; " + fsDoor,
	"audit/addr.go:6:9: " + byHand,
	"audit/list.go:3:8: imports " + mod + "/providers/toy; " + auditList,
	"audit/waive/waive.go:4:8: imports " + mod + "/providers; " + auditList,
	"hostile/hostile.go:6:22: os.Stat; " + fsDoor,
	"internal/testlab/runcli/runcli.go:4:8: imports " + mod + "/cli; " + upLayer,
	"plan/bad.go:5:2: imports os/exec; " + osDoor,
	"plan/cli.go:4:8: imports " + mod + "/cli/clitest; " + upLayer,
	"plan/bad.go:9:9: os.ReadFile; " + fsDoor,
	"probe/probe.go:4:8: imports " + mod + "/sim/nmsim; " + parserSide,
	"providers/firmware/mlxfmt/parse.go:3:8: imports " + mod + "/sim/mlxemu; " + parserSide,
	"providers/ipoib/nmcli/nmcli.go:4:8: imports " + mod + "/sim; " + parserSide,
	"providers/misplaced/wrong.go:6:1: Provider.Name belongs in misplaced.go" + layout,
	"providers/misplaced/wrong.go:7:1: Provider.Observe belongs in misplaced.go" + layout,
	"providers/misplaced/wrong.go:8:1: Provider.Plan belongs in diff.go" + layout,
	"providers/misplaced/wrong.go:9:1: Provider.Make belongs in apply.go" + layout,
	"providers/misplaced/wrong.go:10:1: Provider.ApplyBatch belongs in apply.go" + layout,
	"providers/misplaced/wrong.go:11:1: Provider.ParallelKey belongs in apply.go" + layout,
	"providers/misplaced/wrong.go:12:1: Provider.Revert belongs in revert.go" + layout,
	"providers/misplaced/wrong.go:13:1: Provider.CaptureFrom belongs in capture.go" + layout,
	"providers/other/other.go:5:2: imports " + mod + "/providers/toy; " + crossProv,
	"providers/toy/assert.go:7:7: " + observed,
	"providers/toy/assert.go:11:9: reads .Before" + attrRead,
	"providers/toy/capture.go:4:2: imports context; " + capture,
	"providers/toy/capture.go:6:2: imports " + mod + "/host; " + capture,
	"providers/toy/sub/sub.go:5:2: imports " + mod + "/providers/other; " + crossProv,
	"providers/toy/sub/sub.go:12:38: " + payload,
	"providers/toy/toy.go:9:9: reads .After" + attrRead,
	"providers/toy/toy.go:14:1: Provider.Make belongs in apply.go" + layout,
	"providers/toy/toy.go:18:42: " + payload,
	"sim/emu/all.go:6:2: imports " + mod + "/providers; " + simSide,
	"sim/emu/emu_test.go:3:8: imports " + mod + "/providers/firmware/mlxfmt; " + simSide,
	"sim/root.go:4:8: imports " + mod + "/probe; " + simSide,
}

// TestCheckFindsCallsPastTheBoundary: every rule reports its case in
// testdata/tree with its message and position, and nothing else is
// reported: a rule deleted or loosened, or one that reaches too far,
// fails this test.
func TestCheckFindsCallsPastTheBoundary(t *testing.T) {
	got, err := check("testdata/tree")
	if err != nil {
		t.Fatal(err)
	}
	if !sort.StringsAreSorted(got) {
		t.Errorf("problems are not sorted:\n%s", strings.Join(got, "\n"))
	}
	for i, g := range got {
		got[i] = strings.TrimPrefix(filepath.ToSlash(g), "testdata/tree/")
	}
	want := append([]string(nil), wantProblems...)
	sort.Strings(want)
	sort.Strings(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	// make lint checks ".": a root named with a dot is walked, not
	// skipped as a hidden directory.
	t.Chdir("testdata/tree")
	here, err := check(".")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got, here); diff != "" {
		t.Errorf("problems of . (-testdata/tree +.):\n%s", diff)
	}
}

// TestRun: make lint's exit code and output: each problem on a line and
// a count, exit 1; a clean tree exits 0 and prints nothing; a tree that
// cannot be read or parsed exits 1 saying why.
func TestRun(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"testdata/tree"}, &out, &errs); code != 1 {
		t.Errorf("the fixture tree: exit %d, want 1", code)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	count := fmt.Sprintf("lint: %d calls past the OS boundary", len(wantProblems))
	if len(lines) != len(wantProblems)+1 || lines[len(lines)-1] != count || errs.Len() != 0 {
		t.Errorf("the fixture tree: %d lines ending %q, stderr %q; want %d lines ending %q", len(lines), lines[len(lines)-1], errs.String(), len(wantProblems)+1, count)
	}
	out.Reset()
	if code := run(nil, &out, &errs); code != 0 || out.Len() != 0 || errs.Len() != 0 {
		t.Errorf("no argument (the current directory, internal/lint): exit %d, stdout %q, stderr %q", code, out.String(), errs.String())
	}

	clean := t.TempDir()
	if err := os.WriteFile(filepath.Join(clean, "ok.go"), []byte("package ok\n\nimport \"os\"\n\nvar _ = os.Getenv\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := run([]string{clean}, &out, &errs); code != 0 || out.Len() != 0 || errs.Len() != 0 {
		t.Errorf("a clean tree: exit %d, stdout %q, stderr %q", code, out.String(), errs.String())
	}

	// A body that does not parse, and an import clause that does not
	// (read before the body, and alone in a test or at the boundary).
	broken, brokenImport := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(broken, "broken.go"), []byte("package broken\n\nfunc {\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(brokenImport, "broken_test.go"), []byte("package broken\n\nimport (\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{broken, brokenImport, filepath.Join(clean, "missing")} {
		out.Reset()
		errs.Reset()
		if code := run([]string{dir}, &out, &errs); code != 1 || !strings.HasPrefix(errs.String(), "lint: ") || out.Len() != 0 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 1 and the reason", dir, code, out.String(), errs.String())
		}
	}
}

func TestRepositoryIsClean(t *testing.T) {
	got, err := check("../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > 0 {
		t.Errorf("calls past the OS boundary:\n%s", strings.Join(got, "\n"))
	}
}
