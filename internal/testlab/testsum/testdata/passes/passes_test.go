// Package passes is input for internal/testlab/testsum's TestSummary: a package
// whose tests pass.
package passes

import "testing"

func TestPasses(t *testing.T) {
	t.Log("a passing test's log")
}
