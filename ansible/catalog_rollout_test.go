package ansible_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/sim"
)

// TestRolloutCatalogActivation rolls a firmware catalog out (one spec:
// an entry per card model) by fw-reset on two simulated hosts: a
// ConnectX-6 whose entry says fw-reset and a ConnectX-5 whose entry says
// its image becomes active by a reboot. The role takes each host's way
// from its staged items (the catalog's, after phase 2): the ConnectX-6
// is reset (the module's state activated; its boot stays), the
// ConnectX-5 rebooted (rdmaform activate --by fw-reset would refuse it);
// the play prints which hosts the catalog reboots, both are done, and
// each plans empty.
func TestRolloutCatalogActivation(t *testing.T) {
	f := newFleet(t, 2, 0, nil)
	cx6, cx5 := f.names[0], f.names[1]
	f.dirs[cx5] = newSim(t, "cx5-roce")
	f.writeInventory(t, nil, nil)
	images := map[string][]byte{
		"cx6": sim.ImageFile("MT_0000000222", "20.36.1012"),
		"cx5": sim.ImageFile("MT_0000000008", "16.35.3006"),
	}
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	for _, h := range f.names {
		if err := os.MkdirAll(filepath.Join(f.dirs[h], "srv/fw"), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range images {
			if err := os.WriteFile(filepath.Join(f.dirs[h], "srv/fw", name+".bin"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	spec := fmt.Sprintf(`version: 1
devices:
  - match: {}
    firmware:
      catalog:
        entries:
          - psid: MT_0000000222
            version: "20.36.1012"
            image: /srv/fw/cx6.bin
            sha256: %s
            activation: fw-reset
          - psid: MT_0000000008
            version: "16.35.3006"
            image: /srv/fw/cx5.bin
            sha256: %s
            activation: reboot
`, sum(images["cx6"]), sum(images["cx5"]))
	specFile := filepath.Join(f.l.dir, "catalog.yaml")
	if err := os.WriteFile(specFile, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	boots := map[string]string{cx6: f.bootID(t, cx6), cx5: f.bootID(t, cx5)}
	report := filepath.Join(f.l.dir, "report.json")
	out, code := f.play(t, 2, map[string]any{"rdma_spec_file": specFile, "rdma_activation": "fw-reset", "rdma_probe_interface": "", "rdma_report": report})
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if want := "by reboot, as their firmware catalog entries say: " + cx5; !strings.Contains(out, want) {
		t.Errorf("the play lacks %q:\n%s", want, out)
	}
	r := f.report(t, report)
	if len(r.Done) != 2 || len(r.Failed) != 0 {
		t.Errorf("done %v, failed %+v; want both done", r.Done, r.Failed)
	}
	if f.bootID(t, cx6) != boots[cx6] {
		t.Errorf("%s (ConnectX-6, entry fw-reset) was rebooted", cx6)
	}
	if f.bootID(t, cx5) == boots[cx5] {
		t.Errorf("%s (ConnectX-5, entry reboot) was not rebooted", cx5)
	}
	for _, h := range f.names {
		rdmaform(t, 0, "--sim", f.dirs[h], "plan", "-f", specFile)
	}
}
