package rdmanetns

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// stubbornNet is a host's netlink whose RDMA netns switch answers EBUSY
// the first busy times, and, when ignore is set, then does nothing.
type stubbornNet struct {
	host.Net
	busy, calls int
	ignore      bool
}

func (n *stubbornNet) RdmaSetNetnsMode(mode string) error {
	n.calls++
	if n.calls <= n.busy {
		return syscall.EBUSY
	}
	if n.ignore {
		return nil
	}
	return n.Net.RdmaSetNetnsMode(mode)
}

func withNet(t *testing.T, wrap func(host.Net) host.Net) *host.Host {
	t.Helper()
	_, h := simtest.New(t, "vm-soft", 0, nil)
	h.Net = wrap(h.Net)
	return h
}

// TestMakeAsksAgainWhileBusy: the kernel answers EBUSY while a network
// namespace just deleted is torn down; Make asks again, busyTries times
// at most: it switches when the kernel gives in at the last try, and
// names the cause (the file sets it at the next boot) one try past it.
func TestMakeAsksAgainWhileBusy(t *testing.T) {
	for _, c := range []struct {
		name string
		busy int
		ok   bool
	}{{"busy until the last try", busyTries, true}, {"busy one try past it", busyTries + 1, false}} {
		t.Run(c.name, func(t *testing.T) {
			n := &stubbornNet{busy: c.busy}
			h := withNet(t, func(inner host.Net) host.Net { n.Net = inner; return n })
			err := (&Provider{}).Make(context.Background(), h, nil, &payload{mode: host.NetnsExclusive})
			if c.ok {
				if err != nil {
					t.Fatalf("Make: %v", err)
				}
				if got, _ := h.Net.RdmaNetnsMode(); got != host.NetnsExclusive {
					t.Errorf("mode after Make: %s", got)
				}
				return
			}
			if !errors.Is(err, syscall.EBUSY) || !strings.Contains(err.Error(), ConfFile) {
				t.Errorf("Make: %v; want EBUSY naming %s", err, ConfFile)
			}
			if n.calls != busyTries+1 {
				t.Errorf("asked %d times, want %d", n.calls, busyTries+1)
			}
		})
	}
}

// TestMakeReadsTheModeBack: a switch the kernel accepts but does not make
// (it reads back the old mode) is an error naming both.
func TestMakeReadsTheModeBack(t *testing.T) {
	h := withNet(t, func(inner host.Net) host.Net { return &stubbornNet{Net: inner, ignore: true} })
	err := (&Provider{}).Make(context.Background(), h, nil, &payload{mode: host.NetnsExclusive})
	if err == nil || !strings.Contains(err.Error(), "reads back shared") {
		t.Fatalf("Make: %v; want the mode read back", err)
	}
}

// TestNamespacesLeaveOutTheInitialOne: processes in the initial network
// namespace (pid 1's) are not other namespaces; a process elsewhere is,
// once, by its id; a named namespace is listed by its name.
func TestNamespacesLeaveOutTheInitialOne(t *testing.T) {
	dir := t.TempDir()
	link := func(pid, target string) {
		p := filepath.Join(dir, "proc", pid, "ns")
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(p, "net")); err != nil {
			t.Fatal(err)
		}
	}
	link("1", "net:[4026531840]")
	link("42", "net:[4026531840]")
	link("77", "net:[4026532111]")
	link("78", "net:[4026532111]")
	if err := os.MkdirAll(filepath.Join(dir, "proc", "self"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, NetnsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, NetnsDir, "blue"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fsys, err := host.NewRootFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := namespaces(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/run/netns/blue", "net:[4026532111]"}, got); diff != "" {
		t.Errorf("namespaces (-want +got):\n%s", diff)
	}
}

// procLink makes dir/proc/PID/ns/net a symlink to target.
func procLink(t *testing.T, dir, pid, target string) {
	t.Helper()
	p := filepath.Join(dir, "proc", pid, "ns")
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(p, "net")); err != nil {
		t.Fatal(err)
	}
}

// namedNS makes dir/run/netns/NAME and returns its id as /proc shows a
// namespace (net:[INODE]): a bind mount of a namespace has its inode.
func namedNS(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, NetnsDir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("net:[%d]", fi.Sys().(*syscall.Stat_t).Ino)
}

// TestNamespacesNamedOnce: a named namespace that processes also run in
// is listed once, by its name; a /run/netns entry for the initial
// namespace (ip netns attach NAME 1) is not another namespace.
func TestNamespacesNamedOnce(t *testing.T) {
	dir := t.TempDir()
	root := namedNS(t, dir, "host")
	red := namedNS(t, dir, "red")
	procLink(t, dir, "1", root)
	procLink(t, dir, "42", root)
	procLink(t, dir, "77", red)
	procLink(t, dir, "78", red)
	procLink(t, dir, "90", "net:[4026532999]")
	fsys, err := host.NewRootFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := namespaces(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/run/netns/red", "net:[4026532999]"}, got); diff != "" {
		t.Errorf("namespaces (-want +got):\n%s", diff)
	}
}

// TestConfModeWords: ib_core's netns_mode is a bool parameter, which the
// kernel reads as 1/0, Y/N or y/n (param_set_bool, kstrtobool); the last
// netns_mode on ib_core's lines wins, and other modules' lines are not
// ib_core's.
func TestConfModeWords(t *testing.T) {
	for _, c := range []struct{ conf, want string }{
		{"options ib_core netns_mode=0\n", host.NetnsExclusive},
		{"options ib_core netns_mode=N\n", host.NetnsExclusive},
		{"options ib_core netns_mode=n\n", host.NetnsExclusive},
		{"options ib_core netns_mode=1\n", host.NetnsShared},
		{"options ib_core netns_mode=Y\n", host.NetnsShared},
		{"options ib_core netns_mode=y\n", host.NetnsShared},
		{"options ib_core netns_mode=N\noptions ib_core netns_mode=y\n", host.NetnsShared},
		{"options ib_core foo=1 netns_mode=n\n", host.NetnsExclusive},
		{"options ib_uverbs netns_mode=0\n", ""},
		{"# options ib_core netns_mode=0\n", ""},
		{"", ""},
	} {
		if got := confMode([]byte(c.conf)); got != c.want {
			t.Errorf("%q: %q, want %q", c.conf, got, c.want)
		}
	}
}
