package firmware

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/providers/firmware/mlxfmt"
)

// TestLedgerFile: the ledger is written 0600 under the host's root, read
// back as written, refused with its path when an entry lacks what it
// needs, and removed when its last entry goes.
func TestLedgerFile(t *testing.T) {
	dir := t.TempDir()
	f, err := host.NewRootFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	e := LedgerEntry{BootID: "b0", Device: "0000:3b:00.0", Parameter: "SRIOV_EN", Value: "True", Tool: MSTConfig}
	if err := updateLedger(f, func(l *Ledger) bool { l.Entries = append(l.Entries, e); return true }); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, LedgerPath)
	fi, err := os.Stat(file)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("ledger %v, %v: want mode 0600", fi, err)
	}
	l, err := ReadLedger(f)
	if err != nil || len(l.Entries) != 1 || *l.Find("0000:3b:00.0", "SRIOV_EN") != e {
		t.Fatalf("read back %+v, %v", l, err)
	}
	if err := os.WriteFile(file, []byte(`{"entries": [{"boot_id": "b0", "device": "0000:3b:00.0"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadLedger(f); err == nil || !strings.Contains(err.Error(), LedgerPath) || !strings.Contains(err.Error(), "entry 1") {
		t.Errorf("an entry without its parameter: %v", err)
	}
	if err := updateLedger(f, func(l *Ledger) bool { return true }); err == nil {
		t.Error("a ledger that cannot be read was rewritten")
	}
	if err := os.WriteFile(file, []byte(`{"entries": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := updateLedger(f, func(l *Ledger) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("an empty ledger stays: %v", err)
	}
}

// TestKeepEntry: after an apply a ledger entry stays while the spec asks
// for its value (written as the spec or the tool writes it: ETH, eth,
// ETH(2)) and the value is not current; it leaves when the value is
// current or the spec asks for another value or nothing.
func TestKeepEntry(t *testing.T) {
	const pci = "0000:3b:00.0"
	ib, eth := mlxfmt.Enum("IB", 1), mlxfmt.Enum("ETH", 2)
	for _, tc := range []struct {
		name    string
		staged  string
		asked   string // "" = the spec does not ask for the parameter
		current mlxfmt.Value
		keep    bool
	}{
		{"pending", "ETH", "ETH", ib, true},
		{"echoed, asked by name", "ETH(2)", "ETH", ib, true},
		{"by name, asked echoed", "ETH", "ETH(2)", ib, true},
		{"other case", "eth", "ETH", ib, true},
		{"current read fails", "ETH", "ETH", mlxfmt.Value{}, true},
		{"took", "ETH", "ETH", eth, false},
		{"echoed took", "ETH(2)", "ETH", eth, false},
		{"spec asks another value", "ETH(2)", "IB", ib, false},
		{"spec drops it", "ETH", "", ib, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := map[string]map[string]string{pci: {}}
			if tc.asked != "" {
				asked[pci]["LINK_TYPE_P1"] = tc.asked
			}
			current := map[string]map[string]mlxfmt.Value{pci: {}}
			if tc.current.Kind != mlxfmt.KindAbsent {
				current[pci]["LINK_TYPE_P1"] = tc.current
			}
			e := LedgerEntry{BootID: "b0", Device: pci, Parameter: "LINK_TYPE_P1", Value: tc.staged}
			if got := keepEntry(e, asked, current); got != tc.keep {
				t.Errorf("keepEntry(%s staged, %q asked, current %v) = %v, want %v", tc.staged, tc.asked, tc.current, got, tc.keep)
			}
		})
	}
}

// TestEntryCheck: what became of a ledger entry, from its parameter's row
// and this boot's ID.
func TestEntryCheck(t *testing.T) {
	ib, eth := mlxfmt.Enum("IB", 1), mlxfmt.Enum("ETH", 2)
	e := LedgerEntry{BootID: "b0", Device: "0000:3b:00.0", Parameter: "LINK_TYPE_P1", Value: "ETH"}
	echoed := e
	echoed.Value = "ETH(2)"
	for _, tc := range []struct {
		name  string
		entry LedgerEntry
		boot  string
		row   *mlxfmt.Param
		want  EntryState
	}{
		{"staged this boot", e, "b0", &mlxfmt.Param{Current: ib, NextBoot: eth}, EntryPending},
		{"a reboot did not take", e, "b1", &mlxfmt.Param{Current: ib, NextBoot: eth}, EntryFailed},
		{"echoed, a reboot did not take", echoed, "b1", &mlxfmt.Param{Current: ib, NextBoot: eth}, EntryFailed},
		{"no boot ID", e, "", &mlxfmt.Param{Current: ib, NextBoot: eth}, EntryPending},
		{"took", e, "b1", &mlxfmt.Param{Current: eth, NextBoot: eth}, EntryTook},
		{"echoed took", echoed, "b1", &mlxfmt.Param{Current: eth, NextBoot: eth}, EntryTook},
		{"un-staged", e, "b1", &mlxfmt.Param{Current: ib, NextBoot: ib}, EntryUnstaged},
		{"not read", e, "b1", nil, EntryUnread},
		{"no Current column", e, "b1", &mlxfmt.Param{NextBoot: eth}, EntryUnread},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.entry.Check(tc.boot, tc.row); got != tc.want {
				t.Errorf("Check = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestLedgerRefusesIncompleteEntry: an entry lacking its device, its
// parameter or its boot_id (each alone) is refused with its number and
// the ledger's path; the complete entry is read.
func TestLedgerRefusesIncompleteEntry(t *testing.T) {
	dir := t.TempDir()
	f, err := host.NewRootFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(LedgerPath)), 0o755); err != nil {
		t.Fatal(err)
	}
	full := map[string]string{"boot_id": "b0", "device": "0000:3b:00.0", "parameter": "SRIOV_EN", "value": "True"}
	for _, missing := range []string{"", "boot_id", "device", "parameter"} {
		var fields []string
		for _, k := range []string{"boot_id", "device", "parameter", "value"} {
			if k != missing {
				fields = append(fields, `"`+k+`": "`+full[k]+`"`)
			}
		}
		text := `{"entries": [{"boot_id": "b0", "device": "0000:3b:00.1", "parameter": "X", "value": "1"}, {` + strings.Join(fields, ", ") + `}]}`
		if err := os.WriteFile(filepath.Join(dir, LedgerPath), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := ReadLedger(f)
		if missing == "" {
			if err != nil || len(l.Entries) != 2 {
				t.Errorf("a complete ledger: %+v, %v", l, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), LedgerPath) || !strings.Contains(err.Error(), "entry 2 lacks") {
			t.Errorf("an entry without %s: %+v, %v; want it refused as entry 2", missing, l, err)
		}
	}
}

// TestSaidPowerCycleIsPerCard: the tool's power-cycle notice, recorded
// with a value staged through one function, holds for every function of
// that card (they share the firmware configuration), for that parameter
// and value only, and for no other card.
func TestSaidPowerCycleIsPerCard(t *testing.T) {
	l := &Ledger{Entries: []LedgerEntry{
		{BootID: "b0", Device: "0000:3b:00.0", Parameter: "LINK_TYPE_P2", Value: "ETH", Tool: MSTConfig, Activation: "power-cycle"},
		{BootID: "b0", Device: "0000:5e:00.0", Parameter: "SRIOV_EN", Value: "True", Tool: MSTConfig},
	}}
	for _, tc := range []struct {
		pci, param, value string
		want              bool
	}{
		{"0000:3b:00.0", "LINK_TYPE_P2", "ETH", true},
		{"0000:3b:00.1", "LINK_TYPE_P2", "ETH", true},
		{"0000:3b:00.1", "LINK_TYPE_P2", "ETH(2)", true},
		{"0000:3b:00.1", "LINK_TYPE_P2", "IB", false},
		{"0000:3b:00.1", "LINK_TYPE_P1", "ETH", false},
		{"0000:3c:00.0", "LINK_TYPE_P2", "ETH", false},
		{"0000:5e:00.0", "SRIOV_EN", "True", false},
	} {
		got := l.SaidPowerCycle(tc.pci, tc.param, tc.value)
		if (got != nil) != tc.want || (got != nil && got.By != "power-cycle") {
			t.Errorf("SaidPowerCycle(%s, %s, %s) = %+v, want power-cycle %v", tc.pci, tc.param, tc.value, got, tc.want)
		}
	}
	var none *Ledger
	if got := none.SaidPowerCycle("0000:3b:00.0", "LINK_TYPE_P2", "ETH"); got != nil {
		t.Errorf("no ledger: %+v", got)
	}
}

// TestBurnedHere: the image file is not needed when the ledger has the
// burn of the asked version on that function and the flash holds it; a
// burn of another version, another function's burn, a flash holding
// another version or a flash that could not be read do not count.
func TestBurnedHere(t *testing.T) {
	const pci = "0000:3b:00.0"
	ledger := func(dev, v string) *Ledger {
		return &Ledger{Entries: []LedgerEntry{{BootID: "b0", Device: dev, Parameter: LedgerImage, Value: v, Tool: "mstflint"}}}
	}
	flash := func(v string) *ImageObs {
		return &ImageObs{Flash: &mlxfmt.FlintQuery{FWVersion: v, PSID: "MT_0000000222"}}
	}
	for _, tc := range []struct {
		name string
		obs  *Observed
		img  *ImageObs
		want bool
	}{
		{"burned here, on the flash", &Observed{Ledger: ledger(pci, "20.36.1012")}, flash("20.36.1012"), true},
		{"another version burned", &Observed{Ledger: ledger(pci, "20.37.1010")}, flash("20.36.1012"), false},
		{"another function's burn", &Observed{Ledger: ledger("0000:5e:00.0", "20.36.1012")}, flash("20.36.1012"), false},
		{"the flash holds another", &Observed{Ledger: ledger(pci, "20.36.1012")}, flash("20.35.1012"), false},
		{"the flash was not read", &Observed{Ledger: ledger(pci, "20.36.1012")}, &ImageObs{FlashErr: os.ErrNotExist, Flash: &mlxfmt.FlintQuery{FWVersion: "20.36.1012"}}, false},
		{"no flash query", &Observed{Ledger: ledger(pci, "20.36.1012")}, &ImageObs{}, false},
		{"no ledger", &Observed{}, flash("20.36.1012"), false},
	} {
		if got := burnedHere(tc.obs, pci, "20.36.1012", tc.img); got != tc.want {
			t.Errorf("%s: burnedHere = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestCheckImage: a burned image's entry against the running version and
// this boot: it took when the version runs; pending in the boot it was
// burned in, and on a host with no boot ID (a reboot cannot be told);
// failed in a later boot; unread without a running version.
func TestCheckImage(t *testing.T) {
	e := LedgerEntry{BootID: "b0", Device: "0000:3b:00.0", Parameter: LedgerImage, Value: "20.36.1012"}
	for _, tc := range []struct {
		boot, running string
		want          EntryState
	}{
		{"b0", "20.35.1012", EntryPending},
		{"", "20.35.1012", EntryPending},
		{"b1", "20.35.1012", EntryFailed},
		{"b1", "20.36.1012", EntryTook},
		{"", "20.36.1012", EntryTook},
		{"b1", "", EntryUnread},
	} {
		if got := e.CheckImage(tc.boot, tc.running); got != tc.want {
			t.Errorf("CheckImage(boot %q, running %q) = %s, want %s", tc.boot, tc.running, got, tc.want)
		}
	}
}

// TestLedgerFindByParameter: a function can have several values staged
// at once (a LINK_TYPE and SRIOV_EN, or a burned image beside them).
// Find picks the entry of the asked parameter, not the function's first;
// a second set on the function adds its own entry and keeps the first;
// and a burn of the asked version counts when a parameter's entry comes
// before it in the ledger.
func TestLedgerFindByParameter(t *testing.T) {
	const pci = "0000:3b:00.0"
	l := &Ledger{Entries: []LedgerEntry{
		{BootID: "b0", Device: pci, Parameter: "LINK_TYPE_P1", Value: "ETH", Tool: MSTConfig},
		{BootID: "b0", Device: pci, Parameter: "SRIOV_EN", Value: "True", Tool: MSTConfig},
		{BootID: "b0", Device: pci, Parameter: LedgerImage, Value: "20.36.1012", Tool: "mstflint"},
		{BootID: "b0", Device: "0000:3b:00.1", Parameter: "NUM_OF_VFS", Value: "8", Tool: MSTConfig},
	}}
	for _, tc := range []struct{ pci, param, want string }{
		{pci, "LINK_TYPE_P1", "ETH"},
		{pci, "SRIOV_EN", "True"},
		{pci, LedgerImage, "20.36.1012"},
		{pci, "NUM_OF_VFS", ""},
		{"0000:3b:00.1", "NUM_OF_VFS", "8"},
		{"0000:3b:00.1", "SRIOV_EN", ""},
	} {
		got := l.Find(tc.pci, tc.param)
		switch {
		case tc.want == "" && got != nil:
			t.Errorf("Find(%s, %s) = %+v, want none", tc.pci, tc.param, *got)
		case tc.want != "" && (got == nil || got.Parameter != tc.param || got.Value != tc.want):
			t.Errorf("Find(%s, %s) = %+v, want %s=%s", tc.pci, tc.param, got, tc.param, tc.want)
		}
	}

	img := &ImageObs{Flash: &mlxfmt.FlintQuery{FWVersion: "20.36.1012", PSID: "MT_0000000222"}}
	if !burnedHere(&Observed{Ledger: l}, pci, "20.36.1012", img) {
		t.Error("a burn recorded after a parameter's entry on the function is not seen")
	}

	dir := t.TempDir()
	h, err := host.NewRooted(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.FS.MkdirAll("/proc/sys/kernel/random", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := h.FS.WriteFile(BootIDPath, []byte("b0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stage := func(name, value string) {
		t.Helper()
		pl := &payload{tool: MSTConfig, pci: pci, sets: []string{name + "=" + value}, values: map[string]string{name: value}}
		if waits, _, err := recordStaged(h, nil, pl); err != nil || !waits {
			t.Fatalf("staging %s=%s: waits %v, %v", name, value, waits, err)
		}
	}
	stage("LINK_TYPE_P1", "ETH")
	stage("SRIOV_EN", "True")
	stage("LINK_TYPE_P1", "IB")
	got, err := ReadLedger(h.FS)
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, e := range got.Entries {
		have = append(have, e.Device+" "+e.Parameter+"="+e.Value)
	}
	if want := []string{pci + " LINK_TYPE_P1=IB", pci + " SRIOV_EN=True"}; strings.Join(have, "; ") != strings.Join(want, "; ") {
		t.Errorf("the ledger after three sets on one function:\n  %s\nwant\n  %s", strings.Join(have, "\n  "), strings.Join(want, "\n  "))
	}
}
