package subnetmanager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/smlab"
	"github.com/rdmaform/rdmaform/internal/testlab/systemdlab"
	"github.com/rdmaform/rdmaform/probe"
)

// peerHost is a host of the lab without a subnet manager: the sysfs of
// its simulated port, with the LID opensm gave it, and a runner whose
// tools are clients of node simHost.
func peerHost(t *testing.T, f *smlab.Fabric, simHost string) *host.Host {
	t.Helper()
	root := t.TempDir()
	smlab.SysfsPort(t, root, f.PortGUID(t, simHost))
	lid := fmt.Sprintf("0x%x\n", f.LID(t, simHost))
	if err := os.WriteFile(filepath.Join(root, "sys/class/infiniband/ibsim0/ports/1/lid"), []byte(lid), 0o644); err != nil {
		t.Fatal(err)
	}
	env := f.Env(simHost)
	fsys, err := host.NewRootFS(root)
	if err != nil {
		t.Fatal(err)
	}
	return &host.Host{FS: fsys, Runner: &host.ExecRunner{Env: append(os.Environ(), env...), Dir: f.Dir}, Kernel: fabricKernel{}, Name: "sm lab " + simHost}
}

// fabricKernel makes a peer a running host (host.Host.Offline is
// false), as the probes need: its tools run on the lab's fabric, and it
// mounts nothing.
type fabricKernel struct{}

func (fabricKernel) EnsureConfigfs() error { return errors.New("the fabric lab's peers mount nothing") }

