package sim

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRebootLoadsModulesLoadD: modules listed in /etc/modules-load.d come
// back after a reboot; others loaded by hand do not.
func TestRebootLoadsModulesLoadD(t *testing.T) {
	st, err := NewState("vm-soft", "vm", 0)
	if err != nil {
		t.Fatal(err)
	}
	st.Modules = append(st.Modules, "rdma_rxe", "rdma_ucm")
	s, err := Create(t.TempDir(), st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(s.Dir, "etc/modules-load.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "etc/modules-load.d/rdmaform.conf"), []byte("# rdmaform\nrdma-rxe\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bootID := s.State().BootID()
	if err := s.Reboot(); err != nil {
		t.Fatal(err)
	}
	after := s.State()
	if !after.ModuleLoaded("rdma_rxe") || after.ModuleLoaded("rdma_ucm") {
		t.Errorf("modules after reboot = %v; want rdma_rxe (listed) and not rdma_ucm (loaded by hand)", after.Modules)
	}
	if after.Boot != 1 || after.BootID() == bootID {
		t.Errorf("boot %d, boot_id %s: a reboot changes the boot_id", after.Boot, after.BootID())
	}
}
