package cli_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// faultCase is one provider in the fault matrix: on a host where base is
// already applied, spec adds an independent change (module rdma_ucm, or a
// second rdma_cm port) and the provider's change (address), whose
// operation the faults break.
type faultCase struct {
	name    string
	profile string
	base    string
	spec    string
	address string
	// fail makes the provider's operation fail; want are what the error
	// must name: the resource, the command (or file, or netlink or
	// systemd operation) and the tool's or kernel's message.
	fail []string
	want []string
	// hang makes the provider's tool hang (tools only; nil otherwise);
	// wantHang is the command line the timeout names.
	hang     []string
	wantHang string
	// kill kills rdmaform at the provider's operation (once).
	kill []string
	// settled is the exit code of plan once the host matches: 3 when a
	// firmware change waits for a reboot.
	settled int
}

const moduleBase = "version: 1\nmodules: [ib_umad]\n"

var faultCases = []faultCase{{
	name:    "firmware",
	profile: "cx6-vpi-ib",
	base:    moduleBase,
	spec:    "version: 1\nmodules: [ib_umad, rdma_ucm]\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params: {SRIOV_EN: true, NUM_OF_VFS: 4}\n",
	address: "firmware[0000:3b:00.0]",
	fail:    []string{"--tool", "mlxconfig", "--match", "set", "--exit", "3", "--message", "-E- Failed to set configuration: the device is busy"},
	want:    []string{"firmware[0000:3b:00.0]", "mlxconfig -d 0000:3b:00.0 -y set SRIOV_EN=True NUM_OF_VFS=4", "exit status 3", "the device is busy"},
	hang:    []string{"--tool", "mlxconfig", "--match", "set", "--hang"},
	// The timeout is the one RDMAFORM_COMMAND_TIMEOUT sets.
	wantHang: "mlxconfig -d 0000:3b:00.0 -y set SRIOV_EN=True NUM_OF_VFS=4: timed out after 300ms",
	kill:     []string{"--tool", "mlxconfig", "--match", "set"},
	settled:  3,
}, {
	name:    "mlx4port",
	profile: "cx3-mlx4",
	base:    moduleBase,
	spec:    "version: 1\nmodules: [ib_umad, rdma_ucm]\ndevices:\n  - name: mlx4_0\n    ports:\n      - {port: 2, type: eth}\n",
	address: "mlx4_port[0000:81:00.0/2]",
	fail:    []string{"--write", "mlx4_port2", "--errno", "EIO"},
	want:    []string{"mlx4_port[0000:81:00.0/2]", "echo eth > /sys/bus/pci/devices/0000:81:00.0/mlx4_port2", "input/output error"},
	kill:    []string{"--write", "mlx4_port2"},
}, {
	name:    "modules",
	profile: "cx5-roce",
	base:    "version: 1\ndevices:\n  - name: mlx5_0\n    ports:\n      - {port: 1, roce: {tos: 106}}\n",
	spec:    "version: 1\nmodules: [rdma_ucm]\ndevices:\n  - name: mlx5_0\n    ports:\n      - {port: 1, roce: {tos: 106}}\n  - name: mlx5_1\n    ports:\n      - {port: 1, roce: {tos: 106}}\n",
	address: "module[rdma_ucm]",
	fail:    []string{"--tool", "modprobe", "--match", "rdma_ucm", "--message", "modprobe: ERROR: could not insert 'rdma_ucm': Operation not permitted"},
	want:    []string{"module[rdma_ucm]", "modprobe -- rdma_ucm", "exit status 1", "could not insert 'rdma_ucm': Operation not permitted"},
	hang:    []string{"--tool", "modprobe", "--match", "rdma_ucm", "--hang"},
	// modprobe keeps host.DefaultTimeout, capped here.
	wantHang: "modprobe -- rdma_ucm: timed out after 300ms",
	kill:     []string{"--tool", "modprobe", "--match", "rdma_ucm"},
}, {
	name:    "rxe",
	profile: "vm-soft",
	base:    moduleBase,
	spec:    "version: 1\nmodules: [ib_umad, rdma_ucm]\nrxe:\n  - {name: rxe0, netdev: enp1s0}\n",
	address: "rxe[rxe0]",
	fail:    []string{"--netlink", "RdmaLinkAdd", "--match", "rxe0", "--errno", "EBUSY"},
	want:    []string{"rxe[rxe0]", "rdma link add rxe0 type rxe netdev enp1s0", "netlink RdmaLinkAdd", "device or resource busy"},
	kill:    []string{"--netlink", "RdmaLinkAdd", "--match", "rxe0"},
}, {
	name:    "netdev",
	profile: "vm-soft",
	base:    moduleBase,
	spec:    "version: 1\nmodules: [ib_umad, rdma_ucm]\ninterfaces:\n  - {name: enp1s0, mtu: 9000, addresses: [198.51.100.7/24]}\n",
	address: "interface[enp1s0]",
	fail:    []string{"--netlink", "LinkSetMTU", "--match", "enp1s0", "--errno", "EPERM", "--message", "mtu locked by policy"},
	want:    []string{"interface[enp1s0]", "ip link set enp1s0 mtu 9000", "netlink LinkSetMTU", "mtu locked by policy (EPERM)"},
	// Killed in the middle of the change: MTU set, address not yet.
	kill: []string{"--netlink", "AddrAdd", "--match", "enp1s0"},
}, {
	name:    "rdma_cm",
	profile: "cx5-roce",
	base:    moduleBase,
	spec:    "version: 1\nmodules: [ib_umad, rdma_ucm]\ndevices:\n  - name: mlx5_0\n    ports:\n      - {port: 1, roce: {mode: v1, tos: 106}}\n",
	address: "rdma_cm[mlx5_0/1]",
	fail:    []string{"--write", "default_roce_tos", "--errno", "EINVAL"},
	want:    []string{"rdma_cm[mlx5_0/1]", "echo 106 > /sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos", "invalid argument"},
	// Killed between the mode write and the ToS write, with the configfs
	// group rdmaform made still there.
	kill: []string{"--write", "default_roce_tos"},
}, {
	name:    "ipoib",
	profile: "cx6-vpi-ib",
	base:    moduleBase,
	spec:    "version: 1\nmodules: [ib_umad, rdma_ucm]\nipoib:\n  - {name: ib0-data, parent: ib0, ipv4: {addresses: [192.0.2.1/24]}}\n",
	address: "ipoib[ib0-data]",
	fail:    []string{"--nm", "AddConnection2", "--match", "ib0-data", "--dbus-error", "org.freedesktop.NetworkManager.Settings.PermissionDenied", "--message", "Insufficient privileges"},
	want:    []string{"ipoib[ib0-data]", `connection "ib0-data"`, "NetworkManager AddConnection2: org.freedesktop.NetworkManager.Settings.PermissionDenied: Insufficient privileges", "polkit action org.freedesktop.NetworkManager.settings.modify.system"},
	hang:    []string{"--nm", "AddConnection2", "--match", "ib0-data", "--hang"},
	// The call waits for the apply's deadline, capped here.
	wantHang: "NetworkManager AddConnection2: timed out after 300ms",
	// Killed between add and activation: the profile exists, inactive.
	kill: []string{"--nm", "ActivateConnection", "--match", "ib0-data"},
}, {
	name:    "services",
	profile: "cx6-vpi-ib",
	base:    moduleBase,
	spec:    "version: 1\nmodules: [ib_umad, rdma_ucm]\nservices:\n  - {name: opensm, enabled: true, active: true}\n",
	address: "service[opensm.service]",
	fail:    []string{"--systemd", "StartUnit", "--match", "opensm.service", "--message", "Job for opensm.service failed"},
	want:    []string{"service[opensm.service]", "StartUnit opensm.service", "Job for opensm.service failed (EIO)"},
	// Killed between enable and start.
	kill: []string{"--systemd", "StartUnit", "--match", "opensm.service"},
}, {
	name:    "bootunit",
	profile: "cx5-roce",
	base:    moduleBase,
	spec:    "version: 1\nmodules: [ib_umad, rdma_ucm]\npersistence: boot-unit\n",
	address: "boot_unit[rdmaform.service]",
	fail:    []string{"--write", "/etc/systemd/system/rdmaform.service", "--errno", "ENOSPC"},
	want:    []string{"boot_unit[rdmaform.service]", "writing /etc/systemd/system/rdmaform.service", "no space left on device"},
	// Killed after the spec copy, before the unit file.
	kill: []string{"--write", "/etc/systemd/system/rdmaform.service"},
}}

