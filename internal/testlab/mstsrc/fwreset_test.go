package mstsrc

import (
	"os"
	"strings"
	"testing"
)

// The src-* cases of testdata/real/mstfwreset, printed again from the
// format strings of mstflint 4.21's small_utils/mstfwreset.py and
// mlxfwresetlib/cmd_reg_mfrl.py, cmd_reg_mcam.py, transcribed below. No
// code of the emulator (sim/mlxemu/fwreset.go) or of rdmaform's parser
// (providers/firmware/mlxfmt/fwreset.go) is used.

// ljust is Python's "{:<n}": the text, padded with spaces to n.
func ljust(s string, n int) string {
	if len(s) >= n {
		return s
	}
	return s + strings.Repeat(" ", n-len(s))
}

// row is "{0}: {1:<62}-{2:<14}{3}\n".format(n, description, supported, default).
func row(n, desc, supported, def string) string {
	return n + ": " + ljust(desc, 62) + "-" + ljust(supported, 14) + def + "\n"
}

// reset_levels_db and reset_types_db of cmd_reg_mfrl.py 4.21: level,
// description, mask, support_reset_type.
var levelsDB = []struct {
	level, desc string
	mask        int
	typed       bool
}{
	{"0", `Driver, PCI link, network link will remain up ("live-Patch")`, 0x1, false},
	{"3", "Driver restart and PCI reset", 0x8, true},
	{"4", "Warm Reboot", 0x40, true},
}

var typesDB = []struct {
	typ, desc string
	mask      int
}{
	{"0", "Full chip reset", 0x1},
	{"1", "Phy-less reset (keep network port active during reset)", 0x2},
	{"2", "NIC only reset (for SoC devices)", 0x4},
}

// query prints main()'s query branch: print(""), print(mfrl.query_text()),
// print(mcam.reset_sync_query_text()); with no level, default_reset_level
// raises and main prints "-E- %s." and exits 1.
func query(levelMask, typeMask int, driverSync bool) string {
	var b strings.Builder
	b.WriteString("\n")
	def := ""
	for _, l := range levelsDB {
		if levelMask&l.mask != 0 {
			def = l.level
			break
		}
	}
	if def == "" {
		return b.String() + "-E- There is no supported reset-level.\n"
	}
	b.WriteString("Reset-levels:\n")
	var rel []string
	for _, l := range levelsDB {
		sup, d := "Not Supported", ""
		if levelMask&l.mask != 0 {
			sup = "Supported"
		}
		if l.level == def {
			d = "(default)"
		}
		b.WriteString(row(l.level, l.desc, sup, d))
		if l.typed {
			rel = append(rel, l.level)
		}
	}
	b.WriteString("\nReset-types ")
	b.WriteString("(relevant only for reset-levels " + strings.Join(rel, ",") + "):\n")
	for _, t := range typesDB {
		// FULL_CHIP is 'supported': True in the db; the others follow the mask.
		sup, d := "Not Supported", ""
		if t.typ == "0" || typeMask&t.mask != 0 {
			sup = "Supported"
		}
		if t.typ == "0" {
			d = "(default)"
		}
		b.WriteString(row(t.typ, t.desc, sup, d))
	}
	b.WriteString("\n") // print() of a text ending in "\n"
	b.WriteString("Reset-sync (relevant only for reset-level 3):\n")
	b.WriteString(row("0", "Tool is the owner", "Supported", "(default)"))
	s := "Not supported"
	if driverSync {
		s = "Supported"
	}
	b.WriteString(row("1", "Driver is the owner", s, ""))
	b.WriteString("\n")
	return b.String()
}

// reset prints main()'s reset branch for --level 3 -y: the level, AskUser's
// question answered y, then resetFlow's steps ("-I- %-40s-" and "Done"),
// or the VF refusal of MlnxDriverLinux.
func reset(dev string, vfsRefused bool) string {
	var b strings.Builder
	b.WriteString("\n")
	b.WriteString("Requested reset level for device, " + dev + ":\n" + "\n")
	b.WriteString("3: Driver restart and PCI reset\n")
	b.WriteString("Continue with reset" + "?[y/N] " + "y" + "\n")
	if vfsRefused {
		return b.String() + "-E- Reset virtual functions failed! Please reset virtual functions manually and resume operation.\n"
	}
	for _, s := range []string{"Sending Reset Command To Fw", "Stopping Driver", "Resetting PCI", "Starting Driver"} {
		b.WriteString("-I- " + ljust(s, 40) + "-" + "Done" + "\n")
	}
	b.WriteString("-I- FW was loaded successfully.\n")
	return b.String()
}

// TestResetSourceFormats: each src-* case of testdata/real/mstfwreset is,
// byte for byte, what mstflint 4.21's format strings print.
func TestResetSourceFormats(t *testing.T) {
	cases := map[string]string{
		"src-query-l34":       query(0x48, 0x1, false),
		"src-query-l034-sync": query(0x49, 0x1, true),
		"src-query-no-level":  query(0, 0x1, false),
		"src-reset-l3":        reset("0000:3b:00.0", false),
		"src-reset-vfs":       reset("0000:3b:00.0", true),
	}
	files, _ := os.ReadDir("../../../testdata/real/mstfwreset")
	n := 0
	for _, f := range files {
		if name, ok := strings.CutSuffix(f.Name(), ".stdout"); ok && strings.HasPrefix(name, "src-") {
			n++
			if _, ok := cases[name]; !ok {
				t.Errorf("%s has no rendering from the source's formats here", name)
			}
		}
	}
	if n != len(cases) {
		t.Errorf("%d src-* cases in testdata/real/mstfwreset, %d rendered here", n, len(cases))
	}
	for name, want := range cases {
		got, err := os.ReadFile("../../../testdata/real/mstfwreset/" + name + ".stdout")
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("%s differs from what mstflint 4.21's formats print:\n--- file\n%q\n--- formats\n%q", name, got, want)
		}
	}
}
