package simcheck_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/golden"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// realCase reads one case of testdata/real/DIR.
func realCase(t *testing.T, dir, name string) (argv []string, stdout, stderr string, code int) {
	t.Helper()
	c := golden.ReadCase(t, filepath.Join("..", "..", "..", "testdata", "real", dir), name)
	return c.Argv, string(c.Stdout), string(c.Stderr), c.Exit
}

// runSim runs an emulated tool on a fresh simulated host of a profile.
func runSim(t *testing.T, s *sim.Sim, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	res, err := s.RunTool(context.Background(), args)
	var ee *host.ExitError
	switch {
	case errors.As(err, &ee):
		return string(ee.Stdout), string(ee.Stderr), ee.Code
	case err != nil:
		t.Fatalf("%v: %v", args, err)
	}
	return string(res.Stdout), string(res.Stderr), 0
}

func newSim(t *testing.T, profile string) *sim.Sim {
	t.Helper()
	s, _ := simtest.New(t, profile, 0, nil)
	return s
}

// TestEmulatedDCBFailuresMatchReal: on a netdev without DCB or pause (the
// VM's virtio NIC) and on one that does not exist, the emulated dcb and
// ethtool print byte for byte what the real tools printed on a veth
// (captures in testdata/real), with the same exit status.
func TestEmulatedDCBFailuresMatchReal(t *testing.T) {
	s := newSim(t, "vm-soft")
	for _, c := range []struct{ dir, name, dev string }{
		{"dcb", "veth-pfc-json", "enp1s0"},
		{"dcb", "veth-ets-json", "enp1s0"},
		{"dcb", "veth-app-json", "enp1s0"},
		{"dcb", "veth-dcbx-json", "enp1s0"},
		{"dcb", "veth-pfc-text", "enp1s0"},
		{"dcb", "veth-pfc-set", "enp1s0"},
		{"dcb", "veth-app-replace", "enp1s0"},
		{"dcb", "no-such-device", "rf-none"},
		{"ethtool", "veth-pause", "enp1s0"},
		{"ethtool", "veth-set-pause", "enp1s0"},
		{"ethtool", "no-such-device", "rf-none"},
	} {
		t.Run(c.dir+"/"+c.name, func(t *testing.T) {
			argv, wantOut, wantErr, wantCode := realCase(t, c.dir, c.name)
			for i, a := range argv {
				if a == "v0" {
					argv[i] = c.dev
				}
			}
			out, errOut, code := runSim(t, s, argv...)
			if out != wantOut || errOut != wantErr || code != wantCode {
				t.Errorf("%v:\n emulated: exit %d, stdout %q, stderr %q\n real:     exit %d, stdout %q, stderr %q", argv, code, out, errOut, wantCode, wantOut, wantErr)
			}
		})
	}
	// dcb dcbx set without a flag: its usage, exit 0, nothing changed.
	m := newSim(t, "cx5-roce")
	_, wantOut, wantErr, wantCode := realCase(t, "dcb", "dcbx-set-no-flags")
	out, errOut, code := runSim(t, m, "dcb", "dcbx", "set", "dev", "ens1f0np0")
	if out != wantOut || errOut != wantErr || code != wantCode {
		t.Errorf("dcb dcbx set without a flag: exit %d, %q %q; real: exit %d, %q %q", code, out, errOut, wantCode, wantOut, wantErr)
	}
}

// jsonShape is the ordered list of an object's keys with each value's
// JSON type (and length, for arrays): the layout, without the values.
func jsonShape(t *testing.T, b string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(b))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %q", b)
	}
	var shape []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		var x any
		_ = json.Unmarshal(v, &x)
		desc := k.(string) + ":"
		switch e := x.(type) {
		case []any:
			desc += "array"
			nested := false
			if len(e) > 0 {
				_, nested = e[0].([]any)
			}
			if !nested {
				// Fixed-size arrays (eight priorities or classes); a list
				// of entries has as many as the table holds.
				desc += strconv.Itoa(len(e))
			}
			if len(e) > 0 {
				switch e[0].(type) {
				case bool:
					desc += " of bool"
				case float64:
					desc += " of number"
				case string:
					desc += " of string"
				case []any:
					desc += " of array" + strconv.Itoa(len(e[0].([]any)))
				}
			}
		case bool:
			desc += "bool"
		case float64:
			desc += "number"
		case string:
			desc += "string"
		}
		shape = append(shape, desc)
	}
	return shape
}

