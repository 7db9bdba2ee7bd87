package subnetmanager

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/need"
	"github.com/rdmaform/rdmaform/internal/testlab/smlab"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// simSM is a simulated dual-port InfiniBand host with opensm of a layout
// installed and running.
func simSM(t *testing.T, layout string) (*sim.Sim, *host.Host) {
	t.Helper()
	s, h := simtest.New(t, "cx6-vpi-ib", 0, func(st *sim.State) {
		st.OpenSM = &sim.OpenSMState{Layout: layout}
		st.Tools = append(st.Tools, "sminfo")
	})
	if err := h.Systemd.Start(context.Background(), "opensm.service"); err != nil {
		t.Fatal(err)
	}
	return s, h
}

// simPlan plans a spec with this provider alone.
func simPlan(t *testing.T, h *host.Host, src string) *plan.Plan {
	t.Helper()
	res, err := plan.Build(context.Background(), h, parse(t, src), []plan.Provider{New()})
	if err != nil {
		t.Fatal(err)
	}
	return res.Plan
}

// simApplyThenEmpty applies a spec on the simulated host and requires the
// next plan to be empty; it returns the applied plan's summary.
func simApplyThenEmpty(t *testing.T, h *host.Host, src string) []string {
	t.Helper()
	p := simPlan(t, h, src)
	if len(p.Errors) > 0 || len(p.Changes) == 0 {
		t.Fatalf("plan: %v", summary(p))
	}
	if out := apply.Run(context.Background(), h, p, []plan.Provider{New()}, apply.Options{}); out.Err != nil {
		t.Fatalf("apply: %v", out.Err)
	}
	if got := summary(simPlan(t, h, src)); len(got) != 0 {
		t.Fatalf("plan after apply is not empty: %v", got)
	}
	return summary(p)
}

const portSpec = `version: 1
subnet_manager:
  priority: 5
  port: {device: mlx5_1, port: 1}
  partitions:
    - name: storage
      pkey: 0x8002
      members: [{guid: all_cas, membership: limited}, {guid: self, membership: full}]
`

