package labbin

import (
	"fmt"
	"os"
	"path/filepath"
)

// Helm is the version of helm (helm.sh/helm/v3) the lab builds into
// Dir() beside the control plane, for the Helm chart's tests
// (deploy/helm). It has a stamp of its own, so that a lab built before
// helm joined it is completed, not rebuilt.
const Helm = "v3.22.0"

// HelmBin is helm's file in Dir(); HelmStampFile says it is complete.
const (
	HelmBin       = "helm"
	HelmStampFile = ".stamp-helm"
)

// HelmStamp is what the helm stamp file says.
func HelmStamp() string { return "helm " + Helm + "\n" }

// CheckHelm says why dir holds no helm of this version (nil when it
// does).
func CheckHelm(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, HelmStampFile))
	if err != nil {
		return fmt.Errorf("no helm in the Kubernetes lab %s (run make k8s-lab, or set %s): %w", dir, DirEnv, err)
	}
	if string(b) != HelmStamp() {
		return fmt.Errorf("the Kubernetes lab's helm in %s is %q, want %s (run make k8s-lab)", dir, string(b), Helm)
	}
	st, err := os.Stat(filepath.Join(dir, HelmBin))
	if err != nil {
		return fmt.Errorf("the Kubernetes lab in %s lacks helm (run make k8s-lab): %w", dir, err)
	}
	if st.Mode()&0o111 == 0 {
		return fmt.Errorf("the Kubernetes lab's %s is not executable", filepath.Join(dir, HelmBin))
	}
	return nil
}
