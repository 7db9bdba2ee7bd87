package cli

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmaform/rdmaform/internal/words"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/probe"
)

func (a *app) probeCmd() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "probe -f SPEC [-o text|json]",
		Short: "Prove the fabric carries traffic: run the spec's connectivity probes",
		Long: `Run every probe of the spec's probes: list at once, each within its
timeout, and report which passed:

  ping     ICMP echo (iputils ping), over IPoIB too
  rdma_cm  an RDMA CM connect and small transfers (rping -c)
  verbs    an RC ping-pong over verbs (ibv_rc_pingpong)
  ib       an InfiniBand MAD ping (ibping), InfiniBand ports only

rdma_cm, verbs and ib need a responder on the peer: run
'rdmaform probe serve -f SPEC --for DURATION' there with the same spec.
Probes send test traffic and change nothing on the host. A --root
tree is files, not a running host: probe (and probe serve, and audit
--probes) refuse it and send nothing.

Each probe passes (PASS), fails (FAIL: the peer did not answer every
round trip, fewer replies than count included) or could not run (ERROR:
a missing tool, a device the host does not have, a tool that could not
start, such as ping on an interface that does not exist); the summary
counts the three apart.

Exit codes: 0 every probe passed; 1 error (a probe could not run, a bad
spec); 2 at least one probe failed and every probe ran.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			spec, err := a.loadSpec(file)
			if err != nil {
				return err
			}
			if len(spec.Probes) == 0 {
				return &exitError{code: plan.ExitError, err: fmt.Errorf("%s has no probes: list them under probes:", spec.Src.File)}
			}
			h, err := a.host()
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			defer a.recordSimCalls()
			results, runErr := probe.Run(cmd.Context(), h, spec)
			if results == nil && runErr != nil {
				return &exitError{code: plan.ExitError, err: runErr}
			}
			if a.jsonOut() {
				if err := a.writeJSON(probeDoc{FormatVersion: FormatVersion, Probes: results}); err != nil {
					return err
				}
			} else {
				printProbes(a.env.Stdout, results)
			}
			return probeExit(results, runErr)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "spec `FILE` (- for stdin)")
	a.outputFlag(cmd, "text", "text", "json")
	a.hostFlags(cmd)
	cmd.AddCommand(a.probeServeCmd())
	return cmd
}

// probeDoc is `probe -o json`.
type probeDoc struct {
	FormatVersion int            `json:"format_version"`
	Probes        []probe.Result `json:"probes"`
}

// probeExit: 1 when a probe could not run, 2 when one failed, else 0.
func probeExit(results []probe.Result, runErr error) error {
	n := probeCounts(results)
	if runErr != nil || n[probe.OutcomeError] > 0 {
		// Each reason is in the report already.
		return &exitError{code: plan.ExitError, err: fmt.Errorf("%d of %d %s could not run", n[probe.OutcomeError], len(results), words.Plural(len(results), "probe", "probes"))}
	}
	if n[probe.OutcomeFailed] > 0 {
		return exitCode(plan.ExitChanges)
	}
	return nil
}

// probeCounts counts the results by outcome.
func probeCounts(results []probe.Result) map[probe.Outcome]int {
	n := map[probe.Outcome]int{}
	for _, r := range results {
		n[r.Outcome]++
	}
	return n
}

// probeVerdicts are the text's words for the outcomes.
var probeVerdicts = map[probe.Outcome]string{probe.OutcomePassed: "PASS", probe.OutcomeFailed: "FAIL", probe.OutcomeError: "ERROR"}

func printProbes(w io.Writer, results []probe.Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range results {
		rtt := ""
		if r.RTTms > 0 {
			rtt = fmt.Sprintf("%.3f ms", r.RTTms)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", probeVerdicts[r.Outcome], r.Name, r.Kind, r.Target, rtt, r.Reason)
	}
	_ = tw.Flush()
	n := probeCounts(results)
	fmt.Fprintf(w, "probe: %d passed, %d failed, %d could not run\n", n[probe.OutcomePassed], n[probe.OutcomeFailed], n[probe.OutcomeError])
}

func (a *app) probeServeCmd() *cobra.Command {
	var file string
	var dur time.Duration
	cmd := &cobra.Command{
		Use:   "serve -f SPEC --for DURATION",
		Short: "Answer the peers' probes for a while (rping, ibv_rc_pingpong, ibping servers)",
		Long: `Start the responders that the probes of SPEC need on this host, run
them for DURATION (at most 1h), then stop them. SPEC is the probing
hosts' spec: a probe needs this host when its address is on one of this
host's RDMA netdevs (rdma_cm: rping -s -P; verbs: ibv_rc_pingpong,
started again after each client) or its LID or port GUID is one of this
host's InfiniBand ports (ib: ibping -S). ping needs no responder. A host
no probe targets has nothing to serve and exits 0 at once. Ctrl-C stops
the responders early. Only the responders this command started are
stopped, by their process IDs.

Exit codes: 0 served for DURATION (or nothing to serve); 1 a responder
could not start or a tool is missing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dur <= 0 || dur > probe.MaxServe {
				return &exitError{code: plan.ExitError, err: fmt.Errorf("--for %s: give a duration from 1s to %s (e.g. --for 5m)", dur, probe.MaxServe)}
			}
			spec, err := a.loadSpec(file)
			if err != nil {
				return err
			}
			h, err := a.host()
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			rs, err := probe.Responders(cmd.Context(), h, spec)
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			if len(rs) == 0 {
				fmt.Fprintf(a.env.Stdout, "probe serve: no probe of %s needs a responder on this host\n", spec.Src.File)
				return nil
			}
			// Ctrl-C and SIGTERM cancel cmd.Context() (Main), which stops
			// the responders.
			if err := probe.Serve(cmd.Context(), h, rs, dur, a.env.Stderr); err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			fmt.Fprintf(a.env.Stdout, "probe serve: answered for %d %s, responders stopped\n", len(probe.Targets(rs)), words.Plural(len(probe.Targets(rs)), "probe", "probes"))
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the probing hosts' spec `FILE` (- for stdin)")
	cmd.Flags().DurationVar(&dur, "for", 0, "how long to answer, e.g. 5m (at most 1h)")
	a.hostFlags(cmd)
	return cmd
}
