package firmware_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/firmware"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// imageHost is a simulated host of a profile with a firmware image of
// psid and version at /srv/fw/fw.bin (inside the host's tree), and a spec
// asking 0000:3b:00.0 (or pci) for version with that image.
func imageHost(t *testing.T, profile, pci, psid, imageVersion, specVersion string) (hostDir, spec, image string) {
	t.Helper()
	dir := t.TempDir()
	hostDir = filepath.Join(dir, "host")
	step(t, 0, nil, "sim", "new", hostDir, "--profile", profile)
	image = filepath.Join(hostDir, "srv/fw/fw.bin")
	if err := os.MkdirAll(filepath.Dir(image), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := sim.WriteImage(image, psid, imageVersion); err != nil {
		t.Fatal(err)
	}
	spec = filepath.Join(dir, "host.yaml")
	text := "version: 1\ndevices:\n  - pci: \"" + pci + "\"\n    firmware:\n      version: \"" + specVersion + "\"\n      image: /srv/fw/fw.bin\n"
	if err := os.WriteFile(spec, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return hostDir, spec, image
}

// rebootThenPlanIsEmpty reboots the simulated host (the firmware
// reloads), applies (the ledger drops what runs now), and expects an
// empty plan.
func rebootThenPlanIsEmpty(t *testing.T, hostDir, spec string) {
	t.Helper()
	sd := "--sim=" + hostDir
	step(t, 0, nil, "sim", "reboot", hostDir)
	step(t, plan.ExitOK, nil, sd, "apply", "-f", spec, "--yes")
	step(t, plan.ExitOK, []string{"No changes."}, sd, "plan", "-f", spec)
}

func readState(t *testing.T, hostDir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(hostDir, "sim.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestImageBurnScenario: firmware.image on the simulated ConnectX-6 (MFT:
// flint) and ConnectX-5 (mstflint) hosts. The plan burns the image (one
// burn per card), apply burns it with the tool's command line and records
// it in the staged ledger; the burn is pending until a reboot reloads the
// firmware; after `sim reboot` the adapter runs it, apply drops the ledger
// entry, and plan is empty.
func TestImageBurnScenario(t *testing.T) {
	for _, c := range []struct{ profile, pci, psid, from, to, tool string }{
		{"cx6-vpi-ib", "0000:3b:00.0", "MT_0000000222", "20.35.1012", "20.36.1012", "flint"},
		{"cx5-roce", "0000:5e:00.1", "MT_0000000008", "16.35.2000", "16.35.3006", "mstflint"},
	} {
		t.Run(c.profile, func(t *testing.T) {
			hostDir, spec, _ := imageHost(t, c.profile, c.pci, c.psid, c.to, c.to)
			sd := "--sim=" + hostDir
			addr := "firmware_image[" + c.pci + "]"
			step(t, plan.ExitChanges, []string{addr, c.from, c.to}, sd, "plan", "-f", spec)
			step(t, plan.ExitReboot, []string{addr}, sd, "apply", "-f", spec, "--yes")
			// The card's flash holds the image, both functions show it;
			// they run the old firmware until a reboot.
			if st := readState(t, hostDir); strings.Count(st, "flash_fw: "+c.to) != 2 || !strings.Contains(st, "fw_ver: "+c.from) {
				t.Errorf("after the burn, sim.yaml lacks flash_fw %s on both functions or fw_ver %s:\n%s", c.to, c.from, st)
			}
			s, err := sim.Open(hostDir)
			if err != nil {
				t.Fatal(err)
			}
			// Burned, not running yet: pending, never burned again.
			step(t, plan.ExitReboot, []string{addr, "version", c.from, c.to}, sd, "plan", "-f", spec)
			step(t, plan.ExitReboot, nil, sd, "apply", "-f", spec, "--yes")
			h, err := s.Host()
			if err != nil {
				t.Fatal(err)
			}
			l, err := firmware.ReadLedger(h.FS)
			if err != nil {
				t.Fatal(err)
			}
			if e := l.Find(c.pci, "image"); e == nil || e.Value != c.to || e.Tool != c.tool {
				t.Errorf("ledger entry %+v, want the image's version %s by %s", e, c.to, c.tool)
			}
			rebootThenPlanIsEmpty(t, hostDir, spec)
			if l, err := firmware.ReadLedger(h.FS); err != nil || len(l.Entries) != 0 {
				t.Errorf("ledger after the image runs: %+v %v, want empty", l, err)
			}
		})
	}
}

// TestImageRefused: an image that is not the adapter's, not the spec's
// version, or not a regular file is a plan error at the image's line;
// apply burns nothing and leaves the host as it was.
func TestImageRefused(t *testing.T) {
	for _, c := range []struct {
		name, psid, imageVersion, specVersion string
		mutate                                func(t *testing.T, image string)
		msg                                   string
	}{
		{name: "other PSID", psid: "MT_0000000999", imageVersion: "20.36.1012", specVersion: "20.36.1012",
			msg: "image /srv/fw/fw.bin is for PSID MT_0000000999, but mlx5_0 (0000:3b:00.0) has PSID MT_0000000222"},
		{name: "other version", psid: "MT_0000000222", imageVersion: "20.36.1012", specVersion: "20.37.1000",
			msg: "image /srv/fw/fw.bin holds firmware 20.36.1012; the spec asks for version 20.37.1000"},
		{name: "missing", psid: "MT_0000000222", imageVersion: "20.36.1012", specVersion: "20.36.1012",
			mutate: func(t *testing.T, image string) { rm(t, image) },
			msg:    "image /srv/fw/fw.bin does not exist"},
		{name: "directory", psid: "MT_0000000222", imageVersion: "20.36.1012", specVersion: "20.36.1012",
			mutate: func(t *testing.T, image string) {
				rm(t, image)
				if err := os.Mkdir(image, 0o755); err != nil {
					t.Fatal(err)
				}
			},
			msg: "image /srv/fw/fw.bin is not a regular file (a directory)"},
		{name: "named pipe", psid: "MT_0000000222", imageVersion: "20.36.1012", specVersion: "20.36.1012",
			mutate: func(t *testing.T, image string) {
				rm(t, image)
				if err := syscall.Mkfifo(image, 0o644); err != nil {
					t.Fatal(err)
				}
			},
			msg: "image /srv/fw/fw.bin is not a regular file (a named pipe)"},
		{name: "symlink out of the host", psid: "MT_0000000222", imageVersion: "20.36.1012", specVersion: "20.36.1012",
			mutate: func(t *testing.T, image string) {
				rm(t, image)
				if err := os.Symlink("../../../../../../../../etc/passwd", image); err != nil {
					t.Fatal(err)
				}
			},
			msg: "image /srv/fw/fw.bin: "},
		{name: "not an image", psid: "MT_0000000222", imageVersion: "20.36.1012", specVersion: "20.36.1012",
			mutate: func(t *testing.T, image string) {
				if err := os.WriteFile(image, make([]byte, 4096), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			msg: "-E- Failed to query image: "},
		{name: "not 4-byte aligned", psid: "MT_0000000222", imageVersion: "20.36.1012", specVersion: "20.36.1012",
			mutate: func(t *testing.T, image string) {
				if err := os.WriteFile(image, []byte("hello\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			msg: "Image size should be 4-bytes aligned"},
	} {
		t.Run(c.name, func(t *testing.T) {
			hostDir, spec, image := imageHost(t, "cx6-vpi-ib", "0000:3b:00.0", c.psid, c.imageVersion, c.specVersion)
			if c.mutate != nil {
				c.mutate(t, image)
			}
			sd := "--sim=" + hostDir
			before := readState(t, hostDir)
			at := spec + ":6:14"
			step(t, plan.ExitError, []string{at, c.msg}, sd, "plan", "-f", spec)
			step(t, plan.ExitError, []string{at, c.msg}, sd, "apply", "-f", spec, "--yes")
			if readState(t, hostDir) != before {
				t.Errorf("a refused apply changed the host")
			}
		})
	}
}

func rm(t *testing.T, p string) {
	t.Helper()
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
}

// TestImageBurnFailsMidway: a burn the tool fails halfway (the flash
// write fails after the progress started) is an apply error with the
// tool's -E- line; nothing is recorded as burned, the plan shows the burn
// again, and once the flash writes, apply, reboot, then plan is empty.
func TestImageBurnFailsMidway(t *testing.T) {
	hostDir, spec, _ := imageHost(t, "cx6-vpi-ib", "0000:3b:00.0", "MT_0000000222", "20.36.1012", "20.36.1012")
	s, err := sim.Open(hostDir)
	if err != nil {
		t.Fatal(err)
	}
	// flint's progress (without the version lines before it, which start
	// with blanks: yaml.v3 writes such a block scalar inside a sequence in
	// a form it cannot read back), then FLINT_FS3_BURN_ERROR (mstflint flint/err_msgs.h:
	// "Burning FS3 image failed: %s") with the flash layer's reason.
	if err := s.AddFault(sim.Fault{Tool: "flint", Match: "burn", Exit: 1, Times: 1,
		Stdout: "Burning FS3 FW image without signatures -  37%\n-E- Burning FS3 image failed: Flash write failed\n"}); err != nil {
		t.Fatal(err)
	}
	sd := "--sim=" + hostDir
	before := readState(t, hostDir)
	step(t, plan.ExitError, []string{"firmware_image[0000:3b:00.0]", "-E- Burning FS3 image failed: Flash write failed", "the next apply burns again"}, sd, "apply", "-f", spec, "--yes")
	after := readState(t, hostDir)
	if strings.Contains(after, "flash_fw") || strings.ReplaceAll(before, "faults:", "") == "" {
		t.Errorf("a failed burn changed the flash:\n%s", after)
	}
	h, err := s.Host()
	if err != nil {
		t.Fatal(err)
	}
	if l, err := firmware.ReadLedger(h.FS); err != nil || len(l.Entries) != 0 {
		t.Errorf("ledger after a failed burn: %+v %v, want empty", l, err)
	}
	step(t, plan.ExitChanges, []string{"firmware_image[0000:3b:00.0]"}, sd, "plan", "-f", spec)
	step(t, plan.ExitReboot, nil, sd, "apply", "-f", spec, "--yes")
	rebootThenPlanIsEmpty(t, hostDir, spec)
}

// TestImageWarmRebootDidNotTake: a warm reboot that does not reload the
// firmware leaves the burned image not running: an activation failure at
// the image's line, exit 1, and apply does not burn it again.
func TestImageWarmRebootDidNotTake(t *testing.T) {
	hostDir, spec, _ := imageHost(t, "cx6-vpi-ib", "0000:3b:00.0", "MT_0000000222", "20.36.1012", "20.36.1012")
	sd := "--sim=" + hostDir
	step(t, plan.ExitReboot, nil, sd, "apply", "-f", spec, "--yes")
	step(t, 0, nil, "sim", "reboot", hostDir, "--keep-firmware")
	msg := "firmware 20.36.1012 did not take: it was burned on 0000:3b:00.0"
	step(t, plan.ExitError, []string{spec + ":6:14", msg, "rdmaform activate --by fw-reset"}, sd, "plan", "-f", spec)
	before := readState(t, hostDir)
	step(t, plan.ExitError, []string{msg}, sd, "apply", "-f", spec, "--yes")
	if readState(t, hostDir) != before {
		t.Errorf("apply changed the host after a reboot that did not take")
	}
	rebootThenPlanIsEmpty(t, hostDir, spec)
}

// TestImageVersionDriftInAudit: an audit against a spec with an image
// finds a firmware drift (the running firmware is not the version) as a
// change of firmware_image[PCI], exit 2; after the burn and a reboot the
// host matches.
func TestImageVersionDriftInAudit(t *testing.T) {
	hostDir, spec, _ := imageHost(t, "cx6-vpi-ib", "0000:3b:00.0", "MT_0000000222", "20.36.1012", "20.36.1012")
	sd := "--sim=" + hostDir
	step(t, plan.ExitChanges, []string{"firmware_image[0000:3b:00.0]"}, sd, "audit", "-f", spec)
	step(t, plan.ExitReboot, nil, sd, "apply", "-f", spec, "--yes")
	step(t, 0, nil, "sim", "reboot", hostDir)
	step(t, plan.ExitOK, []string{"The host matches the golden spec."}, sd, "audit", "-f", spec)
	step(t, plan.ExitOK, []string{"No changes."}, sd, "plan", "-f", spec)
}

// TestImageBurnCommandLine: both functions of a card give the image; the
// card is burned once, through its first function, by the tool beside
// the configuration tool (flint with MFT's mlxconfig, mstflint with
// mstconfig), with the image as the host's tree holds it, and every
// function is pending afterwards.
func TestImageBurnCommandLine(t *testing.T) {
	for _, c := range []struct{ tool, want string }{
		{firmware.MLXConfig, "flint"},
		{firmware.MSTConfig, "mstflint"},
	} {
		t.Run(c.tool, func(t *testing.T) {
			s, h := simtest.New(t, "gpu-node", 1, func(st *sim.State) {
				st.Tools = []string{c.tool, c.want, "mst", "modprobe"}
			})
			image := filepath.Join(s.Dir, "srv/fw.bin")
			if err := os.MkdirAll(filepath.Dir(image), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := sim.WriteImage(image, "MT_0000000838", "28.40.1000"); err != nil {
				t.Fatal(err)
			}
			spec := parse(t, "version: 1\ndevices:\n  - pci: \"0000:10:00.0\"\n    firmware: {version: 28.40.1000, image: /srv/fw.bin}\n  - pci: \"0000:10:00.1\"\n    firmware: {version: 28.40.1000, image: /srv/fw.bin}\n")
			p := build(t, h, spec)
			if len(p.Changes) != 1 || p.Changes[0].Address != firmware.ImageAddress("0000:10:00.0") {
				t.Fatalf("changes %+v, want one burn of firmware_image[0000:10:00.0]", p.Changes)
			}
			n := len(s.Calls())
			out := apply.Run(context.Background(), h, p, []plan.Provider{firmware.New()}, apply.Options{})
			if out.Err != nil {
				t.Fatal(out.Err)
			}
			var burns []string
			for _, call := range s.Calls()[n:] {
				if strings.HasSuffix(call, " burn") {
					burns = append(burns, call)
				}
			}
			if diff := cmp.Diff([]string{c.want + " -d 0000:10:00.0 -i " + image + " -y burn"}, burns); diff != "" {
				t.Errorf("burns (-want +got):\n%s", diff)
			}
			p = build(t, h, spec)
			var pending []string
			for _, pd := range p.Pending {
				pending = append(pending, pd.Address.String())
			}
			if diff := cmp.Diff([]string{"firmware_image[0000:10:00.0]", "firmware_image[0000:10:00.1]"}, pending); diff != "" || len(p.Changes) != 0 {
				t.Errorf("after the burn: changes %+v, pending (-want +got):\n%s", p.Changes, diff)
			}
		})
	}
}

// TestImageRemovedAfterBurn: the image was on a temporary share and is
// gone after a successful burn. While the burn is pending (the ledger
// says rdmaform burned it, the flash holds it), the plan still says it
// is pending (exit 3), not an error; a reboot that did not load it is
// still an activation failure; once the version runs, the missing file
// is no error at all and the plan is empty. A flash holding the version
// that rdmaform did not burn (no ledger entry) is not vouched for: the
// missing image is an error there, as before any burn.
func TestImageRemovedAfterBurn(t *testing.T) {
	hostDir, spec, image := imageHost(t, "cx6-vpi-ib", "0000:3b:00.0", "MT_0000000222", "20.36.1012", "20.36.1012")
	sd := "--sim=" + hostDir
	missing := "image /srv/fw/fw.bin does not exist"
	step(t, plan.ExitReboot, nil, sd, "apply", "-f", spec, "--yes")
	if err := os.Remove(image); err != nil {
		t.Fatal(err)
	}
	out := step(t, plan.ExitReboot, []string{"firmware_image[0000:3b:00.0] version staged for next boot (current 20.35.1012, next 20.36.1012)"}, sd, "plan", "-f", spec)
	if strings.Contains(out, missing) {
		t.Errorf("plan of a burned, pending image reports the missing file:\n%s", out)
	}
	step(t, plan.ExitReboot, nil, sd, "apply", "-f", spec, "--yes")
	step(t, 0, nil, "sim", "reboot", hostDir, "--keep-firmware")
	step(t, plan.ExitError, []string{"firmware 20.36.1012 did not take"}, sd, "plan", "-f", spec)
	step(t, 0, nil, "sim", "reboot", hostDir)
	step(t, plan.ExitOK, nil, sd, "apply", "-f", spec, "--yes")
	step(t, plan.ExitOK, []string{"No changes."}, sd, "plan", "-f", spec)

	// The flash holds the version, but rdmaform's ledger does not say it
	// burned it: the image cannot be checked, an error.
	hostDir, spec, image = imageHost(t, "cx6-vpi-ib", "0000:3b:00.0", "MT_0000000222", "20.36.1012", "20.36.1012")
	sd = "--sim=" + hostDir
	step(t, plan.ExitReboot, nil, sd, "apply", "-f", spec, "--yes")
	if err := os.Remove(filepath.Join(hostDir, "var/lib/rdmaform/staged.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(image); err != nil {
		t.Fatal(err)
	}
	step(t, plan.ExitError, []string{missing}, sd, "plan", "-f", spec)
}
