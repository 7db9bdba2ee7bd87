// A test may drive the whole program.
package runcli

import "github.com/rdmaform/rdmaform/cli/clitest"

var _ = clitest.Run
