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
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/sim"
)

// TestSignalDuringActivate: a real rdmaform process runs activate --by
// fw-reset on a card with two VFs whose firmware reset takes 3 s
// (emulated), and gets SIGINT (text output) or SIGTERM (JSON) while the
// reset is under way. The reset runs to its end (what was staged is
// current after it), the card is waited for and its VFs come back, then
// activate stops before applying the runtime part again: exit 130 or 143,
// saying what it did and what is left. The host is consistent: the next
// plan shows only the runtime part (the RoCE settings the reset put back
// to the kernel's defaults), nothing staged; apply then converges and
// the plan is empty.
//
// An interrupt reaches a command under way only after apply's grace
// period (a minute); in the SIGTERM case the reset's own timeout
// (RDMAFORM_COMMAND_TIMEOUT=2s) also ends while it runs, so the reset is
// sent SIGTERM: it is waited for, never killed (host.Cmd.Gentle), and
// still runs to its end.
func TestSignalDuringActivate(t *testing.T) {
	bin := buildRdmaform(t)
	for _, tc := range []struct {
		sig    syscall.Signal
		output string
		env    []string
	}{{syscall.SIGINT, "text", nil}, {syscall.SIGTERM, "json", []string{"RDMAFORM_COMMAND_TIMEOUT=2s"}}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			t.Parallel()
			dir, h := activateHost(t, func(st *sim.State) {
				st.Latency = map[string]sim.Duration{"mlxfwreset reset": sim.Duration(3 * time.Second)}
			})
			spec := filepath.Join(dir, "roce.yaml")
			writeActivateSpec(t, spec, ethSpec+`    ports:
      - port: 1
        link_layer: Ethernet
        roce:
          mode: v2
          tos: 106
`)
			if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 3 {
				t.Fatalf("apply: exit %d, want 3\n%s%s", code, out, errs)
			}
			cmd := exec.Command(bin, "--sim", h, "activate", "--by", "fw-reset", "-f", spec, "-o", tc.output)
			cmd.Env = append(append(os.Environ(), "NO_COLOR=1"), tc.env...)
			said, errs, err := runSignalled(t, cmd, "firmware reset 0000:3b:00: resetting (level 3)...", tc.sig)
			var ee *exec.ExitError
			if want := 128 + int(tc.sig); !errors.As(err, &ee) || ee.ExitCode() != want {
				t.Fatalf("activate: %v, want exit %d\nstdout:\n%s\nstderr:\n%s", err, want, said, errs)
			}
			if !strings.Contains(errs, "firmware reset 0000:3b:00: ended after") {
				t.Errorf("the reset did not end:\n%s", errs)
			}
			if tc.output == "json" {
				loadSchemas(t).check(t, "activate -o json", "activate", said)
				var doc struct {
					Cards []struct {
						Result string
						VFs    map[string]int `json:"vfs"`
					} `json:"cards"`
					Interrupted bool `json:"interrupted"`
				}
				if err := json.Unmarshal([]byte(said), &doc); err != nil {
					t.Fatalf("%v\n%s", err, said)
				}
				if !doc.Interrupted || len(doc.Cards) != 1 || doc.Cards[0].Result != "reset" || doc.Cards[0].VFs["0000:3b:00.0"] != 2 {
					t.Errorf("activate -o json: want interrupted, the card reset with its 2 VFs back:\n%s", said)
				}
			} else {
				for _, w := range []string{
					"0000:3b:00: firmware reset (level 3) done, the card is back (VFs restored: 0000:3b:00.0 2)",
					"Interrupted: reset 0000:3b:00 (the firmware reset ran to its end, the card is back); not done: applying the spec's runtime part again and checking that the plan is empty (run rdmaform apply -f " + spec + ")",
				} {
					if !strings.Contains(said, w) {
						t.Errorf("activate output: want %q in\n%s", w, said)
					}
				}
				if strings.Contains(said, "Runtime settings applied again") {
					t.Errorf("activate applied the runtime part after the interrupt:\n%s", said)
				}
			}
			// The firmware is loaded: what was staged is current.
			s, err := sim.Open(h)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range s.State().Firmware {
				if p := a.Param("LINK_TYPE_P1"); p.Current != 2 || p.Next != 2 {
					t.Errorf("%s LINK_TYPE_P1 current %d next %d after the interrupted activate, want 2 (ETH) in both", a.BDF, p.Current, p.Next)
				}
			}
			if n := numVFs(t, h); n != "2" {
				t.Errorf("sriov_numvfs %s after the interrupted activate, want 2 (restored)", n)
			}
			out, err := exec.Command(bin, "--sim", h, "plan", "-f", spec).CombinedOutput()
			if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "rdma_cm[mlx5_0/1]") || strings.Contains(string(out), "firmware[") || strings.Contains(string(out), "sriov[") {
				t.Fatalf("plan after the interrupt: %v, want exit 2 with only the RoCE settings left\n%s", err, out)
			}
			// What the reset loaded runs: nothing waits for a reboot.
			if out, err := exec.Command(bin, "--sim", h, "status").CombinedOutput(); err != nil || !strings.Contains(string(out), "Nothing waits for a reboot.") {
				t.Errorf("status after the interrupt: %v, want exit 0, nothing waiting\n%s", err, out)
			}
			for _, f := range []string{"run/reboot-required", "var/lib/rdmaform/staged.json", "run/rdmaform/activate.json"} {
				if exists(filepath.Join(h, f)) {
					t.Errorf("%s is left after the interrupted activate", f)
				}
			}
			// activate -f exits 0 only when the plan is empty.
			out, err = exec.Command(bin, "--sim", h, "activate", "-f", spec).CombinedOutput()
			if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "Nothing is staged") ||
				!strings.Contains(string(out), "The host does not match the spec: 1 change (rdma_cm[mlx5_0/1]); run rdmaform --sim "+h+" apply -f "+spec) {
				t.Errorf("activate after the interrupt: %v, want exit 2 naming the change left and the apply\n%s", err, out)
			}
			if out, err := exec.Command(bin, "--sim", h, "apply", "--yes", "-f", spec).CombinedOutput(); err != nil {
				t.Errorf("apply after the interrupt: %v\n%s", err, out)
			}
			if out, err := exec.Command(bin, "--sim", h, "plan", "-f", spec).CombinedOutput(); err != nil {
				t.Errorf("plan after apply: %v, want exit 0\n%s", err, out)
			}
		})
	}
}

