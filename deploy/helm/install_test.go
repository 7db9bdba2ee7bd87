package helm_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/rdmaform/rdmaform/internal/testlab/kubelab"
)

const guide = "docs/guides/kubernetes.md"

// guideBlocks are the commands of each ```sh block of the guide's
// "Install with Helm" section, a command's continuation lines (ending
// in a backslash) joined.
func guideBlocks(t testing.TB) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, guide))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	start := strings.Index(s, "\n## Install with Helm\n")
	if start < 0 {
		t.Fatalf("%s has no section \"Install with Helm\"", guide)
	}
	s = s[start+1:]
	if end := strings.Index(s, "\n## "); end >= 0 {
		s = s[:end]
	}
	var blocks [][]string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(s, -1) {
		var cmds []string
		cur := ""
		for _, line := range strings.Split(m[1], "\n") {
			line = strings.TrimSpace(line)
			if i := strings.Index(line, " #"); i >= 0 {
				line = strings.TrimSpace(line[:i])
			}
			if c, ok := strings.CutSuffix(line, "\\"); ok {
				cur += c
				continue
			}
			if cur += line; strings.TrimSpace(cur) != "" {
				cmds = append(cmds, strings.TrimSpace(cur))
			}
			cur = ""
		}
		blocks = append(blocks, cmds)
	}
	return blocks
}

// runGuide runs the guide's commands on l, from the repository's top (so
// deploy/helm/rdmaform resolves): helm and kubectl are the lab's, with
// its admin's kubeconfig; the words are the arguments (no shell: a
// command with a quote or a shell operator is refused).
func runGuide(t *testing.T, l *kubelab.Lab, cmds []string) {
	t.Helper()
	for _, c := range cmds {
		if strings.ContainsAny(c, "'\"$|;&<>`*") {
			t.Fatalf("%s: %q is not a plain command line", guide, c)
		}
		args := strings.Fields(c)
		var out string
		var err error
		switch args[0] {
		case "helm":
			out, err = helm(t, root, l.Kubeconfig, args[1:]...)
		case "kubectl":
			// A file's path is from the repository's top, as helm's.
			for i := 2; i < len(args); i++ {
				if (args[i-1] == "-f" || args[i-1] == "--filename") && !filepath.IsAbs(args[i]) {
					args[i] = filepath.Join(root, args[i])
				}
			}
			out, err = l.KubectlWith(context.Background(), l.Kubeconfig, nil, args[1:]...)
		default:
			t.Fatalf("%s: %q: the test runs helm and kubectl only", guide, c)
		}
		if err != nil {
			t.Fatalf("%s: %s: %v\n%s", guide, c, err, out)
		}
		t.Logf("$ %s\n%s", c, strings.TrimSpace(out))
	}
}

