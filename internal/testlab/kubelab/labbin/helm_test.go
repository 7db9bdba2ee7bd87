package labbin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckHelm: helm is in a lab only with its own stamp of this
// version and the binary, executable; the control plane's stamp does not
// stand for it, nor its for the control plane.
func TestCheckHelm(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, StampFile), []byte(Stamp()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckHelm(dir); err == nil || !strings.Contains(err.Error(), "no helm in the Kubernetes lab "+dir+" (run make k8s-lab") {
		t.Errorf("a lab without helm: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, HelmStampFile), []byte("helm v3.21.4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckHelm(dir); err == nil || !strings.Contains(err.Error(), "v3.21.4") || !strings.Contains(err.Error(), Helm) {
		t.Errorf("another helm's stamp: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, HelmStampFile), []byte(HelmStamp()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckHelm(dir); err == nil || !strings.Contains(err.Error(), "lacks helm") {
		t.Errorf("a stamp without the binary: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, HelmBin), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckHelm(dir); err == nil || !strings.Contains(err.Error(), "not executable") {
		t.Errorf("helm not executable: %v", err)
	}
	if err := os.Chmod(filepath.Join(dir, HelmBin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := CheckHelm(dir); err != nil {
		t.Errorf("helm complete: %v", err)
	}
	if err := Check(dir); err == nil {
		t.Errorf("helm's stamp and binary make no control plane")
	}
}
