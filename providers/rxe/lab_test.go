package rxe_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/netns"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/modules"
	"github.com/rdmaform/rdmaform/providers/rxe"
	"github.com/rdmaform/rdmaform/schema"
)

// TestRealKernelWithoutRDMA asks this machine's real kernel, from a private
// namespace, for an rxe link. A kernel without RDMA core answers
// EPROTONOSUPPORT; rdmaform says so and what to install and load: as a
// finding at plan time, and as the change's error when the module load is
// planned first (so the link is planned after it).
func TestRealKernelWithoutRDMA(t *testing.T) {
	l := netns.New(t)
	if _, err := l.Host.Net.RdmaLinkList(); err == nil {
		t.Skip("this kernel has RDMA netlink; the test covers its absence (and must not create a real rxe link)")
	}

	t.Run("netlink", func(t *testing.T) {
		err := l.Host.Net.RdmaLinkAdd("rxe0", netns.Veth0)
		if !errors.Is(err, host.ErrNoRDMA) || !errors.Is(err, unix.EPROTONOSUPPORT) {
			t.Fatalf("RdmaLinkAdd = %v; want ErrNoRDMA wrapping EPROTONOSUPPORT", err)
		}
	})

	t.Run("plan finding", func(t *testing.T) {
		spec := parse(t, "version: 1\nrxe:\n  - name: rxe0\n    netdev: rfa0\n")
		res, err := plan.Build(context.Background(), l.Host, spec, []plan.Provider{rxe.New()})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Plan.Errors) != 1 || len(res.Plan.Changes) != 0 {
			t.Fatalf("plan: changes %v, findings %v; want one finding", res.Plan.Changes, res.Plan.Errors)
		}
		got := res.Plan.Errors[0].String()
		for _, want := range []string{"host.yaml:3:5: error: $.rxe[0]: cannot create Soft-RoCE link rxe0", "no RDMA netlink", "modprobe rdma_rxe", "linux-modules-extra", "protocol not supported"} {
			if !strings.Contains(got, want) {
				t.Errorf("finding %q lacks %q", got, want)
			}
		}
	})

	t.Run("apply error", func(t *testing.T) {
		// The lab host loads nothing (offline kernel): the module change
		// only writes rdmaform.conf, then the kernel refuses the link.
		if err := os.MkdirAll(filepath.Join(l.Root, "proc"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(l.Root, "proc/modules"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		spec := parse(t, "version: 1\nmodules: [rdma_rxe]\nrxe:\n  - name: rxe0\n    netdev: rfa0\n")
		provs := []plan.Provider{modules.New(), rxe.New()}
		res, err := plan.Build(context.Background(), l.Host, spec, provs)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Plan.Errors) != 0 || len(res.Plan.Changes) != 2 {
			t.Fatalf("plan: changes %v, findings %v; want module and rxe changes", res.Plan.Changes, res.Plan.Errors)
		}
		out := apply.Run(context.Background(), l.Host, res.Plan, provs, apply.Options{})
		if plan.JoinAddrs(out.Failed, ",") != "rxe[rxe0]" || plan.JoinAddrs(out.Applied, ",") != "module[rdma_rxe]" {
			t.Fatalf("applied %v, failed %v; want module applied, rxe failed", out.Applied, out.Failed)
		}
		if !errors.Is(out.Err, host.ErrNoRDMA) || !errors.Is(out.Err, unix.EPROTONOSUPPORT) {
			t.Errorf("apply error %v; want ErrNoRDMA wrapping EPROTONOSUPPORT", out.Err)
		}
		if msg := out.Err.Error(); !strings.Contains(msg, "rdma link add rxe0 type rxe netdev rfa0") || !strings.Contains(msg, "modprobe rdma_rxe") {
			t.Errorf("apply error %q: want the command and what to load", msg)
		}
	})
}

func parse(t *testing.T, text string) *schema.Spec {
	t.Helper()
	spec, rep := schema.Parse("host.yaml", []byte(text))
	if len(rep) > 0 {
		t.Fatalf("spec: %v", rep)
	}
	return spec
}
