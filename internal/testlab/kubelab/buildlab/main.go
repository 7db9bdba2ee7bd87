// Command buildlab builds the Kubernetes lab's binaries (`make k8s-lab`):
// kube-apiserver, kubectl and the kubelet from k8s.io/kubernetes, etcd from
// go.etcd.io/etcd/server/v3, at the versions package labbin names, all
// from the Go module proxy, into labbin.Dir() (RDMAFORM_K8S_LAB_DIR, else
// /var/cache/rdmaform/k8s-lab/kubernetes-VERSION-etcd-VERSION). A
// directory whose stamp names these versions is reused as it is. helm
// (helm.sh/helm/v3, helm.go) joins them with a stamp of its own.
//
// k8s.io/kubernetes cannot be `go install`ed: it requires its staging
// modules (k8s.io/api, k8s.io/client-go, ...) at v0.0.0 and replaces them
// with its own staging/ directory. A throwaway module in DIR/src/kubernetes
// requires k8s.io/kubernetes and replaces each of those modules with its
// published release (v0.37.2 for v1.37.2); etcd gets its own module in
// DIR/src/etcd. Nothing is written into the repository: every file is
// under DIR, and the Go build and module caches are the user's own, so a
// second build on a machine with warm caches only links.
//
// Several processes may run it at once (two test packages, two helpers):
// a lock file beside DIR makes the second one wait and then find the
// stamp.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/rdmaform/rdmaform/internal/testlab/kubelab/labbin"
)

func main() {
	force := flag.Bool("force", false, "build again even when the stamp names these versions")
	flag.Parse()
	if err := run(labbin.Dir(), *force); err != nil {
		fmt.Fprintln(os.Stderr, "k8s-lab:", err)
		os.Exit(1)
	}
	if err := runHelm(labbin.Dir(), *force); err != nil { // helm.go
		fmt.Fprintln(os.Stderr, "k8s-lab:", err)
		os.Exit(1)
	}
}

// goTool is the go command of the toolchain running this program.
var goTool = filepath.Join(runtime.GOROOT(), "bin", "go")

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "k8s-lab: "+format+"\n", args...)
}

// lockBuild takes DIR.lock, waiting for another build that holds it
// (two test runs may start make k8s-lab at once); closing the file
// releases it.
func lockBuild(dir string) (*os.File, error) {
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		logf("another build holds %s.lock; waiting for it", dir)
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
			lock.Close()
			return nil, err
		}
	}
	return lock, nil
}

func run(dir string, force bool) error {
	if !force && labbin.Check(dir) == nil {
		logf("%s is ready (kubernetes %s, etcd %s)", dir, labbin.Kubernetes, labbin.Etcd)
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	lock, err := lockBuild(dir)
	if err != nil {
		return err
	}
	defer lock.Close()
	if !force && labbin.Check(dir) == nil {
		logf("%s is ready (built by the process we waited for)", dir)
		return nil
	}
	t0 := time.Now()
	// The stamp goes first and comes back last: an interrupted build
	// leaves no directory that claims to be complete.
	if err := os.Remove(filepath.Join(dir, labbin.StampFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	out := filepath.Join(dir, ".build")
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := buildKubernetes(filepath.Join(dir, "src", "kubernetes"), out); err != nil {
		return err
	}
	if err := buildEtcd(filepath.Join(dir, "src", "etcd"), out); err != nil {
		return err
	}
	if err := checkVersions(out); err != nil {
		return err
	}
	for _, n := range labbin.Binaries {
		if err := os.Rename(filepath.Join(out, n), filepath.Join(dir, n)); err != nil {
			return err
		}
	}
	if err := os.Remove(out); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, labbin.StampFile), []byte(labbin.Stamp()), 0o644); err != nil {
		return err
	}
	logf("built %s in %s", dir, time.Since(t0).Round(time.Second))
	return nil
}

// gocmd runs the go command in dir with args, its output going to ours;
// the step's time is logged.
func gocmd(dir string, args ...string) error {
	t0 := time.Now()
	cmd := exec.Command(goTool, args...)
	cmd.Dir = dir
	// The throwaway modules are their own: no workspace, the toolchain
	// that runs this program.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local")
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
	err := cmd.Run()
	logf("go %s: %s", strings.Join(short(args), " "), time.Since(t0).Round(100*time.Millisecond))
	if err != nil {
		return fmt.Errorf("go %s (in %s): %w", strings.Join(args, " "), dir, err)
	}
	return nil
}

// short abbreviates a long argument list for the log.
func short(args []string) []string {
	var s []string
	for _, a := range args {
		if len(a) > 60 {
			a = a[:57] + "..."
		}
		s = append(s, a)
	}
	if len(s) > 6 {
		s = append(s[:6], fmt.Sprintf("(%d more)", len(s)-6))
	}
	return s
}

// initModule makes dir a module named name (kept when it is one already,
// so a second build reuses its go.sum).
func initModule(dir, name string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
		return nil
	}
	return gocmd(dir, "mod", "init", name)
}

