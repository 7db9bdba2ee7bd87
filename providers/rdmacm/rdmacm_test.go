package rdmacm

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

func parse(t *testing.T, src string) *schema.Spec {
	t.Helper()
	spec, rep := schema.Parse("spec.yaml", []byte(src))
	if len(rep) > 0 {
		t.Fatalf("spec: %v", rep)
	}
	return spec
}

func invOf(ports ...*inventory.Port) *inventory.Inventory {
	return &inventory.Inventory{Devices: []*inventory.Device{{Name: "mlx5_0", PCI: "0000:3b:00.0", Ports: ports}}}
}

func request(t *testing.T, spec *schema.Spec, inv *inventory.Inventory) *plan.Request {
	req := &plan.Request{Spec: spec, Inv: inv, Devices: make([]*inventory.Device, len(spec.Devices))}
	for i := range spec.Devices {
		kind, val := spec.Devices[i].Selector()
		req.Devices[i] = inv.Find(kind, val)
	}
	return req
}

const v2spec = "version: 1\ndevices:\n  - name: mlx5_0\n    ports:\n      - port: 1\n        roce: {mode: v2, tos: 106}\n"

func TestDiff(t *testing.T) {
	eth := &inventory.Port{Num: 1, LinkLayer: "Ethernet"}
	ib := &inventory.Port{Num: 1, LinkLayer: "InfiniBand"}
	for _, tc := range []struct {
		name     string
		inv      *inventory.Inventory
		obs      PortValues
		staged   *plan.LinkChange
		changes  []plan.Attr
		deferred string
		finding  string
	}{
		{name: "both differ", inv: invOf(eth), obs: PortValues{Mode: ModeV1, Tos: 0},
			changes: []plan.Attr{{Name: "mode", Before: "v1", After: "v2"}, {Name: "tos", Before: "0", After: "106"}}},
		{name: "matches", inv: invOf(eth), obs: PortValues{Mode: ModeV2, Tos: 106}},
		{name: "only tos", inv: invOf(eth), obs: PortValues{Mode: ModeV2, Tos: 3},
			changes: []plan.Attr{{Name: "tos", Before: "3", After: "106"}}},
		{name: "infiniband port", inv: invOf(ib), obs: PortValues{Mode: ModeV1},
			finding: "port 1 of mlx5_0 has link layer InfiniBand; RoCE settings need an Ethernet port"},
		{name: "becomes ethernet at next boot", inv: invOf(ib), obs: PortValues{Mode: ModeV1},
			staged:   &plan.LinkChange{Device: "0000:3b:00.0", Port: 1, To: "Ethernet", Setting: "LINK_TYPE_P1=ETH", When: plan.NextBoot},
			deferred: "waits for LINK_TYPE_P1=ETH on 0000:3b:00.0 (reboot)"},
		{name: "becomes infiniband at next boot", inv: invOf(eth), obs: PortValues{Mode: ModeV2},
			staged:  &plan.LinkChange{Device: "0000:3b:00.0", Port: 1, To: "InfiniBand", Setting: "LINK_TYPE_P1=IB", When: plan.NextBoot},
			finding: "becomes InfiniBand at the next boot (LINK_TYPE_P1=IB)"},
		{name: "no such port", inv: invOf(&inventory.Port{Num: 2, LinkLayer: "Ethernet"}),
			finding: "mlx5_0 has no port 1 (ports: 2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := request(t, parse(t, v2spec), tc.inv)
			facts := plan.NewFacts()
			if tc.staged != nil {
				facts.ChangeLink(*tc.staged)
			}
			obs := &Observed{Ports: map[string]PortValues{"mlx5_0/1": tc.obs}}
			prop := (&Provider{}).Plan(req, obs, facts)
			var got []plan.Attr
			for _, c := range prop.Changes {
				got = append(got, c.Attributes...)
				if c.Activation != plan.Runtime || c.Address != plan.Addr("rdma_cm", "mlx5_0/1") || c.Source == nil || c.Source.Line != 6 {
					t.Errorf("change %+v: want runtime rdma_cm[mlx5_0/1] from spec.yaml:6", c)
				}
			}
			if diff := cmp.Diff(tc.changes, got); diff != "" {
				t.Errorf("attributes (-want +got):\n%s", diff)
			}
			if tc.deferred != "" && (len(prop.Deferred) != 1 || prop.Deferred[0].Reason != tc.deferred) {
				t.Errorf("deferred = %+v, want %q", prop.Deferred, tc.deferred)
			}
			if tc.finding == "" && len(prop.Errors) > 0 {
				t.Errorf("unexpected findings %v", prop.Errors)
			}
			if tc.finding != "" && (len(prop.Errors) != 1 || !strings.Contains(prop.Errors[0].Message, tc.finding) || prop.Errors[0].Pos.Line != 6) {
				t.Errorf("findings = %v, want one at line 6 containing %q", prop.Errors, tc.finding)
			}
		})
	}
}

