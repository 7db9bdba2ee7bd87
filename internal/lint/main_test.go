package main

import (
	"strings"
	"testing"
)

func TestCheckFindsCallsPastTheBoundary(t *testing.T) {
	got, err := check("testdata/tree")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"audit/addr.go:6:9: builds a plan.Address by hand; make it with plan.Addr",
		"audit/list.go:3:8: imports github.com/rdmaform/rdmaform/providers/toy; the audit checks what the providers declare",
		"plan/bad.go:5:2: imports os/exec", "plan/bad.go:9:9: os.ReadFile",
		"providers/firmware/mlxfmt/parse.go:3:8: imports github.com/rdmaform/rdmaform/sim/mlxemu; a parser does not depend on the simulator",
		"providers/other/other.go:5:2: imports github.com/rdmaform/rdmaform/providers/toy; a provider does not import another",
		"providers/toy/capture.go:4:2: imports context; CaptureFrom builds show from what Observe read",
		"providers/toy/capture.go:6:2: imports github.com/rdmaform/rdmaform/host; CaptureFrom builds show",
		"providers/toy/toy.go:14:1: Provider.Make belongs in apply.go",
		"providers/toy/toy.go:18:42: asserts a payload; use plan.PayloadOf",
		"providers/toy/toy.go:9:9: reads .After; an attribute is for people",
		"sim/emu/emu_test.go:3:8: imports github.com/rdmaform/rdmaform/providers/firmware/mlxfmt; the simulator shares no code with the providers' parsers"}
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("problem %d = %q, want it to contain %q", i, got[i], w)
		}
	}
}

func TestRepositoryIsClean(t *testing.T) {
	got, err := check("../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > 0 {
		t.Errorf("calls past the OS boundary:\n%s", strings.Join(got, "\n"))
	}
}
