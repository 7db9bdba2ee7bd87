package inventory

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/fstree"
)

// TestReadNetdev: type and MTU of any netdev, mode and the connected-mode
// flag (first byte of the 20-byte IPoIB hardware address, IPOIB_FLAGS_RC
// 0x80 in the kernel's ipoib.h; the GID is a simulator profile's) of an
// IPoIB one; a netdev that is not there is not an error, an unreadable
// number is.
func TestReadNetdev(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"ib0/type":          "32\n",
		"ib0/mtu":           "2044\n",
		"ib0/mode":          "datagram\n",
		"ib0/address":       "80:00:02:08:fe:80:00:00:00:00:00:00:b8:59:9f:03:00:22:62:6e\n",
		"ib1/type":          "32\n",
		"ib1/mtu":           "4092\n",
		"ib1/mode":          "datagram\n",
		"ib1/address":       "00:00:10:87:fe:80:00:00:00:00:00:00:b8:59:9f:03:00:22:62:6f\n",
		"ens1f0np0/type":    "1\n",
		"ens1f0np0/mtu":     "9000\n",
		"ens1f0np0/address": "0c:42:a1:65:1d:2a\n",
		"bad/type":          "x\n",
		"bad/mtu":           "1500\n",
	}
	fstree.Write(t, filepath.Join(root, "sys/class/net"), files)
	fs, err := host.NewRootFS(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		want     Netdev
		enhanced bool
	}{
		{"ib0", Netdev{Name: "ib0", Type: ARPHRDInfiniband, MTU: 2044, Mode: "datagram", Flags: 0x80}, false},
		{"ib1", Netdev{Name: "ib1", Type: ARPHRDInfiniband, MTU: 4092, Mode: "datagram", Flags: 0x00}, true},
		{"ens1f0np0", Netdev{Name: "ens1f0np0", Type: 1, MTU: 9000, Flags: -1}, false},
	} {
		got, ok, err := ReadNetdev(fs, tt.name)
		if err != nil || !ok {
			t.Fatalf("%s: ok %v, err %v", tt.name, ok, err)
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, d)
		}
		if got.Enhanced() != tt.enhanced {
			t.Errorf("%s: enhanced %v, want %v", tt.name, got.Enhanced(), tt.enhanced)
		}
	}
	if _, ok, err := ReadNetdev(fs, "ib9"); ok || err != nil {
		t.Errorf("missing netdev: ok %v, err %v; want false, nil", ok, err)
	}
	if _, _, err := ReadNetdev(fs, "bad"); err == nil {
		t.Errorf("a type that is not a number: no error")
	}
}