// TestLayouts: the files are where the installed package keeps them,
// Debian's or RHEL's (told from the binary), and the port the spec names
// is the one opensm binds: on Debian through PORTS in /etc/default/opensm
// (its opensm@GUID.service passes --guid, which overrides opensm.conf's
// guid), on RHEL through opensm.conf's guid. Each applies, then plans
// empty, and the simulated subnet manager runs on mlx5_1, not on the
// first port.
func TestLayouts(t *testing.T) {
	const g1 = "0xb8599f030022626f" // mlx5_1's port GUID
	cases := []struct {
		layout string
		want   []string // the applied plan
		files  map[string]string
		absent []string
		tell   []string // how opensm is told of the last change
	}{
		{"debian", []string{
			"subnet_manager[opensm.conf] create: sm_priority opensm",
			"subnet_manager[partitions.conf] create: partition storage",
			"subnet_manager[ports] update: PORTS opensm.service",
		}, map[string]string{
			"/etc/opensm/opensm.conf": Header + "sm_priority 5\n",
			"/etc/default/opensm":     strings.Replace(readHost(t, "/etc/default/opensm"), "PORTS=ALL", "PORTS="+g1, 1),
		}, []string{"/etc/rdma/opensm.conf", "/etc/rdma/partitions.conf"},
			[]string{"KillUnit opensm@" + g1 + ".service main 1"}},
		{"rhel", []string{
			"subnet_manager[launcher] update: PRIORITY GUIDS opensm.service",
			"subnet_manager[partitions.conf] create: partition storage",
		}, map[string]string{
			"/etc/sysconfig/opensm":      readTestdata(t, "rhel/opensm.sysconfig") + "PRIORITY=5\nGUIDS=" + g1 + "\n",
			"/usr/libexec/opensm-launch": readTestdata(t, "rhel/opensm.launch"),
		}, []string{"/etc/opensm/opensm.conf", "/etc/opensm/partitions.conf", "/etc/default/opensm", "/etc/rdma/opensm.conf"},
			[]string{"StopUnit opensm.service replace"}},
	}
	for _, c := range cases {
		t.Run(c.layout, func(t *testing.T) {
			s, h := simSM(t, c.layout)
			if got := simApplyThenEmpty(t, h, portSpec); !cmp.Equal(got, c.want) {
				t.Errorf("applied plan (-want +got):\n%s", cmp.Diff(c.want, got))
			}
			for f, want := range c.files {
				if b, err := h.FS.ReadFile(f); err != nil || string(b) != want {
					t.Errorf("%s: %q, %v; want %q", f, b, err, want)
				}
			}
			for _, f := range c.absent {
				if _, err := h.FS.Stat(f); err == nil {
					t.Errorf("%s written on a %s host", f, c.layout)
				}
			}
			dir := map[string]string{"debian": "/etc/opensm", "rhel": "/etc/rdma"}[c.layout]
			if b, err := h.FS.ReadFile(dir + "/partitions.conf"); err != nil || !strings.Contains(string(b), "storage=0x0002 :") {
				t.Errorf("%s/partitions.conf: %q, %v", dir, b, err)
			}
			// The subnet manager runs on mlx5_1, with the spec's table.
			res, err := h.Runner.Run(context.Background(), host.Cmd{Args: []string{"sminfo"}})
			if err != nil || !strings.Contains(string(res.Stdout), "sm guid 0xb8599f030022626f,") || !strings.Contains(string(res.Stdout), "priority 5 ") {
				t.Errorf("sminfo: %q, %v", res.Stdout, err)
			}
			if keys, err := inventory.ReadPKeys(h.FS, "mlx5_1", 1); err != nil || !cmp.Equal(keys, []int{0x8002, 0xffff}) {
				t.Errorf("mlx5_1's P_Keys: %x, %v", keys, err)
			}
			// A changed partition: SIGHUP to Debian's opensm@GUID.service;
			// RHEL's opensm.service runs opensm under a shell, so a restart.
			simApplyThenEmpty(t, h, strings.Replace(portSpec, "0x8002", "0x8003", 1))
			var signalled []string
			for _, call := range s.Calls() {
				if strings.HasPrefix(call, "systemd1 KillUnit ") || strings.HasPrefix(call, "systemd1 StopUnit opensm") {
					signalled = append(signalled, strings.TrimPrefix(call, "systemd1 "))
				}
			}
			if want := c.tell; len(signalled) == 0 || !cmp.Equal(signalled[len(signalled)-1:], want) {
				t.Errorf("opensm told by %q, want %q last", signalled, want)
			}
		})
	}
}

