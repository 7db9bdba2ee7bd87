package portstate_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/portstate"
	"github.com/rdmaform/rdmaform/schema"
)

// TestOfSysfs: the name part of the kernel's "N: NAME" values, with or
// without the number.
func TestOfSysfs(t *testing.T) {
	for in, want := range map[string]portstate.State{"4: ACTIVE": portstate.Active, "1: DOWN\n": portstate.Down, "ACTIVE_DEFER": portstate.ActiveDefer, "": ""} {
		if got := portstate.OfSysfs(in); got != want {
			t.Errorf("OfSysfs(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]portstate.Phys{"5: LinkUp": portstate.LinkUp, "2: Polling\n": portstate.Polling, "7: Phy Test": portstate.PhyTest, "4: PortConfigurationTraining": portstate.Training} {
		if got := portstate.PhysOfSysfs(in); got != want {
			t.Errorf("PhysOfSysfs(%q) = %q, want %q", in, got, want)
		}
	}
	if portstate.State("UP").Known() || !portstate.Active.Known() || portstate.Phys("Up").Known() || !portstate.PhyTest.Known() {
		t.Error("Known accepts a word the kernel does not print, or refuses one it does")
	}
}

// TestSchemaEnumsMatch: the spec's expect block accepts exactly these
// words (the schema's enum tags, which its JSON schema publishes).
func TestSchemaEnumsMatch(t *testing.T) {
	typ := reflect.TypeOf(schema.Expect{})
	for field, want := range map[string][]string{"State": strs(portstate.States), "PhysState": strs(portstate.PhysStates)} {
		f, _ := typ.FieldByName(field)
		if got := strings.Split(f.Tag.Get("enum"), ","); !reflect.DeepEqual(got, want) {
			t.Errorf("schema.Expect.%s enum %q, want %q", field, got, want)
		}
	}
}

func strs[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}