// TestLabTrafficFollowsPartitions: the partition rdmaform gives opensm
// decides who may talk: the subnet manager's SA gives a path in the
// partition's P_Key only between members, one of them full, and gives it
// once an apply makes the left-out port a member. And rdmaform's ib probe
// (ibping) runs on that fabric: it passes between two HCAs while the
// peer runs the responder probe serve would start, and fails once the
// responder is gone.
//
// ibping cannot show the storage partition failing, here or on real
// ports, so the "ibping fails when the partition leaves one out"
// is shown through the path instead. Read from the sources:
//   - ibping sends at P_Key index 0 of its port, always: its portid is
//     zeroed (rdma-core v44.0 infiniband-diags/ibping.c:146, static
//     ib_portid_t portid = { 0 }), its options are count, flood, oui and
//     Server (ibping.c:201-207; ibdiag_common.c has no P_Key option), and
//     libibmad puts portid's pkey_idx in the umad (libibmad/mad.c:189,
//     umad_set_pkey(umad, is_smi ? 0 : dport->pkey_idx)) on QP 1
//     (libibmad/vendor.c:96). opensm keeps index 0 for the default
//     partition (opensm 3.3.23 osm_pkey_mgr.c:461-467; a partition
//     flagged indx0 takes it instead), so on real ports ibping talks in
//     the default partition, and fails only for a port the Default
//     partition leaves out (the receiving HCA drops a GMP whose P_Key its
//     table lacks).
//   - ibsim never sees a MAD's P_Key: umad2sim copies only the LIDs and
//     QPs of the umad into its request (ibsim 0.10 umad2sim/umad2sim.c:891-895),
//     whose struct has no P_Key (include/ibsim.h:64-72, struct
//     sim_request), and ibsim's only P_Key code is the PKeyTable
//     attribute (ibsim/sim_mad.c:365, do_pkeytbl).
//
// What the partition does decide on this fabric is the path: IPoIB and
// rdma_cm ask the SA for a PathRecord in their P_Key before any traffic,
// and opensm answers only between ports that share it, one of them full.
func TestLabTrafficFollowsPartitions(t *testing.T) {
	f := smlab.Start(t)
	l := systemdlab.Start(t)
	a := newLabHost(t, f, l, "Hca1")
	g2, g3 := f.PortGUID(t, "Hca2"), f.PortGUID(t, "Hca3")
	a.start(t)
	f.WaitSMInfo(t, "Hca1", regexp.MustCompile(`SMINFO_MASTER`), 30*time.Second)
	// Hca3 is left out of the storage partition.
	a.applyThenEmpty(t, partitionsSpec(5, []string{a.guid}, []string{g2}))
	lid1, lid2, lid3 := f.LID(t, "Hca1"), f.LID(t, "Hca2"), f.LID(t, "Hca3")

	// The partition: Hca1 full, Hca2 limited, Hca3 left out.
	const storage = 0x8002
	for _, c := range []struct {
		from       string
		slid, dlid int
		want       bool
	}{
		{"Hca2", lid2, lid1, true},  // limited to full
		{"Hca1", lid1, lid2, true},  // full to limited
		{"Hca2", lid2, lid3, false}, // Hca3 is no member
		{"Hca3", lid3, lid1, false},
	} {
		if got := f.HasPath(t, c.from, c.slid, c.dlid, storage); got != c.want {
			t.Errorf("path %d -> %d in 0x%04x asked by %s: %v, want %v", c.slid, c.dlid, storage, c.from, got, c.want)
		}
	}
	// The default partition, where every port is a full member, joins them all.
	if !f.HasPath(t, "Hca2", lid2, lid3, 0x7fff) {
		t.Errorf("no path %d -> %d in the default partition", lid2, lid3)
	}

	// Hca3 joins as a limited member: a path to the full member, none to
	// the other limited one (two limited members cannot talk).
	a.applyThenEmpty(t, partitionsSpec(5, []string{a.guid}, []string{g2, g3}))
	deadline := time.Now().Add(30 * time.Second)
	for !f.HasPath(t, "Hca3", lid3, lid1, storage) {
		if time.Until(deadline) <= 0 {
			t.Fatalf("no path %d -> %d in 0x%04x after Hca3 joined", lid3, lid1, storage)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if f.HasPath(t, "Hca2", lid2, lid3, storage) {
		t.Errorf("a path between two limited members %d -> %d", lid2, lid3)
	}

	// The ib probe, Hca3 to Hca2 by LID, with Hca2 serving it: with
	// opensm stopped, as the simulator's responder lives only while no
	// subnet manager sweeps (smlab.StartResponder says why); the LIDs
	// and routes opensm programmed stay.
	if err := a.bus.Stop(context.Background(), a.unit); err != nil {
		t.Fatal(err)
	}
	spec := parse(t, fmt.Sprintf(`version: 1
probes:
  - name: to-hca2
    ib: {device: ibsim0, to_lid: %d, count: 3}
`, lid2))
	server, client := peerHost(t, f, "Hca2"), peerHost(t, f, "Hca3")
	// What rdmaform's probe serve runs on Hca2 for it.
	rs, err := probe.Responders(context.Background(), server, spec)
	if err != nil || len(rs) != 1 || rs[0].String() != "ibping -S -C ibsim0 -P 1" {
		t.Fatalf("responders on Hca2: %v, %v", rs, err)
	}
	responder := f.StartResponder(t, "Hca2", rs[0].Args...)
	res, err := probe.Run(context.Background(), client, spec)
	if err != nil || !res[0].Passed || res[0].Outcome != probe.OutcomePassed || res[0].Command != fmt.Sprintf("ibping -C ibsim0 -P 1 -c 3 -L %d", lid2) || res[0].Reason != fmt.Sprintf("3/3 answered by lid %d", lid2) {
		b, _ := os.ReadFile(filepath.Join(f.Dir, "ibsim.out"))
		t.Fatalf("ib probe with Hca2 serving: %+v, %v\nibsim:\n%s", res, err, tail(b, 2000))
	}
	smlab.Stop(t, responder)
	if res, err = probe.Run(context.Background(), client, spec); err != nil || res[0].Passed || res[0].Outcome != probe.OutcomeFailed {
		t.Errorf("ib probe with nobody serving: %+v, %v", res, err)
	}
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
