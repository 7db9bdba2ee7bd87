package subnetmanager

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// TestRenderNoCommentOnDefault: the note on a P_Key given with the
// full-member bit is for partitions opensm reads by their low 15 bits;
// Default given as 0xffff (valid: its low bits are 0x7fff) gets none,
// the next partition with the bit does.
func TestRenderNoCommentOnDefault(t *testing.T) {
	spec := parse(t, `version: 1
subnet_manager:
  partitions:
    - {name: Default, pkey: 0xffff, members: [{guid: all, membership: full}]}
    - {name: storage, pkey: 0x8002, members: [{guid: all}]}
`)
	got := string(RenderPartitions(spec.SubnetManager))
	if strings.Contains(got, "# Default") || !strings.Contains(got, "# storage: P_Key 0x8002 given") || !strings.Contains(got, "Default=0x7fff :") {
		t.Errorf("partitions.conf:\n%s", got)
	}
}

// TestTakenOnlyAtStart: each opensm.conf key opensm reads only when it
// starts (osm_subnet.c: not marked updatable) restarts a running opensm
// when it changes, allow_both_pkeys among them; an updatable one is a
// SIGHUP.
func TestTakenOnlyAtStart(t *testing.T) {
	const g = "0x0002c903000a1b2c"
	port := &LocalPort{Device: "mlx5_0", Port: 1, GUID: g}
	base := parse(t, spec5)
	conf := RenderConf(ConfValues(base.SubnetManager, g))
	parts := RenderPartitions(base.SubnetManager)
	master := SMInfo{GUID: "0x2c903000a1b2c", Priority: 5, State: "SMINFO_MASTER"}
	for _, tc := range []struct {
		option  string
		restart bool
	}{
		{"allow_both_pkeys: true", true},
		{"routing_engine: updn", true},
		{"lmc: 1", true},
		{"part_enforce: both", false},
		{"qos: true", false},
	} {
		t.Run(tc.option, func(t *testing.T) {
			src := strings.Replace(spec5, "priority: 5", "priority: 5\n  options: {"+tc.option+"}", 1)
			req := &plan.Request{Spec: parse(t, src), Inv: ibInv(g)}
			obs := &Observed{Installed: true, Port: port, Partitions: parts, Conf: conf, Fabric: &Fabric{PKeys: []int{0x8002, 0xffff}, Local: master, Master: master}}
			prop := (&Provider{}).Plan(req, obs, plan.NewFacts())
			if len(prop.Changes) != 1 || len(prop.Errors) > 0 {
				t.Fatalf("plan: %+v %v", prop.Changes, prop.Errors)
			}
			c := prop.Changes[0]
			pl := c.Payload.(*payload)
			key, _, _ := strings.Cut(tc.option, ":")
			said := false
			for _, a := range c.Attributes {
				said = said || (a.Name == "opensm" && strings.Contains(a.After, "restarted ("+key+" taken only at start)"))
			}
			if pl.restart != tc.restart || said != tc.restart {
				t.Errorf("%s: restart %v, plan says so %v; want %v", key, pl.restart, said, tc.restart)
			}
		})
	}
}

// signaller records what kick does to a unit.
type signaller struct {
	pid     int
	pidErr  error
	actions []string
}

func (s *signaller) Signal(_ context.Context, name string, sig syscall.Signal) error {
	s.actions = append(s.actions, "signal "+sig.String())
	return nil
}
func (s *signaller) Restart(_ context.Context, name string) error {
	s.actions = append(s.actions, "restart")
	return nil
}
func (s *signaller) MainPID(context.Context, string) (int, error) { return s.pid, s.pidErr }

// TestKickTellsOpenSMFromALauncher: a unit whose main process is opensm
// takes a SIGHUP; one whose main process is something else (a launcher's
// shell loop, which the SIGHUP would end) is restarted; where the main
// process cannot be read (no PID, an error, no /proc entry), opensm's
// own units are the likely case and it is a SIGHUP, not a restart.
func TestKickTellsOpenSMFromALauncher(t *testing.T) {
	root := t.TempDir()
	for pid, comm := range map[int]string{100: "opensm", 200: "opensm-launch"} {
		d := filepath.Join(root, "proc", strconv.Itoa(pid))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "comm"), []byte(comm+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fsys, err := host.NewRootFS(root)
	if err != nil {
		t.Fatal(err)
	}
	h := &host.Host{FS: fsys}
	for _, tc := range []struct {
		name    string
		sig     *signaller
		restart bool
		want    string
	}{
		{"opensm", &signaller{pid: 100}, false, "signal hangup"},
		{"a launcher", &signaller{pid: 200}, false, "restart"},
		{"no /proc entry", &signaller{pid: 300}, false, "signal hangup"},
		{"no main PID", &signaller{pid: 0}, false, "signal hangup"},
		{"MainPID fails", &signaller{pidErr: errors.New("bus gone")}, false, "signal hangup"},
		{"a key taken only at start", &signaller{pid: 100}, true, "restart"},
	} {
		if err := kick(context.Background(), h, tc.sig, []string{"opensm@0x1.service"}, tc.restart); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(tc.sig.actions, ", "); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// fabricRunner answers sminfo and smpquery with the lab's real outputs
// (testdata/README.md): local is the file of sminfo -D 0.
type fabricRunner struct{ local string }

func (r fabricRunner) Run(_ context.Context, c host.Cmd) (host.Result, error) {
	file := "testdata/sminfo-master.txt"
	switch {
	case c.Args[0] == "smpquery":
		file = "testdata/smpquery-pkeys-limited.txt"
	case strings.Contains(strings.Join(c.Args, " "), "-D 0"):
		file = r.local
	}
	b, err := os.ReadFile(file)
	return host.Result{Stdout: b}, err
}

// TestStandbyTableIsNotChecked: after a change, a standby subnet manager
// is proven by its priority alone: its port's P_Key table is what the
// master programs (here limited, 0x0002, where this spec would make it
// full), not something its own file decides. A master's table is
// checked.
func TestStandbyTableIsNotChecked(t *testing.T) {
	prio := 3
	pl := &payload{port: &LocalPort{Device: "ibsim0", Port: 1, GUID: "0x0000000000100004"}, expect: expectation{priority: &prio, pkeys: []int{0x8002, 0xffff}}}
	standby := &host.Host{FS: mustRoot(t), Runner: fabricRunner{local: "testdata/sminfo-standby.txt"}}
	if got := check(context.Background(), standby, pl); got != "" {
		t.Errorf("standby: %q, want its table left to the master", got)
	}
	prio = 5
	master := &host.Host{FS: mustRoot(t), Runner: fabricRunner{local: "testdata/sminfo-master.txt"}}
	if got := check(context.Background(), master, pl); !strings.Contains(got, "the P_Key table of ibsim0 port 1 is 0x0002 0xffff, not 0x8002 0xffff") {
		t.Errorf("master: %q, want its table checked", got)
	}
}

func mustRoot(t *testing.T) host.FS {
	t.Helper()
	f, err := host.NewRootFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return f
}