func TestDiffDeviceCreatedByRxe(t *testing.T) {
	spec := parse(t, "version: 1\nrxe: [{name: rxe0, netdev: enp1s0}]\ndevices:\n  - name: rxe0\n    ports: [{port: 1, roce: {mode: v2}}]\n")
	req := request(t, spec, &inventory.Inventory{})
	facts := plan.NewFacts()
	// Without a planned rxe link there is nothing to set; the rxe entry's
	// own finding says why it could not be planned.
	if prop := (&Provider{}).Plan(req, &Observed{}, facts); len(prop.Errors)+len(prop.Changes) != 0 {
		t.Fatalf("without a planned rxe link: %+v, want nothing", prop)
	}
	// The rxe provider runs first, plans rxe[rxe0] and publishes the device.
	facts = plan.NewFacts()
	facts.CreateDevice("rxe0", plan.Addr("rxe", "rxe0"))
	prop := (&Provider{}).Plan(req, &Observed{}, facts)
	if len(prop.Changes) != 1 || prop.Changes[0].Action != plan.Create || !cmp.Equal(prop.Changes[0].DependsOn, []plan.Address{plan.Addr("rxe", "rxe0")}) {
		t.Fatalf("want one create depending on rxe[rxe0], got %+v", prop)
	}
}

// TestDiffCardRegisteredAnew: a ConnectX-3 whose other port switches type
// in this plan is registered anew (mlx4_change_port_types), so a port
// that stays Ethernet has the kernel's defaults again: its values are set
// after the switch even when they match now.
func TestDiffCardRegisteredAnew(t *testing.T) {
	spec := parse(t, "version: 1\ndevices:\n  - name: mlx4_0\n    ports:\n      - port: 2\n        roce: {mode: v1, tos: 106}\n")
	inv := &inventory.Inventory{Devices: []*inventory.Device{{Name: "mlx4_0", PCI: "0000:81:00.0", Ports: []*inventory.Port{
		{Num: 1, LinkLayer: "Ethernet"}, {Num: 2, LinkLayer: "Ethernet"}}}}}
	req := request(t, spec, inv)
	obs := &Observed{Ports: map[string]PortValues{"mlx4_0/2": {Mode: ModeV1, Tos: 106}}}
	if prop := (&Provider{}).Plan(req, obs, plan.NewFacts()); len(prop.Changes)+len(prop.Errors) != 0 {
		t.Fatalf("values as wanted, nothing registered anew: %+v, want nothing", prop)
	}
	facts := plan.NewFacts()
	by := plan.Addr("mlx4_port", "0000:81:00.0/1")
	facts.ChangeLink(plan.LinkChange{Device: "0000:81:00.0", Port: 1, To: "InfiniBand", When: plan.Runtime, Cause: by, Setting: "type=ib"})
	facts.CreateDevice("mlx4_0", by)
	prop := (&Provider{}).Plan(req, obs, facts)
	if len(prop.Errors) != 0 || len(prop.Changes) != 1 || prop.Changes[0].Action != plan.Create || !cmp.Equal(prop.Changes[0].DependsOn, []plan.Address{by}) {
		t.Fatalf("want one create of rdma_cm[mlx4_0/2] after %s, got %+v", by, prop)
	}
	if d := cmp.Diff([]plan.Attr{{Name: "mode", After: "v1"}, {Name: "tos", After: "106"}}, prop.Changes[0].Attributes); d != "" {
		t.Errorf("attributes (-want +got):\n%s", d)
	}
}

