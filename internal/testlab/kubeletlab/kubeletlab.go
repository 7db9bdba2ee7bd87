// Package kubeletlab runs a real kubelet beside a Kubernetes lab's API
// server (package kubelab): the kubelet built from k8s.io/kubernetes by
// make k8s-lab, Debian's containerd 1.6 and runc as its container runtime,
// registered as a Node, so that a test's pod really runs, from an OCI
// archive (make image), with its securityContext, host namespaces and
// mounts.
//
// What keeps this machine as it was:
//   - the kubelet and containerd run in a network namespace of the test's
//     own (package netns: loopback up and a veth pair), so a hostNetwork
//     pod's netlink reaches that namespace only; the API server, which
//     listens on the root namespace's loopback, is reached through a
//     listener the test opens inside the namespace on the same address
//     and port, which forwards each connection to it;
//   - they run in a mount and PID namespace of their own (unshare --mount
//     --pid --fork --kill-child): when the test binary dies, the
//     namespace's first process gets SIGKILL and the kernel ends every
//     process in it, the containers' too. In that mount namespace /sys is
//     the network namespace's own sysfs (the cgroup hierarchies moved onto
//     it), /run is a directory of the test's (Run), and /etc, /var/lib,
//     /var/log and /opt are overlays whose upper directories are the
//     test's: what the kubelet, containerd and the pods' hostPath volumes
//     write there (the kubelet's device-plugins socket, containerd's shim
//     sockets and fifos and /opt/containerd, the pods' logs, the
//     DaemonSet's /var/lib/rdmaform) never reaches the machine, and the
//     test checks that none of those paths appeared. /sys and /run are
//     shared mounts there, as on a systemd host, since the DaemonSet
//     mounts them with HostToContainer propagation;
//   - at start the kubelet writes six kernel tunables that no namespace
//     holds (vm.overcommit_memory, vm.panic_on_oom, kernel.panic,
//     kernel.panic_on_oops, kernel.keys.root_maxkeys and root_maxbytes;
//     pkg/kubelet/cm/container_manager_linux.go, setupKernelTunables):
//     in the kubelet's namespace each of those /proc/sys files is a bind
//     mount of a copy, so its writes land in the copy (the test checks
//     that the machine's values are unchanged);
//   - no iptables chains (makeIPTablesUtilChains: false), its pods'
//     cgroups under /rdmaform-kubelet-* (cgroupRoot), which the reap
//     guardian removes if the test cannot;
//   - containerd's root, state and socket are the test's directory.
//
// Where the machine lacks CAP_SYS_RESOURCE in its capability bounding set
// (these Firecracker VMs), no process may lower its oom_score_adj below
// 0, and runc fails every pod sandbox, to which containerd gives -998
// (runc's nsexec: "failed to update /proc/self/oom_score_adj: Permission
// denied", then "can't get final child's PID from pipe: EOF"). There the
// lab sets containerd's restrict_oom_score_adj, which raises a
// container's score to containerd's own; a node with the capability runs
// the scores the kubelet and containerd ask for.
//
// Pods on this node should use hostNetwork: there is no CNI, so the
// runtime's network stays "not ready" and only host-network pods start.
package kubeletlab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmaform/rdmaform/internal/testlab/kubelab"
	"github.com/rdmaform/rdmaform/internal/testlab/need"
	"github.com/rdmaform/rdmaform/internal/testlab/netns"
	"github.com/rdmaform/rdmaform/internal/testlab/reap"
)

// Tunables are the /proc/sys files the kubelet writes at start.
var Tunables = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
}

// Written are paths the kubelet, containerd and the DaemonSet's pod write
// by default, whatever their configuration says; in the kubelet's mount
// namespace they are in the test's directory.
var Written = []string{
	"/var/lib/kubelet", "/var/lib/rdmaform", "/var/log/pods", "/var/log/containers",
	"/run/containerd", "/opt/containerd",
}

// NodeIP is the Node's address, in the kubelet's network namespace (a
// documentation prefix, RFC 5737).
const NodeIP = "198.51.100.1"

// PauseImage is the pod sandbox image the lab builds and containerd is
// configured with (there is no registry to pull one from).
const PauseImage = "rdmaform.io/pause:lab"

// Image is an OCI archive to import, under a name.
type Image struct {
	// Archive is the OCI archive (an image layout in a tar).
	Archive string
	// Name is the repository the archive's tags are imported under, as
	// the CRI normalises it (docker.io/library/NAME for a bare NAME).
	Name string
}

