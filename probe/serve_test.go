package probe

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/netns"
)

// serveLab is a network namespace of the test's own where rfa0 has
// 192.0.2.1/24 (real netlink answers the address lookups), with the sysfs
// of rdmaFixture in the host's tree.
func serveLab(t *testing.T) (*host.Host, *netns.Lab) {
	t.Helper()
	l := netns.New(t)
	l.IP(t, "addr", "add", "192.0.2.1/24", "dev", netns.Veth0)
	rdmaFixture(t, l.Root)
	h := *l.Host
	h.Runner, h.Kernel = l.Runner(), scriptedKernel{}
	return &h, l
}

// TestResponders: the responders a host starts are those of the probes
// that target one of its addresses (read from the kernel of the lab's
// namespace), LIDs or port GUIDs; one server answers every probe with the
// same command line.
func TestResponders(t *testing.T) {
	h, _ := serveLab(t)
	spec := parseSpec(t, `version: 1
probes:
  - name: icmp
    ping: {to: 192.0.2.1}
  - name: cm-a
    rdma_cm: {to: 192.0.2.1}
  - name: cm-b
    rdma_cm: {to: 192.0.2.1, count: 5}
  - name: cm-port
    rdma_cm: {to: 192.0.2.1, port: 7200}
  - name: cm-elsewhere
    rdma_cm: {to: 192.0.2.9}
  - name: verbs
    verbs: {to: 192.0.2.1, device: rxe0, count: 4}
  - name: verbs-elsewhere
    verbs: {to: 198.51.100.1, device: rxe0}
  - name: by-lid
    ib: {device: ibx0, to_lid: 2}
  - name: by-guid
    ib: {device: ibx0, to_guid: "0x2c903000e0b72"}
  - name: other-lid
    ib: {device: ibx0, to_lid: 3}
  - name: ethernet-guid
    ib: {device: ibx0, to_guid: "0x000000fffe000001"}
`)
	rs, err := Responders(context.Background(), h, spec)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, strings.Join(r.Probes, ",")+": "+r.String()+map[bool]string{true: " (once)"}[r.Once])
	}
	want := []string{
		"cm-a,cm-b: rping -s -a 192.0.2.1 -p 7174 -P",
		"cm-port: rping -s -a 192.0.2.1 -p 7200 -P",
		"verbs: ibv_rc_pingpong -d rxe0 -i 1 -n 4 -p 18515 -g 1 (once)",
		"by-lid,by-guid: ibping -S -C ibx0 -P 1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("responders:\n%s\nwant:\n%s", lines(got), lines(want))
	}
	if ts := Targets(rs); strings.Join(ts, " ") != "by-guid by-lid cm-a cm-b cm-port verbs" {
		t.Errorf("Targets: %v", ts)
	}

	// (ethernet-guid is the interface ID of rxe0's link-local GID: an
	// Ethernet port, which ibping cannot serve.)

	// A verbs probe to this host's address on a RoCE port without a RoCE
	// v2 GID for it cannot be answered: an error naming the probe.
	sysfsTree(t, h.FS.Root(), map[string]string{"sys/class/infiniband/rxe0/ports/1/gid_attrs/types/1": "IB/RoCE v1"})
	_, err = Responders(context.Background(), h, parseSpec(t, "version: 1\nprobes:\n  - name: v\n    verbs: {to: 192.0.2.1, device: rxe0}\n"))
	if err == nil || !strings.Contains(err.Error(), "probe v: rxe0 port 1 carries 192.0.2.1 but has no RoCE v2 GID for it") {
		t.Errorf("verbs without a GID: %v", err)
	}
}

// TestServeRealRping runs probe serve's responder for real outside the
// kernel lab: rping -s in the lab's namespace, on a machine without an
// RDMA device, fails at once ("No RDMA devices were detected"); Serve
// stops starting it after three quick failures and reports it, with the
// tool's words, instead of spinning for the whole window.
func TestServeRealRping(t *testing.T) {
	needTool(t, "rping", "rdmacm-utils")
	h, _ := serveLab(t)
	if _, err := host.ReadAttr(h.FS, "/sys/class/infiniband/rxe0/parent"); err != nil {
		t.Fatal(err)
	}
	rs, err := Responders(context.Background(), h, parseSpec(t, "version: 1\nprobes:\n  - name: cm\n    rdma_cm: {to: 192.0.2.1}\n"))
	if err != nil || len(rs) != 1 {
		t.Fatalf("responders: %v %v", rs, err)
	}
	var log bytes.Buffer
	err = Serve(context.Background(), h, rs, time.Minute, &log)
	if err == nil || !strings.Contains(err.Error(), "rping -s -a 192.0.2.1 -p 7174 -P") || !strings.Contains(err.Error(), "No RDMA devices were detected") {
		t.Errorf("Serve: %v", err)
	}
	out := log.String()
	if !strings.Contains(out, "rdmaform: serving cm for 1m0s: rping -s -a 192.0.2.1 -p 7174 -P\n") || strings.Count(out, "rdmaform: responder for cm: ") != 3 {
		t.Errorf("log:\n%s", out)
	}
}

