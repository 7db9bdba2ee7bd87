// The Helm chart deploy/helm/rdmaform with the real helm (helm.sh/helm/v3,
// built into the Kubernetes lab's cache by make k8s-lab) and the real
// API server (internal/testlab/kubelab): helm lint, helm template with
// the default values (the objects of deploy/kubernetes/, one by one) and
// with every value set, the values' schema, server-side apply with strict
// field validation, and the guide's helm install and helm upgrade.
package helm_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"golang.org/x/tools/go/packages"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-tools/pkg/crd"
	"sigs.k8s.io/controller-tools/pkg/genall"
	"sigs.k8s.io/controller-tools/pkg/loader"
	"sigs.k8s.io/yaml"

	"github.com/rdmaform/rdmaform/internal/testlab/kubelab"
	"github.com/rdmaform/rdmaform/internal/testlab/kubelab/labbin"
	"github.com/rdmaform/rdmaform/internal/testlab/need"
)

const (
	chart     = "rdmaform"
	root      = "../.."
	namespace = "rdmaform-system"
	everyNS   = "rdma-agents"
)

var lab kubelab.Shared

func TestMain(m *testing.M) { os.Exit(lab.Run(m)) }

// helmBin is the lab's helm, or the test skips (fails under
// RDMAFORM_REQUIRE_LAB=1).
func helmBin(t testing.TB) string {
	t.Helper()
	dir := labbin.Dir()
	if err := labbin.CheckHelm(dir); err != nil {
		need.Skip(t, "%v", err)
	}
	return filepath.Join(dir, labbin.HelmBin)
}

