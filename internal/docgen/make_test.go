package docgen

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// phonyTargets are the targets the Makefile declares .PHONY: the ones
// people run by name.
func phonyTargets(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), ".PHONY:"); ok {
			out = append(out, strings.Fields(rest)...)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMakeHelpListsEveryTarget: make help lists every .PHONY target of the
// Makefile, each with its description (k8s-lab, with a digit in its
// name, was left out).
func TestMakeHelpListsEveryTarget(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this machine")
	}
	out, err := exec.Command("make", "-s", "-C", "../..", "help").CombinedOutput()
	if err != nil {
		t.Fatalf("make help: %v\n%s", err, out)
	}
	listed := map[string]string{}
	line := regexp.MustCompile(`^  (\S+) +(\S.*)$`)
	for _, l := range strings.Split(string(out), "\n") {
		if m := line.FindStringSubmatch(l); m != nil {
			listed[m[1]] = m[2]
		}
	}
	targets := phonyTargets(t)
	if len(targets) < 10 {
		t.Fatalf("found only %d .PHONY targets in the Makefile: %v", len(targets), targets)
	}
	for _, target := range targets {
		if _, ok := listed[target]; !ok {
			t.Errorf("make help does not list %s (give its rule a '## what it does' comment)", target)
		}
	}
	if len(listed) != len(targets) {
		t.Errorf("make help lists %d targets, the Makefile declares %d .PHONY:\n%s", len(listed), len(targets), out)
	}
}

// TestMakeDocsWritesReference: make docs writes docs/reference; make
// install (which CI runs before make test) does not, or
// TestReferenceCurrent would compare the pages with themselves there.
func TestMakeDocsWritesReference(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this machine")
	}
	dryRun := func(target string) string {
		out, err := exec.Command("make", "-n", "-C", "../..", target, "NFPM=/bin/true").CombinedOutput()
		if err != nil {
			t.Fatalf("make -n %s: %v\n%s", target, err, out)
		}
		return string(out)
	}
	if out := dryRun("docs"); !strings.Contains(out, "./cmd/rdmaform-docs -reference docs/reference") {
		t.Errorf("make docs does not run rdmaform-docs -reference docs/reference:\n%s", out)
	}
	for _, target := range []string{"install", "package"} {
		if out := dryRun(target); strings.Contains(out, "-reference") {
			t.Errorf("make %s rewrites docs/reference:\n%s", target, out)
		}
	}
}
