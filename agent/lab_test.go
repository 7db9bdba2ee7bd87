package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rdmaform/rdmaform/internal/testlab/kubelab"
)

// The API server the tests run on: kubelab's real kube-apiserver and
// etcd, one pair for the package, with the manifests installed as docs/guides/kubernetes.md
// says (kubectl apply -f deploy/kubernetes/crds/, then
// deploy/kubernetes/: the namespace, the agent's RBAC, its own-node
// admission policy and the DaemonSet, which nothing runs here).
var (
	shared      kubelab.Shared
	installOnce sync.Once
	installOut  string
	installErr  error
)

func TestMain(m *testing.M) {
	// controller-runtime's log goes nowhere (it complains once otherwise).
	ctrllog.SetLogger(logr.Discard())
	os.Exit(shared.Run(m))
}

func lab(t *testing.T) *kubelab.Lab {
	t.Helper()
	l := shared.Get(t)
	installOnce.Do(func() {
		ctx := context.Background()
		dir := filepath.Join("..", "deploy", "kubernetes")
		for _, args := range [][]string{
			{"apply", "-f", filepath.Join(dir, "crds") + "/"},
			{"wait", "--for", "condition=established", "--timeout", "120s", "crd/rdmahostconfigs.rdmaform.io", "crd/rdmahoststates.rdmaform.io"},
			{"apply", "-f", dir + "/"},
		} {
			installOut, installErr = l.Kubectl(ctx, args...)
			if installErr != nil {
				return
			}
		}
	})
	if installErr != nil {
		t.Fatalf("installing deploy/kubernetes: %v\n%s", installErr, installOut)
	}
	return l
}
