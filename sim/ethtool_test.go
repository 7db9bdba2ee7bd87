package sim

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/host"
)

// TestEthtoolQueuesMatchTheKernel: the emulated ethtool -g, -l, -G and -L
// print byte for byte what the real ethtool 6.1 printed for virtio_net on
// Debian's kernel 6.1 under QEMU (testdata/real/ethtool-gl, the kernel
// lab's captures): the same state, the same answers, refusals included.
func TestEthtoolQueuesMatchTheKernel(t *testing.T) {
	st, err := NewState("cx5-roce", "node1", 0)
	if err != nil {
		t.Fatal(err)
	}
	st.Netdevs = append(st.Netdevs, &Netdev{Name: "eth0", Kind: "virtio", MTU: 1500, Up: true, MAC: "52:54:00:12:34:56",
		Rings:    &QueueState{Max: map[string]int{"rx": 256, "tx": 256}, Cur: map[string]int{"rx": 256, "tx": 256}},
		Channels: &QueueState{Max: map[string]int{"combined": 4}, Cur: map[string]int{"combined": 2}}})
	s, err := Create(filepath.Join(t.TempDir(), "host"), st)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join("..", "testdata", "real", "ethtool-gl")
	// In the order the lab ran them: each answer depends on the ones before.
	for _, name := range []string{"virtio-rings", "virtio-channels", "virtio-set-channels", "virtio-set-channels-above",
		"virtio-set-channels-na", "virtio-set-rings", "virtio-rings-after", "virtio-set-rings-above", "no-such-device-rings"} {
		var argv []string
		readJSON(t, filepath.Join(root, name+".cmd"), &argv)
		res, err := s.RunTool(context.Background(), argv)
		code, stdout, stderr := 0, res.Stdout, res.Stderr
		var ee *host.ExitError
		if errors.As(err, &ee) {
			code, stdout, stderr = ee.Code, ee.Stdout, ee.Stderr
		} else if err != nil {
			t.Fatal(err)
		}
		wantOut, _ := os.ReadFile(filepath.Join(root, name+".stdout"))
		wantErr, _ := os.ReadFile(filepath.Join(root, name+".stderr"))
		wantCode := readInt(t, filepath.Join(root, name+".exit"))
		if string(stdout) != string(wantOut) || string(stderr) != string(wantErr) || code != wantCode {
			t.Errorf("%s: %v\ngot exit %d stdout %q stderr %q\nwant exit %d stdout %q stderr %q", name, argv, code, stdout, stderr, wantCode, wantOut, wantErr)
		}
	}
}

func readJSON(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func readInt(t *testing.T, name string) int {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return n
}
