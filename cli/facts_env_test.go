package cli_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// factsEnv runs facts -o env on a profile changed by mutate and returns
// its lines as a map, and its stderr.
func factsEnv(t *testing.T, profile string, mutate func(st *sim.State)) (map[string]string, string) {
	t.Helper()
	dir := simtest.Dir(t, profile, mutate)
	code, out, errs := runCLI(t, "--sim", dir, "facts", "-o", "env")
	if code != 0 {
		t.Fatalf("facts -o env: exit %d\n%s%s", code, out, errs)
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			t.Fatalf("not KEY=value: %q", l)
		}
		got[k] = v
	}
	return got, errs
}

// roceAddrs gives cx5-roce's two ports an IPv4 address each and the
// host a management netdev with the default route.
func roceAddrs(st *sim.State) {
	st.Netdev("ens1f0np0").Addrs = []string{"192.168.10.1/24"}
	st.Netdev("ens1f1np1").Addrs = []string{"192.168.11.1/24"}
	st.Netdevs = append(st.Netdevs, &sim.Netdev{Name: "eno1", Kind: "ether", MTU: 1500, Up: true, MAC: "52:54:00:00:00:01", Addrs: []string{"10.0.0.5/24"}})
	st.DefaultRoute = "eno1"
}

// TestFactsEnvRoCE: on cx5-roce with an address on each port, the rails
// are both ports, the RoCE v2 GID of the address is index 3 (after the
// link-local v1 and v2 and the address's v1), the traffic class is
// rdma_cm's ToS and the socket interface the default route's netdev.
func TestFactsEnvRoCE(t *testing.T) {
	got, errs := factsEnv(t, "cx5-roce", roceAddrs)
	want := map[string]string{"NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1", "NCCL_IB_GID_INDEX": "3", "NCCL_IB_TC": "0", "NCCL_SOCKET_IFNAME": "=eno1"}
	if diff := cmp.Diff(want, got); diff != "" || errs != "" {
		t.Errorf("facts -o env (-want +got):\n%s%s", diff, errs)
	}
	// The ToS rdma_cm was given; rails that disagree give no NCCL_IB_TC.
	got, errs = factsEnv(t, "cx5-roce", func(st *sim.State) {
		roceAddrs(st)
		st.RdmaCM = map[string]sim.RoceDefaults{"mlx5_0/1": {Mode: "RoCE v2", Tos: 106}, "mlx5_1/1": {Mode: "RoCE v2", Tos: 106}}
	})
	if got["NCCL_IB_TC"] != "106" {
		t.Errorf("NCCL_IB_TC=%q, want 106\n%s", got["NCCL_IB_TC"], errs)
	}
	got, errs = factsEnv(t, "cx5-roce", func(st *sim.State) {
		roceAddrs(st)
		st.RdmaCM = map[string]sim.RoceDefaults{"mlx5_0/1": {Mode: "RoCE v2", Tos: 106}}
	})
	if _, ok := got["NCCL_IB_TC"]; ok || !strings.Contains(errs, "no NCCL_IB_TC: the rails' RoCE ToS differ (mlx5_1:1: 0, others 106)") {
		t.Errorf("disagreeing ToS: NCCL_IB_TC=%q, stderr %q", got["NCCL_IB_TC"], errs)
	}
}

