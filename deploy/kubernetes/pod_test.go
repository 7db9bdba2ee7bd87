package kubernetes_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"

	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/kubelab"
	"github.com/rdmaform/rdmaform/internal/testlab/kubelab/labbin"
	"github.com/rdmaform/rdmaform/internal/testlab/kubeletlab"
	"github.com/rdmaform/rdmaform/internal/testlab/need"
	"github.com/rdmaform/rdmaform/internal/testlab/netns"
	"github.com/rdmaform/rdmaform/internal/testlab/nmlab"
	"github.com/rdmaform/rdmaform/internal/testlab/systemdlab"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// kubeletPath is the lab's kubelet (make k8s-lab); RDMAFORM_KUBELET names
// another.
func kubeletPath() string {
	if p := os.Getenv("RDMAFORM_KUBELET"); p != "" {
		return p
	}
	return filepath.Join(labbin.Dir(), "kubelet")
}

// TestAgentPodOnKubelet: the agent's image (make image) runs as the
// DaemonSet's pod on a real kubelet (containerd and runc): the pod is the
// DaemonSet's template as it is (privileged, host network, the host's
// /sys, /run, /etc, /var/lib/rdmaform and /lib/modules, its service
// account's projected token), plus the API server's address. The
// kubelet's "host" is a network namespace and a mount namespace of the
// test's own (package kubeletlab), so the agent's process must be in that
// network namespace, with every capability (privileged). Four pods, one
// after the other, each ending with the node's state InSync for the
// config's generation after an apply that changed something, the agent's
// next plan empty, and the change seen from outside the pod:
//   - a simulated host mounted in (--sim): a module is loaded on it, and
//     rdmaform's own plan of it is empty;
//   - the DaemonSet's pod as it is, on the kubelet's host: netlink in the
//     test's network namespace sets a veth's state, MTU and address there,
//     and the machine's own namespace has no such link;
//   - the real NetworkManager (package nmlab), its bus socket at the
//     kubelet's /run/dbus/system_bus_socket, and a host tree with a
//     ConnectX-6's sysfs (--root): the agent makes an IPoIB P_Key profile
//     that nmcli then shows as the spec says;
//   - a real systemd manager (package systemdlab) on that bus as
//     org.freedesktop.systemd1, and /run/systemd/system in the kubelet's
//     /run: the DaemonSet's pod as it is enables and starts a unit.
func TestAgentPodOnKubelet(t *testing.T) {
	archives, _ := filepath.Glob("../../dist/rdmaform-agent_*_amd64.oci.tar")
	if len(archives) == 0 {
		need.Skip(t, "no dist/rdmaform-agent_*_amd64.oci.tar: run make image")
	}
	start := time.Now()
	l := applied(t)
	ctx := context.Background()
	const node = "kubelet-1"
	k := kubeletlab.Start(t, l, kubeletPath(), node, kubeletlab.Image{Archive: archives[len(archives)-1], Name: "docker.io/library/rdmaform-agent"})
	t.Logf("the kubelet registered %s after %s", node, time.Since(start).Round(100*time.Millisecond))
	kubeletlab.RootCA(t, l, namespace)
	if _, err := l.Client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"rdmaform.io/pool":"kubelet"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	admin := dynamic.NewForConfigOrDie(l.Config)
	t.Cleanup(func() { _ = admin.Resource(configs).Delete(context.Background(), "kubelet", metav1.DeleteOptions{}) })

	// 1. The simulated host, without the module yet.
	st, err := sim.NewState("cx6-vpi-ib", node, 0)
	if err != nil {
		t.Fatal(err)
	}
	hostDir := filepath.Join(k.Dir, "host")
	if _, err := sim.Create(hostDir, st); err != nil {
		t.Fatal(err)
	}
	if simtest.State(t, hostDir).ModuleLoaded("rdma_ucm") {
		t.Fatal("rdma_ucm is loaded on the simulated host before the agent ran")
	}
	pod := agentPod(t, l, k, func(c *corev1.Container, p *corev1.PodSpec) {
		c.Args = append(c.Args, "--sim", "/sim", "--interval", "5s")
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "sim", MountPath: "/sim"})
		dir := corev1.HostPathDirectory
		p.Volumes = append(p.Volumes, corev1.Volume{Name: "sim", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir, Type: &dir}}})
	})
	runPod(t, l, k, pod)
	gen := setConfig(t, admin, map[string]any{"version": int64(1), "modules": []any{"rdma_ucm"}})
	converged(t, admin, k, node, gen)
	if !simtest.State(t, hostDir).ModuleLoaded("rdma_ucm") {
		t.Errorf("the agent in the pod reported InSync, but rdma_ucm is not loaded on the host")
	}
	var out bytes.Buffer
	if code := cli.Run([]string{"--sim", hostDir, "plan", "-f", "-"}, cli.Env{Stdin: strings.NewReader("version: 1\nmodules: [rdma_ucm]\n"), Stdout: &out, Stderr: &out}); code != 0 {
		t.Errorf("rdmaform plan of the host the pod configured: exit %d, want 0 (nothing to do):\n%s", code, out.String())
	}
	deletePod(t, l, k, pod)

	// 2. The DaemonSet's pod as it is, on the kubelet's host: netlink in
	// the test's network namespace.
	link, err := k.Net.Handle.LinkByName(netns.Veth0)
	if err != nil {
		t.Fatal(err)
	}
	if a := link.Attrs(); a.MTU == 9000 || a.Flags&net.FlagUp != 0 {
		t.Fatalf("%s is already up with MTU %d", netns.Veth0, a.MTU)
	}
	pod = agentPod(t, l, k, func(c *corev1.Container, p *corev1.PodSpec) {
		c.Args = append(c.Args, "--interval", "5s")
	})
	runPod(t, l, k, pod)
	gen = setConfig(t, admin, map[string]any{"version": int64(1), "interfaces": []any{map[string]any{
		"name": netns.Veth0, "state": "up", "mtu": int64(9000), "addresses": []any{"192.0.2.1/24"}}}})
	converged(t, admin, k, node, gen)
	link, err = k.Net.Handle.LinkByName(netns.Veth0)
	if err != nil {
		t.Fatal(err)
	}
	if a := link.Attrs(); a.MTU != 9000 || a.Flags&net.FlagUp == 0 {
		t.Errorf("%s in the kubelet's namespace: MTU %d, flags %v; want 9000, up", netns.Veth0, a.MTU, a.Flags)
	}
	addrs, err := k.Net.Handle.AddrList(link, netlink.FAMILY_V4)
	if err != nil || len(addrs) != 1 || addrs[0].IPNet.String() != "192.0.2.1/24" {
		t.Errorf("%s's IPv4 addresses in the kubelet's namespace: %v, %v; want 192.0.2.1/24", netns.Veth0, addrs, err)
	}
	if _, err := netlink.LinkByName(netns.Veth0); err == nil {
		t.Errorf("the machine's own network namespace has a link %s", netns.Veth0)
	}
	deletePod(t, l, k, pod)

	// 3. The real NetworkManager's D-Bus as the host's system bus: its
	// socket at /run/dbus/system_bus_socket of the kubelet's /run, which
	// the DaemonSet mounts; the agent works on a host tree (--root) whose
	// sysfs has the ConnectX-6's ib0, and makes the P_Key profile through
	// NetworkManager.
	nm := nmlab.Start(t)
	bus, ok := strings.CutPrefix(nm.Bus(), "unix:path=")
	if !ok {
		t.Fatalf("the NetworkManager lab's bus %q is not a path", nm.Bus())
	}
	if err := os.MkdirAll(filepath.Join(k.Run, "dbus"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A second name for the same socket (a bind mount would be the
	// machine's mount).
	if err := os.Link(bus, filepath.Join(k.Run, "dbus", "system_bus_socket")); err != nil {
		t.Fatal(err)
	}
	rootDir := filepath.Join(k.Dir, "root")
	if _, err := sim.Create(rootDir, st); err != nil {
		t.Fatal(err)
	}
	if r := nm.Nmcli("connection", "show", "id", "ib0-storage"); r.Exit == 0 {
		t.Fatalf("NetworkManager has ib0-storage before the agent ran")
	}
	pod = agentPod(t, l, k, func(c *corev1.Container, p *corev1.PodSpec) {
		c.Args = append(c.Args, "--root", "/host-root", "--interval", "5s")
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "host-root", MountPath: "/host-root"})
		dir := corev1.HostPathDirectory
		p.Volumes = append(p.Volumes, corev1.Volume{Name: "host-root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: rootDir, Type: &dir}}})
	})
	runPod(t, l, k, pod)
	gen = setConfig(t, admin, map[string]any{"version": int64(1), "ipoib": []any{map[string]any{
		"name": "ib0-storage", "parent": "ib0", "pkey": "0x8002", "mtu": int64(2000),
		"ipv4": map[string]any{"addresses": []any{"192.0.2.1/24"}}, "state": "down"}}})
	converged(t, admin, k, node, gen)
	r := nm.Nmcli("-t", "-f", "connection.interface-name,infiniband.p-key,infiniband.mtu,ipv4.addresses", "connection", "show", "id", "ib0-storage")
	want := "connection.interface-name:ib0.8002\ninfiniband.p-key:0x8002\ninfiniband.mtu:2000\nipv4.addresses:192.0.2.1/24\n"
	if r.Exit != 0 || string(r.Stdout) != want {
		t.Errorf("nmcli connection show id ib0-storage: exit %d\n%s%s\nwant:\n%s", r.Exit, r.Stdout, r.Stderr, want)
	}
	deletePod(t, l, k, pod)

	// 4. A real systemd manager on that bus as org.freedesktop.systemd1,
	// and /run/systemd/system in the kubelet's /run (systemd is the init
	// system, as sd_booted(3) checks): the DaemonSet's pod as it is
	// enables and starts a unit through it.
	sd := systemdlab.Start(t, systemdlab.WithBus(nm.Bus()))
	const unit = "rdmaform-lab.service"
	sd.AddUnit(t, unit, "[Unit]\nDescription=a unit the agent's pod enables and starts\n[Service]\nExecStart=/bin/sleep infinity\n[Install]\nWantedBy=default.target\n")
	if err := os.MkdirAll(filepath.Join(k.Run, "systemd", "system"), 0o755); err != nil {
		t.Fatal(err)
	}
	manager := &host.SystemdBus{Address: sd.Address}
	t.Cleanup(manager.Close)
	if u, err := manager.Unit(ctx, unit); err != nil || u.Enabled() || u.Active() {
		t.Fatalf("%s before the agent ran: %+v, %v; want disabled and inactive", unit, u, err)
	}
	pod = agentPod(t, l, k, func(c *corev1.Container, p *corev1.PodSpec) {
		c.Args = append(c.Args, "--interval", "5s")
	})
	runPod(t, l, k, pod)
	gen = setConfig(t, admin, map[string]any{"version": int64(1), "services": []any{map[string]any{
		"name": unit, "enabled": true, "active": true}}})
	converged(t, admin, k, node, gen)
	if u, err := manager.Unit(ctx, unit); err != nil || !u.Enabled() || !u.Active() {
		t.Errorf("%s after the agent ran: %+v, %v; want enabled and active", unit, u, err)
	}
}

// agentPod is the DaemonSet's pod for the kubelet's node, with the API
// server's address, changed by edit. Where this machine has no
// /lib/modules (its kernel has no modules), the modules volume stays, from
// a directory of the test's own.
func agentPod(t *testing.T, l *kubelab.Lab, k *kubeletlab.Kubelet, edit func(*corev1.Container, *corev1.PodSpec)) *corev1.Pod {
	t.Helper()
	data, err := os.ReadFile("30-daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ds appsv1.DaemonSet
	if err := yaml.Unmarshal(data, &ds); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: ds.Spec.Template.ObjectMeta, Spec: ds.Spec.Template.Spec}
	pod.Name, pod.Namespace = "rdmaform-agent-"+k.Node, namespace
	pod.Spec.NodeName = k.Node
	c := &pod.Spec.Containers[0]
	c.Env = append(c.Env, kubeletlab.ServerEnv(l)...)
	if _, err := os.Stat("/lib/modules"); err != nil {
		for i, v := range pod.Spec.Volumes {
			if v.HostPath != nil && v.HostPath.Path == "/lib/modules" {
				mods := filepath.Join(k.Dir, "modules")
				if err := os.MkdirAll(mods, 0o755); err != nil {
					t.Fatal(err)
				}
				pod.Spec.Volumes[i].HostPath.Path = mods
			}
		}
	}
	edit(c, &pod.Spec)
	return pod
}

// stuck are the reasons of a waiting container that more waiting does not
// mend here (the kubelet retries them, the test need not).
var stuck = map[string]bool{
	"CreateContainerError": true, "CreateContainerConfigError": true, "ErrImageNeverPull": true,
	"InvalidImageName": true, "ErrImagePull": true, "ImagePullBackOff": true, "CrashLoopBackOff": true,
}

// runPod creates the pod and waits for its container to run, then checks
// the agent's process.
func runPod(t *testing.T, l *kubelab.Lab, k *kubeletlab.Kubelet, pod *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	if _, err := l.Client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		_ = l.Client.CoreV1().Pods(namespace).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	start := time.Now()
	deadline := start.Add(5 * time.Minute)
	for {
		p, err := l.Client.CoreV1().Pods(namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready {
			if got := p.Status.ContainerStatuses[0].ImageID; !strings.Contains(got, "sha256:") {
				t.Errorf("the container's image ID %q", got)
			}
			break
		}
		if err == nil && len(p.Status.ContainerStatuses) == 1 {
			if w := p.Status.ContainerStatuses[0].State.Waiting; w != nil && stuck[w.Reason] {
				t.Fatalf("the agent's container: %s: %s\n%s", w.Reason, w.Message, k.Logs())
			}
		}
		// A sandbox that runc cannot start fails the same way each time.
		events, _ := l.Client.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod.Name + ",reason=FailedCreatePodSandBox"})
		if events != nil && len(events.Items) > 0 {
			t.Fatalf("the agent's pod: FailedCreatePodSandBox: %s\n%s", events.Items[0].Message, k.Logs())
		}
		if time.Now().After(deadline) {
			var status any
			if p != nil {
				status = p.Status
			}
			t.Fatalf("the agent's pod is not running after 5 minutes: %v %+v\n%s", err, status, k.Logs())
		}
		time.Sleep(time.Second)
	}
	t.Logf("the agent's pod ran %s after it was created", time.Since(start).Round(100*time.Millisecond))
	checkAgentProcess(t, k)
}

// deletePod deletes the pod and waits until the kubelet has ended its
// processes.
func deletePod(t *testing.T, l *kubelab.Lab, k *kubeletlab.Kubelet, pod *corev1.Pod) {
	t.Helper()
	zero := int64(0)
	if err := l.Client.CoreV1().Pods(namespace).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, err := l.Client.CoreV1().Pods(namespace).Get(context.Background(), pod.Name, metav1.GetOptions{})
		procs, perr := k.PodProcesses()
		if apierrors.IsNotFound(err) && perr == nil && len(procs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pod %s is not gone after 2 minutes: %v; processes %v\n%s", pod.Name, err, procs, k.Logs())
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// setConfig creates or updates the config "kubelet" with hostSpec and
// returns its generation.
func setConfig(t *testing.T, admin dynamic.Interface, hostSpec map[string]any) int64 {
	t.Helper()
	ctx := context.Background()
	spec := map[string]any{
		"nodeSelector": map[string]any{"matchLabels": map[string]any{"rdmaform.io/pool": "kubelet"}},
		"hostSpec":     hostSpec,
		"policy":       map[string]any{"mode": "apply", "activation": "none", "maxUnavailable": int64(1)},
	}
	cfg, err := admin.Resource(configs).Get(ctx, "kubelet", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cfg = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "rdmaform.io/v1alpha1", "kind": "RDMAHostConfig",
			"metadata": map[string]any{"name": "kubelet"}, "spec": spec,
		}}
		cfg, err = admin.Resource(configs).Create(ctx, cfg, metav1.CreateOptions{})
	} else if err == nil {
		cfg.Object["spec"] = spec
		cfg, err = admin.Resource(configs).Update(ctx, cfg, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	return cfg.GetGeneration()
}

// converged waits for the node's state to say: InSync for generation,
// after an apply that changed something, and an empty plan after it.
func converged(t *testing.T, admin dynamic.Interface, k *kubeletlab.Kubelet, node string, generation int64) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(3 * time.Minute)
	for {
		s, err := admin.Resource(states).Get(context.Background(), node, metav1.GetOptions{})
		if err == nil && appliedThenPlannedEmpty(s, generation, start) {
			t.Logf("%s InSync for generation %d, applied and planned empty %s after the config: %v", node, generation, time.Since(start).Round(100*time.Millisecond), s.Object["status"])
			return
		}
		if time.Now().After(deadline) {
			var status any
			if s != nil {
				status = s.Object["status"]
			}
			t.Fatalf("%s's state is not InSync for generation %d with an apply and an empty plan after it: %v, %v\n%s", node, generation, err, status, k.Logs())
		}
		time.Sleep(time.Second)
	}
}

// checkAgentProcess: the agent's process in the pod is in the kubelet's
// network namespace (hostNetwork: the test's, not the machine's) and has
// the capabilities this test has (privileged).
func checkAgentProcess(t *testing.T, k *kubeletlab.Kubelet) {
	t.Helper()
	procs, err := k.PodProcesses()
	if err != nil {
		t.Fatal(err)
	}
	agent := 0
	for pid, argv := range procs {
		if len(argv) > 0 && argv[0] == "/usr/sbin/rdmaform-agent" {
			agent = pid
		}
	}
	if agent == 0 {
		t.Fatalf("no /usr/sbin/rdmaform-agent among the pods' processes: %v", procs)
	}
	ino := func(path string) uint64 {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	got, want := ino(fmt.Sprintf("/proc/%d/ns/net", agent)), ino("/run/netns/"+k.Net.Name)
	if got != want {
		t.Errorf("the agent (PID %d) is in network namespace %d, want the kubelet's %s (%d)", agent, got, k.Net.Name, want)
	}
	if capEff(t, agent) != capEff(t, os.Getpid()) {
		t.Errorf("the agent's effective capabilities %s, want this test's %s (privileged)", capEff(t, agent), capEff(t, os.Getpid()))
	}
}

func capEff(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("/proc/%d/status has no CapEff", pid)
	return ""
}

// appliedThenPlannedEmpty: the state is InSync for the config's
// generation, its last apply, at or after since (to the second the API
// keeps), succeeded and changed something, and the agent planned again
// after it and found nothing to do.
//
// lastPlanTime is the time of the state's last change (the agent writes
// nothing when a plan changes nothing), so the apply's own state, whose
// plan is the one after the apply, has it in the apply's second.
func appliedThenPlannedEmpty(s *unstructured.Unstructured, generation int64, since time.Time) bool {
	conds, _, _ := unstructured.NestedSlice(s.Object, "status", "conditions")
	inSync := false
	for _, c := range conds {
		m := c.(map[string]any)
		if m["type"] == "InSync" && m["status"] == "True" && m["observedGeneration"] == generation {
			inSync = true
		}
	}
	exit, _, _ := unstructured.NestedInt64(s.Object, "status", "lastApply", "exitCode")
	applied, _, _ := unstructured.NestedInt64(s.Object, "status", "lastApply", "applied")
	applyTime, _, _ := unstructured.NestedString(s.Object, "status", "lastApply", "time")
	planTime, _, _ := unstructured.NestedString(s.Object, "status", "lastPlanTime")
	plan, _, _ := unstructured.NestedMap(s.Object, "status", "plan")
	at, err1 := time.Parse(time.RFC3339, applyTime)
	pt, err2 := time.Parse(time.RFC3339, planTime)
	empty := plan != nil
	for _, k := range []string{"add", "change", "remove"} {
		if n, ok := plan[k].(int64); !ok || n != 0 {
			empty = false
		}
	}
	return inSync && exit == 0 && applied > 0 && err1 == nil && err2 == nil && !at.Before(since.Truncate(time.Second)) && !pt.Before(at) && empty
}