// TestKilledActivate: activate --by fw-reset is SIGKILLed during the
// reset of a card with two VFs the spec does not ask for (they are at 0
// then). What the reset undoes was on disk before it
// (/run/rdmaform/activate.json). Either the reset died with activate
// (the emulated tool runs in its process), or it ran to its end without
// it, as a real mstfwreset, a process of its own, does: then what was
// staged runs and status asks for no reboot. Both ways, the next
// activate -f gives the two VFs back, with VF 1's GUIDs, then does what
// the killed run did not (the reset if still needed, the spec applied
// again, the proof): exit 0, the plan is empty, status has nothing
// waiting, and no reboot marker, ledger entry or record is left.
func TestKilledActivate(t *testing.T) {
	bin := buildRdmaform(t)
	for _, toolFinished := range []bool{false, true} {
		t.Run(map[bool]string{false: "reset died", true: "reset ran to its end"}[toolFinished], func(t *testing.T) {
			dir, h := activateHost(t, func(st *sim.State) {
				st.Latency = map[string]sim.Duration{"mlxfwreset reset": sim.Duration(3 * time.Second)}
			})
			spec := filepath.Join(dir, "vfs8.yaml")
			writeActivateSpec(t, spec, "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params: {SRIOV_EN: true, NUM_OF_VFS: 8}\n")
			if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 3 {
				t.Fatalf("apply: exit %d, want 3\n%s%s", code, out, errs)
			}
			s, err := sim.Open(h)
			if err != nil {
				t.Fatal(err)
			}
			hh, err := s.Host()
			if err != nil {
				t.Fatal(err)
			}
			// VFs the spec does not set up: only the record keeps them.
			if err := hh.FS.WriteAttr("/sys/bus/pci/devices/0000:3b:00.0/sriov_numvfs", []byte("2")); err != nil {
				t.Fatal(err)
			}
			const guid = "11:22:33:44:55:66:77:88"
			if err := hh.Net.LinkSetVF("ib0", 1, host.VFConfig{NodeGUID: guid, PortGUID: guid}); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, "--sim", h, "activate", "--by", "fw-reset", "-f", spec)
			cmd.Env = append(os.Environ(), "NO_COLOR=1")
			said, errs, err := runSignalled(t, cmd, "firmware reset 0000:3b:00: resetting (level 3)...", syscall.SIGKILL)
			if err == nil {
				t.Fatalf("activate was not killed\n%s%s", said, errs)
			}
			if n := numVFs(t, h); n != "0" {
				t.Fatalf("sriov_numvfs %s after the kill, want 0 (the test kills activate while the VFs are down)", n)
			}
			if !exists(filepath.Join(h, "run/rdmaform/activate.json")) {
				t.Fatalf("no record of what the reset undoes after the kill")
			}
			if toolFinished {
				if code, out, errs := runCLI(t, "sim", "tool", h, "--", "mlxfwreset", "-d", "0000:3b:00.0", "reset", "-y", "--level", "3"); code != 0 {
					t.Fatalf("the reset tool: exit %d\n%s%s", code, out, errs)
				}
				if code, out, errs := runCLI(t, "--sim", h, "status"); code != 0 {
					t.Errorf("status after the reset: exit %d, want 0\n%s%s", code, out, errs)
				}
			}
			out, err := exec.Command(bin, "--sim", h, "activate", "-f", spec).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "restored: 0000:3b:00.0 2") || !strings.Contains(string(out), "The host matches the spec.") {
				t.Fatalf("activate after the kill: %v, want exit 0 with the VFs restored\n%s", err, out)
			}
			if s, err = sim.Open(h); err != nil {
				t.Fatal(err)
			}
			d := s.State().DeviceByPCI("0000:3b:00.0")
			if d.SRIOV == nil || len(d.SRIOV.VFs) != 2 || d.SRIOV.VFs[1].PortGUID != guid {
				t.Errorf("VFs after the recovery: %+v, want 2, VF 1 with port GUID %s", d.SRIOV, guid)
			}
			if out, err := exec.Command(bin, "--sim", h, "plan", "-f", spec).CombinedOutput(); err != nil {
				t.Errorf("plan after the recovery: %v, want exit 0\n%s", err, out)
			}
			if out, err := exec.Command(bin, "--sim", h, "status").CombinedOutput(); err != nil {
				t.Errorf("status after the recovery: %v, want exit 0\n%s", err, out)
			}
			for _, f := range []string{"run/reboot-required", "var/lib/rdmaform/staged.json", "run/rdmaform/activate.json"} {
				if exists(filepath.Join(h, f)) {
					t.Errorf("%s is left after the recovery", f)
				}
			}
		})
	}
}

