package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rdmaform/rdmaform/crosscheck"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/words"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

func (a *app) lintCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lint SPEC... [-o text|json]",
		Short: "Check host specs against each other; never reads a host",
		Long: `Check the specs of several hosts against each other, for what no single
host's plan can see:

  - RoCE versions that cannot connect, by role: a port that opens RDMA CM
    connections (host.role or roce.role client, or peer, the default) in
    RoCE v2 cannot reach a port that accepts them (server or peer) in
    RoCE v1; every other pair connects (the client decides). A port that
    leaves roce.mode unset counts as the kernel default, assumed v2 (the
    default since RHEL 7.5 for every adapter but a ConnectX-3 that is not
    a Pro), and the finding says so. Hosts are compared when their
    interfaces sections share an IPv4 subnet; a host with no interface
    address is compared with every other.
  - RoCE ports of one network with different ToS (roce.tos or dscp/ecn).
  - Interfaces of one IPv4 subnet with different MTUs.
  - IPoIB connections on one IPv4 subnet with different P_Key, transport
    mode or MTU.
  - An address given to two hosts (or two sections of one).
  - Cables whose ends expect different link layers, where a port names
    its peer (peer: {host: node2, device: "0000:3b:00.0", port: 1}; host
    is the peer's host.hostname or spec file name without extension):
    InfiniBand on one end and Ethernet on the other keeps both down.
  - The subnet managers of a fabric (subnet_manager.fabric, default
    "default"): the same partitions on each, and one of the highest
    priority (a tie, which opensm breaks by the lowest port GUID, is a
    warning); every IPoIB P_Key is one of their partitions with a full
    member, and a connection asking full membership is made a full member.

Each spec is validated first. Findings are printed on stdout as
FILE:LINE:COL: error: PATH: message (warning: for a warning), sorted by
file and position.

Exit codes: 0 no findings; 1 findings (lint findings are errors in the
specs, like validate's) or a spec that cannot be read (a finding of its
own: the other specs are still checked). Warnings alone exit 0.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var hosts []*crosscheck.Host
			var rep schema.Report
			for _, file := range args {
				name := file
				if file == "-" {
					name = "<stdin>"
				}
				data, err := host.ReadLocalFile(file, a.env.Stdin)
				if err != nil {
					// A spec that cannot be read is a finding of its
					// own: the others are still checked and reported.
					rep = append(rep, schema.Finding{Path: "$", Pos: schema.Pos{File: name}, Message: fmt.Sprintf("cannot read the spec: %v", err)})
					continue
				}
				spec, r := schema.Parse(name, data)
				rep = append(rep, r...)
				if len(r) == 0 {
					hosts = append(hosts, crosscheck.NewHost(spec))
				}
			}
			rep = append(rep, crosscheck.Lint(hosts)...)
			var errs, warns schema.Report
			for _, f := range rep {
				if f.Warning {
					warns = append(warns, f)
				} else {
					errs = append(errs, f)
				}
			}
			if a.jsonOut() {
				if err := a.writeJSON(lintDoc{FormatVersion: FormatVersion, Specs: len(args), Errors: findingErrors(errs), Warnings: findingErrors(warns)}); err != nil {
					return err
				}
				if len(errs) > 0 {
					return exitCode(plan.ExitError)
				}
				return nil
			}
			for _, f := range rep {
				fmt.Fprintln(a.env.Stdout, f.String())
			}
			if len(errs) > 0 {
				return &exitError{code: plan.ExitError, err: fmt.Errorf("lint: %d %s in %d specs", len(errs), words.Plural(len(errs), "finding", "findings"), len(args))}
			}
			if len(warns) > 0 {
				fmt.Fprintf(a.env.Stdout, "lint: %d %s, no errors, %d %s\n", len(args), words.Plural(len(args), "spec", "specs"), len(warns), words.Plural(len(warns), "warning", "warnings"))
				return nil
			}
			fmt.Fprintf(a.env.Stdout, "lint: %d %s, no findings\n", len(args), words.Plural(len(args), "spec", "specs"))
			return nil
		},
	}
	a.outputFlag(cmd, "text", "text", "json")
	return cmd
}

// lintDoc is `lint -o json`: errors is empty when the specs agree;
// warnings are findings that do not fail them.
type lintDoc struct {
	FormatVersion int         `json:"format_version"`
	Specs         int         `json:"specs"`
	Errors        []jsonError `json:"errors"`
	Warnings      []jsonError `json:"warnings"`
}
