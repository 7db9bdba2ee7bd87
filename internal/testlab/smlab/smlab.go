// Package smlab runs a real subnet manager for a test: opensm on a fabric
// simulated by ibsim, Debian's ibsim-utils (the simulator opensm's own
// developers use). opensm and the infiniband-diags tools run unmodified;
// the preload library libumad2sim turns their umad calls into messages
// to the simulator. Recipe and real outputs: ../shared/reference/sm-lab.md.
//
// Each lab is private: its own directory (the simulator's and opensm's
// files, umad2sim's per-process sysfs snapshots), and its own simulator
// socket (ibsim and umad2sim both read IBSIM_SOCKNAME, so two labs never
// share the abstract socket names "sim:..." of the machine's network
// namespace). Every process a lab starts is stopped by its PID at the
// end of the test, and gets SIGKILL from the kernel if the test binary
// dies first (reap.Start: none of them forks); nothing of the machine's
// (services, /var, /etc) is used or touched.
package smlab

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/internal/testlab/need"
	"github.com/rdmaform/rdmaform/internal/testlab/reap"
)

// preloadName is umad2sim's library, as the package installs it under
// the architecture's library directory (Debian's libumad2sim0, which
// ibsim-utils depends on: /usr/lib/<multiarch triplet>/umad2sim/;
// ibsim's own spec file: %{_libdir}/umad2sim/).
const preloadName = "/umad2sim/libumad2sim.so"

// preloadPackage is the Debian package that ships it.
const preloadPackage = "libumad2sim0"

