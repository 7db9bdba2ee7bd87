// Never walked: hidden directories, vendor/ and testdata/.
package skipped

import "os/exec"

var _ = exec.Command