// Kubelet is a running kubelet and its containerd.
type Kubelet struct {
	Node       string
	Dir        string
	Socket     string
	CgroupRoot string
	// Run is the directory the kubelet's mount namespace has as /run,
	// which the DaemonSet's pod mounts (a test puts a D-Bus socket at
	// Run/dbus/system_bus_socket, say).
	Run string
	// Net is the kubelet's network namespace, a hostNetwork pod's.
	Net     *netns.Lab
	ln      net.Listener
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
	release []func()
}

// launcher runs in the new namespaces: it makes the tunables copies,
// gives the mount namespace its own /sys, /run, /etc, /var/lib, /var/log
// and /opt, starts containerd, waits for its socket and becomes the
// kubelet. The machine's /sys goes (umount --lazy) rather than stays
// under the new one: containerd takes the first of two mounts on one
// path, and HostToContainer needs that one to be shared.
const launcher = `set -eu
dir=$1; shift
for f in ` + "$TUNABLES" + `; do
  c="$dir/sysctl/$(echo "$f" | tr / _)"
  cat "/proc/sys/$f" > "$c"
  mount --bind "$c" "/proc/sys/$f"
done
mkdir "$dir/cgroup"
mount --rbind /sys/fs/cgroup "$dir/cgroup"
umount --lazy /sys
mount -t sysfs sysfs /sys
mount --move "$dir/cgroup" /sys/fs/cgroup
mount --make-rshared /sys
mount --bind "$dir/run" /run
mount --make-shared /run
for d in etc var/lib var/log opt; do
  o="$dir/overlay/$(echo "$d" | tr / _)"
  mkdir -p "$o/upper" "$o/work"
  mount -t overlay overlay -o "lowerdir=/$d,upperdir=$o/upper,workdir=$o/work" "/$d"
done
containerd --config "$dir/containerd.toml" > "$dir/containerd.log" 2>&1 &
i=0
while [ ! -S "$dir/containerd.sock" ]; do
  i=$((i+1)); [ $i -lt 1200 ] || { echo "containerd did not start" >&2; exit 1; }
  sleep 0.1
done
exec "$@"
`

// The kubelet's ports, inside its network namespace.
const (
	kubeletPort = 10250
	healthzPort = 10248
)

// capSysResource is CAP_SYS_RESOURCE's bit in /proc/PID/status's masks.
const capSysResource = 24

