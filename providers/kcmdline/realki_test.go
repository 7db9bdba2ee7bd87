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
)

// kiRunner runs systemd's real kernel-install against a test root: in a
// private mount namespace the root's etc/kernel and boot are bound over
// /etc/kernel and /boot, the paths kernel-install (252, a shell script)
// reads (/etc/kernel/cmdline, entry-token, install.conf) and searches for
// its BOOT_ROOT (/efi, /boot, /boot/efi); this machine's own are never
// written, and the mounts end with the namespace.
type kiRunner struct {
	root string
	real host.ExecRunner
	ran  []string
}

func (r *kiRunner) Run(ctx context.Context, c host.Cmd) (host.Result, error) {
	if len(c.Args) > 0 && c.Args[0] == BootKernelInstall {
		r.ran = append(r.ran, strings.Join(c.Args, " "))
		c.Args = append([]string{"unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
			`mount --bind "$1/etc/kernel" /etc/kernel && mount --bind "$1/boot" /boot && shift && exec "$@"`, "sh", r.root}, c.Args...)
	}
	return r.real.Run(ctx, c)
}

func (r *kiRunner) LookPath(name string) (string, error) { return r.real.LookPath(name) }

const kiVersion = "6.1.0-99-amd64"

// realKIRoot makes a systemd-boot host's tree as bootctl install and a
// kernel package leave it: $BOOT/loader/entries with entries.srel
// "type1" (kernel-install then uses the BLS layout), an entry token, the
// operator's /etc/kernel/cmdline, a kernel image and its initrd in /boot
// (Debian's names, which 85-initrd.install picks up).
func realKIRoot(t *testing.T) (string, *host.Host, *kiRunner) {
	t.Helper()
	if os.Geteuid() != 0 {
		need.Skip(t, "the bind mounts need CAP_SYS_ADMIN (run as root)")
	}
	for _, p := range []string{BootKernelInstall, "unshare"} {
		if _, err := exec.LookPath(p); err != nil {
			need.Skip(t, "%s is not installed (systemd, util-linux)", p)
		}
	}
	root := t.TempDir()
	for _, d := range []string{"etc/kernel", "boot/loader/entries", "proc/sys/kernel/random"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"etc/kernel/cmdline":             "root=UUID=5b0e7a3c-2f47-4c2e-9d4e-1f0a6c3b8e21 ro iommu=nopt quiet\n",
		"etc/kernel/entry-token":         "debian\n",
		"boot/loader/entries.srel":       "type1\n",
		"boot/vmlinuz-" + kiVersion:      "a kernel image\n",
		"boot/initrd.img-" + kiVersion:   "an initrd\n",
		"proc/cmdline":                   "initrd=\\debian\\" + kiVersion + "\\initrd.img root=UUID=5b0e7a3c-2f47-4c2e-9d4e-1f0a6c3b8e21 ro iommu=nopt quiet\n",
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
	r := &kiRunner{root: root}
	return root, &host.Host{FS: fsys, Runner: r, Kernel: fakeKernel{}, Name: "root " + root}, r
}

// entryOptions is the options line of the kernel's loader entry.
func entryOptions(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "boot/loader/entries/debian-"+kiVersion+".conf"))
	if err != nil {
		t.Fatalf("kernel-install wrote no entry: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "options"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("the entry has no options line:\n%s", b)
	return ""
}

// TestRealKernelInstall: on a systemd-boot host, apply edits the words
// of /etc/kernel/cmdline (iommu=nopt becomes iommu=pt in its place, the
// operator's root= and quiet stay) and runs the real kernel-install add
// for the installed kernel, whose BLS entry's options line is then the
// file's line, with its initrd; the arguments wait for a reboot (plan
// shows them pending, nothing to write); rollback puts the file back byte
// for byte and kernel-install writes the entry again without them.
func TestRealKernelInstall(t *testing.T) {
	root, h, r := realKIRoot(t)
	ctx := context.Background()
	obs, prop := planOn(t, h, "version: 1\nkernel_args:\n  - {arg: iommu=pt}\n  - {arg: intel_iommu=on}\n  - {arg: quiet, absent: true}\n")
	if obs.Bootloader != BootKernelInstall || len(prop.Errors) != 0 || len(prop.Changes) != 1 {
		t.Fatalf("bootloader %q, proposal %+v", obs.Bootloader, prop)
	}
	c := prop.Changes[0]
	if c.Address != plan.Addr(Kind, KernelCmdline) {
		t.Errorf("the change's address: %s", c.Address)
	}
	if err := (&Provider{}).Make(ctx, h, c, c.Payload.(*payload)); err != nil {
		t.Fatalf("apply with the real kernel-install: %v", err)
	}
	if len(r.ran) != 1 || r.ran[0] != "kernel-install add "+kiVersion+" /boot/vmlinuz-"+kiVersion {
		t.Errorf("kernel-install ran as %q", r.ran)
	}
	want := "root=UUID=5b0e7a3c-2f47-4c2e-9d4e-1f0a6c3b8e21 ro iommu=pt intel_iommu=on"
	if b, _ := os.ReadFile(filepath.Join(root, KernelCmdline)); string(b) != want+"\n" {
		t.Errorf("%s: %q, want %q", KernelCmdline, b, want)
	}
	if got := entryOptions(t, root); got != want {
		t.Errorf("the entry's options: %q, want %q", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(root, "boot/loader/entries/debian-"+kiVersion+".conf")); err != nil || !strings.Contains(string(b), "initrd     /boot/debian/"+kiVersion+"/initrd.img-"+kiVersion) {
		t.Errorf("the entry lost its initrd: %v\n%s", err, b)
	}
	_, prop = planOn(t, h, "version: 1\nkernel_args:\n  - {arg: iommu=pt}\n  - {arg: intel_iommu=on}\n  - {arg: quiet, absent: true}\n")
	if len(prop.Changes) != 0 || len(prop.Pending) != 3 || len(prop.Errors) != 0 {
		t.Errorf("plan after apply: %d changes, %d pending, errors %v", len(prop.Changes), len(prop.Pending), prop.Errors)
	}
	l, err := ReadLedger(h.FS)
	if err != nil || len(l.Entries) != 3 || l.Entries[0].Tool != BootKernelInstall || l.Entries[0].File != KernelCmdline {
		t.Errorf("the ledger: %+v (%v)", l, err)
	}

	back, err := (&Provider{}).Revert(c)
	if err != nil || back == nil {
		t.Fatalf("revert: %v", err)
	}
	if err := (&Provider{}).Make(ctx, h, back, back.Payload.(*payload)); err != nil {
		t.Fatalf("rollback with the real kernel-install: %v", err)
	}
	orig := "root=UUID=5b0e7a3c-2f47-4c2e-9d4e-1f0a6c3b8e21 ro iommu=nopt quiet"
	if b, _ := os.ReadFile(filepath.Join(root, KernelCmdline)); string(b) != orig+"\n" {
		t.Errorf("after the rollback %s: %q", KernelCmdline, b)
	}
	if got := entryOptions(t, root); got != orig {
		t.Errorf("after the rollback the entry's options: %q, want %q", got, orig)
	}
}

// TestRealKernelInstallFails: when kernel-install fails (here an
// operator's plugin in /etc/kernel/install.d exits 1), apply fails with
// its command line and stderr, and /etc/kernel/cmdline is put back as it
// was.
func TestRealKernelInstallFails(t *testing.T) {
	root, h, _ := realKIRoot(t)
	plug := filepath.Join(root, "etc/kernel/install.d")
	if err := os.MkdirAll(plug, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(plug, "10-refuse.install"), []byte("#!/bin/sh\necho 'refused by the test plugin' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(root, KernelCmdline))
	_, prop := planOn(t, h, "version: 1\nkernel_args:\n  - {arg: iommu=pt}\n")
	c := prop.Changes[0]
	err := (&Provider{}).Make(context.Background(), h, c, c.Payload.(*payload))
	if err == nil || !strings.Contains(err.Error(), "kernel-install add "+kiVersion) || !strings.Contains(err.Error(), "refused by the test plugin") {
		t.Fatalf("apply: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, KernelCmdline)); string(b) != string(before) {
		t.Errorf("%s after kernel-install failed: %q, want %q", KernelCmdline, b, before)
	}
}
