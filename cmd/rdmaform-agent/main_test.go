package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestCLILinksNoKubernetes: the rdmaform CLI links no Kubernetes package
// (the agent is a binary of its own for that); the agent does.
func TestCLILinksNoKubernetes(t *testing.T) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	deps := func(pkg string) []string {
		out, err := exec.Command(goTool, "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		var k8s []string
		for _, p := range strings.Fields(string(out)) {
			if strings.HasPrefix(p, "k8s.io/") || strings.HasPrefix(p, "sigs.k8s.io/") {
				k8s = append(k8s, p)
			}
		}
		return k8s
	}
	if k := deps("github.com/rdmaform/rdmaform/cmd/rdmaform"); len(k) > 0 {
		t.Errorf("cmd/rdmaform links %d Kubernetes packages, e.g. %s", len(k), k[0])
	}
	if k := deps("github.com/rdmaform/rdmaform/cmd/rdmaform-agent"); len(k) == 0 {
		t.Error("cmd/rdmaform-agent links no Kubernetes package: the check above cannot see one")
	}
}

// TestAgentLinksNoCLI: the agent plans, applies, activates and audits
// through the session package, never through the CLI's cobra commands
// (cli.RunResults and an argv): it links no package of cli/, while the
// rdmaform program does (the check sees one).
func TestAgentLinksNoCLI(t *testing.T) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	const cli = "github.com/rdmaform/rdmaform/cli"
	links := func(pkg string) bool {
		out, err := exec.Command(goTool, "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, p := range strings.Fields(string(out)) {
			if p == cli || strings.HasPrefix(p, cli+"/") {
				return true
			}
		}
		return false
	}
	if links("github.com/rdmaform/rdmaform/cmd/rdmaform-agent") {
		t.Errorf("cmd/rdmaform-agent links %s", cli)
	}
	if !links("github.com/rdmaform/rdmaform/cmd/rdmaform") {
		t.Errorf("cmd/rdmaform links no %s: the check above cannot see it", cli)
	}
}

// TestFlags: what the command refuses before it talks to an API server,
// and where it gets its configuration.
func TestFlags(t *testing.T) {
	for _, c := range []struct {
		args, env []string
		code      int
		says      string
	}{
		{[]string{"extra"}, nil, 2, "unexpected arguments"},
		{[]string{"--sim", "a", "--root", "b"}, nil, 2, "--sim and --root"},
		{[]string{"--nope"}, nil, 2, "flag provided but not defined"},
		{[]string{"--version"}, nil, 0, "rdmaform-agent "},
		// No --kubeconfig and not in a pod: the in-cluster configuration
		// is missing, and it says so.
		{[]string{"--node-name", "n1"}, []string{"KUBERNETES_SERVICE_HOST="}, 1, "rdmaform-agent: unable to load in-cluster configuration"},
		{[]string{"--kubeconfig", "/nonexistent/kubeconfig", "--node-name", "n1"}, nil, 1, "/nonexistent/kubeconfig"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), c.args, c.env, &stderr)
		if code != c.code || !strings.Contains(stderr.String(), c.says) {
			t.Errorf("%v: exit %d, want %d saying %q:\n%s", c.args, code, c.code, c.says, stderr.String())
		}
	}
}