// TestFaultMatrix runs the rdmaform binary against simulated hosts whose
// operations fail, hang or kill it. For each provider:
//
//   - fail: apply exits 1 with an error naming the resource, the command
//     or operation and the message; the independent change is made and
//     what base configured is kept (the plan after holds only the failed
//     change); once the fault is cleared, apply converges.
//   - hang (tools): the same, with a timeout message, within
//     RDMAFORM_COMMAND_TIMEOUT.
//   - kill: rdmaform dies by SIGKILL at the operation; the next apply
//     (whose lock the dead process held) converges and the plan is empty.
func TestFaultMatrix(t *testing.T) {
	bin := buildRdmaform(t)
	for _, tc := range faultCases {
		t.Run(tc.name+"/fail", func(t *testing.T) {
			t.Parallel()
			h := newFaultHost(t, bin, tc)
			h.fault(tc.fail...)
			_, stderr := h.run(1, "--sim", h.dir, "apply", "--yes", "--allow-mgmt", "-f", h.spec)
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("apply's error lacks %q:\n%s", w, stderr)
				}
			}
			h.remaining([]string{tc.address})
			h.converge()
		})
		if tc.hang != nil {
			t.Run(tc.name+"/hang", func(t *testing.T) {
				t.Parallel()
				h := newFaultHost(t, bin, tc)
				h.fault(tc.hang...)
				_, stderr := h.run(1, "--sim", h.dir, "apply", "--yes", "--allow-mgmt", "-f", h.spec)
				for _, w := range []string{tc.address, tc.wantHang} {
					if !strings.Contains(stderr, w) {
						t.Errorf("apply's error lacks %q:\n%s", w, stderr)
					}
				}
				h.remaining([]string{tc.address})
				h.converge()
			})
		}
		t.Run(tc.name+"/kill", func(t *testing.T) {
			t.Parallel()
			h := newFaultHost(t, bin, tc)
			h.fault(append(tc.kill, "--kill", "--times", "1")...)
			h.killed("--sim", h.dir, "apply", "--yes", "--allow-mgmt", "-f", h.spec)
			// The dead apply's lock file is still there; its flock died
			// with the process, so the next apply takes it at once.
			if _, err := os.Stat(filepath.Join(h.dir, "run")); err != nil {
				t.Errorf("no /run in the simulated host after the killed apply: %v", err)
			}
			h.must(tc.settled, "--sim", h.dir, "apply", "--yes", "--allow-mgmt", "--lock-timeout", "5s", "-f", h.spec)
			h.must(tc.settled, "--sim", h.dir, "plan", "-f", h.spec)
		})
	}
}

