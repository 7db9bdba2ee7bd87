package sim

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestEmulatedBurnChecksPSID: the emulated burn refuses an image of
// another PSID as flint does (FLINT_PSID_ERROR of mstflint's
// flint/err_msgs.h), leaving the flash alone; an image of the card's PSID
// is burned into every function of the card and runs after a reboot.
func TestEmulatedBurnChecksPSID(t *testing.T) {
	dir := t.TempDir()
	st, err := NewState("cx6-vpi-ib", "node1", 0)
	if err != nil {
		t.Fatal(err)
	}
	st.Tools = append(st.Tools, "mstflint")
	s, err := Create(filepath.Join(dir, "host"), st)
	if err != nil {
		t.Fatal(err)
	}
	other, ours := filepath.Join(dir, "other.bin"), filepath.Join(dir, "ours.bin")
	if err := WriteImage(other, "MT_0000000999", "20.36.1012"); err != nil {
		t.Fatal(err)
	}
	if err := WriteImage(ours, "MT_0000000222", "20.36.1012"); err != nil {
		t.Fatal(err)
	}
	res, err := s.RunTool(context.Background(), []string{"mstflint", "-d", "0000:3b:00.0", "-i", other, "-y", "burn"})
	if err == nil || !strings.Contains(string(res.Stdout), "-E- PSID mismatch. The PSID on flash (MT_0000000222) differs from the PSID in the given image (MT_0000000999).") {
		t.Fatalf("burn of another PSID: %v\n%s", err, res.Stdout)
	}
	for _, d := range s.State().Devices {
		if d.FlashFW != "" {
			t.Errorf("%s: flash %s after a refused burn", d.Name, d.FlashFW)
		}
	}
	if _, err := s.RunTool(context.Background(), []string{"mstflint", "-d", "0000:3b:00.0", "-i", ours, "-y", "burn"}); err != nil {
		t.Fatal(err)
	}
	for _, d := range s.State().Devices {
		if d.FlashFW != "20.36.1012" || d.FWVer != "20.35.1012" {
			t.Errorf("%s after the burn: flash %q, running %q", d.Name, d.FlashFW, d.FWVer)
		}
	}
	if err := s.Reboot(); err != nil {
		t.Fatal(err)
	}
	for _, d := range s.State().Devices {
		if d.FlashFW != "" || d.FWVer != "20.36.1012" {
			t.Errorf("%s after the reboot: flash %q, running %q", d.Name, d.FlashFW, d.FWVer)
		}
	}
}
