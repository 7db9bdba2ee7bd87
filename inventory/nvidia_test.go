package inventory

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/host"
)

// paramsSample is the start and the string part of a params file as
// nv_procfs_read_params prints it (kernel-open/nvidia/nv-procfs.c).
const paramsSample = "ResmanDebugLevel: 4294967295\nEnablePCIERelaxedOrderingMode: 1\nGrdmaPciTopoCheckOverride: 0\n" +
	"CoherentGPUMemoryMode: \"\"\nRegistryDwords: \"RMForcePcieConfigSave=1;X=2\"\n"

func TestParseNVIDIAParams(t *testing.T) {
	nums, strs, err := ParseNVIDIAParams(paramsSample)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]uint32{"ResmanDebugLevel": 4294967295, "EnablePCIERelaxedOrderingMode": 1, "GrdmaPciTopoCheckOverride": 0}, nums); diff != "" {
		t.Errorf("numbers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"CoherentGPUMemoryMode": "", "RegistryDwords": "RMForcePcieConfigSave=1;X=2"}, strs); diff != "" {
		t.Errorf("strings (-want +got):\n%s", diff)
	}
	for in, want := range map[string]string{
		"A: 1\nB 2\n":         ":2: \"B 2\" is not",
		"A: 4294967296\n":     ":1: A: \"4294967296\" is neither", // one past %u's limit
		"A: -1\n":             ":1: A: \"-1\" is neither",
		"A: \"unterminated\n": ":1: A:",
		"Two words: 1\n":      ":1:",
	} {
		if _, _, err := ParseNVIDIAParams(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", in, err, want)
		}
	}
}

func TestReadNVIDIA(t *testing.T) {
	write := func(root, p, s string) {
		t.Helper()
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(root string) *NVIDIADriver {
		t.Helper()
		f, err := host.NewRootFS(root)
		if err != nil {
			t.Fatal(err)
		}
		d, err := ReadNVIDIA(f)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	root := t.TempDir()
	if d := read(root); d.Loaded || d.Peermem {
		t.Errorf("no driver: %+v", d)
	}
	write(root, NVIDIAParamsPath, paramsSample)
	write(root, NVIDIAVersionPath, "NVRM version: NVIDIA UNIX Kernel Module for x86_64  550.127.05  Release Build  (dvs-builder@U16-I1-N08-12-3)  Tue Oct  1 06:07:04 UTC 2024\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14) \n")
	write(root, NVIDIAModuleDir+"/taint", "O\n") // disagrees: the version line wins
	d := read(root)
	if !d.Loaded || d.Open || d.Version != "550.127.05" || d.Major() != 550 || d.OpenFrom != NVIDIAVersionPath {
		t.Errorf("proprietary: %+v", d)
	}
	write(root, PeermemModuleDir+"/version", "550.127.05\n")
	if d := read(root); !d.Peermem || d.PeermemFrom != PeermemModuleDir {
		t.Errorf("peermem by its module: %+v", d)
	}
	write(root, PeermemVersion, "550.127.05\n")
	if d := read(root); !d.Peermem || d.PeermemFrom != PeermemVersion {
		t.Errorf("peermem registered: %+v", d)
	}
	// Without the version file, the taint tells.
	if err := os.Remove(filepath.Join(root, NVIDIAVersionPath)); err != nil {
		t.Fatal(err)
	}
	if d := read(root); !d.Open || d.OpenFrom != NVIDIAModuleDir+"/taint" {
		t.Errorf("open by taint: %+v", d)
	}
	write(root, NVIDIAModuleDir+"/taint", "PO\n")
	if d := read(root); d.Open {
		t.Errorf("proprietary by taint: %+v", d)
	}
	write(root, NVIDIAParamsPath, "garbage\n")
	f, _ := host.NewRootFS(root)
	if _, err := ReadNVIDIA(f); err == nil || !strings.Contains(err.Error(), "/proc/driver/nvidia/params:1:") {
		t.Errorf("bad params: %v", err)
	}
}
