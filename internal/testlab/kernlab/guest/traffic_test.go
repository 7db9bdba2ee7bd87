//go:build kernlab

package guest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Two RDMA devices talking: rxe links on the two ends of a veth pair, each
// end in its own network namespace, made by rdmaform in each namespace;
// rping (RDMA CM connect + RDMA read/write) and ibv_rc_pingpong (an RC
// queue pair) carry traffic between them.
func TestTwoDevicesTalk(t *testing.T) {
	run(t, "/sbin/modprobe", "veth")
	for _, ns := range []string{"kla", "klb"} {
		run(t, "/sbin/ip", "netns", "add", ns)
		ns := ns
		t.Cleanup(func() { _, _ = tryRun("/sbin/ip", "netns", "del", ns) })
	}
	run(t, "/sbin/ip", "link", "add", "tva", "netns", "kla", "type", "veth", "peer", "name", "tvb", "netns", "klb")
	t.Cleanup(func() {
		_, _ = tryRun("/sbin/rdma", "link", "delete", "rxea")
		_, _ = tryRun("/sbin/rdma", "link", "delete", "rxeb")
	})
	side := func(ns, dev, netdev, addr string) {
		spec := writeSpec(t, `version: 1
modules: [rdma_rxe, rdma_ucm]
rxe:
  - {name: `+dev+`, netdev: `+netdev+`}
interfaces:
  - {name: `+netdev+`, state: up, mtu: 1500, addresses: [`+addr+`]}
`)
		inNS := func(want int, args ...string) string {
			t.Helper()
			cmd := exec.Command("/sbin/ip", append([]string{"netns", "exec", ns, rdmaformBin}, args...)...)
			cmd.Env = append(os.Environ(), "NO_COLOR=1")
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			t.Logf("[%s] $ rdmaform %s  # exit %d\n%s", ns, strings.Join(args, " "), code, out)
			if code != want {
				t.Fatalf("[%s] rdmaform %s: exit %d, want %d", ns, strings.Join(args, " "), code, want)
			}
			return string(out)
		}
		inNS(2, "plan", "-f", spec)
		inNS(0, "apply", "--yes", "-f", spec)
		if out := inNS(0, "plan", "-f", spec); !strings.Contains(out, "No changes") {
			t.Fatalf("[%s] plan after apply is not empty", ns)
		}
	}
	side("kla", "rxea", "tva", "192.0.2.1/24")
	side("klb", "rxeb", "tvb", "192.0.2.2/24")
	run(t, "/sbin/ip", "-n", "kla", "link", "set", "lo", "up")
	run(t, "/sbin/ip", "-n", "klb", "link", "set", "lo", "up")

	// rping: the server in kla, the client in klb.
	srv := exec.Command("/sbin/ip", "netns", "exec", "kla", "rping", "-s", "-a", "192.0.2.1", "-C", "3")
	var srvOut strings.Builder
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if srv.ProcessState == nil {
			_ = srv.Process.Kill()
			_ = srv.Wait()
		}
	}()
	var out string
	var err error
	for i := 0; i < 20; i++ { // the server needs a moment to listen
		time.Sleep(250 * time.Millisecond)
		out, err = tryRun("/sbin/ip", "netns", "exec", "klb", "rping", "-c", "-a", "192.0.2.1", "-C", "3", "-v")
		if err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("rping client: %v\n%s\nserver:\n%s", err, out, srvOut.String())
	}
	if n := strings.Count(out, "ping data: rdma-ping-"); n != 3 {
		t.Errorf("rping client printed %d pings, want 3:\n%s", n, out)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("rping server: %v\n%s", err, srvOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Errorf("rping server did not finish:\n%s", srvOut.String())
	}
	t.Logf("rping client:\n%s", out)

	// ibv_rc_pingpong over the RoCE v2 GID of the IPv4 address (index 1).
	pp := exec.Command("/sbin/ip", "netns", "exec", "kla", "ibv_rc_pingpong", "-d", "rxea", "-g", "1", "-n", "5")
	var ppOut strings.Builder
	pp.Stdout, pp.Stderr = &ppOut, &ppOut
	if err := pp.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		time.Sleep(250 * time.Millisecond)
		out, err = tryRun("/sbin/ip", "netns", "exec", "klb", "ibv_rc_pingpong", "-d", "rxeb", "-g", "1", "-n", "5", "192.0.2.1")
		if err == nil {
			break
		}
	}
	if err != nil {
		_ = pp.Process.Kill()
		_ = pp.Wait()
		t.Fatalf("ibv_rc_pingpong client: %v\n%s\nserver:\n%s", err, out, ppOut.String())
	}
	_ = pp.Wait()
	if !strings.Contains(out, "iters in") {
		t.Errorf("ibv_rc_pingpong client did not report its iterations:\n%s", out)
	}
	t.Logf("ibv_rc_pingpong client:\n%s", out)
}