// TestFactsEnvGIDEdges: no address (no RoCE v2 GID but link-local ones),
// several addresses (the lowest index of the port's own), an address on a
// VLAN only (its GID), the port's own address before a VLAN's, and rails
// whose indexes differ.
func TestFactsEnvGIDEdges(t *testing.T) {
	got, errs := factsEnv(t, "cx5-roce", nil)
	if _, ok := got["NCCL_IB_GID_INDEX"]; ok || !strings.Contains(errs, "no NCCL_IB_GID_INDEX: mlx5_0:1 has no RoCE v2 GID with an address") {
		t.Errorf("no address: %v, stderr %q", got, errs)
	}
	got, _ = factsEnv(t, "cx5-roce", func(st *sim.State) {
		roceAddrs(st)
		st.Netdev("ens1f0np0").Addrs = []string{"192.168.10.1/24", "192.168.20.1/24"}
	})
	if got["NCCL_IB_GID_INDEX"] != "3" {
		t.Errorf("two addresses on mlx5_0: NCCL_IB_GID_INDEX=%q, want 3 (the first)", got["NCCL_IB_GID_INDEX"])
	}
	vlan := func(st *sim.State, lower, addr string) {
		st.Netdevs = append(st.Netdevs, &sim.Netdev{Name: lower + ".100", Kind: "vlan", Lower: lower, MTU: 1500, Up: true, MAC: st.Netdev(lower).MAC, Addrs: []string{addr}})
	}
	got, errs = factsEnv(t, "cx5-roce", func(st *sim.State) {
		roceAddrs(st)
		st.Netdev("ens1f0np0").Addrs, st.Netdev("ens1f1np1").Addrs = nil, nil
		vlan(st, "ens1f0np0", "192.168.100.1/24")
		vlan(st, "ens1f1np1", "192.168.101.1/24")
	})
	if got["NCCL_IB_GID_INDEX"] != "3" {
		t.Errorf("addresses on VLANs only: NCCL_IB_GID_INDEX=%q, want 3 (the VLAN's)\n%s", got["NCCL_IB_GID_INDEX"], errs)
	}
	got, errs = factsEnv(t, "cx5-roce", func(st *sim.State) {
		roceAddrs(st)
		vlan(st, "ens1f0np0", "192.168.100.1/24")
		vlan(st, "ens1f1np1", "192.168.101.1/24")
	})
	if got["NCCL_IB_GID_INDEX"] != "3" {
		t.Errorf("own address and a VLAN's: NCCL_IB_GID_INDEX=%q, want 3 (the port's own)\n%s", got["NCCL_IB_GID_INDEX"], errs)
	}
	got, errs = factsEnv(t, "cx5-roce", func(st *sim.State) {
		roceAddrs(st)
		st.Netdev("ens1f0np0").Addrs = nil
		vlan(st, "ens1f0np0", "192.168.100.1/24")
		st.Netdev("ens1f1np1").Addrs = []string{"192.168.11.1/24"}
		vlan(st, "ens1f1np1", "192.168.101.1/24")
		// mlx5_1: its own address at 3; mlx5_0: the VLAN's at 3 too.
	})
	if got["NCCL_IB_GID_INDEX"] != "3" {
		t.Errorf("mixed: %q\n%s", got["NCCL_IB_GID_INDEX"], errs)
	}
	// A Soft-RoCE device on eno1: RoCE v2 GIDs only, so its address's is
	// index 1 where the ConnectX-5's are 3: no single index.
	got, errs = factsEnv(t, "cx5-roce", func(st *sim.State) {
		roceAddrs(st)
		st.Modules = append(st.Modules, "rdma_rxe")
		st.Devices = append(st.Devices, &sim.Device{Name: "rxe0", Driver: "rxe", NodeGUID: "5054:00ff:fe00:0001", Parent: "eno1",
			Ports: []*sim.Port{{Num: 1, LinkLayer: "Ethernet", State: "ACTIVE", PhysState: "LinkUp"}}})
	})
	if _, ok := got["NCCL_IB_GID_INDEX"]; ok || got["NCCL_IB_HCA"] != "=mlx5_0:1,mlx5_1:1,rxe0:1" ||
		!strings.Contains(errs, "no NCCL_IB_GID_INDEX: the rails' RoCE v2 GID indexes differ (rxe0:1: 1, others 3)") {
		t.Errorf("rails with different indexes: %v\n%s", got, errs)
	}
}

// TestFactsEnvGPU: on gpu-switch (InfiniBand) the rails are in rail
// order, NUMA node 0's NICs by PCI address then node 1's, with no RoCE
// variables; a host without RDMA devices or GPUs prints what it can.
func TestFactsEnvGPU(t *testing.T) {
	got, errs := factsEnv(t, "gpu-switch", func(st *sim.State) {
		// Move mlx5_0 to NUMA node 1: it goes after node 0's NICs.
		st.Device("mlx5_0").NUMANode = 1
	})
	want := map[string]string{"NCCL_IB_HCA": "=mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_0:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("gpu-switch (-want +got):\n%s%s", diff, errs)
	}
	got, errs = factsEnv(t, "vm-soft", nil)
	if diff := cmp.Diff(map[string]string{"NCCL_SOCKET_IFNAME": "=enp1s0"}, got); diff != "" || !strings.Contains(errs, "no RDMA device: no NCCL_IB_HCA") {
		t.Errorf("vm-soft (-want +got):\n%s%s", diff, errs)
	}
}

// TestFactsEnvShell: the lines are shell assignments that a POSIX shell
// reads back to the same values, a netdev name with a quote included.
func TestFactsEnvShell(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	dir := simtest.Dir(t, "cx5-roce", func(st *sim.State) {
		roceAddrs(st)
		st.Netdev("eno1").Name = "it's$x"
		st.DefaultRoute = "it's$x"
	})
	code, out, errs := runCLI(t, "--sim", dir, "facts", "-o", "env")
	if code != 0 || !strings.Contains(out, `NCCL_SOCKET_IFNAME='=it'\''s$x'`) {
		t.Fatalf("exit %d:\n%s%s", code, out, errs)
	}
	b, err := exec.Command(sh, "-c", out+`printf '%s\n' "$NCCL_SOCKET_IFNAME" "$NCCL_IB_HCA"`).Output()
	if err != nil || string(b) != "=it's$x\n=mlx5_0:1,mlx5_1:1\n" {
		t.Errorf("sh reads %q, %v", b, err)
	}
}

