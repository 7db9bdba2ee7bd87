// Command rdmaform-ansible is rdmaform as an Ansible binary module. make
// ansible builds it as build/ansible/library/rdmaform, the module name
// playbooks use. With confirm_timeout the module starts this executable
// again, detached, as its background apply (ansible.BackgroundArg).
package main

import (
	"os"

	"github.com/rdmaform/rdmaform/ansible"
	"github.com/rdmaform/rdmaform/cli"
)

func main() {
	env := cli.OSEnv()
	// Ansible reads one JSON object from stdout: whatever else would print
	// there goes to stderr, and only the result reaches the real stdout.
	env.Stdout = os.Stdout
	os.Stdout = os.Stderr
	os.Exit(ansible.Main(os.Args[1:], env))
}
