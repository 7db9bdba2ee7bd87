package sim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
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

// TestConcurrentSetsAllSaved: firmware sets on every card of a host at
// once, with queries running beside them, share their saves; every one of
// them is in sim.yaml when its run returns, as a host opened again from
// the directory shows.
func TestConcurrentSetsAllSaved(t *testing.T) {
	const cards = 8
	st, err := NewState("gpu-node", "node1", cards)
	if err != nil {
		t.Fatal(err)
	}
	st.Latency = map[string]Duration{"mlxconfig": Duration(20 * time.Millisecond)}
	s, err := Create(t.TempDir(), st)
	if err != nil {
		t.Fatal(err)
	}
	var pcis []string
	for _, a := range s.State().Firmware {
		if strings.HasSuffix(a.BDF, ".0") {
			pcis = append(pcis, a.BDF)
		}
	}
	if len(pcis) != cards {
		t.Fatalf("%d cards, want %d", len(pcis), cards)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2*len(pcis))
	for i, pci := range pcis {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, errs[2*i] = s.RunTool(context.Background(), []string{"mlxconfig", "-d", pci, "-y", "set", fmt.Sprintf("NUM_OF_VFS=%d", i+1)}); errs[2*i] != nil {
				return
			}
			// Saved by the time the run returns.
			b, err := os.ReadFile(filepath.Join(s.Dir, StateFile))
			if err != nil {
				errs[2*i] = err
				return
			}
			var saved State
			if err := yaml.Unmarshal(b, &saved); err != nil {
				errs[2*i] = err
				return
			}
			for _, a := range saved.Firmware {
				if p := a.Param("NUM_OF_VFS"); a.BDF == pci && p != nil && p.Next != int64(i+1) {
					errs[2*i] = fmt.Errorf("%s: set returned, sim.yaml still has NUM_OF_VFS %d", pci, p.Next)
				}
			}
		}()
		go func() {
			defer wg.Done()
			_, errs[2*i+1] = s.RunTool(context.Background(), []string{"mlxconfig", "-d", pci, "-e", "q", "NUM_OF_VFS"})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	again, err := Open(s.Dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, a := range again.State().Firmware {
		if p := a.Param("NUM_OF_VFS"); p != nil {
			got[a.BDF] = p.Next
		}
	}
	for i, pci := range pcis {
		if got[pci] != int64(i+1) {
			t.Errorf("%s: NUM_OF_VFS next boot %d in sim.yaml, want %d", pci, got[pci], i+1)
		}
	}
}

// TestInitialRoCEMode: a port's rdma_cm mode before anyone sets it is
// what cma_add_one chooses: RoCE v2 where the port has RoCE v2 GIDs, else
// its first GID type (IB/RoCE v1 on InfiniBand and on a ConnectX-3 that is
// not a Pro, 0x1003, whose Ethernet ports have RoCE v1 GIDs only).
func TestInitialRoCEMode(t *testing.T) {
	for _, tt := range []struct {
		profile, dev, pciID, linkLayer, want string
	}{
		{"cx5-roce", "mlx5_0", "", "", "RoCE v2"},
		{"cx6-vpi-ib", "mlx5_0", "", "", "IB/RoCE v1"},
		{"cx3-mlx4", "mlx4_0", "", "Ethernet", "IB/RoCE v1"},
		{"cx3-mlx4", "mlx4_0", "0x1007", "Ethernet", "RoCE v2"},
	} {
		t.Run(tt.profile+"/"+tt.pciID+tt.linkLayer, func(t *testing.T) {
			st, err := NewState(tt.profile, "node", 0)
			if err != nil {
				t.Fatal(err)
			}
			d := st.Device(tt.dev)
			if tt.pciID != "" {
				d.PCIID = tt.pciID
			}
			if tt.linkLayer != "" {
				d.Ports[0].LinkLayer = tt.linkLayer
			}
			st.Modules = append(st.Modules, "rdma_cm")
			st.CMGroups = append(st.CMGroups, tt.dev)
			s, err := Create(t.TempDir(), st)
			if err != nil {
				t.Fatal(err)
			}
			h, err := s.Host()
			if err != nil {
				t.Fatal(err)
			}
			b, err := h.FS.ReadFile("/sys/kernel/config/rdma_cm/" + tt.dev + "/ports/1/default_roce_mode")
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSuffix(string(b), "\n"); got != tt.want {
				t.Errorf("default_roce_mode %q, want %q", got, tt.want)
			}
		})
	}
}

// TestMlx4TypeChangeRegistersTheCardAnew: a port type that changes the
// type a port runs re-registers the card, as mlx4_change_port_types does:
// the other port's netdev comes back with the driver's MTU and no
// addresses, and its rdma_cm defaults are the initial ones; a write that
// keeps the type (ib on a port auto runs as ib) leaves both alone.
func TestMlx4TypeChangeRegistersTheCardAnew(t *testing.T) {
	st, err := NewState("cx3-mlx4", "node", 0)
	if err != nil {
		t.Fatal(err)
	}
	const pci, port2 = "0000:81:00.0", "mlx4_0/2"
	for _, w := range []struct{ port int }{{2}, {1}} {
		if err := st.writeMlx4Port("mlx4_port", pci, w.port, "eth\n"); err != nil {
			t.Fatal(err)
		}
	}
	nd := st.Netdev("ens2d1")
	if nd == nil {
		t.Fatalf("no ens2d1 after both ports went eth: %+v", st.Netdevs)
	}
	nd.MTU, nd.Addrs = 9000, []string{"192.0.2.12/24"}
	st.RdmaCM = map[string]RoceDefaults{port2: {Mode: "IB/RoCE v1", Tos: 106}}

	if err := st.writeMlx4Port("mlx4_port", pci, 1, "eth\n"); err != nil {
		t.Fatal(err)
	}
	if nd := st.Netdev("ens2d1"); nd.MTU != 9000 || len(nd.Addrs) != 1 || st.RdmaCM[port2].Tos != 106 {
		t.Errorf("a write keeping the type reset the card: %+v, rdma_cm %+v", nd, st.RdmaCM)
	}

	if err := st.writeMlx4Port("mlx4_port", pci, 1, "ib\n"); err != nil {
		t.Fatal(err)
	}
	nd = st.Netdev("ens2d1")
	if nd == nil || nd.MTU != 1500 || len(nd.Addrs) != 0 {
		t.Errorf("ens2d1 after port 1 went ib: %+v, want a new netdev (MTU 1500, no addresses)", nd)
	}
	if _, ok := st.RdmaCM[port2]; ok {
		t.Errorf("rdma_cm of port 2 kept across the re-registration: %+v", st.RdmaCM)
	}
}

// TestWarmRebootKeepsFirmware: a reboot with KeepFirmware does not reload
// the firmware (Next Boot stays staged, Current and the link layer stay),
// while the rest of the reboot happens (a new boot_id, runtime state
// gone); a plain reboot then activates the staged value.
func TestWarmRebootKeepsFirmware(t *testing.T) {
	st, err := NewState("cx6-vpi-ib", "node1", 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Create(t.TempDir(), st)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RunTool(context.Background(), []string{"mlxconfig", "-d", "0000:3b:00.0", "-y", "set", "LINK_TYPE_P1=ETH"}); err != nil {
		t.Fatal(err)
	}
	if err := s.mutate(false, func(st *State) error { st.RdmaCM = nil; st.Modules = append(st.Modules, "rdma_ucm"); return nil }); err != nil {
		t.Fatal(err)
	}
	bootID := s.State().BootID()
	if err := s.RebootWith(RebootOptions{KeepFirmware: true}); err != nil {
		t.Fatal(err)
	}
	after := s.State()
	prm := after.Firmware[0].Param("LINK_TYPE_P1")
	if prm.Current != 1 || prm.Next != 2 {
		t.Errorf("after a warm reboot LINK_TYPE_P1 current %d next %d, want 1 (IB) and 2 (ETH, still staged)", prm.Current, prm.Next)
	}
	if ll := after.DeviceByPCI("0000:3b:00.0").Ports[0].LinkLayer; ll != "InfiniBand" {
		t.Errorf("link layer %s after a warm reboot, want InfiniBand", ll)
	}
	if after.BootID() == bootID || after.ModuleLoaded("rdma_ucm") {
		t.Errorf("boot_id %s (was %s), modules %v: the rest of the reboot did not happen", after.BootID(), bootID, after.Modules)
	}
	if err := s.Reboot(); err != nil {
		t.Fatal(err)
	}
	if prm := s.State().Firmware[0].Param("LINK_TYPE_P1"); prm.Current != 2 {
		t.Errorf("after a reboot LINK_TYPE_P1 current %d, want 2 (ETH)", prm.Current)
	}
}
