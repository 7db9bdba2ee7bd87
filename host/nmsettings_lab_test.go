package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/golden"
	"github.com/rdmaform/rdmaform/internal/testlab/nmlab"
)

var captureNM = flag.Bool("capture-nm", false, "rewrite testdata/real/nm-dbus/errors.json from the real NetworkManager")

// nmCase is one D-Bus error of the real NetworkManager.
type nmCase struct {
	Case    string `json:"case"`
	Call    string `json:"call"`
	Method  string `json:"method"`
	Name    string `json:"name"`
	Message string `json:"message"`
}

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
var tmpRE = regexp.MustCompile(`/tmp/[^ :)]*`)

func nmCaseOf(name, call string, err error) nmCase {
	c := nmCase{Case: name, Call: call}
	var e *host.NMError
	if !errors.As(err, &e) {
		c.Message = fmt.Sprintf("not an *NMError: %v", err)
		return c
	}
	c.Method, c.Name = e.Method, e.Name
	c.Message = tmpRE.ReplaceAllString(uuidRE.ReplaceAllString(e.Message, "UUID"), "TMP")
	return c
}

func ibSettings(name string, set func(host.NMSettings)) host.NMSettings {
	s := host.NMSettings{}
	s.Set("connection", "id", name)
	s.Set("connection", "type", "infiniband")
	s.Set("infiniband", "transport-mode", "datagram")
	set(s)
	return s
}

// TestRealNMErrors captures, from a real NetworkManager 1.42 in the lab,
// each D-Bus error the ipoib provider maps: a refused property, a
// profile NetworkManager cannot activate, no such connection, a denied
// caller (polkit on, a non-root caller), NetworkManager stopped, and no
// bus at all. testdata/real/nm-dbus/errors.json is the capture
// (-capture-nm rewrites it); every run compares against it.
func TestRealNMErrors(t *testing.T) {
	ctx := context.Background()
	lab := nmlab.Start(t)
	nm := host.NewNetworkManager(lab.Env())
	var got []nmCase

	_, err := nm.AddConnection(ctx, ibSettings("bad-pkey", func(s host.NMSettings) {
		s.Set("infiniband", "parent", "ib0")
		s.Set("infiniband", "p-key", int32(0x8000))
	}))
	got = append(got, nmCaseOf("add-reserved-pkey", "AddConnection2 infiniband.parent ib0, infiniband.p-key 0x8000", err))
	_, err = nm.AddConnection(ctx, ibSettings("bad-name", func(s host.NMSettings) {
		s.Set("connection", "interface-name", "ib0")
		s.Set("infiniband", "parent", "ib0")
		s.Set("infiniband", "p-key", int32(0x8002))
	}))
	got = append(got, nmCaseOf("add-child-name", "AddConnection2 connection.interface-name ib0, infiniband.parent ib0, infiniband.p-key 0x8002", err))
	id, err := nm.AddConnection(ctx, ibSettings("ok", func(s host.NMSettings) { s.Set("connection", "interface-name", "ib0") }))
	if err != nil {
		t.Fatal(err)
	}
	err = nm.UpdateConnection(ctx, id, func(s host.NMSettings) { s.Set("ipv4", "method", "manual") })
	got = append(got, nmCaseOf("update-manual-without-addresses", "Update2 ipv4.method manual (no address-data)", err))
	err = nm.ActivateConnection(ctx, id)
	got = append(got, nmCaseOf("activate-no-device", "ActivateConnection of an infiniband profile on ib0 (no IPoIB device in the lab)", err))
	err = nm.DeleteConnection(ctx, "00000000-0000-4000-8000-000000000000")
	got = append(got, nmCaseOf("no-such-connection", "GetConnectionByUuid 00000000-0000-4000-8000-000000000000", err))

	// Polkit: NetworkManager authorizes through polkit; a caller that is
	// not root is refused.
	plab := nmlab.Start(t, nmlab.WithPolkit())
	rootNM := host.NewNetworkManager(plab.Env())
	if _, err := rootNM.AddConnection(ctx, ibSettings("as-root", func(s host.NMSettings) { s.Set("connection", "interface-name", "ib0") })); err != nil {
		t.Errorf("as root with auth-polkit=true: %v", err)
	}
	got = append(got, asNobody(t, plab))

	lab.StopNetworkManager()
	_, err = nm.Connections(ctx)
	got = append(got, nmCaseOf("not-running", "ListConnections on a bus without NetworkManager", err))
	_, err = host.NewNetworkManager([]string{"DBUS_SYSTEM_BUS_ADDRESS=unix:path=" + filepath.Join(t.TempDir(), "no-bus")}).Connections(ctx)
	got = append(got, nmCaseOf("no-bus", "ListConnections without a system bus", err))

	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "../testdata/real/nm-dbus/errors.json", append(b, '\n'), *captureNM, "go test ./host -run TestRealNMErrors -capture-nm")
}

// asNobody runs AddConnection2 as user nobody (65534) in a child process:
// this test binary again, with asNobodyEnv set (TestMain).
func asNobody(t *testing.T, lab *nmlab.Lab) nmCase {
	t.Helper()
	// The bus socket's directories must let nobody through.
	for d := lab.Dir(); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "nobody.json")
	if err := os.Chmod(filepath.Dir(out), 0o777); err != nil {
		t.Fatal(err)
	}
	// The test binary is in go's private build directory: a copy nobody
	// can run.
	bin := filepath.Join(filepath.Dir(out), "host.test")
	self, err := os.ReadFile(os.Args[0])
	if err == nil {
		err = os.WriteFile(bin, self, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(lab.Env(), asNobodyEnv+"="+out)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as nobody: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var c nmCase
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// asNobodyEnv names the file the child of asNobody writes its result to.
const asNobodyEnv = "RDMAFORM_NM_AS_NOBODY"

// TestMain runs the tests; in the child asNobody starts (asNobodyEnv
// set) it runs only the child's call, so no test of this package stands
// for it (one that returned at once would pass having checked nothing).
func TestMain(m *testing.M) {
	if out := os.Getenv(asNobodyEnv); out != "" {
		if err := nmAsNobody(out); err != nil {
			fmt.Fprintln(os.Stderr, "as nobody:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// nmAsNobody is the child of asNobody: AddConnection2 on the bus the
// environment names, its error written to out as an nmCase.
func nmAsNobody(out string) error {
	_, err := host.NewNetworkManager(os.Environ()).AddConnection(context.Background(), ibSettings("as-nobody", func(s host.NMSettings) { s.Set("connection", "interface-name", "ib0") }))
	b, merr := json.Marshal(nmCaseOf("permission-denied", "AddConnection2 as uid 65534 with auth-polkit=true", err))
	if merr != nil {
		return merr
	}
	return os.WriteFile(out, b, 0o644)
}
