// Tests may use the OS for fixtures.
package plan

import (
	"os"
	"os/exec"
)

func fixture() {
	_, _ = os.ReadFile("testdata/x")
	_ = exec.Command("true")
}