// TestFactsAffinity: facts -o affinity lists each GPU with its nearest
// rails, checked against the output schema: on gpu-switch each GPU's
// PIX NIC; on the Grace node the two ports of the card, NODE; a host
// without GPUs an empty list.
func TestFactsAffinity(t *testing.T) {
	s := loadSchemas(t)
	dir := simtest.Dir(t, "gpu-switch", nil)
	doc := s.check(t, "facts -o affinity, gpu-switch", "facts_affinity", runJSON(t, "", 0, "--sim", dir, "facts", "-o", "affinity"))
	gpus := doc["gpus"].([]any)
	if len(gpus) != 8 {
		t.Fatalf("%d GPUs", len(gpus))
	}
	g0 := gpus[0].(map[string]any)
	nics := g0["nics"].([]any)
	if g0["pci"] != "0000:19:00.0" || g0["relation"] != "PIX" || len(nics) != 1 || nics[0].(map[string]any)["hca"] != "mlx5_0:1" {
		t.Errorf("GPU 0: %v", g0)
	}
	dir = simtest.Dir(t, "gpu-grace", nil)
	doc = s.check(t, "facts -o affinity, gpu-grace", "facts_affinity", runJSON(t, "", 0, "--sim", dir, "facts", "-o", "affinity"))
	var hcas []string
	g := doc["gpus"].([]any)[0].(map[string]any)
	for _, n := range g["nics"].([]any) {
		hcas = append(hcas, n.(map[string]any)["hca"].(string))
	}
	if g["relation"] != "NODE" || !cmp.Equal(hcas, []string{"mlx5_0:1", "mlx5_1:1"}) {
		t.Errorf("gpu-grace: %v %v", g["relation"], hcas)
	}
	dir = simtest.Dir(t, "cx5-roce", nil)
	raw := runJSON(t, "", 0, "--sim", dir, "facts", "-o", "affinity")
	var v struct{ GPUs []any }
	if err := json.Unmarshal([]byte(raw), &v); err != nil || v.GPUs == nil || len(v.GPUs) != 0 {
		t.Errorf("cx5-roce: %s", raw)
	}
	s.check(t, "facts -o affinity, cx5-roce", "facts_affinity", raw)
}

// TestAuditGPUDirectJSON: audit -o json on gpu-switch carries the
// gpudirect checks in the output schema's shape, the failing ACS check
// naming its bridges, and a waiver file waives it by resource and check.
func TestAuditGPUDirectJSON(t *testing.T) {
	s := loadSchemas(t)
	dir := simtest.Dir(t, "gpu-switch", nil)
	spec := clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: \"0000:18:00.0\"\n")
	doc := s.check(t, "audit, gpu-switch", "audit", runJSON(t, "", 2, "--sim", dir, "audit", "-o", "json", "-f", spec))
	var checks []string
	for _, c := range doc["checks"].([]any) {
		c := c.(map[string]any)
		if c["resource"] == "gpudirect[mlx5_0/0000:19:00.0]" {
			checks = append(checks, c["check"].(string)+" "+c["status"].(string))
			if c["check"] == "gpu_acs" && !strings.Contains(c["message"].(string), "bridge 0000:17:00.0 ACS Control 0x001d") {
				t.Errorf("gpu_acs: %v", c["message"])
			}
		}
	}
	want := []string{"gpu_relation pass", "gpu_acs fail", "gpu_ats pass", "gpu_relaxed_ordering pass", "gpu_peer_memory pass", "gpu_driver_params pass", "gpu_numa pass"}
	if diff := cmp.Diff(want, checks); diff != "" {
		t.Errorf("checks (-want +got):\n%s", diff)
	}
	waivers := filepath.Join(t.TempDir(), "w.yaml")
	if err := os.WriteFile(waivers, []byte("- {resource: \"gpudirect[mlx5_0/0000:19:00.0]\", check: gpu_acs, reason: BIOS, expires: 2026-12-31}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runJSON(t, "", 0, "--sim", dir, "audit", "-o", "json", "-f", spec, "--waivers", waivers)
}

// TestFactsEnvNoRdmaCM: without rdma_cm loaded there is no ToS to read:
// no NCCL_IB_TC, a warning, and nothing loaded by facts.
func TestFactsEnvNoRdmaCM(t *testing.T) {
	got, errs := factsEnv(t, "cx5-roce", func(st *sim.State) {
		roceAddrs(st)
		var mods []string
		for _, m := range st.Modules {
			if m != "rdma_cm" && m != "rdma_ucm" {
				mods = append(mods, m)
			}
		}
		st.Modules = mods
	})
	if _, ok := got["NCCL_IB_TC"]; ok || !strings.Contains(errs, "no NCCL_IB_TC: mlx5_0:1's RoCE ToS (rdma_cm's default_roce_tos) cannot be read") || got["NCCL_IB_GID_INDEX"] != "3" {
		t.Errorf("without rdma_cm: %v\n%s", got, errs)
	}
}