// faultHost is one simulated host of a fault case.
type faultHost struct {
	t    *testing.T
	bin  string
	dir  string
	spec string
	tc   faultCase
}

func newFaultHost(t *testing.T, bin string, tc faultCase) *faultHost {
	tmp := t.TempDir()
	h := &faultHost{t: t, bin: bin, dir: filepath.Join(tmp, "host"), spec: filepath.Join(tmp, "spec.yaml"), tc: tc}
	base := filepath.Join(tmp, "base.yaml")
	for f, b := range map[string]string{h.spec: tc.spec, base: tc.base} {
		if err := os.WriteFile(f, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h.must(0, "sim", "new", h.dir, "--profile", tc.profile)
	h.must(0, "--sim", h.dir, "apply", "--yes", "--allow-mgmt", "-f", base)
	h.must(0, "--sim", h.dir, "plan", "-f", base)
	return h
}

func (h *faultHost) fault(args ...string) {
	h.t.Helper()
	h.must(0, append([]string{"sim", "fault", h.dir}, args...)...)
}

// remaining checks that the plan holds exactly the addresses given.
func (h *faultHost) remaining(want []string) {
	h.t.Helper()
	out, _ := h.run(2, "--sim", h.dir, "plan", "-o", "json", "-f", h.spec)
	var p struct {
		Changes []struct {
			Address string `json:"address"`
		} `json:"changes"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		h.t.Fatalf("plan -o json: %v\n%s", err, out)
	}
	var got []string
	for _, c := range p.Changes {
		got = append(got, c.Address)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		h.t.Errorf("changes left after the failed apply (-want +got):\n%s", diff)
	}
}

// converge clears the faults, applies again and checks the plan is empty.
func (h *faultHost) converge() {
	h.t.Helper()
	h.must(0, "sim", "fault", h.dir, "--clear")
	h.must(h.tc.settled, "--sim", h.dir, "apply", "--yes", "--allow-mgmt", "-f", h.spec)
	h.must(h.tc.settled, "--sim", h.dir, "plan", "-f", h.spec)
}

func (h *faultHost) must(code int, args ...string) {
	h.t.Helper()
	h.run(code, args...)
}

// run runs rdmaform with a 300 ms cap on every command's timeout and
// checks its exit code.
func (h *faultHost) run(code int, args ...string) (stdout, stderr string) {
	h.t.Helper()
	var so, se strings.Builder
	cmd := exec.Command(h.bin, args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "RDMAFORM_COMMAND_TIMEOUT=300ms")
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		h.t.Fatal(err)
	}
	if got != code {
		h.t.Fatalf("rdmaform %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), got, code, so.String(), se.String())
	}
	return so.String(), se.String()
}

// killed runs rdmaform and requires it to die by SIGKILL.
func (h *faultHost) killed(args ...string) {
	h.t.Helper()
	var out strings.Builder
	cmd := exec.Command(h.bin, args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		h.t.Fatalf("rdmaform %s: %v, want killed by SIGKILL\n%s", strings.Join(args, " "), err, out.String())
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		h.t.Fatalf("rdmaform %s: %v, want killed by SIGKILL\n%s", strings.Join(args, " "), err, out.String())
	}
}

// buildRdmaform builds the binary once for the test: a kill fault must
// kill a process of its own, never the test binary.
func buildRdmaform(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "rdmaform")
	cmd := exec.Command("go", "build", "-o", bin, "../cmd/rdmaform")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
