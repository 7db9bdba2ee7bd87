package kcmdline

import (
	"slices"
	"testing"
)

// TestParseGrubbyInfo: grubby --info=ALL in the format of rhboot/grubby's
// grubby-bls (display_info_values: index=, kernel=, args="OPTIONS",
// initrd=, title=; commit fdb5c761); a value in double quotes is read
// without them and a line it does not know is left out; an entry without
// kernel= is left out; a line before the first index= is an error.
func TestParseGrubbyInfo(t *testing.T) {
	out := "index=0\nkernel=/vmlinuz-6.1.0-28-amd64\nargs=\"root=/dev/mapper/rhel-root ro rd.lvm.lv=rhel/root rhgb quiet\"\ninitrd=/initramfs-6.1.0-28-amd64.img\ntitle=Linux (6.1.0-28-amd64)\nid=\"x-6.1.0-28-amd64\"\n" +
		"index=1\nkernel=\"/vmlinuz-0-rescue\"\nargs=\"ro\"\n" +
		"index=2\nnot an entry line\n"
	ents, err := parseGrubbyInfo(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 2 || ents[0].Kernel != "/vmlinuz-6.1.0-28-amd64" || !slices.Equal(ents[0].Args, []string{"root=/dev/mapper/rhel-root", "ro", "rd.lvm.lv=rhel/root", "rhgb", "quiet"}) || ents[1].Kernel != "/vmlinuz-0-rescue" {
		t.Fatalf("entries: %+v", ents)
	}
	if _, err := parseGrubbyInfo("args=\"ro\"\nindex=0\n"); err == nil {
		t.Errorf("args before index= was read")
	}
}
