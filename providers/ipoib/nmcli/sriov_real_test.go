package nmcli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/internal/testlab/nmlab"
	"github.com/rdmaform/rdmaform/providers/ipoib/nmcli"
)

// TestRealSRIOVOwners asks a real NetworkManager (nmlab) which profiles
// carry an sriov setting, as the SR-IOV provider does before it sets a
// PF's VF count: a profile with sriov.total-vfs is a second owner of the
// PF's VFs, one without prints the field empty. With -capture DIR the
// outputs are written there (testdata/real/nmcli/sriov-*).
func TestRealSRIOVOwners(t *testing.T) {
	lab := nmlab.Start(t)
	out := *capture
	if out == "" {
		out = t.TempDir()
	}
	run := func(name string, args ...string) nmlab.Result {
		t.Helper()
		r := lab.Nmcli(args...)
		argv, _ := json.Marshal(append([]string{"nmcli"}, args...))
		files := map[string][]byte{".cmd": append(argv, '\n'), ".stdout": r.Stdout, ".exit": []byte(strconv.Itoa(r.Exit) + "\n")}
		if len(r.Stderr) > 0 {
			files[".stderr"] = r.Stderr
		}
		for ext, b := range files {
			if err := os.WriteFile(filepath.Join(out, name+ext), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return r
	}
	owner := run("sriov-add-owner", "connection", "add", "type", "infiniband", "con-name", "ib5-vfs", "ifname", "ib5",
		"connection.autoconnect", "no", "sriov.total-vfs", "4")
	plain := run("sriov-add-plain", "connection", "add", "type", "infiniband", "con-name", "ib6-plain", "ifname", "ib6",
		"connection.autoconnect", "no")
	u1, err1 := nmcli.ParseAdded(owner.Stdout)
	u2, err2 := nmcli.ParseAdded(plain.Stdout)
	if err1 != nil || err2 != nil {
		t.Fatalf("add: %v %v\n%+v\n%+v", err1, err2, owner, plain)
	}
	args := nmcli.SRIOVOwnersArgs([]string{u1, u2})[1:]
	r := run("sriov-owners", args...)
	if r.Exit != 0 {
		t.Fatalf("%v: %+v", args, r)
	}
	got, err := nmcli.ParseSRIOVOwners(r.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	want := []nmcli.SRIOVOwner{{UUID: u1, Name: "ib5-vfs", Interface: "ib5", TotalVFs: "4"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("owners (-want +got):\n%s\n%s", d, r.Stdout)
	}
}