func newSim(t *testing.T, profile string) *sim.Sim {
	t.Helper()
	s, _ := simtest.New(t, profile, 0, nil)
	return s
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "-> " + l
		case fi.IsDir():
			out[rel+"/"] = ""
		default:
			b, _ := os.ReadFile(p)
			out[rel] = string(b)
		}
		return nil
	})
	return out
}

// withRdmaCM is a simulated cx5-roce host with rdma_cm loaded, so that
// /sys/kernel/config/rdma_cm exists and only groups come and go.
func withRdmaCM(t *testing.T) (*sim.Sim, *host.Host) {
	t.Helper()
	s := newSim(t, "cx5-roce")
	h, err := s.Host()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Modprobe(context.Background(), "rdma_cm"); err != nil {
		t.Fatal(err)
	}
	return s, h
}

// TestPlanLeavesNoTrace: reading needs the configfs group; plan creates it
// and removes it again, and keeps a group that was there before.
func TestPlanLeavesNoTrace(t *testing.T) {
	// rdma_cm loaded first, so the only difference a plan could make is the group.
	s, h := withRdmaCM(t)
	ctx := context.Background()
	spec := parse(t, v2spec)
	before := snapshot(t, s.Dir)
	res, err := plan.Build(ctx, h, spec, []plan.Provider{New()})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.Changes) != 1 {
		t.Fatalf("plan: %+v", res.Plan)
	}
	if diff := cmp.Diff(before, snapshot(t, s.Dir)); diff != "" {
		t.Errorf("plan changed the host (-before +after):\n%s", diff)
	}

	// A group the operator made stays.
	if err := h.FS.Mkdir(Root+"/mlx5_0", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := plan.Build(ctx, h, spec, []plan.Provider{New()}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.FS.Stat(Root + "/mlx5_0/ports/1/default_roce_mode"); err != nil {
		t.Errorf("a pre-existing group must be kept: %v", err)
	}
}

// madeMeanwhile is a host's FS on which another process makes each
// configfs group just before this one tries to: its mkdir fails with the
// kernel's EEXIST.
type madeMeanwhile struct {
	host.FS
	made []string
}

func (f *madeMeanwhile) Mkdir(name string, perm fs.FileMode) error {
	if strings.HasPrefix(name, Root+"/") {
		if err := f.FS.Mkdir(name, perm); err != nil {
			return err
		}
		f.made = append(f.made, name)
	}
	return f.FS.Mkdir(name, perm)
}

// TestGroupMadeMeanwhile: a group another process makes between this
// one's look and its mkdir (EEXIST) is used, and left to its maker.
func TestGroupMadeMeanwhile(t *testing.T) {
	_, h := withRdmaCM(t)
	ctx := context.Background()
	racy := &madeMeanwhile{FS: h.FS}
	h.FS = racy
	res, err := plan.Build(ctx, h, parse(t, v2spec), []plan.Provider{New()})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.Errors) > 0 || len(res.Plan.Changes) != 1 {
		t.Fatalf("plan with the group made meanwhile: %+v", res.Plan)
	}
	if len(racy.made) != 1 {
		t.Fatalf("groups made by the other process: %v", racy.made)
	}
	if _, err := h.FS.Stat(racy.made[0]); err != nil {
		t.Errorf("the other process's group was removed: %v", err)
	}
}

