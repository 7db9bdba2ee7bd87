// Command rdmaform configures the RDMA side of Linux hosts from a YAML spec.
package main

import (
	"os"

	"github.com/rdmaform/rdmaform/cli"
)

func main() { os.Exit(cli.Run(os.Args[1:], cli.OSEnv())) }
