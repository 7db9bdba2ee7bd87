package audit

import (
	"testing"

	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// TestResourceOf: a plan finding at a spec path is reported against the
// resource declared for the longest path that contains it; a device or
// port path no resource claims is reported against the device or port.
func TestResourceOf(t *testing.T) {
	// Only the devices matter here: the other sections' paths are found in
	// the declarations below.
	spec, rep := schema.Parse("host.yaml", []byte(`version: 1
devices:
  - pci: "0000:3b:00.0"
    ports: [{port: 1}, {port: 2}]
  - name: mlx5_9
`))
	if len(rep) > 0 {
		t.Fatal(rep)
	}
	// What the providers declare for this spec
	// (providers.TestProvidersDeclareWhatTheyManage checks they do).
	managed := []plan.Managed{
		{Address: plan.Addr("firmware", "0000:3b:00.0"), Path: "$.devices[0].firmware"},
		{Address: plan.Addr("rdma_cm", "mlx5_0/1"), Path: "$.devices[0].ports[0].roce"},
		{Address: plan.Addr("mlx4_port", "0000:3b:00.0/1"), Path: "$.devices[0].ports[0].type"},
		{Address: plan.Addr("ipoib", "storage"), Path: "$.ipoib[0]"},
		{Address: plan.Addr("rxe", "rxe0"), Path: "$.rxe[0]"},
		{Address: plan.Addr("interface", "ens3"), Path: "$.interfaces[0]"},
		{Address: plan.Addr("module", "rdma_ucm"), Path: "$.modules[0]"},
		{Address: plan.Addr("service", "opensm.service"), Path: "$.services[0]"},
		{Address: plan.Addr("boot_unit", "rdmaform.service"), Path: "$.persistence"},
	}
	a := &auditor{req: &plan.Request{Spec: spec, Devices: []*inventory.Device{{Name: "mlx5_0", PCI: "0000:3b:00.0"}, nil}}, managed: managed}
	for path, want := range map[string]string{
		"$.devices[0].firmware.params.LINK_TYPE_P1": "firmware[0000:3b:00.0]",
		"$.devices[0].ports[0].roce.mode":           "rdma_cm[mlx5_0/1]",
		"$.devices[0].ports[0].type":                "mlx4_port[0000:3b:00.0/1]",
		"$.devices[0].ports[1].link_layer":          PortAddress("mlx5_0", 2),
		"$.devices[0]":                              "device[mlx5_0]",
		"$.devices[1].name":                         "device[mlx5_9]",
		"$.ipoib[0].pkey":                           "ipoib[storage]",
		"$.rxe[0].netdev":                           "rxe[rxe0]",
		"$.interfaces[0].mtu":                       "interface[ens3]",
		"$.modules[0]":                              "module[rdma_ucm]",
		"$.services[0]":                             "service[opensm.service]",
		"$.persistence":                             "boot_unit[rdmaform.service]",
		"$":                                         "spec",
	} {
		if got := a.resourceOf(path); got != want {
			t.Errorf("resourceOf(%s) = %q, want %q", path, got, want)
		}
	}
}