// TestGroupStaysWhileOthersUseGroups: a process removes a group it made
// only when no other holds the groups' lock; while one does, it leaves
// the group (after groupWait) rather than pull it from under the other.
// Alone, the next one removes what it makes.
func TestGroupStaysWhileOthersUseGroups(t *testing.T) {
	defer func(w time.Duration) { groupWait = w }(groupWait)
	groupWait = 50 * time.Millisecond
	_, h := withRdmaCM(t)
	ctx := context.Background()
	other, err := host.OpenFlock(h.FS, Root)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Shared(ctx); err != nil {
		t.Fatal(err)
	}
	spec := parse(t, v2spec)
	if _, err := plan.Build(ctx, h, spec, []plan.Provider{New()}); err != nil {
		t.Fatal(err)
	}
	group := Root + "/mlx5_0"
	if _, err := h.FS.Stat(group); err != nil {
		t.Errorf("the group was removed while another process held the lock: %v", err)
	}
	other.Close()
	if err := h.FS.Remove(group); err != nil {
		t.Fatal(err)
	}
	if _, err := plan.Build(ctx, h, spec, []plan.Provider{New()}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.FS.Stat(group); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a plan alone left its group: %v", err)
	}
}

// TestConfigfsFollowsTheKernel checks the simulator's configfs against
// cma_configfs.c's rules, which the provider relies on.
func TestConfigfsFollowsTheKernel(t *testing.T) {
	s := newSim(t, "cx6-vpi-ib")
	h, _ := s.Host()
	ctx := context.Background()
	if err := h.Modprobe(ctx, "rdma_cm"); err != nil {
		t.Fatal(err)
	}
	if err := h.FS.Mkdir(Root+"/mlx5_9", 0o755); !errors.Is(err, syscall.ENODEV) {
		t.Errorf("mkdir for an unknown device: %v, want ENODEV", err)
	}
	if err := h.FS.Mkdir(Root+"/mlx5_0", 0o755); err != nil {
		t.Fatal(err)
	}
	mode := Root + "/mlx5_0/ports/1/default_roce_mode"
	got, _ := h.FS.ReadFile(mode)
	if string(got) != "IB/RoCE v1\n" {
		t.Errorf("initial mode on an IB port = %q", got)
	}
	for _, tc := range []struct {
		write string
		want  error
	}{
		{"RoCE v2\n", syscall.EINVAL}, // not supported on an InfiniBand port
		{"roce v1\n", syscall.EINVAL}, // case matters
		{"IB/RoCE v1\n\n", syscall.EINVAL},
		{"IB/RoCE v1", nil},
		{"IB/RoCE v1\n", nil},
	} {
		if err := h.FS.WriteAttr(mode, []byte(tc.write)); !errors.Is(err, tc.want) && !(err == nil && tc.want == nil) {
			t.Errorf("write %q: err %v, want %v", tc.write, err, tc.want)
		}
	}
	if err := h.FS.WriteAttr(Root+"/mlx5_0/ports/1/default_roce_tos", []byte("0x20\n")); err != nil {
		t.Errorf("tos in hex: %v", err)
	}
	if b, _ := h.FS.ReadFile(Root + "/mlx5_0/ports/1/default_roce_tos"); string(b) != "32\n" {
		t.Errorf("tos reads %q after writing 0x20", b)
	}
	if err := h.FS.WriteAttr(Root+"/mlx5_0/ports/1/default_roce_tos", []byte("256")); !errors.Is(err, syscall.ERANGE) {
		t.Errorf("tos 256: %v, want ERANGE", err)
	}
	// rmdir keeps the values in the kernel: mkdir shows them again.
	if err := h.FS.Remove(Root + "/mlx5_0"); err != nil {
		t.Fatal(err)
	}
	h.FS.Mkdir(Root+"/mlx5_0", 0o755)
	if b, _ := h.FS.ReadFile(Root + "/mlx5_0/ports/1/default_roce_tos"); string(b) != "32\n" {
		t.Errorf("tos after rmdir+mkdir = %q, want 32 (values live in the kernel)", b)
	}
}