// Start runs a kubelet registered as node on the lab's API server, its
// runtime holding images. It is stopped when the test ends.
func Start(t testing.TB, l *kubelab.Lab, kubelet, node string, images ...Image) *Kubelet {
	t.Helper()
	need.Root(t, "the kubelet and containerd run as root")
	for _, tool := range []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr", "unshare", "umoci", "mount"} {
		need.Tool(t, tool, "apt-get install containerd runc umoci util-linux")
	}
	if _, err := os.Stat(kubelet); err != nil {
		need.Skip(t, "no kubelet at %s (make k8s-lab): %v", kubelet, err)
	}
	// A short directory: containerd's socket path must fit sun_path.
	dir, err := os.MkdirTemp("", "rdmaform-kubelet-")
	if err != nil {
		t.Fatal(err)
	}
	k := &Kubelet{Node: node, Dir: dir, Socket: filepath.Join(dir, "containerd.sock"), Run: filepath.Join(dir, "run"), done: make(chan struct{})}
	if rel, err := reap.Guard(reap.Dir, dir); err == nil {
		k.release = append(k.release, rel)
	}
	suffix := make([]byte, 4)
	rand.Read(suffix)
	k.CgroupRoot = "/rdmaform-kubelet-" + hex.EncodeToString(suffix)
	// The kubelet wants its cgroup root to exist in every hierarchy; a
	// new cpuset cgroup takes its parent's CPUs and memory nodes.
	for _, ctl := range cgroupControllers() {
		cg := filepath.Join("/sys/fs/cgroup", ctl, k.CgroupRoot)
		if rel, err := reap.Guard(reap.Cgroup, cg); err == nil {
			k.release = append(k.release, rel)
		}
		if err := os.Mkdir(cg, 0o755); err != nil {
			t.Fatalf("cgroup root: %v", err)
		}
		if ctl == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", ctl, f))
				if err == nil {
					err = os.WriteFile(filepath.Join(cg, f), b, 0o644)
				}
				if err != nil {
					t.Fatalf("cgroup root %s: %v", f, err)
				}
			}
		}
	}
	// Checked after the kubelet's namespace has ended (cleanups run
	// last first).
	var absent []string
	for _, p := range Written {
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			absent = append(absent, p)
		}
	}
	t.Cleanup(func() {
		for _, p := range absent {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("%s appeared on the machine while the kubelet ran", p)
			}
		}
	})
	// The network namespace, with loopback up for the kubelet's ports
	// and the API server's forwarder.
	// (Made before the kubelet's cleanup is registered, so removed
	// after it.)
	k.Net = netns.New(t)
	lo, err := k.Net.Handle.LinkByName("lo")
	if err == nil {
		err = k.Net.Handle.LinkSetUp(lo)
	}
	if err != nil {
		t.Fatalf("ip -n %s link set lo up: %v", k.Net.Name, err)
	}
	// The node's address: the kubelet refuses a loopback one for the
	// Node's status. On the veth's second end (tests change the first).
	peer, err := k.Net.Handle.LinkByName(netns.Veth1)
	if err == nil {
		err = k.Net.Handle.AddrAdd(peer, &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP(NodeIP).To4(), Mask: net.CIDRMask(24, 32)}})
	}
	if err != nil {
		t.Fatalf("ip -n %s addr add %s/24 dev %s: %v", k.Net.Name, NodeIP, netns.Veth1, err)
	}
	t.Cleanup(func() { k.stop(t.Failed()) })
	before := tunables(t)
	t.Cleanup(func() {
		if after := tunables(t); after != before {
			t.Errorf("the machine's kernel tunables changed: %s, were %s", after, before)
		}
	})

	for _, d := range []string{"sysctl", "kubelet", "pki", "plugins", "logs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(k.Run, 0o755); err != nil {
		t.Fatal(err)
	}
	restrict, err := restrictOOMScoreAdj()
	if err != nil {
		t.Fatal(err)
	}
	if restrict {
		t.Logf("kubeletlab: no CAP_SYS_RESOURCE in this machine's capability bounding set: containerd's restrict_oom_score_adj is on (pod sandboxes get containerd's oom_score_adj, not -998)")
	}
	write(t, filepath.Join(dir, "containerd.toml"), fmt.Sprintf(`version = 2
root = %q
state = %q
[grpc]
  address = %q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = %t
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), k.Socket, PauseImage, restrict))
	write(t, filepath.Join(dir, "kubelet.yaml"), fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
cgroupRoot: %s
failSwapOn: false
failCgroupV1: false
makeIPTablesUtilChains: false
protectKernelDefaults: false
containerRuntimeEndpoint: unix://%s
imageGCHighThresholdPercent: 100
evictionHard: {memory.available: "1Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
volumePluginDir: %s
registerNode: true
syncFrequency: 5s
fileCheckFrequency: 5s
`, kubeletPort, healthzPort, k.CgroupRoot, k.Socket, filepath.Join(dir, "plugins")))

	kcfg := filepath.Join(dir, "kubelet.kubeconfig")
	data, err := os.ReadFile(l.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	write(t, kcfg, string(data))

	ns, err := vnetns.GetFromName(k.Net.Name)
	if err != nil {
		t.Fatalf("open network namespace %s: %v", k.Net.Name, err)
	}
	defer ns.Close()
	api := strings.TrimPrefix(l.Server, "https://")

	script := strings.Replace(launcher, "$TUNABLES", strings.Join(Tunables, " "), 1)
	args := []string{"--mount", "--pid", "--fork", "--kill-child", "--mount-proc", "--propagation", "private",
		"sh", "-c", script, "sh", dir,
		kubelet, "--config", filepath.Join(dir, "kubelet.yaml"), "--kubeconfig", kcfg,
		"--root-dir", filepath.Join(dir, "kubelet"), "--cert-dir", filepath.Join(dir, "pki"),
		"--hostname-override", node, "--node-ip", NodeIP, "--v", "2"}
	logf, err := os.Create(filepath.Join(dir, "kubelet.log"))
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	go func() {
		// This thread enters the network namespace and is never
		// unlocked: Go ends it with this goroutine. The kubelet's
		// process starts from it (its Pdeathsig is this thread's), and
		// the forwarder's listener is made on it, so inside the
		// namespace.
		runtime.LockOSThread()
		defer logf.Close()
		if err := vnetns.Set(ns); err != nil {
			started <- fmt.Errorf("enter network namespace %s: %w", k.Net.Name, err)
			return
		}
		ln, err := net.Listen("tcp", api)
		if err != nil {
			started <- fmt.Errorf("listen on %s in network namespace %s: %w", api, k.Net.Name, err)
			return
		}
		k.ln = ln
		go forward(ln, api)
		k.cmd = exec.Command("unshare", args...)
		k.cmd.Stdout, k.cmd.Stderr = logf, logf
		k.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := k.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		k.err = k.cmd.Wait()
		close(k.done)
	}()
	begin := time.Now()
	if err := <-started; err != nil {
		t.Fatalf("start the kubelet: %v", err)
	}

	// containerd's socket, then the images, then the Node.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if _, err := os.Stat(k.Socket); err == nil {
			break
		}
		k.fatalIfDone(t, "containerd's socket")
		if time.Now().After(deadline) {
			t.Fatalf("containerd's socket is not there after 3 minutes:\n%s", k.Logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
	t0 := time.Now()
	k.importImage(t, Image{Archive: pauseArchive(t, dir), Name: strings.TrimSuffix(PauseImage, ":lab")})
	t1 := time.Now()
	for _, im := range images {
		k.importImage(t, im)
	}
	t2 := time.Now()
	for {
		n, err := l.Client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err == nil && n.Status.NodeInfo.KubeletVersion != "" {
			break
		}
		k.fatalIfDone(t, "the Node")
		if time.Now().After(deadline) {
			t.Fatalf("the kubelet registered no Node %s after 3 minutes:\n%s", node, k.Logs())
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("kubeletlab: containerd up %s, pause image built and imported %s, images imported %s, Node %s registered %s later",
		t0.Sub(begin).Round(100*time.Millisecond), t1.Sub(t0).Round(100*time.Millisecond), t2.Sub(t1).Round(100*time.Millisecond),
		node, time.Since(t2).Round(100*time.Millisecond))
	return k
}

// forward passes each connection ln accepts to addr, both ways, until ln
// is closed.
func forward(ln net.Listener, addr string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			u, err := net.DialTimeout("tcp", addr, 10*time.Second)
			if err != nil {
				return
			}
			defer u.Close()
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(u, c); u.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
			go func() { _, _ = io.Copy(c, u); c.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
			<-done
			<-done
		}()
	}
}

// restrictOOMScoreAdj says whether containerd must keep containers'
// oom_score_adj at or above its own: when this process's capability
// bounding set lacks CAP_SYS_RESOURCE, nothing it starts may lower a
// score.
func restrictOOMScoreAdj() (bool, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return false, fmt.Errorf("/proc/self/status: CapBnd %q: %w", v, err)
			}
			return mask&(1<<capSysResource) == 0, nil
		}
	}
	return false, errors.New("/proc/self/status has no CapBnd line")
}

