// Package simtest gives tests a fresh simulated host in one call.
package simtest

import (
	"testing"

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
