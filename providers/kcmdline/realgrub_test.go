package kcmdline

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/need"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// nsRunner runs Debian's real update-grub against a test root: in a
// private mount namespace (unshare), the root's etc/default and boot are
// bind-mounted over /etc/default and /boot, which grub-mkconfig has
// compiled in (sysconfdir=/etc, -o /boot/grub/grub.cfg); the machine's own
// /etc/default and /boot are never written, and the mounts end with the
// namespace.
type nsRunner struct {
	root string
	real host.ExecRunner
}

func (r *nsRunner) Run(ctx context.Context, c host.Cmd) (host.Result, error) {
	if len(c.Args) > 0 && c.Args[0] == "update-grub" {
		c.Args = append([]string{"unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
			`mount --bind "$1/etc/default" /etc/default && mount --bind "$1/boot" /boot && shift && exec "$@"`, "sh", r.root}, c.Args...)
	}
	return r.real.Run(ctx, c)
}

func (r *nsRunner) LookPath(name string) (string, error) { return r.real.LookPath(name) }

type fakeKernel struct{}

func (fakeKernel) EnsureConfigfs() error { return nil }

// realGrubRoot makes a test root for update-grub: Debian's own default
// /etc/default/grub (from grub2-common), an empty grub.d, a kernel image
// in /boot.
func realGrubRoot(t *testing.T) (string, *host.Host) {
	t.Helper()
	if os.Geteuid() != 0 {
		need.Skip(t, "update-grub runs as root only (grub-mkconfig checks EUID), and the bind mounts need CAP_SYS_ADMIN")
	}
	for _, p := range []string{"update-grub", "grub-mkconfig", "grub-probe", "unshare"} {
		if _, err := exec.LookPath(p); err != nil {
			need.Skip(t, "%s is not installed (apt-get install grub2-common)", p)
		}
	}
	def, err := os.ReadFile("/usr/share/grub/default/grub")
	if err != nil {
		need.Skip(t, "grub2-common's default file: %v", err)
	}
	root := t.TempDir()
	for _, d := range []string{"etc/default/grub.d", "boot/grub", "proc/sys/kernel/random"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"etc/default/grub":               string(def),
		"boot/vmlinuz-6.1.0-99-amd64":    "a kernel image\n",
		"proc/cmdline":                   "BOOT_IMAGE=/boot/vmlinuz-6.1.0-99-amd64 root=/dev/vda ro quiet\n",
		"proc/sys/kernel/random/boot_id": "0f3c1c6e-6d5e-4f6a-9d61-2a8f0e7b1c11\n",
	}
	for f, s := range files {
		if err := os.WriteFile(filepath.Join(root, f), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fsys, err := host.NewRootFS(root)
	if err != nil {
		t.Fatal(err)
	}
	return root, &host.Host{FS: fsys, Runner: &nsRunner{root: root}, Kernel: fakeKernel{}, Name: "root " + root}
}

func linuxLines(t *testing.T, root string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "boot/grub/grub.cfg"))
	if err != nil {
		t.Fatalf("update-grub wrote no grub.cfg: %v", err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "linux" {
			out = append(out, strings.Join(f[2:], " "))
		}
	}
	if len(out) == 0 {
		t.Fatalf("grub.cfg has no linux line:\n%s", b)
	}
	return out
}

func planOn(t *testing.T, h *host.Host, text string) (*Observed, plan.Proposal) {
	t.Helper()
	spec, rep := schema.Parse("k.yaml", []byte(text))
	if len(rep) != 0 {
		t.Fatal(rep)
	}
	req := &plan.Request{Spec: spec}
	p := &Provider{}
	obs, err := p.Observe(context.Background(), h, req)
	if err != nil {
		t.Fatal(err)
	}
	return obs, p.Plan(req, obs, nil)
}

// TestRealUpdateGrub: the file rdmaform writes in /etc/default/grub.d is
// sourced by Debian's real grub-mkconfig (through update-grub) and its
// arguments land on every linux line of grub.cfg, after the
// distribution's GRUB_CMDLINE_LINUX and before GRUB_CMDLINE_LINUX_DEFAULT
// ("quiet"), as the simulator's model says; a later grub.d file that
// resets GRUB_CMDLINE_LINUX (a cloud image's) drops them, which is what
// the activation failure after the reboot catches; dropping the
// arguments from the spec removes the file and regenerates without them.
func TestRealUpdateGrub(t *testing.T) {
	root, h := realGrubRoot(t)
	ctx := context.Background()
	spec := "version: 1\nkernel_args:\n  - {arg: iommu=pt}\n  - {arg: intel_iommu=on}\n  - {arg: \"pci=config_acs=111x@0000:3b:00.0\"}\n"
	obs, prop := planOn(t, h, spec)
	if obs.Bootloader != BootGrub || len(prop.Errors) != 0 || len(prop.Changes) != 1 {
		t.Fatalf("bootloader %q, proposal %+v", obs.Bootloader, prop)
	}
	c := prop.Changes[0]
	if err := (&Provider{}).Make(ctx, h, c, c.Payload.(*payload)); err != nil {
		t.Fatalf("apply with the real update-grub: %v", err)
	}
	// The default entry; the recovery entries have "single" for
	// GRUB_CMDLINE_LINUX_DEFAULT (10_linux).
	lines := linuxLines(t, root)
	if !strings.HasSuffix(lines[0], "ro iommu=pt intel_iommu=on pci=config_acs=111x@0000:3b:00.0 quiet") {
		t.Errorf("the default entry's linux line: %q", lines[0])
	}
	for _, l := range lines {
		if !strings.Contains(l, " iommu=pt intel_iommu=on pci=config_acs=111x@0000:3b:00.0") {
			t.Errorf("linux line: %q", l)
		}
	}
	// Planned again: nothing to write, the arguments pending a reboot.
	if _, prop := planOn(t, h, spec); len(prop.Changes) != 0 || len(prop.Pending) != 3 {
		t.Errorf("plan after apply: %d changes, %d pending", len(prop.Changes), len(prop.Pending))
	}

	// A cloud image's override, sourced after rdmaform's file.
	over := filepath.Join(root, "etc/default/grub.d/99-cloudimg.cfg")
	if err := os.WriteFile(over, []byte("GRUB_CMDLINE_LINUX=\"console=ttyS0\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Regenerate(ctx, h); err != nil {
		t.Fatal(err)
	}
	for _, l := range linuxLines(t, root) {
		if strings.Contains(l, "iommu=pt") || !strings.Contains(l, "console=ttyS0") {
			t.Errorf("with the override, linux line: %q", l)
		}
	}
	os.Remove(over)

	_, prop = planOn(t, h, "version: 1\nkernel_args: []\n")
	if len(prop.Changes) != 1 || prop.Changes[0].Action != plan.Delete {
		t.Fatalf("an empty list: %+v", prop.Changes)
	}
	c = prop.Changes[0]
	if err := (&Provider{}).Make(ctx, h, c, c.Payload.(*payload)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, GrubFile)); err == nil {
		t.Errorf("%s stays", GrubFile)
	}
	for _, l := range linuxLines(t, root) {
		if strings.Contains(l, "iommu") {
			t.Errorf("after removing the file, linux line: %q", l)
		}
	}
}

// TestRealUpdateGrubFails: when update-grub fails (here a grub.d file
// that is not shell), apply fails with its command line and stderr, and
// rdmaform's file is put back as it was (none).
func TestRealUpdateGrubFails(t *testing.T) {
	root, h := realGrubRoot(t)
	if err := os.WriteFile(filepath.Join(root, "etc/default/grub.d/50-broken.cfg"), []byte("GRUB_CMDLINE_LINUX=\"unterminated\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, prop := planOn(t, h, "version: 1\nkernel_args:\n  - {arg: iommu=pt}\n")
	c := prop.Changes[0]
	err := (&Provider{}).Make(context.Background(), h, c, c.Payload.(*payload))
	if err == nil || !strings.Contains(err.Error(), "update-grub") {
		t.Fatalf("apply: %v", err)
	}
	t.Logf("the error: %v", err)
	if _, serr := os.Stat(filepath.Join(root, GrubFile)); serr == nil {
		t.Errorf("%s stays after update-grub failed", GrubFile)
	}
}
