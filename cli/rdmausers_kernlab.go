//go:build kernlab

package cli

import "github.com/rdmaform/rdmaform/host"

// The real-kernel lab's door into the CLI (internal/testlab/kernlab/guest),
// only in builds with the kernlab tag: no rdmaform command reaches the
// check of the kernel's RDMA users without a ConnectX card with something
// staged, and the QEMU guest has none (its check of the kernel's RDMA
// users calls session.RDMAUsers directly).

// RunWrapped runs rdmaform as Run does, with wrap applied to the host the
// global flags open (a simulated card, say, on a host whose RDMA users
// are the real kernel's).
func RunWrapped(args []string, env Env, wrap func(*host.Host) *host.Host) int {
	code, _ := (&app{env: env, wrapHost: wrap}).run(args)
	return code
}
