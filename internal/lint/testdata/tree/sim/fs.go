// The simulator is at the OS boundary: it may touch files.
package sim

import (
	"os"
	"os/exec"
)

func write() {
	_ = os.WriteFile("/tmp/x", nil, 0o644)
	_ = exec.Command("true")
}