// TestChartInstallUpgrade: the guide's "Install with Helm" commands on a
// lab of their own (so that the Prometheus operator's CRDs are absent
// first): helm install makes the CRDs, RBAC, admission policy, DaemonSet
// and Service, and no ServiceMonitor (the cluster does not serve
// ServiceMonitor); with the operator's CRD installed, the guide's helm
// upgrade lands its new image tag and the ServiceMonitor appears; an
// upgrade with serviceMonitor.enabled=false removes it; helm uninstall
// removes the agent and keeps the CRDs.
func TestChartInstallUpgrade(t *testing.T) {
	blocks := guideBlocks(t)
	if len(blocks) != 2 {
		t.Fatalf("%s's \"Install with Helm\" has %d sh blocks, want 2 (install, upgrade): %q", guide, len(blocks), blocks)
	}
	helmBin(t)
	l := kubelab.Start(t)
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(l.Config)
	serviceMonitors := schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "servicemonitors"}
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	image := func() string {
		ds, err := l.Client.AppsV1().DaemonSets(namespace).Get(ctx, "rdmaform-agent", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return ds.Spec.Template.Spec.Containers[0].Image
	}

	// Install.
	runGuide(t, l, blocks[0])
	for _, name := range []string{"rdmahostconfigs.rdmaform.io", "rdmahoststates.rdmaform.io"} {
		if _, err := dyn.Resource(crds).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("the CRD %s after helm install: %v", name, err)
		}
	}
	if _, err := l.Client.RbacV1().ClusterRoles().Get(ctx, "rdmaform-agent", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
	if _, err := l.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, "rdmaform-agent-own-node", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
	if _, err := l.Client.CoreV1().Services(namespace).Get(ctx, "rdmaform-agent-metrics", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
	ds0, err := l.Client.AppsV1().DaemonSets(namespace).Get(ctx, "rdmaform-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	img0 := ds0.Spec.Template.Spec.Containers[0].Image
	if !strings.HasPrefix(img0, "registry.example.com/") {
		t.Errorf("the installed DaemonSet's image %q: not the guide's repository", img0)
	}
	if manifest := mustHelmIn(t, l, "get", "manifest", "rdmaform", "-n", namespace); strings.Contains(manifest, "kind: ServiceMonitor") {
		t.Errorf("a ServiceMonitor without the Prometheus operator's CRDs:\n%s", manifest)
	}

	// The Prometheus operator's CRD, then the guide's upgrade.
	installServiceMonitorCRD(t, l)
	runGuide(t, l, blocks[1])
	img1 := image()
	if img1 == img0 || !strings.HasSuffix(img1, ":0.2.0") || !strings.HasPrefix(img1, strings.Split(img0, ":")[0]+":") {
		t.Errorf("the image after the guide's upgrade: %q (before %q), want the same repository at 0.2.0", img1, img0)
	}
	if _, err := dyn.Resource(serviceMonitors).Namespace(namespace).Get(ctx, "rdmaform-agent", metav1.GetOptions{}); err != nil {
		t.Errorf("the ServiceMonitor after the upgrade with the operator's CRDs: %v", err)
	}
	for _, name := range []string{"rdmahostconfigs.rdmaform.io", "rdmahoststates.rdmaform.io"} {
		if _, err := dyn.Resource(crds).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("the CRD %s after helm upgrade: %v", name, err)
		}
	}
	history := mustHelmIn(t, l, "history", "rdmaform", "-n", namespace)
	if !regexp.MustCompile(`(?m)^2\s.*deployed\s+rdmaform-`).MatchString(history) {
		t.Errorf("helm history after the upgrade:\n%s", history)
	}

	// Asked not to: the ServiceMonitor goes, the rest stays.
	mustHelmIn(t, l, "upgrade", "rdmaform", "deploy/helm/rdmaform", "-n", namespace, "--reuse-values", "--set", "metrics.serviceMonitor.enabled=false")
	if _, err := dyn.Resource(serviceMonitors).Namespace(namespace).Get(ctx, "rdmaform-agent", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ServiceMonitor after serviceMonitor.enabled=false: %v, want it gone", err)
	}
	if got := image(); got != img1 {
		t.Errorf("the image after an upgrade with --reuse-values: %q, want %q", got, img1)
	}

	// Uninstalled: the agent and its RBAC go, the CRDs stay (Helm never
	// deletes those of crds/), and with them every config.
	mustHelmIn(t, l, "uninstall", "rdmaform", "-n", namespace)
	if _, err := l.Client.AppsV1().DaemonSets(namespace).Get(ctx, "rdmaform-agent", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the DaemonSet after helm uninstall: %v", err)
	}
	if _, err := l.Client.RbacV1().ClusterRoles().Get(ctx, "rdmaform-agent", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ClusterRole after helm uninstall: %v", err)
	}
	for _, name := range []string{"rdmahostconfigs.rdmaform.io", "rdmahoststates.rdmaform.io"} {
		if _, err := dyn.Resource(crds).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("the CRD %s after helm uninstall: %v", name, err)
		}
	}
}

func mustHelmIn(t *testing.T, l *kubelab.Lab, args ...string) string {
	t.Helper()
	out, err := helm(t, root, l.Kubeconfig, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
