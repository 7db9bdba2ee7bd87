package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rdmaform/rdmaform/audit"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/words"
	"github.com/rdmaform/rdmaform/plan"
)

// firmwareSummaryDoc is `firmware-summary -o json`.
type firmwareSummaryDoc struct {
	FormatVersion int                 `json:"format_version"`
	Reports       int                 `json:"reports"`
	PSIDs         []audit.PSIDSummary `json:"psids"`
}

func (a *app) firmwareSummaryCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "firmware-summary REPORT|DIR... [-o text|json]",
		Short: "Summarise a fleet's firmware by PSID from the hosts' audit reports",
		Long: `Read the audit reports of many hosts (rdmaform audit -o json, one
file per host; a directory stands for its *.json files) against a spec
with a firmware catalog, and summarise the cards by PSID: how many run
the catalog's version (current), have it burned and waiting for its
activation (pending), run another (outdated) or have no entry
(unlisted), the versions they run, and which cards are not current.

Exit 0: every card runs its catalog version; 2: a card is outdated or
unlisted; 3: only pending activations; 1: a report that cannot be read
(nothing is summarised then).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			files, err := reportFiles(args)
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			var reports []*audit.Report
			for _, f := range files {
				data, err := host.ReadLocalFile(f, nil)
				if err != nil {
					return &exitError{code: plan.ExitError, err: err}
				}
				if len(data) > host.MaxLocalFile {
					return &exitError{code: plan.ExitError, err: fmt.Errorf("%s: more than %d bytes; not an audit report", f, host.MaxLocalFile)}
				}
				r := &audit.Report{}
				// A report that is not one: an error at the position where
				// its JSON stops, else of the file as a whole.
				if err := json.Unmarshal(data, r); err != nil {
					return &exitError{code: plan.ExitError, err: fileFinding(f, data, fmt.Errorf("not an audit report (rdmaform audit -o json): %w", err))}
				}
				if r.FormatVersion != audit.FormatVersion {
					return &exitError{code: plan.ExitError, err: fileFinding(f, data, fmt.Errorf("audit report format_version %d; this rdmaform reads %d", r.FormatVersion, audit.FormatVersion))}
				}
				// The cards alone are kept: a fleet's reports need not fit
				// in memory at once.
				reports = append(reports, &audit.Report{Host: r.Host, Firmware: r.Firmware})
			}
			sum := audit.SummarizeFirmware(reports)
			if a.jsonOut() {
				if sum == nil {
					sum = []audit.PSIDSummary{}
				}
				if err := a.writeJSON(firmwareSummaryDoc{FormatVersion: 1, Reports: len(reports), PSIDs: sum}); err != nil {
					return err
				}
			} else {
				a.firmwareSummaryText(len(reports), sum)
			}
			code := plan.ExitOK
			for _, s := range sum {
				switch {
				case s.Outdated > 0 || s.Unlisted > 0:
					code = plan.ExitChanges
				case s.Pending > 0 && code == plan.ExitOK:
					code = plan.ExitReboot
				}
			}
			return exitCode(code)
		},
	}
	a.outputFlag(cmd, "text", "text", "json")
	return cmd
}

// reportFiles lists the reports the arguments name: files as given, a
// directory's *.json in name order.
func reportFiles(args []string) ([]string, error) {
	var out []string
	for _, arg := range args {
		names, dir, err := host.LocalDirNames(arg)
		if err != nil {
			return nil, err
		}
		if !dir {
			out = append(out, arg)
			continue
		}
		n := 0
		for _, name := range names {
			if strings.HasSuffix(name, ".json") {
				out = append(out, filepath.Join(arg, name))
				n++
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("%s holds no *.json audit report", arg)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (a *app) firmwareSummaryText(reports int, sum []audit.PSIDSummary) {
	w := a.env.Stdout
	fmt.Fprintf(w, "Firmware of the cards of %d %s, by PSID:\n", reports, words.Plural(reports, "host", "hosts"))
	for _, s := range sum {
		cat := strings.Join(s.Catalog, ", ")
		if cat == "" {
			cat = "none"
		}
		var running []string
		for _, v := range sortedKeysOf(s.Running) {
			running = append(running, fmt.Sprintf("%s x%d", v, s.Running[v]))
		}
		fmt.Fprintf(w, "  %s (%s): catalog %s; %d %s on %d %s: %d current, %d pending, %d outdated, %d unlisted; running %s\n",
			s.PSID, strings.Join(s.PartNumbers, ", "), cat, s.Cards, words.Plural(s.Cards, "card", "cards"), s.Hosts, words.Plural(s.Hosts, "host", "hosts"),
			s.Current, s.Pending, s.Outdated, s.Unlisted, strings.Join(running, ", "))
		for _, c := range s.NotCurrent {
			fmt.Fprintf(w, "    %s\n", c)
		}
	}
	if len(sum) == 0 {
		fmt.Fprintln(w, "  no card: the reports have no firmware (audit a spec with firmware.catalog)")
	}
}

func sortedKeysOf(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