// TestEmulatedDCBLayouts: what the emulated dcb and ethtool print on an
// mlx5 netdev has the layout the real tools print (the source layouts and
// man page examples of testdata/real): the same JSON keys in the same
// order with values of the same types, the same text fields in the same
// order, the same ethtool lines.
func TestEmulatedDCBLayouts(t *testing.T) {
	s := newSim(t, "cx5-roce")
	// Give the app table entries, as the layout with entries is the one
	// to compare.
	if _, errOut, code := runSim(t, s, "dcb", "app", "replace", "dev", "ens1f0np0", "dscp-prio", "26:3", "48:6"); code != 0 || errOut != "" {
		t.Fatalf("dcb app replace: exit %d, %s", code, errOut)
	}
	for _, c := range []struct{ name, object string }{
		{"src-pfc-json", "pfc"}, {"src-ets-json", "ets"}, {"src-app-json", "app"}, {"src-dcbx-json", "dcbx"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, want, _, _ := realCase(t, "dcb", c.name)
			got, _, code := runSim(t, s, "dcb", "-j", c.object, "show", "dev", "ens1f0np0")
			if code != 0 {
				t.Fatalf("exit %d", code)
			}
			if g, w := jsonShape(t, got), jsonShape(t, want); strings.Join(g, " ") != strings.Join(w, " ") {
				t.Errorf("layout of dcb -j %s show:\n emulated %v\n real     %v", c.object, g, w)
			}
			if !strings.HasSuffix(got, "\n") || strings.Count(got, "\n") != 1 {
				t.Errorf("dcb -j prints one line: %q", got)
			}
		})
	}
	// Text: the man pages' field names, in order, on the same lines
	// (values aside; dcb prints a space after each group).
	value := regexp.MustCompile(`^(on|off|\d+)$`)
	textShape := func(s string) string {
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
			var toks []string
			for _, tok := range strings.Fields(l) {
				if k, _, ok := strings.Cut(tok, ":"); ok {
					tok = k + ":V"
				} else if value.MatchString(tok) {
					tok = "V"
				}
				toks = append(toks, tok)
			}
			lines = append(lines, strings.Join(toks, " "))
		}
		return strings.Join(lines, "|")
	}
	_, want, _, _ := realCase(t, "dcb", "man-pfc-text")
	got, _, _ := runSim(t, s, "dcb", "pfc", "show", "dev", "ens1f0np0")
	if textShape(got) != textShape(want) {
		t.Errorf("dcb pfc show:\n emulated %q\n man page %q", got, want)
	}
	_, want, _, _ = realCase(t, "dcb", "man-ets-text")
	got, _, _ = runSim(t, s, "dcb", "ets", "show", "dev", "ens1f0np0")
	for _, l := range strings.Split(strings.TrimSpace(want), "\n") {
		key := strings.Fields(l)[0]
		re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(key) + `( \d:[a-z0-9]+){8} $`)
		if !re.MatchString(got) {
			t.Errorf("dcb ets show has no %s line like the man page's %q:\n%s", key, l, got)
		}
	}
	_, want, _, _ = realCase(t, "dcb", "man-app-text")
	got, _, _ = runSim(t, s, "dcb", "-N", "app", "show", "dev", "ens1f0np0")
	if textShape(got) != "dscp-prio 26:V 48:V" || !strings.HasPrefix(want, "dscp-prio ") {
		t.Errorf("dcb -N app show: %q (man page: %q)", got, want)
	}
	// ethtool -a: the source layout's lines, byte for byte but the values.
	_, want, _, _ = realCase(t, "ethtool", "src-pause")
	got, _, _ = runSim(t, s, "ethtool", "-a", "ens1f0np0")
	onoff := regexp.MustCompile(`\b(on|off)\n`)
	if onoff.ReplaceAllString(got, "V\n") != onoff.ReplaceAllString(want, "V\n") {
		t.Errorf("ethtool -a:\n emulated %q\n real     %q", got, want)
	}
	if !bytes.Contains([]byte(got), []byte("Pause parameters for ens1f0np0:\n")) {
		t.Errorf("ethtool -a names another netdev: %q", got)
	}
}