// TestSignalDuringReapply: SIGINT reaches activate while it applies the
// spec again after the reset (two module loads of 3 s each, emulated; the signal comes during the first).
// The load runs to its end and activate stops: exit 130, an interruption
// naming what is left, not "a reboot is still needed" (exit 3) for
// changes a reboot does not make. The next apply converges.
func TestSignalDuringReapply(t *testing.T) {
	bin := buildRdmaform(t)
	dir, h := activateHost(t, func(st *sim.State) {
		st.Latency = map[string]sim.Duration{"modprobe": sim.Duration(3 * time.Second)}
	})
	staged := filepath.Join(dir, "eth.yaml")
	writeActivateSpec(t, staged, "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params: {LINK_TYPE_P1: ETH}\n")
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", staged); code != 3 {
		t.Fatalf("apply: exit %d, want 3\n%s%s", code, out, errs)
	}
	spec := filepath.Join(dir, "eth-ucm.yaml")
	writeActivateSpec(t, spec, "version: 1\nmodules: [rdma_ucm, ib_umad]\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params: {LINK_TYPE_P1: ETH}\n")
	cmd := exec.Command(bin, "--sim", h, "activate", "--by", "fw-reset", "-f", spec)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	said, errs, err := runSignalled(t, cmd, "firmware reset 0000:3b:00: ended after", syscall.SIGINT)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("activate: %v, want exit 130\nstdout:\n%s\nstderr:\n%s", err, said, errs)
	}
	if w := "Interrupted: reset 0000:3b:00 (the firmware reset ran to its end, the card is back); not done: the rest of the spec's runtime part"; !strings.Contains(said, w) {
		t.Errorf("activate output: want %q in\n%s", w, said)
	}
	if strings.Contains(said, "A reboot is still needed") {
		t.Errorf("activate asks for a reboot after an interrupt:\n%s", said)
	}
	if out, err := exec.Command(bin, "--sim", h, "apply", "--yes", "-f", spec).CombinedOutput(); err != nil {
		t.Errorf("apply after the interrupt: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "--sim", h, "plan", "-f", spec).CombinedOutput(); err != nil {
		t.Errorf("plan after apply: %v, want exit 0\n%s", err, out)
	}
}