// TestServeWindow: how Serve runs its responders, with a runner that
// stands in for tools that need RDMA hardware.
func TestServeWindow(t *testing.T) {
	persistent := Responder{Probes: []string{"cm"}, Args: []string{"rping", "-s", "-a", "192.0.2.1", "-p", "7174", "-P"}}
	once := Responder{Probes: []string{"verbs"}, Args: []string{"ibv_rc_pingpong", "-d", "rxe0", "-i", "1", "-n", "3", "-p", "18515", "-g", "1"}, Once: true}
	ib := Responder{Probes: []string{"mad"}, Args: []string{"ibping", "-S", "-C", "ibx0", "-P", "1"}}

	t.Run("bounds", func(t *testing.T) {
		h := &host.Host{Runner: &scripted{run: func(context.Context, host.Cmd) (host.Result, error) { t.Error("ran"); return host.Result{}, nil }}, Kernel: scriptedKernel{}}
		for _, d := range []time.Duration{0, -time.Second, MaxServe + time.Nanosecond} {
			if err := Serve(context.Background(), h, []Responder{persistent}, d, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "give a duration from 1s to 1h0m0s") {
				t.Errorf("--for %s: %v", d, err)
			}
		}
	})

	// A persistent server runs until the window ends and is stopped
	// through its context; a once server is started again after each
	// client, until the window ends.
	t.Run("window", func(t *testing.T) {
		var onceRuns atomic.Int32
		r := &scripted{run: func(ctx context.Context, c host.Cmd) (host.Result, error) {
			if c.Args[0] == "ibv_rc_pingpong" && onceRuns.Add(1) <= 3 {
				// One client served; the tool exits 0.
				return sample(t, "ibv_rc_pingpong-ok"), nil
			}
			<-ctx.Done()
			return host.Result{}, &host.ExitError{Cmd: c, Code: -1, Err: host.CtxErr(ctx)}
		}}
		var log bytes.Buffer
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			for onceRuns.Load() < 4 {
				time.Sleep(10 * time.Millisecond)
			}
			cancel() // Ctrl-C
		}()
		if err := Serve(ctx, &host.Host{Runner: r, Kernel: scriptedKernel{}}, []Responder{persistent, once}, MaxServe, &log); err != nil {
			t.Errorf("Serve: %v", err)
		}
		if n := onceRuns.Load(); n != 4 {
			t.Errorf("the once server ran %d times, want 4 (3 clients, then the window ended)", n)
		}
		for _, c := range r.Calls() {
			if !strings.HasPrefix(c, "rping ") && !strings.HasPrefix(c, "ibv_rc_pingpong ") {
				t.Errorf("unexpected call %q", c)
			}
		}
		if !strings.Contains(log.String(), "rdmaform: serving cm for 1h0m0s: rping -s -a 192.0.2.1 -p 7174 -P\n") || !strings.Contains(log.String(), "rdmaform: serving verbs for 1h0m0s: ibv_rc_pingpong") {
			t.Errorf("log:\n%s", log.String())
		}
	})

	// A missing tool is an error for its responder; the others serve.
	t.Run("missing", func(t *testing.T) {
		var served atomic.Bool
		r := &scripted{run: func(ctx context.Context, c host.Cmd) (host.Result, error) {
			served.Store(true)
			<-ctx.Done()
			return host.Result{}, &host.ExitError{Cmd: c, Code: -1, Err: host.CtxErr(ctx)}
		}}
		h := &host.Host{Runner: looking{r, map[string]bool{"rping": true}}, Kernel: scriptedKernel{}}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			for !served.Load() {
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
		}()
		err := Serve(ctx, h, []Responder{persistent, ib}, time.Minute, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "ibping is not installed (Debian/Ubuntu: apt-get install infiniband-diags; RHEL: dnf install infiniband-diags)") || strings.Contains(err.Error(), "rping") {
			t.Errorf("Serve: %v", err)
		}
		if c := r.Calls(); len(c) != 1 || !strings.HasPrefix(c[0], "rping ") {
			t.Errorf("calls: %v", c)
		}
	})

	// A tool the runner cannot find ends its responder at once.
	t.Run("not found", func(t *testing.T) {
		r := &scripted{run: func(_ context.Context, c host.Cmd) (host.Result, error) {
			return host.Result{}, &host.ExitError{Cmd: c, Code: -1, Err: host.ErrNotFound}
		}}
		err := Serve(context.Background(), &host.Host{Runner: r, Kernel: scriptedKernel{}}, []Responder{once}, time.Minute, &bytes.Buffer{})
		if !errors.Is(err, host.ErrNotFound) || len(r.Calls()) != 1 {
			t.Errorf("Serve: %v after %d runs", err, len(r.Calls()))
		}
	})

	// A persistent server that fails after serving a while is reported,
	// not started again (it fails after at least a second, so it is not
	// a quick failure).
	t.Run("persistent failure", func(t *testing.T) {
		r := &scripted{run: func(_ context.Context, c host.Cmd) (host.Result, error) {
			time.Sleep(1100 * time.Millisecond)
			return exitWith(c, sample(t, "rping-peer-down"), 255)
		}}
		err := Serve(context.Background(), &host.Host{Runner: r, Kernel: scriptedKernel{}}, []Responder{persistent}, time.Minute, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "RDMA_CM_EVENT_UNREACHABLE") || len(r.Calls()) != 1 {
			t.Errorf("Serve: %v after %d runs", err, len(r.Calls()))
		}
	})

	// A once server that fails at once three times in a row is reported;
	// a failure after a served client is logged and it starts again.
	t.Run("quick failures", func(t *testing.T) {
		r := &scripted{run: func(_ context.Context, c host.Cmd) (host.Result, error) {
			return exitWith(c, host.Result{Stderr: []byte("Couldn't listen to port 18515\n")}, 1)
		}}
		var log bytes.Buffer
		err := Serve(context.Background(), &host.Host{Runner: r, Kernel: scriptedKernel{}}, []Responder{once}, time.Minute, &log)
		if err == nil || !strings.Contains(err.Error(), "Couldn't listen to port 18515") || len(r.Calls()) != 3 {
			t.Errorf("Serve: %v after %d runs", err, len(r.Calls()))
		}
		if strings.Count(log.String(), "rdmaform: responder for verbs: ") != 3 {
			t.Errorf("log:\n%s", log.String())
		}
	})
}
