package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/rdmaform/rdmaform/internal/testlab/kubelab/labbin"
)

// helmTools names helm's command for the throwaway module's go mod tidy.
const helmTools = `//go:build tools

// Package tools names the command this module builds.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
`

// runHelm builds helm (labbin.Helm) into dir unless its own stamp says
// it is there: a throwaway module in DIR/src/helm requires
// helm.sh/helm/v3 at that version, with the module versions helm's
// release names (its go.mod), and builds cmd/helm with the flags helm's
// Makefile gives a release.
func runHelm(dir string, force bool) error {
	if !force && labbin.CheckHelm(dir) == nil {
		logf("%s has helm %s", dir, labbin.Helm)
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	lock, err := lockBuild(dir)
	if err != nil {
		return err
	}
	defer lock.Close()
	if !force && labbin.CheckHelm(dir) == nil {
		logf("%s has helm %s (built by the process we waited for)", dir, labbin.Helm)
		return nil
	}
	t0 := time.Now()
	if err := os.Remove(filepath.Join(dir, labbin.HelmStampFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	src := filepath.Join(dir, "src", "helm")
	if err := initModule(src, "rdmaform-k8s-lab/helm"); err != nil {
		return err
	}
	if err := gocmd(src, "get", "helm.sh/helm/v3@"+labbin.Helm); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, "tools.go"), []byte(helmTools), 0o644); err != nil {
		return err
	}
	if err := gocmd(src, "mod", "tidy"); err != nil {
		return err
	}
	// helm.sh/helm/v3's Makefile (v3.22.0): the version, and the
	// Kubernetes version helm template and helm lint assume without a
	// cluster: 1.MINOR of the k8s.io/client-go it builds with (else 1.20,
	// older than any the chart supports).
	cmd := exec.Command(goTool, "list", "-m", "-f", "{{.Version}}", "k8s.io/client-go")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local")
	v, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go list -m k8s.io/client-go (in %s): %w", src, err)
	}
	parts := strings.Split(strings.TrimPrefix(strings.TrimSpace(string(v)), "v"), ".")
	if len(parts) < 2 || parts[0] != "0" {
		return fmt.Errorf("helm's k8s.io/client-go is %q, want v0.MINOR.PATCH", v)
	}
	ld := []string{"-s", "-w",
		"-X", "helm.sh/helm/v3/internal/version.version=" + labbin.Helm,
		"-X", "helm.sh/helm/v3/internal/version.gitTreeState=clean",
	}
	for _, p := range []string{"helm.sh/helm/v3/pkg/lint/rules", "helm.sh/helm/v3/pkg/chartutil"} {
		ld = append(ld, "-X", p+".k8sVersionMajor=1", "-X", p+".k8sVersionMinor="+parts[1])
	}
	out := filepath.Join(dir, ".build-helm")
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	build := exec.Command(goTool, "build", "-trimpath", "-ldflags", strings.Join(ld, " "), "-o", out+"/", "helm.sh/helm/v3/cmd/helm")
	build.Dir = src
	build.Env = append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local", "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	tb := time.Now()
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build helm.sh/helm/v3/cmd/helm (in %s): %w", src, err)
	}
	logf("go build helm: %s", time.Since(tb).Round(100*time.Millisecond))
	b, err := exec.Command(filepath.Join(out, labbin.HelmBin), "version", "--template", "{{.Version}}").CombinedOutput()
	if err != nil {
		return fmt.Errorf("helm version: %w: %s", err, b)
	}
	if string(b) != labbin.Helm {
		return fmt.Errorf("helm version says %q, want %q", b, labbin.Helm)
	}
	logf("helm %s", b)
	if err := os.Rename(filepath.Join(out, labbin.HelmBin), filepath.Join(dir, labbin.HelmBin)); err != nil {
		return err
	}
	if err := os.Remove(out); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, labbin.HelmStampFile), []byte(labbin.HelmStamp()), 0o644); err != nil {
		return err
	}
	logf("built helm %s into %s in %s", labbin.Helm, dir, time.Since(t0).Round(time.Second))
	return nil
}
