// The engine under the command line imports a package of it.
package plan

import "github.com/rdmaform/rdmaform/cli/clitest"

var _ = clitest.Run
