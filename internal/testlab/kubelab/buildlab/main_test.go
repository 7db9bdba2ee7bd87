package main

import (
	"os"
	"slices"
	"testing"
)

// TestParseStaging: the modules k8s.io/kubernetes v1.37.2 requires at
// v0.0.0 are its 31 staging modules (testdata/kubernetes-v1.37.2.mod is
// its go.mod as `go mod download k8s.io/kubernetes@v1.37.2` stores it in
// the module cache, unchanged); the pseudo-versions of k8s.io/utils and
// k8s.io/kube-openapi, k8s.io/klog/v2 and the replace block's
// ./staging/src paths are not among them.
func TestParseStaging(t *testing.T) {
	b, err := os.ReadFile("testdata/kubernetes-v1.37.2.mod")
	if err != nil {
		t.Fatal(err)
	}
	got := parseStaging(b)
	if len(got) != 31 {
		t.Errorf("%d staging modules, want 31: %v", len(got), got)
	}
	for _, m := range []string{"k8s.io/api", "k8s.io/apiextensions-apiserver", "k8s.io/apimachinery", "k8s.io/apiserver", "k8s.io/client-go", "k8s.io/component-base", "k8s.io/kubectl"} {
		if !slices.Contains(got, m) {
			t.Errorf("%s is missing from %v", m, got)
		}
	}
	for _, m := range []string{"k8s.io/utils", "k8s.io/kube-openapi", "k8s.io/klog/v2", "k8s.io/system-validators", "k8s.io/kubernetes"} {
		if slices.Contains(got, m) {
			t.Errorf("%s is not a staging module: %v", m, got)
		}
	}
	if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
		t.Errorf("not sorted once each: %v", got)
	}
}
