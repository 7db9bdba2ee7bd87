package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestManPages: every page names the release it was given (the footer
// read "rdmaform unknown" under go run) and its own command in its title
// (every page was RDMAFORM(8)), and rdmaform-agent has a page with its
// flags.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	if err := run(dir, "", "1.2.3"); err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob(filepath.Join(dir, "*.8"))
	if err != nil {
		t.Fatal(err)
	}
	th := regexp.MustCompile(`(?m)^\.TH "([^"]*)" "8" "[^"]*" "([^"]*)" "rdmaform manual"$`)
	titles := map[string]string{}
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		m := th.FindStringSubmatch(string(b))
		if m == nil {
			t.Errorf("%s: no .TH line:\n%.300s", filepath.Base(p), b)
			continue
		}
		want := strings.ToUpper(strings.TrimSuffix(filepath.Base(p), ".8"))
		if title := strings.ReplaceAll(m[1], `\-`, "-"); title != want {
			t.Errorf("%s: title %q, want %q", filepath.Base(p), title, want)
		}
		if m[2] != "rdmaform 1.2.3" {
			t.Errorf("%s: footer names %q, want %q", filepath.Base(p), m[2], "rdmaform 1.2.3")
		}
		titles[filepath.Base(p)] = string(b)
	}
	for _, page := range []string{"rdmaform.8", "rdmaform-plan.8", "rdmaform-sim-new.8", "rdmaform-agent.8"} {
		if _, ok := titles[page]; !ok {
			t.Errorf("no %s among %d pages", page, len(titles))
		}
	}
	for _, flag := range []string{"--node-name", "--namespace", "--kubeconfig", "--metrics-address", "--interval", "NODE_NAME", "POD_NAMESPACE"} {
		if !strings.Contains(titles["rdmaform-agent.8"], flag) {
			t.Errorf("rdmaform-agent.8 does not name %s", flag)
		}
	}
}

// TestMakePassesVersion: make docs and make package give rdmaform-docs
// the Makefile's VERSION.
func TestMakePassesVersion(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this machine")
	}
	for _, target := range []string{"docs", "package"} {
		out, err := exec.Command("make", "-n", "-C", "../..", target, "VERSION=9.8.7", "NFPM=/bin/true").CombinedOutput()
		if err != nil {
			t.Fatalf("make -n %s: %v\n%s", target, err, out)
		}
		var docs []string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "./cmd/rdmaform-docs") && strings.Contains(l, "-man") {
				docs = append(docs, l)
			}
		}
		if len(docs) == 0 {
			t.Errorf("make %s runs no rdmaform-docs -man:\n%s", target, out)
		}
		for _, l := range docs {
			if !strings.Contains(l, "-version 9.8.7") {
				t.Errorf("make %s: %q does not pass -version 9.8.7", target, l)
			}
		}
	}
}
