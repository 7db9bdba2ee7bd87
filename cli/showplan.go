package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

func (a *app) showPlanCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show-plan PLAN [-o text|json]",
		Short: "Print a saved plan (plan --out) without reading the host",
		Long: `Print a plan saved with 'plan --out FILE' as plan printed it (text), or
the whole file (json: the plan, the spec it was made from, the host's
identity, the rdmaform that made it, its digests). The file is checked
first: a damaged or edited plan is an error. The host is not read.

Exit codes: 0 printed; 1 not a saved plan, damaged or edited.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := host.ReadLocalFile(args[0], a.env.Stdin)
			if err != nil {
				return &exitError{code: plan.ExitError, err: fmt.Errorf("reading %s: %w", args[0], err)}
			}
			saved, ok, err := plan.LoadSaved(data)
			switch {
			case err != nil:
				return &exitError{code: plan.ExitError, err: fileFinding(args[0], data, err)}
			case !ok:
				return &exitError{code: plan.ExitError, err: fileFinding(args[0], data, errors.New("not a saved plan (plan --out FILE writes one)"))}
			}
			if a.jsonOut() {
				return a.writeJSON(saved)
			}
			fmt.Fprintf(a.env.Stdout, "Plan of %s for %s (machine-id %s, boot %s), made by rdmaform %s:\n\n", saved.Spec.File, saved.Host.Hostname, saved.Host.MachineID, saved.Host.BootID, saved.Rdmaform.Version)
			return plan.WriteText(a.env.Stdout, saved.Plan, plan.TextOptions{Color: a.color()})
		},
	}
	a.outputFlag(cmd, "text", "text", "json")
	return cmd
}

// fileFinding is an error about the file name as a finding at its
// position: where the JSON stops parsing, else the file as a whole.
func fileFinding(name string, data []byte, err error) error {
	pos := schema.Pos{File: name}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		// LoadSaved parses the file without its leading white space.
		off := int(se.Offset) + len(data) - len(bytes.TrimLeft(data, " \t\r\n"))
		if off > len(data) {
			off = len(data)
		}
		before := data[:off]
		pos.Line = bytes.Count(before, []byte("\n")) + 1
		pos.Col = off - (bytes.LastIndexByte(before, '\n') + 1)
		if pos.Col == 0 {
			pos.Col = 1
		}
	}
	return &findingsError{Name: name, Report: schema.Report{{Path: "$", Pos: pos, Message: err.Error()}}}
}
