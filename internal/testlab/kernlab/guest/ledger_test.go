//go:build kernlab

package guest

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// The staged ledger across a real reboot. run.sh gives the guest a blank
// virtio disk that outlives it; in the first boot this test formats it,
// mounts it on /var/lib/rdmaform and stages a ledger entry there in the
// format apply writes, with this boot's ID, then asks run.sh for a second
// boot (a KERNLAB-REBOOT line on the console). run.sh boots the guest again
// with the same disk and KERNLAB_BOOT=2, running only the tests that asked.
//
// The guest has no ConnectX (rdmaform cannot stage a real firmware value
// here), so what is proven is what the ledger code can honestly check on
// a real kernel: the boot ID the kernel gives changes across a boot, the
// ledger on disk survives it, and `rdmaform status` reads it in the
// second boot as staged in an earlier boot (whose value it cannot read
// back: the adapter is not there; in the first boot that means the entry
// waits for a reboot, exit 3, in the second that whether the reboot
// activated it is unknown, exit 1).

const (
	ledgerDisk  = "/dev/vda"
	ledgerDir   = "/var/lib/rdmaform"
	ledgerFile  = ledgerDir + "/staged.json"
	ledgerPCI   = "0000:3b:00.0"
	bootIDFile  = "/proc/sys/kernel/random/boot_id"
	stagedParam = "LINK_TYPE_P1"
)

// statusDoc is the part of `status -o json` this test reads.
type statusDoc struct {
	BootID string `json:"boot_id"`
	Staged []struct {
		Address      string `json:"address"`
		Attribute    string `json:"attribute"`
		Value        string `json:"value"`
		StagedBootID string `json:"staged_boot_id"`
		State        string `json:"state"`
		EarlierBoot  bool   `json:"earlier_boot"`
		Reason       string `json:"reason"`
	} `json:"staged"`
}

func TestLedgerAcrossBoots(t *testing.T) {
	mountLedgerDisk(t)
	boot := strings.TrimSpace(readFile(t, bootIDFile))
	if os.Getenv("KERNLAB_BOOT") != "2" {
		// First boot: stage an entry, see it as this boot's, ask for a boot.
		entry := map[string]any{"entries": []map[string]string{{
			"boot_id": boot, "staged_at": time.Now().UTC().Format(time.RFC3339),
			"device": ledgerPCI, "parameter": stagedParam, "value": "ETH", "tool": "mstconfig",
		}}}
		b, err := json.MarshalIndent(entry, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(ledgerFile, b, 0o600); err != nil {
			t.Fatal(err)
		}
		// Staged in this boot and not read back (no adapter): it waits
		// for a reboot.
		doc := ledgerStatus(t, 3)
		if doc.BootID != boot || len(doc.Staged) != 1 || doc.Staged[0].StagedBootID != boot || doc.Staged[0].EarlierBoot {
			t.Fatalf("status in the staging boot: %+v, want the entry of this boot %s", doc, boot)
		}
		run(t, "/bin/sync")
		fmt.Println("KERNLAB-REBOOT TestLedgerAcrossBoots")
		return
	}
	// Second boot: the disk kept the ledger; the kernel gave a new boot ID.
	var l struct {
		Entries []struct {
			BootID string `json:"boot_id"`
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(readFile(t, ledgerFile)), &l); err != nil || len(l.Entries) != 1 {
		t.Fatalf("the ledger after the reboot: %v\n%s", err, readFile(t, ledgerFile))
	}
	first := l.Entries[0].BootID
	if first == boot {
		t.Fatalf("the boot ID did not change across the boot: %s", boot)
	}
	// Staged in an earlier boot and not read back: whether the reboot
	// activated it is unknown.
	doc := ledgerStatus(t, 1)
	if doc.BootID != boot || len(doc.Staged) != 1 {
		t.Fatalf("status in the second boot: %+v", doc)
	}
	s := doc.Staged[0]
	if s.StagedBootID != first || !s.EarlierBoot || s.Attribute != stagedParam || s.Value != "ETH" || s.State != "unread" || !strings.Contains(s.Reason, ledgerPCI) {
		t.Errorf("the entry in the second boot: %+v, want staged in boot %s, an earlier boot, unread (no adapter at %s)", s, first, ledgerPCI)
	}
	out, _ := mustCode(t, 1, "status")
	if !strings.Contains(out, "in boot "+first+" (an earlier boot; this is boot "+boot+")") {
		t.Errorf("status does not say the entry is of an earlier boot:\n%s", out)
	}
}

// mountLedgerDisk mounts the disk run.sh gives the guest on
// /var/lib/rdmaform (formatting it, blank, in the first boot) until the
// test ends.
func mountLedgerDisk(t *testing.T) {
	t.Helper()
	for _, m := range []string{"virtio_pci", "virtio_blk", "ext4"} {
		run(t, "/sbin/modprobe", m)
	}
	for i := 0; !exists(ledgerDisk); i++ {
		if i == 100 {
			t.Fatalf("no %s: run.sh gives the guest a disk for the ledger", ledgerDisk)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if os.Getenv("KERNLAB_BOOT") != "2" {
		run(t, "/bin/busybox", "mke2fs", "-F", "-L", "rdmaform", ledgerDisk)
	}
	if err := os.MkdirAll(ledgerDir, 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, "/bin/mount", "-t", "ext2", ledgerDisk, ledgerDir)
	t.Cleanup(func() { _, _ = tryRun("/bin/umount", ledgerDir) })
}

// ledgerStatus runs `rdmaform status -o json`, which exits with want.
func ledgerStatus(t *testing.T, want int) statusDoc {
	t.Helper()
	out, _ := mustCode(t, want, "status", "-o", "json")
	var doc statusDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("status -o json: %v\n%s", err, out)
	}
	return doc
}
