package bootunit

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/internal/testlab/systemdlab"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var update = flag.Bool("update", false, "rewrite testdata/rdmaform.service")

// TestUnitFileGolden: the unit's bytes are reviewed in testdata and stable.
func TestUnitFileGolden(t *testing.T) {
	golden := filepath.Join("testdata", UnitName)
	got := UnitFile(DefaultBinary)
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("unit file (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(string(got), string(UnitFile(DefaultBinary))); diff != "" {
		t.Errorf("two renderings differ (-first +second):\n%s", diff)
	}
}

// TestUnitFileVerifies: systemd-analyze verify accepts the unit. The
// binary is a stand-in executable (verify checks ExecStart exists); the
// rest of the unit is what is installed.
func TestUnitFileVerifies(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "rdmaform")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(dir, UnitName)
	if err := os.WriteFile(unit, UnitFile(bin), 0o644); err != nil {
		t.Fatal(err)
	}
	systemdlab.Verify(t, unit)
}

func TestDiff(t *testing.T) {
	const bootSpec = "version: 1\npersistence: boot-unit\n"
	const noneSpec = "version: 1\npersistence: none\n"
	unit := UnitFile(DefaultBinary)
	tests := []struct {
		name string
		spec string
		obs  *Observed
		want []string // "address action: attr before->after ..." then findings
	}{
		{
			name: "install on a clean host",
			spec: bootSpec,
			obs:  &Observed{Binary: true},
			want: []string{"boot_unit[rdmaform.service] create: unit_file ->" + digest(unit) + " boot_spec ->" + digest([]byte(bootSpec)) + " enabled false->true"},
		},
		{
			name: "installed and current",
			spec: bootSpec,
			obs:  &Observed{Unit: unit, Spec: []byte(bootSpec), Enabled: true, Link: UnitPath, Binary: true},
		},
		{
			name: "rdmaform is not where the unit runs it",
			spec: bootSpec,
			obs:  &Observed{Unit: unit, Spec: []byte(bootSpec), Enabled: true, Link: UnitPath},
			want: []string{"spec.yaml:2:14: error: $.persistence: the boot unit would run " + DefaultBinary + ", which does not exist on this host: install rdmaform there (the package or make install) or set persistence: none"},
		},
		{
			name: "spec edited since",
			spec: bootSpec,
			obs:  &Observed{Unit: unit, Spec: []byte("version: 1\n"), Enabled: true, Link: UnitPath, Binary: true},
			want: []string{"boot_unit[rdmaform.service] update: boot_spec " + digest([]byte("version: 1\n")) + "->" + digest([]byte(bootSpec))},
		},
		{
			name: "old unit, link elsewhere",
			spec: bootSpec,
			obs:  &Observed{Unit: []byte("[Service]\n"), Spec: []byte(bootSpec), Link: "/lib/systemd/system/rdmaform.service", Binary: true},
			want: []string{"boot_unit[rdmaform.service] update: unit_file " + digest([]byte("[Service]\n")) + "->" + digest(unit) + " enabled false->true relink"},
		},
		{
			name: "none removes rdmaform's unit",
			spec: noneSpec,
			obs:  &Observed{Unit: unit, Spec: []byte(bootSpec), Enabled: true, Link: UnitPath},
			want: []string{"boot_unit[rdmaform.service] delete: unit_file " + digest(unit) + "-> boot_spec " + digest([]byte(bootSpec)) + "-> enabled true->false"},
		},
		{
			name: "none with nothing installed",
			spec: noneSpec,
			obs:  &Observed{},
		},
		{
			name: "none leaves a unit rdmaform did not write",
			spec: noneSpec,
			obs:  &Observed{Unit: []byte("[Service]\nExecStart=/bin/true\n")},
			want: []string{`spec.yaml:2:14: error: $.persistence: /etc/systemd/system/rdmaform.service was not written by rdmaform (no "# Written by rdmaform" first line); persistence: none leaves it alone: remove it by hand if it is rdmaform's`},
		},
		{
			name: "no persistence key: nothing read, nothing planned",
			spec: "version: 1\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, rep := schema.Parse("spec.yaml", []byte(tt.spec))
			if len(rep) > 0 {
				t.Fatal(rep)
			}
			prop := diff(&plan.Request{Spec: spec, Inv: &inventory.Inventory{}}, tt.obs, DefaultBinary)
			var got []string
			for _, c := range prop.Changes {
				s := c.Address.String() + " " + c.Action.String() + ":"
				for _, a := range c.Attributes {
					s += " " + a.Name + " " + a.Before + "->" + a.After
				}
				if pl := c.Payload.(*payload); pl.relink {
					s += " relink"
				}
				got = append(got, s)
				if c.Activation != plan.Now {
					t.Errorf("%s: activation %s; want now", c.Address, c.Activation)
				}
			}
			for _, e := range prop.Errors {
				got = append(got, e.String())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("diff (-want +got):\n%s", diff)
			}
		})
	}
}