// readTestdata is a file of testdata/.
func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRHELSysconfig: on RHEL, whose opensm.service runs opensm-launch,
// PRIORITY and GUIDS of /etc/sysconfig/opensm are opensm's -p and -g and
// win over opensm.conf. A PRIORITY the administrator set is replaced
// where it is (the package's comments kept), opensm.service restarts,
// and the simulated subnet manager runs with the spec's priority; the
// plan is then empty. Without the launcher (an opensm built with RHEL's
// paths but started otherwise), opensm.conf's sm_priority and guid bind
// it, as before.
func TestRHELSysconfig(t *testing.T) {
	const g1 = "0xb8599f030022626f" // mlx5_1's port GUID
	t.Run("launcher", func(t *testing.T) {
		_, h := simSM(t, "rhel")
		pkg := readTestdata(t, "rhel/opensm.sysconfig")
		admin := strings.Replace(pkg, "#PRIORITY=15", "PRIORITY=15", 1)
		if err := h.FS.WriteFile(SysconfigFile, []byte(admin), 0o644); err != nil {
			t.Fatal(err)
		}
		restart(t, h, "opensm.service")
		if got := sminfoLine(t, h); !strings.Contains(got, "priority 15 ") {
			t.Fatalf("sminfo before: %q, want the administrator's PRIORITY=15", got)
		}
		src := strings.Replace(portSpec, "priority: 5", "priority: 3", 1)
		if got, want := simApplyThenEmpty(t, h, src), []string{
			"subnet_manager[launcher] update: PRIORITY GUIDS opensm.service",
			"subnet_manager[partitions.conf] create: partition storage",
		}; !cmp.Equal(got, want) {
			t.Errorf("applied plan (-want +got):\n%s", cmp.Diff(want, got))
		}
		want := strings.Replace(pkg, "#PRIORITY=15", "PRIORITY=3", 1) + "GUIDS=" + g1 + "\n"
		if b, _ := h.FS.ReadFile(SysconfigFile); string(b) != want {
			t.Errorf("%s:\n%s\nwant\n%s", SysconfigFile, b, want)
		}
		if got := sminfoLine(t, h); !strings.Contains(got, "sm guid 0xb8599f030022626f,") || !strings.Contains(got, "priority 3 ") {
			t.Errorf("sminfo after: %q, want mlx5_1's port at priority 3", got)
		}
		if b, _ := h.FS.ReadFile("/etc/rdma/opensm.conf"); strings.Contains(string(b), "sm_priority") || strings.Contains(string(b), "guid") {
			t.Errorf("opensm.conf names what the launcher's command line overrides:\n%s", b)
		}
		// A priority changed by hand in the file is drift; apply puts it back.
		changed := strings.Replace(want, "PRIORITY=3", "PRIORITY=7", 1)
		if err := h.FS.WriteFile(SysconfigFile, []byte(changed), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := summary(simPlan(t, h, src)); !cmp.Equal(got, []string{"subnet_manager[launcher] update: PRIORITY opensm.service"}) {
			t.Errorf("plan of a PRIORITY edited by hand: %v", got)
		}
	})
	t.Run("no launcher", func(t *testing.T) {
		_, h := simtest.New(t, "cx6-vpi-ib", 0, func(st *sim.State) {
			st.OpenSM = &sim.OpenSMState{Layout: "rhel", NoLauncher: true}
			st.Tools = append(st.Tools, "sminfo")
		})
		if err := h.Systemd.Start(context.Background(), "opensm.service"); err != nil {
			t.Fatal(err)
		}
		if _, err := h.FS.Stat(Launcher); err == nil {
			t.Fatalf("%s on a host without the launcher", Launcher)
		}
		if got, want := simApplyThenEmpty(t, h, portSpec), []string{
			"subnet_manager[opensm.conf] create: guid sm_priority opensm",
			"subnet_manager[partitions.conf] create: partition storage",
		}; !cmp.Equal(got, want) {
			t.Errorf("applied plan (-want +got):\n%s", cmp.Diff(want, got))
		}
		if b, _ := h.FS.ReadFile("/etc/rdma/opensm.conf"); string(b) != Header+"guid "+g1+"\nsm_priority 5\n" {
			t.Errorf("opensm.conf: %q", b)
		}
	})
}

// TestConfOnlyWithSomethingToWrite: on RHEL, where the launcher's
// command line carries the priority and the port, a spec without options
// has nothing for opensm.conf: a file there (the package's or the
// administrator's) is left as it is, and a host without one gets none
// (TestLayouts). With options the file is rdmaform's, and options taken
// out of the spec again are taken out of the file. Each step applies,
// then plans empty.
func TestConfOnlyWithSomethingToWrite(t *testing.T) {
	_, h := simSM(t, "rhel")
	admin := "# the site's opensm settings\nsweep_interval 15\n"
	if err := h.FS.WriteFile(RHEL.Conf, []byte(admin), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := simApplyThenEmpty(t, h, portSpec), []string{
		"subnet_manager[launcher] update: PRIORITY GUIDS opensm.service",
		"subnet_manager[partitions.conf] create: partition storage",
	}; !cmp.Equal(got, want) {
		t.Errorf("applied plan (-want +got):\n%s", cmp.Diff(want, got))
	}
	if b, err := h.FS.ReadFile(RHEL.Conf); err != nil || string(b) != admin {
		t.Errorf("%s: %q, %v; want the administrator's file as it was", RHEL.Conf, b, err)
	}
	withQoS := portSpec + "  options: {qos: true}\n"
	if got, want := simApplyThenEmpty(t, h, withQoS), []string{
		"subnet_manager[opensm.conf] update: qos sweep_interval opensm",
	}; !cmp.Equal(got, want) {
		t.Errorf("applied plan with options (-want +got):\n%s", cmp.Diff(want, got))
	}
	if b, _ := h.FS.ReadFile(RHEL.Conf); string(b) != Header+"qos TRUE\n" {
		t.Errorf("%s with options: %q", RHEL.Conf, b)
	}
	if got, want := simApplyThenEmpty(t, h, portSpec), []string{
		"subnet_manager[opensm.conf] update: qos opensm",
	}; !cmp.Equal(got, want) {
		t.Errorf("applied plan without the options again (-want +got):\n%s", cmp.Diff(want, got))
	}
	if b, _ := h.FS.ReadFile(RHEL.Conf); string(b) != Header {
		t.Errorf("%s without the options again: %q", RHEL.Conf, b)
	}
}

func restart(t *testing.T, h *host.Host, unit string) {
	t.Helper()
	if err := h.Systemd.(host.UnitSignaller).Restart(context.Background(), unit); err != nil {
		t.Fatal(err)
	}
}

func sminfoLine(t *testing.T, h *host.Host) string {
	t.Helper()
	res, err := h.Runner.Run(context.Background(), host.Cmd{Args: []string{"sminfo"}})
	if err != nil {
		t.Fatal(err)
	}
	return string(res.Stdout)
}

// readHost is a file of this machine (Debian's /etc/default/opensm as the
// installed package has it, for the simulated Debian host's copy).
func readHost(t *testing.T, p string) string {
	t.Helper()
	_, h := simtest.New(t, "cx6-vpi-ib", 0, func(st *sim.State) { st.OpenSM = &sim.OpenSMState{Layout: "debian"} })
	b, err := h.FS.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLayoutOf: the installed Debian binary names Debian's paths; a binary
// that names RHEL's partitions file (as RHEL's build compiles in) is
// RHEL's.
func TestLayoutOf(t *testing.T) {
	if b, err := os.ReadFile(smlab.OpenSM); err == nil {
		if got := LayoutOf(b); got.Name != "Debian" {
			t.Errorf("this machine's %s: %s", smlab.OpenSM, got.Name)
		}
	} else {
		need.Skip(t, "%s is not installed: apt-get install opensm", smlab.OpenSM)
	}
	if got := LayoutOf([]byte("\x00/etc/rdma/partitions.conf\x00/etc/rdma/opensm.conf\x00")); got.Name != "RHEL" || got.Partitions != "/etc/rdma/partitions.conf" || got.Conf != "/etc/rdma/opensm.conf" || got.Ports != "" {
		t.Errorf("RHEL's paths: %+v", got)
	}
}

// TestRenderPorts: PORTS in Debian's /etc/default/opensm is set to the
// port, the package's comments and the rest kept.
func TestRenderPorts(t *testing.T) {
	const g = "0x0002c903000a1b2c"
	for _, c := range []struct{ in, want, before string }{
		{"# comment\n#PORTS=\"0x1 0x2\"\n\nPORTS=ALL\n\n", "# comment\n#PORTS=\"0x1 0x2\"\n\nPORTS=" + g + "\n\n", "ALL"},
		{"PORTS=\"0x1 0x2\"\nPORTS=NONE\n", "PORTS=" + g + "\n", "NONE"},
		{"# no PORTS\n", "# no PORTS\nPORTS=" + g + "\n", ""},
		{"", "PORTS=" + g + "\n", ""},
	} {
		if got := string(RenderPorts([]byte(c.in), g)); got != c.want {
			t.Errorf("RenderPorts(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := PortsOf([]byte(c.in)); got != c.before {
			t.Errorf("PortsOf(%q) = %q, want %q", c.in, got, c.before)
		}
	}
}
