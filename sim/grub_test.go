package sim

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUpdateGrubSourcesInOrder: the simulated update-grub sources
// /etc/default/grub, then grub.d/*.cfg in name order, expanding
// ${GRUB_CMDLINE_LINUX}; a reboot boots grub.cfg's first entry, so a
// later file that resets GRUB_CMDLINE_LINUX wins. Without update-grub
// having run the command line stays as it was; a host without GRUB has no
// update-grub.
func TestUpdateGrubSourcesInOrder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "h")
	st, err := NewState("vm-soft", "h", 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Create(dir, st)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmdline := func() string {
		b, _ := os.ReadFile(filepath.Join(dir, "proc/cmdline"))
		return strings.TrimSpace(string(b))
	}
	if err := s.Reboot(); err != nil {
		t.Fatal(err)
	}
	if got := cmdline(); got != DefaultCmdline {
		t.Errorf("without update-grub: %q", got)
	}
	write("etc/default/grub", "# Debian's\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash\"\nGRUB_CMDLINE_LINUX=''\n")
	write("etc/default/grub.d/90-a.cfg", "GRUB_CMDLINE_LINUX=\"${GRUB_CMDLINE_LINUX} iommu=pt\"\n")
	write("etc/default/grub.d/50-b.cfg", "GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX console=ttyS0\"\n")
	write("etc/default/grub.d/not-sourced", "GRUB_CMDLINE_LINUX=\"nope\"\n")
	if _, err := s.RunTool(context.Background(), []string{"update-grub"}); err != nil {
		t.Fatal(err)
	}
	if got := cmdline(); got != DefaultCmdline {
		t.Errorf("before the reboot: %q", got)
	}
	if err := s.Reboot(); err != nil {
		t.Fatal(err)
	}
	want := "BOOT_IMAGE=" + simKernelImage + " " + simRoot + " ro console=ttyS0 iommu=pt quiet splash"
	if got := cmdline(); got != want {
		t.Errorf("after the reboot: %q, want %q", got, want)
	}
	write("etc/default/grub.d/99-cloud.cfg", "GRUB_CMDLINE_LINUX=\"console=tty1\"\n")
	if _, err := s.RunTool(context.Background(), []string{"update-grub"}); err != nil {
		t.Fatal(err)
	}
	s.Reboot()
	if got := cmdline(); strings.Contains(got, "iommu=pt") || !strings.Contains(got, "console=tty1") {
		t.Errorf("with a later override: %q", got)
	}
	write("etc/default/grub.d/98-broken.cfg", "GRUB_CMDLINE_LINUX=\"open\n")
	if _, err := s.RunTool(context.Background(), []string{"update-grub"}); err == nil || !strings.Contains(err.Error(), "unterminated") {
		t.Errorf("a file sh cannot read: %v", err)
	}

	st2, _ := NewState("vm-soft", "h2", 0)
	st2.Bootloader = "none"
	s2, err := Create(filepath.Join(t.TempDir(), "h2"), st2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.RunTool(context.Background(), []string{"update-grub"}); err == nil {
		t.Errorf("a host without GRUB runs update-grub")
	}
}
