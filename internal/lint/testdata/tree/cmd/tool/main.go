// cmd/ is at the boundary.
package main

import (
	"os"
	"os/exec"
)

func main() {
	_, _ = os.ReadFile("/etc/hostname")
	_ = exec.Command("true")
}
