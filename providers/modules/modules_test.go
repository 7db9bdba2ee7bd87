package modules

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/fstree"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

func set(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

func TestDiff(t *testing.T) {
	tests := []struct {
		name string
		spec string
		obs  Observed
		want []string
	}{{
		name: "not loaded, not listed: loaded and listed",
		spec: "modules: [rdma_rxe]\n",
		obs:  Observed{Loaded: set("ib_core")},
		want: []string{"create module[rdma_rxe] now [loaded:false->true load_at_boot:false->true] load=true listed=true @2:11"},
	}, {
		name: "loaded, not listed: only listed; '-' and '_' are one name",
		spec: "modules: [ib-core]\n",
		obs:  Observed{Loaded: set("ib_core")},
		want: []string{"update module[ib_core] now [load_at_boot:false->true] load=false listed=true @2:11"},
	}, {
		name: "built in: counts as loaded",
		spec: "modules: [configfs]\n",
		obs:  Observed{Loaded: set(), Builtin: set("configfs"), Listed: set("configfs")},
	}, {
		name: "loaded and listed: nothing to do",
		spec: "modules: [rdma_ucm, ib_ipoib]\n",
		obs:  Observed{Loaded: set("rdma_ucm", "ib_ipoib"), Listed: set("ib_ipoib", "rdma_ucm")},
	}, {
		name: "listed but dropped from the spec: leaves the file, stays loaded",
		spec: "modules: [ib_ipoib]\n",
		obs:  Observed{Loaded: set("rdma_ucm", "ib_ipoib"), Listed: set("ib_ipoib", "rdma_ucm")},
		want: []string{"delete module[rdma_ucm] now [load_at_boot:true->false] load=false listed=false @2:10"},
	}, {
		name: "modules: [] empties the file",
		spec: "modules: []\n",
		obs:  Observed{Loaded: set("rdma_ucm"), Listed: set("rdma_ucm", "ib_umad")},
		want: []string{
			"delete module[ib_umad] now [load_at_boot:true->false] load=false listed=false @2:10",
			"delete module[rdma_ucm] now [load_at_boot:true->false] load=false listed=false @2:10",
		},
	}, {
		name: "modules absent: unmanaged, the file is left alone",
		spec: "",
		obs:  Observed{Listed: set("rdma_ucm")},
	}, {
		name: "a kernel that cannot load modules: built-in ones are listed, others are findings",
		spec: "modules: [configfs, rdma_rxe]\n",
		obs:  Observed{NoModules: true, Builtin: set("configfs")},
		want: []string{
			"update module[configfs] now [load_at_boot:false->true] load=false listed=true @2:11",
			"finding @2:21: this kernel cannot load modules (no /proc/modules) and rdma_rxe is not built in",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, rep := schema.Parse("host.yaml", []byte("version: 1\n"+tt.spec))
			if len(rep) > 0 {
				t.Fatalf("spec: %v", rep)
			}
			obs := tt.obs
			prop := diff(&plan.Request{Spec: spec, Inv: &inventory.Inventory{}}, &obs)
			var got []string
			for _, c := range prop.Changes {
				pl := c.Payload.(*payload)
				var attrs []string
				for _, a := range c.Attributes {
					attrs = append(attrs, a.Name+":"+a.Before+"->"+a.After)
				}
				s := fmt.Sprintf("%s %s %s %v load=%v listed=%v", c.Action, c.Address, c.Activation, attrs, pl.load, pl.listed)
				if c.Source != nil {
					s += fmt.Sprintf(" @%d:%d", c.Source.Line, c.Source.Col)
				}
				got = append(got, s)
			}
			for _, f := range prop.Errors {
				got = append(got, fmt.Sprintf("finding @%d:%d: %s", f.Pos.Line, f.Pos.Col, f.Message))
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("diff (-want +got):\n%s", d)
			}
		})
	}
}

// TestDiscover reads a fixture tree: /proc/modules, the running kernel's
// modules.builtin, /sys/module for a builtin without a modules.builtin
// line, and a hand-edited rdmaform.conf.
func TestDiscover(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"proc/modules":                               "ib_core 483328 1 rdma_cm, Live 0x0000000000000000\nrdma_cm 135168 0 - Live 0x0000000000000000\n",
		"proc/sys/kernel/osrelease":                  "6.1.0-28-amd64\n",
		"lib/modules/6.1.0-28-amd64/modules.builtin": "kernel/fs/configfs/configfs.ko\nkernel/drivers/net/virtio-net.ko\n",
		"sys/module/ib_uverbs/parameters/x":          "",
		"etc/modules-load.d/rdmaform.conf":           "# hand edit\n; old comment\n\nrdma-ucm\n ib_ipoib \n",
	}
	fstree.Write(t, dir, files)
	fsys, err := host.NewRootFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	spec, rep := schema.Parse("host.yaml", []byte("version: 1\nmodules: [ib_uverbs, rdma_rxe]\n"))
	if len(rep) > 0 {
		t.Fatal(rep)
	}
	got, err := (&Provider{}).Observe(context.Background(), &host.Host{FS: fsys}, &plan.Request{Spec: spec, Inv: &inventory.Inventory{}})
	if err != nil {
		t.Fatal(err)
	}
	want := &Observed{
		Loaded:  set("ib_core", "rdma_cm"),
		Builtin: set("configfs", "virtio_net", "ib_uverbs"),
		Listed:  set("rdma_ucm", "ib_ipoib"),
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Discover (-want +got):\n%s", d)
	}
}