// tools is the throwaway module's only source file: it names the two
// commands so that `go mod tidy` keeps every module they need.
const tools = `//go:build tools

// Package tools names the commands this module builds.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
`

func buildKubernetes(src, out string) error {
	if err := initModule(src, "rdmaform-k8s-lab/kubernetes"); err != nil {
		return err
	}
	if err := gocmd(src, "get", "k8s.io/kubernetes@"+labbin.Kubernetes); err != nil {
		return err
	}
	staging, err := stagingModules()
	if err != nil {
		return err
	}
	args := []string{"mod", "edit"}
	for _, m := range staging {
		args = append(args, "-replace", m+"="+m+"@"+labbin.Staging)
	}
	if err := gocmd(src, args...); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, "tools.go"), []byte(tools), 0o644); err != nil {
		return err
	}
	if err := gocmd(src, "mod", "tidy"); err != nil {
		return err
	}
	// What `kubectl version` and the server's /version say (the
	// variables Kubernetes' own hack/lib/version.sh sets).
	var ld []string
	for _, p := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		ld = append(ld, "-X", p+".gitVersion="+labbin.Kubernetes,
			"-X", p+".gitMajor="+major(labbin.Kubernetes), "-X", p+".gitMinor="+minor(labbin.Kubernetes),
			"-X", p+".gitTreeState=clean")
	}
	// One go build for the three: they share most packages. Static, as
	// Kubernetes' own release builds are (the kubelet too).
	return gocmd(src, "build", "-ldflags", "-s -w "+strings.Join(ld, " "), "-o", out+"/",
		"k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kubectl", "k8s.io/kubernetes/cmd/kubelet")
}

// stagingModules are the modules k8s.io/kubernetes requires at v0.0.0
// (its go.mod, as the module cache holds it after go get).
func stagingModules() ([]string, error) {
	cmd := exec.Command(goTool, "mod", "download", "-json", "k8s.io/kubernetes@"+labbin.Kubernetes)
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local")
	cmd.Dir = os.TempDir()
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go mod download k8s.io/kubernetes@%s: %w", labbin.Kubernetes, err)
	}
	var info struct{ GoMod string }
	if err := json.Unmarshal(b, &info); err != nil || info.GoMod == "" {
		return nil, fmt.Errorf("go mod download -json k8s.io/kubernetes@%s: no go.mod path in %q", labbin.Kubernetes, b)
	}
	mod, err := os.ReadFile(info.GoMod)
	if err != nil {
		return nil, err
	}
	return parseStaging(mod), nil
}

var stagingLine = regexp.MustCompile(`^\s*(k8s\.io/[a-z0-9-]+) v0\.0\.0$`)

// parseStaging returns the k8s.io modules a go.mod requires at exactly
// v0.0.0 (not the pseudo-versions v0.0.0-DATE-HASH), sorted, once each.
func parseStaging(mod []byte) []string {
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(mod))
	for sc.Scan() {
		if m := stagingLine.FindStringSubmatch(strings.TrimSuffix(sc.Text(), "\r")); m != nil {
			seen[m[1]] = true
		}
	}
	var mods []string
	for m := range seen {
		mods = append(mods, m)
	}
	sort.Strings(mods)
	return mods
}

func major(v string) string { return strings.Split(strings.TrimPrefix(v, "v"), ".")[0] }
func minor(v string) string { return strings.Split(strings.TrimPrefix(v, "v"), ".")[1] }

func buildEtcd(src, out string) error {
	if err := initModule(src, "rdmaform-k8s-lab/etcd"); err != nil {
		return err
	}
	if err := gocmd(src, "get", "go.etcd.io/etcd/server/v3@"+labbin.Etcd); err != nil {
		return err
	}
	return gocmd(src, "build", "-ldflags", "-s -w", "-o", filepath.Join(out, labbin.EtcdBin), "go.etcd.io/etcd/server/v3")
}

// checkVersions runs each binary's version flag: a binary that does not
// say the version it was built as is not stamped.
func checkVersions(out string) error {
	checks := []struct {
		bin  string
		args []string
		want string
	}{
		{labbin.APIServer, []string{"--version"}, "Kubernetes " + labbin.Kubernetes},
		{labbin.Kubectl, []string{"version", "--client"}, "Client Version: " + labbin.Kubernetes},
		{labbin.Kubelet, []string{"--version"}, "Kubernetes " + labbin.Kubernetes},
		{labbin.EtcdBin, []string{"--version"}, "etcd Version: " + strings.TrimPrefix(labbin.Etcd, "v")},
	}
	for _, c := range checks {
		b, err := exec.Command(filepath.Join(out, c.bin), c.args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s %s: %w: %s", c.bin, strings.Join(c.args, " "), err, b)
		}
		if !strings.Contains(string(b), c.want) {
			return fmt.Errorf("%s %s says %q, want %q in it", c.bin, strings.Join(c.args, " "), b, c.want)
		}
		logf("%s", strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	}
	return nil
}
