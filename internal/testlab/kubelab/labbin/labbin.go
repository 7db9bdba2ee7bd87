// Package labbin says where the Kubernetes lab's binaries live and which
// versions they are: kube-apiserver, kubectl and the kubelet built from
// k8s.io/kubernetes, etcd from go.etcd.io/etcd/server/v3, all through the
// Go module proxy (../shared/reference/k8s-lab.md). `make k8s-lab` (the
// program in ../buildlab) fills the directory; the lab (package kubelab)
// reads it. It imports nothing of Kubernetes, so the build program stays
// small.
package labbin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The versions the lab builds and runs.
const (
	Kubernetes = "v1.37.2" // k8s.io/kubernetes (kube-apiserver, kubectl, kubelet)
	Staging    = "v0.37.2" // its staging modules (k8s.io/api, client-go, ...)
	Etcd       = "v3.6.16" // go.etcd.io/etcd/server/v3
)

// DirEnv names the directory that holds the binaries, overriding Root.
const DirEnv = "RDMAFORM_K8S_LAB_DIR"

// Root is where the versioned directories live by default.
const Root = "/var/cache/rdmaform/k8s-lab"

// The binaries a complete directory holds.
const (
	APIServer = "kube-apiserver"
	Kubectl   = "kubectl"
	EtcdBin   = "etcd"
	// Kubelet runs the agent's pod for real (internal/testlab/kubeletlab).
	Kubelet = "kubelet"
)

// Binaries lists them.
var Binaries = []string{APIServer, Kubectl, EtcdBin, Kubelet}

// StampFile is written last by the build: its content is Stamp().
const StampFile = ".stamp"

// Name is the versioned directory's name under Root.
func Name() string { return "kubernetes-" + Kubernetes + "-etcd-" + Etcd }

// Stamp is what the stamp file says: the versions the binaries are.
func Stamp() string { return "kubernetes " + Kubernetes + "\netcd " + Etcd + "\n" }

// Dir is the directory the binaries are in: $RDMAFORM_K8S_LAB_DIR, else
// Root/Name(). (It holds them side by side, so it also serves as
// controller-runtime envtest's KUBEBUILDER_ASSETS.)
func Dir() string {
	if d := os.Getenv(DirEnv); d != "" {
		return d
	}
	return filepath.Join(Root, Name())
}

// Check says why dir is not a complete lab of these versions (nil when it
// is): the stamp is missing or names other versions, or a binary is
// missing.
func Check(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, StampFile))
	if err != nil {
		return fmt.Errorf("no Kubernetes lab in %s (run make k8s-lab, or set %s): %w", dir, DirEnv, err)
	}
	if string(b) != Stamp() {
		return fmt.Errorf("the Kubernetes lab in %s is %q, want %q (run make k8s-lab)",
			dir, strings.TrimSpace(strings.ReplaceAll(string(b), "\n", ", ")),
			strings.TrimSpace(strings.ReplaceAll(Stamp(), "\n", ", ")))
	}
	for _, n := range Binaries {
		st, err := os.Stat(filepath.Join(dir, n))
		if err != nil {
			return fmt.Errorf("the Kubernetes lab in %s lacks %s (run make k8s-lab): %w", dir, n, err)
		}
		if st.Mode()&0o111 == 0 {
			return fmt.Errorf("the Kubernetes lab's %s is not executable", filepath.Join(dir, n))
		}
	}
	return nil
}