func TestApplyRefusedByKernelNamesTheFile(t *testing.T) {
	s := newSim(t, "cx6-vpi-ib")
	h, _ := s.Host()
	p := New()
	c := &plan.Change{Address: plan.Addr("rdma_cm", "mlx5_0/1"), Payload: &payload{dev: "mlx5_0", port: 1, mode: ModeV2}}
	err := p.Apply(context.Background(), h, c)
	if err == nil || !strings.Contains(err.Error(), "/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_mode") || !strings.Contains(err.Error(), "EINVAL") {
		t.Fatalf("err = %v; want the file, the value and EINVAL", err)
	}
	if _, err := h.FS.Stat(Root + "/mlx5_0"); err == nil {
		t.Error("the group created for the write must be removed after a failure too")
	}
}

func TestMissingConfigfsSupportIsClear(t *testing.T) {
	st, _ := sim.NewState("cx5-roce", "n", 0)
	st.Modules = nil
	st.BootModules = nil
	st.Available = nil // rdma_cm cannot be loaded
	s, err := sim.Create(t.TempDir(), st)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := s.Host()
	spec := parse(t, v2spec)
	before := snapshot(t, s.Dir)
	res, err := plan.Build(context.Background(), h, spec, []plan.Provider{New()})
	if err != nil {
		t.Fatal(err)
	}
	// Plan loads nothing: no tool runs, the tree is untouched, and the
	// values it cannot read yet are shown as such.
	if calls := s.Calls(); len(calls) != 0 {
		t.Errorf("plan ran %v; it must not load modules", calls)
	}
	if diff := cmp.Diff(before, snapshot(t, s.Dir)); diff != "" {
		t.Errorf("plan changed the host (-before +after):\n%s", diff)
	}
	if len(res.Plan.Changes) != 1 || res.Plan.Changes[0].Attributes[0].Before != notLoaded {
		t.Fatalf("plan = %+v; want one change from %q", res.Plan.Changes, notLoaded)
	}
	err = New().Apply(context.Background(), h, res.Plan.Changes[0])
	if err == nil || !strings.Contains(err.Error(), "modprobe -- rdma_cm") || !strings.Contains(err.Error(), "Module rdma_cm not found") {
		t.Fatalf("apply err = %v; want the modprobe command line and its message", err)
	}
}

// TestDiffDeviceReplacedByRxe: an rxe link moved to another netdev comes
// back with the kernel's defaults, so its settings are planned again even
// when the old link already had them.
func TestDiffDeviceReplacedByRxe(t *testing.T) {
	spec := parse(t, "version: 1\nrxe: [{name: rxe0, netdev: enp2s0}]\ndevices:\n  - name: rxe0\n    ports: [{port: 1, roce: {mode: v2}}]\n")
	inv := &inventory.Inventory{Devices: []*inventory.Device{{Name: "rxe0", Parent: "enp1s0", Ports: []*inventory.Port{{Num: 1, LinkLayer: "Ethernet"}}}}}
	req := request(t, spec, inv)
	obs := &Observed{Ports: map[string]PortValues{"rxe0/1": {Mode: ModeV2}}}
	if prop := (&Provider{}).Plan(req, obs, plan.NewFacts()); len(prop.Changes) != 0 {
		t.Fatalf("settings already match: %+v", prop.Changes)
	}
	facts := plan.NewFacts()
	facts.CreateDevice("rxe0", plan.Addr("rxe", "rxe0"))
	prop := (&Provider{}).Plan(req, obs, facts)
	if len(prop.Changes) != 1 || prop.Changes[0].Action != plan.Create || !cmp.Equal(prop.Changes[0].DependsOn, []plan.Address{plan.Addr("rxe", "rxe0")}) {
		t.Fatalf("want the settings planned after the replaced link, got %+v", prop.Changes)
	}
}
