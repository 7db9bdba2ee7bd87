package docgen

import (
	"github.com/spf13/cobra"

	"github.com/rdmaform/rdmaform/agent"
)

// AgentCommand is rdmaform-agent's command line as a cobra command, for
// its manual page and the command reference: the agent parses its flags
// with the standard library (agent.NewFlagSet), and this wraps the same
// flag set. Defaults are those of an empty environment.
func AgentCommand() *cobra.Command {
	fs, _ := agent.NewFlagSet(func(string) string { return "" })
	c := &cobra.Command{
		Use:               "rdmaform-agent [flags]",
		Short:             agent.CommandShort,
		Long:              agent.CommandLong,
		Run:               func(*cobra.Command, []string) {},
		DisableAutoGenTag: true,
	}
	c.Flags().AddGoFlagSet(fs)
	return c
}