// keyOrder is the order of an object's keys.
func keyOrder(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", raw)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// TestEmulatedIPLinkMatchesReal: the emulated `ip -j link show dev PF`
// prints the link object's keys in the order the real ip prints them (a
// capture), each VF's in print_vfinfo's order (the source layouts, with
// and without the GUIDs a kernel before 5.5 leaves out), and a missing
// netdev as the real ip does.
func TestEmulatedIPLinkMatchesReal(t *testing.T) {
	withVFs := func(profile string, mutate func(st *sim.State)) *sim.Sim {
		var pci string
		s, h := simtest.New(t, profile, 0, func(st *sim.State) {
			for _, a := range st.Firmware {
				a.Param("SRIOV_EN").Current, a.Param("NUM_OF_VFS").Current = 1, 4
			}
			if mutate != nil {
				mutate(st)
			}
			pci = st.Devices[0].PCI
		})
		if err := h.FS.WriteAttr("/sys/bus/pci/devices/"+pci+"/sriov_numvfs", []byte("2\n")); err != nil {
			t.Fatal(err)
		}
		return s
	}
	split := func(t *testing.T, out string) (link json.RawMessage, vf json.RawMessage) {
		t.Helper()
		var links []map[string]json.RawMessage
		if err := json.Unmarshal([]byte(out), &links); err != nil || len(links) != 1 {
			t.Fatalf("%v: %s", err, out)
		}
		var vfs []json.RawMessage
		if v, ok := links[0]["vfinfo_list"]; ok {
			if err := json.Unmarshal(v, &vfs); err != nil || len(vfs) == 0 {
				t.Fatalf("vfinfo_list: %v %s", err, v)
			}
			vf = vfs[0]
		}
		var raw []json.RawMessage
		_ = json.Unmarshal([]byte(out), &raw)
		return raw[0], vf
	}
	_, veth, _, _ := realCase(t, "ip", "veth-link-json")
	realLink, _ := split(t, veth)
	wantLink := keyOrder(t, realLink)
	// The veth capture has "link" (its peer), which an adapter has not.
	wantLink = append(wantLink[:1], wantLink[2:]...)
	for _, c := range []struct{ profile, dev, layout string }{
		{"cx6-vpi-ib", "ib0", "src-ib-pf-vfs"},
		{"cx5-roce", "ens1f0np0", "src-eth-pf-vfs"},
	} {
		t.Run(c.layout, func(t *testing.T) {
			s := withVFs(c.profile, nil)
			out, _, code := runSim(t, s, "ip", "-j", "link", "show", "dev", c.dev)
			if code != 0 {
				t.Fatalf("exit %d", code)
			}
			link, vf := split(t, out)
			if got := keyOrder(t, link); strings.Join(got[:len(got)-1], " ") != strings.Join(wantLink, " ") || got[len(got)-1] != "vfinfo_list" {
				t.Errorf("link keys:\n emulated %v\n real     %v + vfinfo_list", got, wantLink)
			}
			_, want, _, _ := realCase(t, "ip", c.layout)
			_, wantVF := split(t, want)
			if g, w := keyOrder(t, vf), keyOrder(t, wantVF); strings.Join(g, " ") != strings.Join(w, " ") {
				t.Errorf("VF keys:\n emulated %v\n source   %v", g, w)
			}
		})
	}
	t.Run("src-ib-pf-vfs-old-kernel", func(t *testing.T) {
		s := withVFs("cx6-vpi-ib", func(st *sim.State) { st.Devices[0].SRIOV = &sim.SRIOVState{NoGUIDReadback: true} })
		out, _, _ := runSim(t, s, "ip", "-j", "link", "show", "dev", "ib0")
		_, vf := split(t, out)
		_, want, _, _ := realCase(t, "ip", "src-ib-pf-vfs-old-kernel")
		_, wantVF := split(t, want)
		if g, w := keyOrder(t, vf), keyOrder(t, wantVF); strings.Join(g, " ") != strings.Join(w, " ") {
			t.Errorf("VF keys:\n emulated %v\n source   %v", g, w)
		}
	})
	s := newSim(t, "cx5-roce")
	argv, wantOut, wantErr, wantCode := realCase(t, "ip", "no-such-device")
	out, errOut, code := runSim(t, s, argv...)
	if out != wantOut || errOut != wantErr || code != wantCode {
		t.Errorf("%v: emulated exit %d %q %q, real exit %d %q %q", argv, code, out, errOut, wantCode, wantOut, wantErr)
	}
}
