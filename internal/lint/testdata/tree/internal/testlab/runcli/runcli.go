// A lab that runs the command line runs up the layers.
package runcli

import "github.com/rdmaform/rdmaform/cli"

var _ = cli.Run
