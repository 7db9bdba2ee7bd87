// A front end runs rdmaform's commands in process.
package ansible

import "github.com/rdmaform/rdmaform/cli"

var _ = cli.RunResults
