// Package broken is input for internal/testlab/testsum's TestSummary: a
// package that does not compile.
package broken

import "testing"

func TestBroken(t *testing.T) {
	var unused int
}