func (k *Kubelet) fatalIfDone(t testing.TB, waiting string) {
	t.Helper()
	select {
	case <-k.done:
		t.Fatalf("the kubelet's namespace ended (%v) while waiting for %s:\n%s", k.err, waiting, k.Logs())
	default:
	}
}

// Logs are the ends of the kubelet's and containerd's logs.
func (k *Kubelet) Logs() string {
	var b strings.Builder
	for _, f := range []string{"kubelet.log", "containerd.log"} {
		data, _ := os.ReadFile(filepath.Join(k.Dir, f))
		if len(data) > 6000 {
			data = data[len(data)-6000:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", f, data)
	}
	return b.String()
}

// Ctr runs containerd's ctr against this runtime (namespace k8s.io).
func (k *Kubelet) Ctr(args ...string) (string, error) {
	out, err := exec.Command("ctr", append([]string{"-a", k.Socket, "-n", "k8s.io"}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func (k *Kubelet) importImage(t testing.TB, im Image) {
	t.Helper()
	if _, err := k.Ctr("images", "import", "--base-name", im.Name, im.Archive); err != nil {
		t.Fatal(err)
	}
}

// stop ends the kubelet's namespace (every process in it), then removes
// its mounts' directory and the pods' cgroups.
func (k *Kubelet) stop(keepLogs bool) {
	if k.ln != nil {
		k.ln.Close()
	}
	if k.cmd != nil && k.cmd.Process != nil {
		select {
		case <-k.done:
		default:
			_ = k.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-k.done:
			case <-time.After(20 * time.Second):
				_ = k.cmd.Process.Kill()
				<-k.done
			}
		}
	}
	for _, ctl := range cgroupControllers() {
		removeCgroup(filepath.Join("/sys/fs/cgroup", ctl, k.CgroupRoot))
	}
	if keepLogs {
		for _, f := range []string{"kubelet.log", "containerd.log"} {
			if data, err := os.ReadFile(filepath.Join(k.Dir, f)); err == nil {
				_ = os.WriteFile(k.Dir+"."+f, data, 0o600)
			}
		}
	}
	_ = os.RemoveAll(k.Dir)
	for _, rel := range k.release {
		rel()
	}
}

// removeCgroup removes a cgroup directory tree whose processes are gone,
// children first.
func removeCgroup(dir string) {
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		for try := 0; try < 50; try++ {
			if err := syscall.Rmdir(dirs[i]); err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// cgroupControllers are the cgroup v1 hierarchies mounted under
// /sys/fs/cgroup (none on a unified-only machine).
func cgroupControllers() []string {
	entries, _ := os.ReadDir("/sys/fs/cgroup")
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", e.Name(), "cgroup.procs")); err == nil {
				out = append(out, e.Name())
			}
		}
	}
	return out
}

// tunables are the machine's values of Tunables, in one line.
func tunables(t testing.TB) string {
	var parts []string
	for _, f := range Tunables {
		b, err := os.ReadFile("/proc/sys/" + f)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, strings.ReplaceAll(f, "/", ".")+"="+strings.TrimSpace(string(b)))
	}
	return strings.Join(parts, " ")
}

// pauseArchive builds the sandbox image: a static program that waits for
// SIGTERM or SIGINT, as the pod's first container, in an OCI archive made
// with umoci.
func pauseArchive(t testing.TB, dir string) string {
	t.Helper()
	src := filepath.Join(dir, "pause-src")
	root := filepath.Join(dir, "pause-root")
	for _, d := range []string{src, root} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(src, "go.mod"), "module pause\n\ngo 1.22\n")
	write(t, filepath.Join(src, "main.go"), `// pause holds a pod's namespaces until it is told to stop.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}
`)
	run := func(dir string, env []string, name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	run(src, []string{"CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=-mod=mod"}, goTool, "build", "-trimpath", "-ldflags", "-s -w", "-o", filepath.Join(root, "pause"), ".")
	layer := filepath.Join(dir, "pause-layer.tar")
	run(dir, nil, "tar", "--create", "--file", layer, "--directory", root, "--owner=0", "--group=0", "--numeric-owner", ".")
	layout := filepath.Join(dir, "pause-oci")
	run(dir, nil, "umoci", "init", "--layout", layout)
	run(dir, nil, "umoci", "new", "--image", layout+":lab")
	run(dir, nil, "umoci", "raw", "add-layer", "--image", layout+":lab", layer)
	run(dir, nil, "umoci", "config", "--image", layout+":lab", "--config.entrypoint", "/pause")
	archive := filepath.Join(dir, "pause.oci.tar")
	run(dir, nil, "tar", "--create", "--file", archive, "--directory", layout, ".")
	return archive
}

func write(t testing.TB, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// RootCA publishes the API server's CA as the ConfigMap kube-root-ca.crt
// in namespace, which a pod's service account token volume projects (the
// controller manager's root-ca-cert-publisher does it in a cluster; the
// lab has no controller manager).
func RootCA(t testing.TB, l *kubelab.Lab, namespace string) {
	t.Helper()
	ca, err := os.ReadFile(l.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Client.CoreV1().ConfigMaps(namespace).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"},
		Data:       map[string]string{"ca.crt": string(ca)},
	}, metav1.CreateOptions{})
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
}

// ServerEnv is what a host-network pod needs to reach the lab's API
// server in-cluster (the kubernetes Service's address has no proxy here).
func ServerEnv(l *kubelab.Lab) []corev1.EnvVar {
	hostport := strings.TrimPrefix(l.Server, "https://")
	h, p, _ := net.SplitHostPort(hostport)
	if _, err := strconv.Atoi(p); err != nil {
		p = "443"
	}
	return []corev1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: h}, {Name: "KUBERNETES_SERVICE_PORT", Value: p}}
}

// PodProcesses are the processes in the kubelet's pods' cgroups (found by
// their cgroup under CgroupRoot), as this machine's PIDs, with each one's
// command line.
func (k *Kubelet) PodProcesses() (map[int][]string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	out := map[int][]string{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err != nil {
			continue
		}
		in := false
		for _, line := range strings.Split(string(cg), "\n") {
			// The pids hierarchy on cgroup v1, the unified one ("0::")
			// on v2.
			if f := strings.SplitN(line, ":", 3); len(f) == 3 && (f[1] == "pids" || f[0] == "0" && f[1] == "") && strings.HasPrefix(f[2], k.CgroupRoot+"/") {
				in = true
			}
		}
		if !in {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		out[pid] = strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	}
	return out, nil
}
