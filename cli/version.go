package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rdmaform/rdmaform/version"
)

// versionDoc is `rdmaform version -o json`.
type versionDoc struct {
	FormatVersion int `json:"format_version"`
	version.Info
}

func (a *app) versionCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version [-o text|json]",
		Short: "Print rdmaform's version, commit, Go version and platform",
		Long: `Print the release, the commit it was built from, the Go toolchain and the
platform: rdmaform 0.1.0 (commit 1f9887d2962a, go1.26.8, linux/amd64).
--version prints the same line. -o json prints
{"format_version", "version", "commit", "go", "platform"}.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			info := version.Get()
			if a.jsonOut() {
				return a.writeJSON(versionDoc{FormatVersion: FormatVersion, Info: info})
			}
			_, err := fmt.Fprintln(a.env.Stdout, info.String())
			return err
		},
	}
	a.outputFlag(cmd, "text", "text", "json")
	return cmd
}