// helm runs the lab's helm with args in dir (no shell), with a home of
// its own and kubeconfig ("" for none); the error has its stderr.
func helm(t testing.TB, dir, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(helmBin(t), args...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin",
		"HELM_CACHE_HOME=" + home + "/cache", "HELM_CONFIG_HOME=" + home + "/config", "HELM_DATA_HOME=" + home + "/data",
		"KUBECONFIG=" + kubeconfig}
	if kubeconfig == "" {
		cmd.Env[len(cmd.Env)-1] = "KUBECONFIG=" + filepath.Join(home, "no-cluster")
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

func mustHelm(t testing.TB, args ...string) string {
	t.Helper()
	out, err := helm(t, ".", "", args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// objects are the YAML documents of a stream, empty ones left out.
func objects(t testing.TB, stream []byte) []*unstructured.Unstructured {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		if m != nil {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

func key(o *unstructured.Unstructured) string {
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

func byKey(t testing.TB, objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	t.Helper()
	m := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if _, dup := m[key(o)]; dup {
			t.Errorf("%s twice", key(o))
		}
		m[key(o)] = o
	}
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// manifests are the objects of deploy/kubernetes/*.yaml and its crds/.
func manifests(t testing.TB) []*unstructured.Unstructured {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, "deploy/kubernetes/*.yaml"))
	crds, _ := filepath.Glob(filepath.Join(root, "deploy/kubernetes/crds/*.yaml"))
	var objs []*unstructured.Unstructured
	for _, f := range append(files, crds...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, objects(t, b)...)
	}
	return objs
}

// helmLabels are the labels the chart adds to each object of its
// templates (templates/_helpers.tpl), by their values for the release
// "rdmaform" of the chart as Chart.yaml is.
func helmLabels(t testing.TB) map[string]string {
	t.Helper()
	var c struct{ Version, AppVersion string }
	b, err := os.ReadFile(filepath.Join(chart, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"helm.sh/chart":                "rdmaform-" + c.Version,
		"app.kubernetes.io/instance":   "rdmaform",
		"app.kubernetes.io/version":    c.AppVersion,
		"app.kubernetes.io/managed-by": "Helm",
	}
}

// TestChartAgreesWithManifests: helm template with the default values
// renders exactly the objects of deploy/kubernetes/ and its CRDs, but for
// the Namespace (which the user makes, see the guide) and Helm's labels;
// every one of those labels is on every templated object. make manifests
// makes the chart's RBAC, admission policy and CRDs from
// deploy/kubernetes (internal/crdgen); this test holds the DaemonSet and
// the Service, which the chart templates by hand, to the same objects.
func TestChartAgreesWithManifests(t *testing.T) {
	out := mustHelm(t, "template", "rdmaform", chart, "--namespace", namespace, "--include-crds")
	got := byKey(t, objects(t, []byte(out)))
	want := map[string]*unstructured.Unstructured{}
	for _, o := range manifests(t) {
		if o.GetKind() != "Namespace" {
			want[key(o)] = o
		}
	}
	labels := helmLabels(t)
	for _, k := range sortedKeys(got) {
		o := got[k]
		w, ok := want[k]
		if !ok {
			t.Errorf("the chart renders %s, which deploy/kubernetes has not", k)
			continue
		}
		if o.GetKind() != "CustomResourceDefinition" {
			l := o.GetLabels()
			for name, v := range labels {
				if l[name] != v {
					t.Errorf("%s: label %s is %q, want %q", k, name, l[name], v)
				}
				delete(l, name)
			}
			o.SetLabels(l)
		}
		if d := cmp.Diff(w.Object, o.Object); d != "" {
			t.Errorf("%s differs from deploy/kubernetes (-manifest +chart):\n%s", k, d)
		}
	}
	for _, k := range sortedKeys(want) {
		if _, ok := got[k]; !ok {
			t.Errorf("deploy/kubernetes has %s, which the chart does not render", k)
		}
	}
	if len(got) < 10 {
		t.Errorf("only %d objects rendered: %v", len(got), sortedKeys(got))
	}
}

// TestChartLint: helm lint --strict passes the chart with its default
// values and with every value set, and fails it with a bad one.
func TestChartLint(t *testing.T) {
	for _, args := range [][]string{{}, {"-f", "testdata/every-value.yaml"}} {
		out := mustHelm(t, append([]string{"lint", "--strict", chart}, args...)...)
		if !strings.Contains(out, "1 chart(s) linted, 0 chart(s) failed") {
			t.Errorf("helm lint %v:\n%s", args, out)
		}
	}
	out, err := helm(t, ".", "", "lint", "--strict", chart, "--set", "metrics.port=0")
	if err == nil || !strings.Contains(out+err.Error(), "/metrics/port") {
		t.Errorf("helm lint with metrics.port=0: %v\n%s", err, out)
	}
}

// leaves are the paths of a values document's leaves: a mapping is
// walked into, unless empty; a list is a leaf.
func leaves(prefix string, v any, out map[string]any) {
	if m, ok := v.(map[string]any); ok && len(m) > 0 {
		for k, c := range m {
			leaves(prefix+"."+k, c, out)
		}
		return
	}
	out[prefix] = v
}

// lookup is the value at a path leaves made (".a.b") in a values
// document.
func lookup(m map[string]any, path string) (any, bool) {
	var v any = m
	for _, k := range strings.Split(strings.TrimPrefix(path, "."), ".") {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = mm[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

func readYAML(t testing.TB, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// as converts an object to its typed form.
func as[T any](t testing.TB, o *unstructured.Unstructured) *T {
	t.Helper()
	var v T
	if o == nil {
		t.Fatalf("no object for %T", v)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, &v, true); err != nil {
		t.Fatalf("%s: %v", key(o), err)
	}
	return &v
}

// same converts want (a values subtree) to got's type through JSON and
// compares.
func same(t testing.TB, what string, want, got any) {
	t.Helper()
	b, err := yaml.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	w := reflect.New(reflect.TypeOf(got))
	if err := yaml.UnmarshalStrict(b, w.Interface()); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if d := cmp.Diff(w.Elem().Interface(), got); d != "" {
		t.Errorf("%s (-values +rendered):\n%s", what, d)
	}
}

// TestChartEveryValue: testdata/every-value.yaml sets each value of
// values.yaml to something else than its default, and helm template puts
// each where it belongs, in a namespace other than rdmaform-system (the
// RBAC's subjects and the admission policy's user name follow it).
func TestChartEveryValue(t *testing.T) {
	defaults := map[string]any{}
	leaves("", readYAML(t, filepath.Join(chart, "values.yaml")), defaults)
	values := readYAML(t, "testdata/every-value.yaml")
	for _, p := range sortedKeys(defaults) {
		v, ok := lookup(values, p)
		if !ok {
			t.Errorf("testdata/every-value.yaml does not set %s", p)
		} else if reflect.DeepEqual(v, defaults[p]) {
			t.Errorf("testdata/every-value.yaml sets %s to its default %v", p, v)
		}
	}

	out := mustHelm(t, "template", "rdmaform", chart, "--namespace", everyNS, "-f", "testdata/every-value.yaml")
	objs := byKey(t, objects(t, []byte(out)))
	for _, k := range sortedKeys(objs) {
		if ns := objs[k].GetNamespace(); ns != "" && ns != everyNS {
			t.Errorf("%s is in %s, want %s", k, ns, everyNS)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") && strings.Contains(line, namespace) {
			t.Errorf("the render in %s still names %s: %q", everyNS, namespace, line)
		}
	}
	crb := objs["ClusterRoleBinding /rdmaform-agent"]
	if s, _, _ := unstructured.NestedSlice(crb.Object, "subjects"); len(s) != 1 || s[0].(map[string]any)["namespace"] != everyNS {
		t.Errorf("the ClusterRoleBinding's subjects: %v", s)
	}
	vap := objs["ValidatingAdmissionPolicy /rdmaform-agent-own-node"]
	if c, _, _ := unstructured.NestedSlice(vap.Object, "spec", "matchConditions"); len(c) != 1 ||
		!strings.Contains(c[0].(map[string]any)["expression"].(string), `"system:serviceaccount:`+everyNS+`:rdmaform-agent"`) {
		t.Errorf("the admission policy's match conditions: %v", c)
	}

	ds := as[appsv1.DaemonSet](t, objs["DaemonSet "+everyNS+"/rdmaform-agent"])
	pod := ds.Spec.Template.Spec
	c := pod.Containers[0]
	img := values["image"].(map[string]any)
	if want := img["repository"].(string) + "@" + img["digest"].(string); c.Image != want {
		t.Errorf("image %q, want %q", c.Image, want)
	}
	if string(c.ImagePullPolicy) != img["pullPolicy"] {
		t.Errorf("imagePullPolicy %q", c.ImagePullPolicy)
	}
	same(t, "imagePullSecrets", values["imagePullSecrets"], pod.ImagePullSecrets)
	same(t, "nodeSelector", values["nodeSelector"], pod.NodeSelector)
	same(t, "tolerations", values["tolerations"], pod.Tolerations)
	if pod.Affinity == nil {
		t.Fatal("no affinity")
	}
	same(t, "affinity", values["affinity"], *pod.Affinity)
	same(t, "resources", values["resources"], c.Resources)
	if want := []string{"--metrics-address=:9478"}; !reflect.DeepEqual(c.Args, want) {
		t.Errorf("args %v, want %v", c.Args, want)
	}
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != 9478 {
		t.Errorf("ports %+v, want 9478", c.Ports)
	}
	svc := as[corev1.Service](t, objs["Service "+everyNS+"/rdmaform-agent-metrics"])
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 9478 || svc.Spec.Ports[0].TargetPort.StrVal != "metrics" {
		t.Errorf("the Service's ports %+v", svc.Spec.Ports)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m
	}
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	prop := corev1.MountPropagationHostToContainer
	dirOrCreate := corev1.HostPathDirectoryOrCreate
	for _, w := range []struct {
		mount corev1.VolumeMount
		path  string
		typ   *corev1.HostPathType
	}{
		{corev1.VolumeMount{Name: "opt-mellanox", MountPath: "/opt/mellanox", ReadOnly: true, MountPropagation: &prop}, "/opt/mellanox", &dirOrCreate},
		{corev1.VolumeMount{Name: "firmware", MountPath: "/lib/firmware", ReadOnly: true}, "/lib/firmware", nil},
		{corev1.VolumeMount{Name: "rdmaform-catalog", MountPath: "/var/cache/rdmaform"}, "/var/cache/rdmaform", &dirOrCreate},
	} {
		if d := cmp.Diff(w.mount, mounts[w.mount.Name]); d != "" {
			t.Errorf("volume mount %s (-want +got):\n%s", w.mount.Name, d)
		}
		want := corev1.Volume{Name: w.mount.Name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: w.path, Type: w.typ}}}
		if d := cmp.Diff(want, vols[w.mount.Name]); d != "" {
			t.Errorf("volume %s (-want +got):\n%s", w.mount.Name, d)
		}
	}
	if len(c.VolumeMounts) != 8 || len(pod.Volumes) != 8 {
		t.Errorf("%d mounts and %d volumes, want the agent's 5 and 3 more", len(c.VolumeMounts), len(pod.Volumes))
	}

	smObj := objs["ServiceMonitor "+everyNS+"/rdmaform-agent"]
	if smObj == nil {
		t.Fatalf("no ServiceMonitor with serviceMonitor.enabled true: %v", sortedKeys(objs))
	}
	b, _ := yaml.Marshal(smObj.Object)
	var sm monitoringv1.ServiceMonitor
	if err := yaml.UnmarshalStrict(b, &sm); err != nil {
		t.Fatalf("the ServiceMonitor is not the operator's type: %v", err)
	}
	if sm.Labels["release"] != "prometheus" || len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" ||
		sm.Spec.Endpoints[0].Interval != "30s" ||
		sm.Spec.Selector.MatchLabels["app.kubernetes.io/name"] != svc.Labels["app.kubernetes.io/name"] {
		t.Errorf("the ServiceMonitor: %+v", sm)
	}

	// The tag, when there is no digest.
	out = mustHelm(t, "template", "rdmaform", chart, "-f", "testdata/every-value.yaml", "--set", "image.digest=", "--show-only", "templates/daemonset.yaml")
	if ds := as[appsv1.DaemonSet](t, objects(t, []byte(out))[0]); ds.Spec.Template.Spec.Containers[0].Image != "registry.example.com/hpc/rdmaform-agent:0.2.0" {
		t.Errorf("image without a digest: %s", ds.Spec.Template.Spec.Containers[0].Image)
	}
}

// TestChartRefusesBadValues: a value the schema or the chart's own checks
// refuse fails helm template with its path, and the limits pass at the
// limit: each case one value away from the defaults.
func TestChartRefusesBadValues(t *testing.T) {
	for _, c := range []struct {
		set  []string
		want string // "" for accepted
	}{
		{[]string{"metrics.port=1"}, ""},
		{[]string{"metrics.port=65535"}, ""},
		{[]string{"metrics.port=0"}, "at '/metrics/port': minimum"},
		{[]string{"metrics.port=65536"}, "at '/metrics/port': maximum"},
		{[]string{"metrics.port=http"}, "at '/metrics/port': got string, want integer"},
		{[]string{"metrics.serviceMonitor.enabled=maybe"}, "at '/metrics/serviceMonitor/enabled'"},
		{[]string{"metrics.serviceMonitor.interval=5 minutes"}, "at '/metrics/serviceMonitor/interval'"},
		{[]string{"metrics.serviceMonitor.interval=1h30m"}, ""},
		{[]string{"image.digest=sha256:abc"}, "at '/image/digest'"},
		{[]string{"image.tag=0.2.0:latest"}, "at '/image/tag'"},
		{[]string{"image.repository=registry.example.com/x@sha256"}, "at '/image/repository'"},
		{[]string{"image.pullPolicy=Sometimes"}, "at '/image/pullPolicy'"},
		{[]string{"imagePullSecret[0].name=x"}, "additional properties 'imagePullSecret' not allowed"},
		{[]string{"tolerations[0].operator=Exist"}, "at '/tolerations/0/operator'"},
		{[]string{"nodeSelector.rdma=true"}, "at '/nodeSelector/rdma': got boolean, want string"},
		{[]string{"resources.limits.memory=lots"}, "at '/resources/limits/memory'"},
		{[]string{"extraHostMounts[0].name=sys", "extraHostMounts[0].hostPath=/sys"}, "at '/extraHostMounts/0/name'"},
		{[]string{"extraHostMounts[0].name=Tools", "extraHostMounts[0].hostPath=/opt/tools"}, "at '/extraHostMounts/0/name'"},
		{[]string{"extraHostMounts[0].name=tools", "extraHostMounts[0].hostPath=opt/tools"}, "at '/extraHostMounts/0/hostPath'"},
		{[]string{"extraHostMounts[0].name=tools", "extraHostMounts[0].hostPath=/opt/../etc"}, "at '/extraHostMounts/0/hostPath'"},
		{[]string{"extraHostMounts[0].name=tools"}, "at '/extraHostMounts/0': missing property 'hostPath'"},
		{[]string{"extraHostMounts[0].name=tools", "extraHostMounts[0].hostPath=/opt/tools", "extraHostMounts[0].readonly=true"}, "additional properties 'readonly' not allowed"},
		{[]string{"extraHostMounts[0].name=tools", "extraHostMounts[0].hostPath=/opt/tools", "extraHostMounts[1].name=tools", "extraHostMounts[1].hostPath=/opt/x"},
			`extraHostMounts[1]: the name "tools" is taken by extraHostMounts[0]`},
		{[]string{"extraHostMounts[0].name=dbus", "extraHostMounts[0].hostPath=/run/dbus", "extraHostMounts[0].mountPath=/run/"},
			`extraHostMounts[0]: the mount path /run is taken by the volume "run"`},
		{[]string{"extraHostMounts[0].name=tools", "extraHostMounts[0].hostPath=/opt/tools", "extraHostMounts[1].name=tools2", "extraHostMounts[1].hostPath=/opt/tools"},
			`extraHostMounts[1]: the mount path /opt/tools is taken by the volume "tools"`},
	} {
		args := []string{"template", "rdmaform", chart}
		for _, s := range c.set {
			args = append(args, "--set", s)
		}
		out, err := helm(t, ".", "", args...)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v refused: %v", c.set, err)
		case c.want == "" && !strings.Contains(out, "kind: DaemonSet"):
			t.Errorf("%v: no DaemonSet rendered:\n%s", c.set, out)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v: %v, want an error with %q", c.set, err, c.want)
		}
	}
}

var (
	monitoringOnce sync.Once
	monitoringCRD  []byte
	monitoringErr  error
)

// memOutput keeps what controller-tools writes, by file name.
type memOutput map[string]*bytes.Buffer

func (m memOutput) Open(_ *loader.Package, path string) (io.WriteCloser, error) {
	b := &bytes.Buffer{}
	m[path] = b
	return nopCloser{b}, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// serviceMonitorCRD is the Prometheus operator's ServiceMonitor CRD, made
// as the operator makes it (controller-gen on its API types) from
// github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring
// at the version go.mod names.
func serviceMonitorCRD(t testing.TB) []byte {
	t.Helper()
	monitoringOnce.Do(func() {
		t0 := time.Now()
		var g genall.Generator = crd.Generator{}
		rt, err := genall.Generators{&g}.ForRootsWithConfig(&packages.Config{Dir: root}, "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1")
		if err != nil {
			monitoringErr = err
			return
		}
		out := memOutput{}
		rt.OutputRules = genall.OutputRules{Default: out}
		var errs bytes.Buffer
		rt.ErrorWriter = &errs
		if rt.Run() {
			monitoringErr = fmt.Errorf("controller-tools: %s", errs.String())
			return
		}
		b, ok := out["monitoring.coreos.com_"+strings.ToLower(monitoringv1.ServiceMonitorName)+".yaml"]
		if !ok {
			monitoringErr = fmt.Errorf("controller-tools made no ServiceMonitor CRD: %v", sortedKeys(out))
			return
		}
		monitoringCRD = b.Bytes()
		t.Logf("the ServiceMonitor CRD generated in %s", time.Since(t0).Round(time.Millisecond))
	})
	if monitoringErr != nil {
		t.Fatal(monitoringErr)
	}
	return monitoringCRD
}

// installServiceMonitorCRD applies the operator's ServiceMonitor CRD to l
// and waits until it is served.
func installServiceMonitorCRD(t testing.TB, l *kubelab.Lab) {
	t.Helper()
	ctx := context.Background()
	if _, err := l.KubectlWith(ctx, l.Kubeconfig, serviceMonitorCRD(t), "apply", "--server-side", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	l.MustKubectl(t, "wait", "--for", "condition=Established", "--timeout", "60s", "crd/servicemonitors.monitoring.coreos.com")
}

// TestChartServerSideApply: the chart rendered with its default values
// (in rdmaform-system) and with every value set (in another namespace,
// its ServiceMonitor included, against the operator's own CRD) goes
// through the API server's server-side apply with strict field
// validation, and the API server then has each object. A render with a
// field the API does not have is refused, so acceptance means something;
// helm install over the objects so applied is refused (the guide: the
// chart or deploy/kubernetes, not both).
func TestChartServerSideApply(t *testing.T) {
	l := lab.Get(t)
	ctx := context.Background()
	installServiceMonitorCRD(t, l)
	for _, r := range []struct{ ns, values string }{{namespace, ""}, {everyNS, "testdata/every-value.yaml"}} {
		args := []string{"template", "rdmaform", chart, "--namespace", r.ns, "--include-crds"}
		if r.values != "" {
			args = append(args, "-f", r.values)
		}
		out := mustHelm(t, args...)
		l.MustKubectl(t, "create", "namespace", r.ns)
		if _, err := l.KubectlWith(ctx, l.Kubeconfig, []byte(out), "apply", "--server-side", "--validate=strict", "-f", "-"); err != nil {
			t.Fatalf("%s: %v", r.ns, err)
		}
		names, err := l.KubectlWith(ctx, l.Kubeconfig, []byte(out), "get", "-f", "-", "-o", "name")
		if err != nil {
			t.Fatal(err)
		}
		if n, want := len(strings.Fields(names)), len(objects(t, []byte(out))); n != want {
			t.Errorf("%s: the API server has %d of the %d objects:\n%s", r.ns, n, want, names)
		}
		if r.values != "" && !strings.Contains(names, "servicemonitor.monitoring.coreos.com/rdmaform-agent") {
			t.Errorf("%s: no ServiceMonitor among %s", r.ns, names)
		}

		if r.ns == namespace {
			// Objects made without Helm are not Helm's to take over.
			_, err := helm(t, ".", l.Kubeconfig, "install", "rdmaform", chart, "--namespace", r.ns)
			if err == nil || !strings.Contains(err.Error(), "invalid ownership metadata") {
				t.Errorf("helm install over the applied objects: %v, want Helm to refuse them", err)
			}
		}
		for _, bad := range []struct{ old, new, field string }{
			{"hostNetwork: true", "hostNetwork: true\n      hostNetworking: true", "hostNetworking"},
			{"- port: metrics\n", "- port: metrics\n      scrapeInterval: 30s\n", "scrapeInterval"},
		} {
			if !strings.Contains(out, bad.old) {
				continue // no ServiceMonitor in this render
			}
			b := strings.Replace(out, bad.old, bad.new, 1)
			_, err := l.KubectlWith(ctx, l.Kubeconfig, []byte(b), "apply", "--server-side", "--validate=strict", "--dry-run=server", "-f", "-")
			if err == nil || !strings.Contains(err.Error(), bad.field) {
				t.Errorf("%s: a render with the unknown field %s: %v, want it refused naming the field", r.ns, bad.field, err)
			}
		}
	}
}
