package agent_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/rdmaform/rdmaform/internal/testlab/need"
)

// The API server the tests run on: a real kube-apiserver and etcd, one pair
// per test package, with the CRDs of deploy/kubernetes/crds installed.
var (
	labOnce sync.Once
	labCfg  *rest.Config
	labErr  error
	labEnv  *envtest.Environment
)

func kubeBinDir() string {
	if d := os.Getenv("RDMAFORM_K8S_BIN"); d != "" {
		return d
	}
	return "/work/k8s-build/bin"
}

func lab(t *testing.T) *rest.Config {
	t.Helper()
	dir := kubeBinDir()
	if _, err := os.Stat(filepath.Join(dir, "kube-apiserver")); err != nil {
		need.Skip(t, "no kube-apiserver in %s (make k8s-lab)", dir)
	}
	labOnce.Do(func() {
		labEnv = &envtest.Environment{
			BinaryAssetsDirectory:    dir,
			CRDDirectoryPaths:        []string{filepath.Join("..", "deploy", "kubernetes", "crds")},
			ErrorIfCRDPathMissing:    true,
			ControlPlaneStartTimeout: 2 * time.Minute,
			ControlPlaneStopTimeout:  time.Minute,
		}
		labCfg, labErr = labEnv.Start()
	})
	if labErr != nil {
		t.Fatalf("starting the API server: %v", labErr)
	}
	return rest.CopyConfig(labCfg)
}

func TestMain(m *testing.M) {
	code := m.Run()
	if labEnv != nil {
		_ = labEnv.Stop()
	}
	os.Exit(code)
}
