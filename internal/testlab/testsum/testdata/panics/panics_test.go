// Package panics is input for internal/testlab/testsum's TestSummary: a test
// that panics, which ends its package's test binary mid-test, as a
// -timeout does.
package panics

import "testing"

func TestPanics(t *testing.T) {
	t.Log("logged before the panic")
	panic("the sample panics")
}
