// Package simtest gives tests a fresh simulated host in one call.
package simtest

import (
	"os"
	"path/filepath"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/sim"
)

// New creates a simulated host of a profile (adapters as for sim new's
// --adapters; 0 for the profile's own) in a temporary directory, letting
// mutate adjust its state first (nil for none), and opens it.
func New(t testing.TB, profile string, adapters int, mutate func(st *sim.State)) (*sim.Sim, *host.Host) {
	t.Helper()
	st, err := sim.NewState(profile, "node1", adapters)
	if err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		mutate(st)
	}
	s, err := sim.Create(t.TempDir(), st)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Host()
	if err != nil {
		t.Fatal(err)
	}
	return s, h
}

// Dir creates a simulated host of a profile in a temporary directory,
// letting mutate adjust its state first (nil for none), and returns the
// directory, for commands run with --sim.
func Dir(t testing.TB, profile string, mutate func(st *sim.State)) string {
	t.Helper()
	st, err := sim.NewState(profile, "node1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		mutate(st)
	}
	dir := filepath.Join(t.TempDir(), "host")
	if _, err := sim.Create(dir, st); err != nil {
		t.Fatal(err)
	}
	return dir
}

// State reads the state of the simulated host in dir as its sim.yaml
// holds it now.
func State(t testing.TB, dir string) *sim.State {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "sim.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var st sim.State
	if err := yaml.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return &st
}
