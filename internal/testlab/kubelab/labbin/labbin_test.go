package labbin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheck: a directory is a lab only with the stamp of these versions
// and every binary, executable.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	if err := Check(dir); err == nil || !strings.Contains(err.Error(), "no Kubernetes lab in "+dir) {
		t.Errorf("empty directory: %v", err)
	}
	for _, n := range Binaries {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, StampFile), []byte("kubernetes v1.36.0\netcd "+Etcd+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Check(dir); err == nil || !strings.Contains(err.Error(), "v1.36.0") {
		t.Errorf("older stamp: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, StampFile), []byte(Stamp()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Check(dir); err != nil {
		t.Errorf("complete lab: %v", err)
	}
	if err := os.Chmod(filepath.Join(dir, Kubectl), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Check(dir); err == nil || !strings.Contains(err.Error(), "not executable") {
		t.Errorf("kubectl not executable: %v", err)
	}
	if err := os.Chmod(filepath.Join(dir, Kubectl), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, EtcdBin)); err != nil {
		t.Fatal(err)
	}
	if err := Check(dir); err == nil || !strings.Contains(err.Error(), "lacks etcd") {
		t.Errorf("etcd missing: %v", err)
	}
}

// TestDir: RDMAFORM_K8S_LAB_DIR names the directory; else it is under
// Root, named after both versions.
func TestDir(t *testing.T) {
	t.Setenv(DirEnv, "")
	if d := Dir(); d != "/var/cache/rdmaform/k8s-lab/kubernetes-"+Kubernetes+"-etcd-"+Etcd {
		t.Errorf("default: %s", d)
	}
	t.Setenv(DirEnv, "/tmp/x")
	if d := Dir(); d != "/tmp/x" {
		t.Errorf("with %s: %s", DirEnv, d)
	}
}
