package simcheck_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/providers/firmware/mlxfmt"
	"github.com/rdmaform/rdmaform/sim/mlxemu"
)

// realDir is the corpus of real outputs (testdata/real/PROVENANCE.md).
var realDir = filepath.Join("..", "..", "..", "testdata", "real")

// TestEmulatorMatchesRealLayouts: for every layout of the corpus's real
// outputs, the emulator's writer prints the same rows column for column.
// The rows are read from the real output, printed again by the emulator
// in that layout, and compared from the Configurations header on (the
// samples' device blocks were trimmed by their authors), trailing blanks
// aside.
func TestEmulatorMatchesRealLayouts(t *testing.T) {
	for _, tt := range []struct {
		file   string
		layout mlxemu.Layout
	}{
		{"mlxconfig/nco-cx4-query-marks.stdout", mlxemu.G1},
		{"mlxconfig/nco-cx4-array-expanded.stdout", mlxemu.G1},
		{"mlxconfig/nco-bf3-internal-cpu.stdout", mlxemu.G1},
		{"mlxconfig/nco-cx9-array-summary.stdout", mlxemu.G6},
		{"mlxconfig/nco-cx9-array-expanded.stdout", mlxemu.G6},
	} {
		t.Run(tt.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(realDir, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			q, err := mlxfmt.ParseQuery(b)
			if err != nil {
				t.Fatal(err)
			}
			r := mlxemu.Report{Verbose: q.Columns.Default && q.Columns.Current}
			for _, p := range q.Params {
				r.Rows = append(r.Rows, mlxemu.Row{Name: p.Name, Default: cell(p.Default), Current: cell(p.Current), NextBoot: cell(p.NextBoot), ReadOnly: p.ReadOnly})
			}
			got, _ := mlxemu.RenderQuery(tt.layout, r)
			if diff := cmp.Diff(fromHeader(string(b)), fromHeader(string(got))); diff != "" {
				t.Errorf("%v layout (-real +emulator):\n%s", tt.layout, diff)
			}
		})
	}

	// Whole outputs, device block and prompt included, transcribed from
	// public issues and posts: G1 (Debian's mstflint era, MFT 4.20) and G5
	// (MFT 4.3x).
	for _, tt := range []struct {
		file   string
		layout mlxemu.Layout
		set    bool
	}{
		{"mstconfig/issue-mstflint551-set.stdout", mlxemu.G1, true},
		{"mstconfig/issue-sno48-query-e.stdout", mlxemu.G1, false},
		{"mstconfig/issue-sno968-cx6lx-query-e.stdout", mlxemu.G5, false},
		{"mlxconfig/issue-maas2-cx6-set.stdout", mlxemu.G5, true},
		{"mlxconfig/blog-cx4-set-mft420.stdout", mlxemu.G1, true},
		// Layouts known only from mstflint's source (PROVENANCE.md): the
		// rows of the real G1 query above as 4.22, 4.25 and 4.26 print them.
		{"mstconfig/src-g2-cx5-query-e.stdout", mlxemu.G2, false},
		{"mstconfig/src-g3-cx5-query-e.stdout", mlxemu.G3, false},
		{"mstconfig/src-g4-cx5-query-e.stdout", mlxemu.G4, false},
	} {
		t.Run(tt.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(realDir, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			q, err := mlxfmt.ParseQuery(b)
			if err != nil {
				t.Fatal(err)
			}
			d := q.Device
			r := mlxemu.Report{Device: mlxemu.DeviceInfo{Type: d.Type, Name: d.Name, Description: d.Description, Device: d.Device},
				Verbose: q.Columns.Default && q.Columns.Current}
			for _, p := range q.Params {
				r.Rows = append(r.Rows, mlxemu.Row{Name: p.Name, Default: cell(p.Default), Current: cell(p.Current), NextBoot: cell(p.NextBoot), New: cell(p.New)})
			}
			var got []byte
			if tt.set {
				got, _ = mlxemu.RenderSet(tt.layout, r, mlxemu.AnswerYesFlag)
			} else {
				got, _ = mlxemu.RenderQuery(tt.layout, r)
			}
			if diff := cmp.Diff(trimmed(string(b), false), trimmed(string(got), false)); diff != "" {
				t.Errorf("%v (-real +emulator):\n%s", tt.layout, diff)
			}
		})
	}

	// mst status -v: the device table, column for column.
	b, err := os.ReadFile(filepath.Join(realDir, "mst/issue-sno786-cx7-ib.stdout"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := mlxfmt.ParseMSTStatusVerbose(b)
	if err != nil {
		t.Fatal(err)
	}
	es := mlxemu.MSTStatus{PCIModuleLoaded: st.PCIModuleLoaded, PCIConfModuleLoaded: st.PCIConfModuleLoaded}
	for _, d := range st.Devices {
		es.Devices = append(es.Devices, mlxemu.MSTEntry{DeviceType: d.DeviceType, Rev: d.Rev, MST: d.MST, BDF: d.BDF, RDMA: d.RDMA, Netdevs: d.Netdevs, NUMA: d.NUMA})
	}
	if diff := cmp.Diff(nonEmpty(string(b)), nonEmpty(string(mlxemu.RenderMSTStatusVerbose(es)))); diff != "" {
		t.Errorf("mst status -v (-real +emulator):\n%s", diff)
	}
}

// cell is a parsed value as the emulator prints it.
func cell(v mlxfmt.Value) mlxemu.Cell {
	if v.Kind == mlxfmt.KindAbsent {
		return mlxemu.Cell{}
	}
	n, ok := v.Number()
	return mlxemu.Cell{Text: v.String(), Num: n, HasNum: ok}
}

// fromHeader is the output from the Configurations header on, each line
// without trailing blanks.
func fromHeader(s string) []string {
	if i := strings.Index(s, "Configurations:"); i >= 0 {
		s = s[i:]
	}
	return trimmed(s, false)
}

// nonEmpty is every non-empty line, without trailing blanks (the issue's
// copy of the output has no empty line after each row).
func nonEmpty(s string) []string { return trimmed(s, true) }

func trimmed(s string, dropEmpty bool) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimRight(l, " ")
		if dropEmpty && l == "" {
			continue
		}
		out = append(out, l)
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}