// Preload finds umad2sim's library on this machine: the path the
// package's file list (dpkg -L libumad2sim0) has, else the first that
// exists of the architecture's library directories. "" when none.
func Preload() string {
	if out, err := exec.Command("dpkg", "-L", preloadPackage).Output(); err == nil {
		if p := PreloadIn(string(out)); p != "" {
			return p
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/*-linux-gnu*")
	for _, d := range append(dirs, "/usr/lib64", "/usr/lib") {
		if _, err := os.Stat(d + preloadName); err == nil {
			return d + preloadName
		}
	}
	return ""
}

// PreloadIn is umad2sim's library in a package's file list, one path a
// line (dpkg -L), "" when the list has none.
func PreloadIn(list string) string {
	for _, l := range strings.Split(list, "\n") {
		if l = strings.TrimSpace(l); strings.HasSuffix(l, preloadName) && strings.HasPrefix(l, "/") {
			return l
		}
	}
	return ""
}

// OpenSM is the subnet manager binary (Debian's opensm).
const OpenSM = "/usr/sbin/opensm"

// Net is the lab's fabric: one 8-port switch, three two-port HCAs on its
// first three ports (the format of ibsim-utils' net-examples). The
// switch is first, so it is the default SM port; the tests bind opensm
// to an HCA with SIM_HOST.
const Net = `Switch 8 "Switch1"
[1] "Hca1"[1]
[2] "Hca2"[1]
[3] "Hca3"[1]

Hca 2 "Hca1"
[1] "Switch1"[1]

Hca 2 "Hca2"
[1] "Switch1"[2]

Hca 2 "Hca3"
[1] "Switch1"[3]
`

// HCAs are the fabric's channel adapters, as SIM_HOST names them.
var HCAs = []string{"Hca1", "Hca2", "Hca3"}

var seq atomic.Int64

// Fabric is one running ibsim.
type Fabric struct {
	// Dir holds the net file, the simulator's output, umad2sim's files.
	Dir string
	// Sock is the simulator's socket name (IBSIM_SOCKNAME).
	Sock string

	preload string
	ibsim   *exec.Cmd
}

// Start runs ibsim on Net in a private directory, and stops it by PID at
// the end of the test.
func Start(t testing.TB) *Fabric {
	t.Helper()
	for bin, pkg := range map[string]string{"/usr/bin/ibsim": "ibsim-utils", OpenSM: "opensm", "/usr/sbin/sminfo": "infiniband-diags", "/usr/sbin/smpquery": "infiniband-diags"} {
		need.File(t, bin, "apt-get install "+pkg)
	}
	preload := Preload()
	if preload == "" {
		need.Skip(t, "umad2sim's library (.../umad2sim/libumad2sim.so) is not installed: apt-get install ibsim-utils")
	}
	f := &Fabric{Dir: t.TempDir(), Sock: fmt.Sprintf("rdmaform-smlab-%d-%d", os.Getpid(), seq.Add(1)), preload: preload}
	strayCheck(t)
	net := filepath.Join(f.Dir, "net")
	if err := os.WriteFile(net, []byte(Net), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(f.Dir, "ibsim.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	f.ibsim = exec.Command("/usr/bin/ibsim", "-s", "-n", net)
	f.ibsim.Dir = f.Dir
	f.ibsim.Env = append(os.Environ(), "IBSIM_SOCKNAME="+f.Sock)
	f.ibsim.Stdout, f.ibsim.Stderr = out, out
	f.ibsim.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := reap.Start(f.ibsim); err != nil {
		t.Fatalf("starting ibsim: %v", err)
	}
	t.Cleanup(func() { stop(t, f.ibsim, "ibsim") })
	// ibsim takes requests once it has read the net file; a client that
	// attaches earlier fails. Wait until a query through it answers.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := f.Run(context.Background(), HCAs[0], "smpquery", "-D", "nodeinfo", "0"); err == nil {
			break
		}
		if time.Until(deadline) <= 0 {
			t.Fatalf("ibsim did not answer within 20s:\n%s", readFile(filepath.Join(f.Dir, "ibsim.out")))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return f
}

// SimPID is the PID of the fabric's ibsim.
func (f *Fabric) SimPID() int { return f.ibsim.Process.Pid }

// Env is the environment of a client bound to node simHost (Hca1).
func (f *Fabric) Env(simHost string) []string {
	return []string{"LD_PRELOAD=" + f.preload, "IBSIM_SOCKNAME=" + f.Sock, "SIM_HOST=" + simHost}
}

// Run runs an infiniband-diags tool as a client of node simHost, in the
// lab's directory, and returns its standard output.
func (f *Fabric) Run(ctx context.Context, simHost string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = f.Dir
	cmd.Env = append(os.Environ(), f.Env(simHost)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

var portGUIDRE = regexp.MustCompile(`(?m)^PortGuid:\.+(0x[0-9a-f]+)$`)

// PortGUID is the GUID of port 1 of node simHost, as smpquery nodeinfo
// prints it (0x0000000000100001).
func (f *Fabric) PortGUID(t testing.TB, simHost string) string {
	t.Helper()
	out, err := f.Run(context.Background(), simHost, "smpquery", "-D", "nodeinfo", "0")
	if err != nil {
		t.Fatal(err)
	}
	m := portGUIDRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no PortGuid in smpquery nodeinfo:\n%s", out)
	}
	return m[1]
}

// PKeys is smpquery's P_Key table of port 1 of node simHost, raw.
func (f *Fabric) PKeys(t testing.TB, simHost string) string {
	t.Helper()
	out, err := f.Run(context.Background(), simHost, "smpquery", "-D", "pkeys", "0")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// StartOpenSM runs opensm bound to node simHost, by PID, with its files
// in the lab's directory and the given extra arguments (-F CONF, -P
// PARTITIONS, ...); it is stopped by PID at the end of the test or by
// Stop.
func (f *Fabric) StartOpenSM(t testing.TB, simHost string, args ...string) *exec.Cmd {
	t.Helper()
	dir := filepath.Join(f.Dir, "opensm-"+simHost)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(OpenSM, append([]string{"-f", filepath.Join(dir, "opensm.log"), "-s", "0"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append(f.Env(simHost), "OSM_TMP_DIR="+dir, "OSM_CACHE_DIR="+dir)...)
	out, err := os.Create(filepath.Join(dir, "opensm.out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := reap.Start(cmd); err != nil {
		out.Close()
		t.Fatalf("starting opensm: %v", err)
	}
	out.Close()
	t.Cleanup(func() { stop(t, cmd, "opensm") })
	return cmd
}

// Stop stops a process the lab started, by its PID: SIGTERM, then
// SIGKILL after 10 s.
func Stop(t testing.TB, cmd *exec.Cmd) { stop(t, cmd, cmd.Path) }

func stop(t testing.TB, cmd *exec.Cmd, what string) {
	if cmd.Process == nil || cmd.ProcessState != nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Logf("%s (PID %d) did not stop on SIGTERM; killing it", what, cmd.Process.Pid)
		_ = cmd.Process.Kill()
		<-done
	}
}

// WaitSMInfo waits (bounded) until sminfo, asked through node simHost,
// prints a line that matches want, and returns it.
func (f *Fabric) WaitSMInfo(t testing.TB, simHost string, want *regexp.Regexp, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		out, err := f.Run(context.Background(), simHost, "sminfo")
		last = out
		if err == nil && want.MatchString(out) {
			return out
		}
		if time.Until(deadline) <= 0 {
			t.Fatalf("sminfo through %s did not match %s within %s; last: %q (%v)", simHost, want, timeout, last, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// SysfsPort writes, under root, the sysfs of an InfiniBand device named
// ibsim0 (umad2sim's name for a simulated node) whose port 1 is the
// simulated node's: ACTIVE, with GID 0 made of the link-local prefix and
// the port's GUID. Its P_Key table is left out, as the lab's host has
// none in sysfs: the provider asks the fabric (smpquery) instead.
func SysfsPort(t testing.TB, root, guid string) {
	t.Helper()
	g := strings.TrimPrefix(guid, "0x")
	g = strings.Repeat("0", 16-len(g)) + g
	gid := "fe80:0000:0000:0000:" + g[0:4] + ":" + g[4:8] + ":" + g[8:12] + ":" + g[12:16]
	dev := filepath.Join(root, "sys/class/infiniband/ibsim0")
	files := map[string]string{
		"node_type":          "1: CA",
		"node_guid":          g[0:4] + ":" + g[4:8] + ":" + g[8:12] + ":" + g[12:16],
		"ports/1/link_layer": "InfiniBand",
		"ports/1/state":      "4: ACTIVE",
		"ports/1/phys_state": "5: LinkUp",
		"ports/1/rate":       "10 Gb/sec (4X)",
		"ports/1/lid":        "0x0",
		"ports/1/sm_lid":     "0x0",
		"ports/1/gids/0":     gid,
	}
	for name, content := range files {
		p := filepath.Join(dev, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// StartResponder runs ibping's responder (args: ibping -S -C ibsim0 -P 1,
// as rdmaform's probe serve gives it) as a client of node simHost, with
// ResponderEnv, and returns once it waits for pings; it is stopped by PID
// at the end of the test, or by Stop. Two debug flags (-d -d) make
// libibumad say on stderr when the ping class is registered and the
// responder waits ("umad_recv: fd ..."): a ping that reaches it earlier
// kills it. umad2sim's reader thread takes the lock of the agent of the
// MAD's class before it checks that there is one (umad2sim/umad2sim.c,
// umad2sim_read thread: pthread_mutex_lock(&fd_data->fd_event.mutex)
// with fd_data NULL), so a MAD of a class the responder did not register
// ends it with SIGSEGV. The subnet manager's SMInfo query is one: the
// responder's port advertises IsSM (ResponderEnv), and a sweep asks it.
// So a responder lives only while no subnet manager sweeps: stop opensm
// first (the LIDs and routes it programmed stay in the simulator).
func (f *Fabric) StartResponder(t testing.TB, simHost string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(args[0], append(append([]string{}, args[1:]...), "-d", "-d")...)
	cmd.Dir = f.Dir
	cmd.Env = append(os.Environ(), f.ResponderEnv(simHost)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := reap.Start(cmd); err != nil {
		t.Fatalf("starting %v: %v", args, err)
	}
	t.Cleanup(func() { stop(t, cmd, args[0]) })
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		waiting := false
		for sc.Scan() {
			if !waiting && strings.Contains(sc.Text(), "umad_recv: fd ") {
				waiting = true
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
		return cmd
	case <-time.After(20 * time.Second):
		t.Fatalf("%v did not wait for pings within 20s", args)
	}
	return nil
}

// ResponderEnv is the environment of a client of node simHost that
// answers requests other nodes send it, as ibping -S does. ibsim hands a
// request addressed to queue pair 0 or 1 (every MAD to a port's agents:
// ibping's vendor class 0x32 too) only to a client registered as the
// port's subnet manager (ibsim/ibsim.c, find_client: "zero qp - only issm
// clients may get requests"), and registers a client so when it connects
// with SIM_SET_ISSM set (umad2sim/sim_client.c, sim_client_init). Without
// it the responder never sees a ping: ibsim logs "no one to handle pkt:
// class 0x32". A node has one such client (sim_ctl_new_client refuses a
// second: "SM already exists"), so a responder runs on a node opensm is
// not bound to. On a real port the kernel's MAD layer hands the request
// to the agent registered for the class; nothing stands in for that here.
func (f *Fabric) ResponderEnv(simHost string) []string {
	return append(f.Env(simHost), "SIM_SET_ISSM=1")
}

var lidRE = regexp.MustCompile(`(?m)^Lid:\.+(\d+)$`)

// LID is the LID the subnet manager gave port 1 of node simHost, as
// smpquery portinfo prints it.
func (f *Fabric) LID(t testing.TB, simHost string) int {
	t.Helper()
	out, err := f.Run(context.Background(), simHost, "smpquery", "-D", "portinfo", "0")
	if err != nil {
		t.Fatal(err)
	}
	m := lidRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no Lid in smpquery portinfo:\n%s", out)
	}
	lid, _ := strconv.Atoi(m[1])
	return lid
}

// HasPath asks the subnet manager's SA, as a client of node simHost, for
// a PathRecord from slid to dlid in the partition of pkey: what IPoIB's
// and rdma_cm's path resolution asks before any traffic flows. opensm
// answers only when both ports are members of that partition and one of
// them is a full member (osm_sa_path_record.c, pr_rcv_get_path_parms,
// "do not share specified PKey"); saquery then prints no record.
func (f *Fabric) HasPath(t testing.TB, simHost string, slid, dlid, pkey int) bool {
	t.Helper()
	out, err := f.Run(context.Background(), simHost, "saquery", "PR", "--slid", strconv.Itoa(slid), "--dlid", strconv.Itoa(dlid), "--pkey", fmt.Sprintf("0x%04x", pkey))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(out, "PathRecord dump:")
}

// strayCheck fails the test when one of the lab's clients ran in the
// test's own directory: umad2sim writes its sysfs snapshot to ./sys-PID
// of the client's working directory, which must be the lab's (Fabric.Dir;
// host.ExecRunner's Dir), never the package's source tree.
func strayCheck(t testing.TB) {
	before, _ := filepath.Glob("sys-[0-9]*")
	t.Cleanup(func() {
		after, _ := filepath.Glob("sys-[0-9]*")
		var stray []string
		for _, d := range after {
			if !slices.Contains(before, d) {
				stray = append(stray, d)
				_ = os.RemoveAll(d)
			}
		}
		if len(stray) > 0 {
			t.Errorf("umad2sim left %v in the test's directory: a lab client ran outside the lab's directory", stray)
		}
	})
}
