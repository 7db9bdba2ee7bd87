// Package fails is input for internal/testlab/testsum's TestSummary, which runs
// it with go test: a test that passes, tests that fail, a lab skip and
// another skip, at the top level and as subtests. Its failures are on
// purpose; go test ./... never runs it (testdata).
package fails

import (
	"testing"

	"github.com/rdmaform/rdmaform/internal/testlab/need"
)

func TestPasses(t *testing.T) {
	t.Log("a passing test's log, which go test prints only with -v")
}

func TestFails(t *testing.T) {
	t.Log("what the failing test logged")
	t.Error("the failure")
}

func TestLabSkip(t *testing.T) {
	need.Skip(t, "the sample component is not installed (apt-get install sample)")
}

func TestOtherSkip(t *testing.T) {
	t.Skip("not in this sample")
}

func TestParent(t *testing.T) {
	t.Run("passes", func(t *testing.T) { t.Log("a passing subtest's log") })
	t.Run("fails", func(t *testing.T) { t.Error("the subtest's failure") })
	t.Run("lab", func(t *testing.T) { need.Skip(t, "a sub component is missing") })
}
