package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/words"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// loadSpec reads and validates a spec; findings go to stderr, exit 1.
func (a *app) loadSpec(file string) (*schema.Spec, error) {
	if file == "" {
		return nil, &exitError{code: plan.ExitError, err: fmt.Errorf("no spec: give -f SPEC (or -f - for stdin)")}
	}
	data, err := host.ReadLocalFile(file, a.env.Stdin)
	if err != nil {
		return nil, &exitError{code: plan.ExitError, err: fmt.Errorf("reading spec: %w", err)}
	}
	name := file
	if file == "-" {
		name = "<stdin>"
	}
	return a.parseSpec(name, data)
}

// parseSpec validates spec bytes; findings go to stderr, exit 1.
func (a *app) parseSpec(name string, data []byte) (*schema.Spec, error) {
	spec, rep := schema.Parse(name, data)
	if len(rep) > 0 {
		return nil, &exitError{code: plan.ExitError, err: &findingsError{Name: name, Report: rep}}
	}
	return spec, nil
}

func (a *app) validateCmd() *cobra.Command {
	var file string
	var extraChecks func(*schema.Spec) (string, error)
	cmd := &cobra.Command{
		Use:   "validate -f SPEC [-o text|json]",
		Short: "Check a spec without reading the host",
		Long: `Check a spec: syntax, unknown keys, types, values, duplicates,
ownership of netdevs and safety of names. Every finding is reported as
FILE:LINE:COL: error: PATH: message. The host is never read; firmware
parameter names and values are checked against mstflint's parameter
database when it is installed (--no-param-db skips that).

` + exitCodesHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			spec, err := a.loadSpec(file)
			if err != nil {
				return err
			}
			note, err := extraChecks(spec)
			if err != nil {
				return err
			}
			if a.jsonOut() {
				doc := validateDoc{FormatVersion: FormatVersion, File: spec.Src.File, Valid: true, Counts: counts(spec)}
				if note != "" {
					doc.Notes = []string{note}
				}
				return a.writeJSON(doc)
			}
			fmt.Fprintf(a.env.Stdout, "%s: valid (%s)\n", spec.Src.File, describeSpec(spec))
			if note != "" {
				fmt.Fprintf(a.env.Stdout, "note: %s\n", note)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "spec `FILE` (- for stdin)")
	a.outputFlag(cmd, "text", "text", "json")
	extraChecks = a.paramDBCheck(cmd)
	return cmd
}

// validateDoc is `validate -o json` of a valid spec; an invalid one gives
// the errors document.
type validateDoc struct {
	FormatVersion int            `json:"format_version"`
	File          string         `json:"file"`
	Valid         bool           `json:"valid"`
	Counts        map[string]int `json:"counts"`
	// Notes: checks validate could not make (no parameter database).
	Notes []string `json:"notes,omitempty"`
}

func counts(s *schema.Spec) map[string]int {
	return map[string]int{"devices": len(s.Devices), "ipoib": len(s.IPoIB), "rxe": len(s.Rxe),
		"interfaces": len(s.Interfaces), "modules": len(s.Modules), "services": len(s.Services)}
}

func describeSpec(s *schema.Spec) string {
	n := func(k int, one, many string) string { return fmt.Sprintf("%d %s", k, words.Plural(k, one, many)) }
	return strings.Join([]string{n(len(s.Devices), "device", "devices"), n(len(s.IPoIB), "ipoib", "ipoib"), n(len(s.Rxe), "rxe", "rxe"),
		n(len(s.Interfaces), "interface", "interfaces"), n(len(s.Modules), "module", "modules"), n(len(s.Services), "service", "services")}, ", ")
}
