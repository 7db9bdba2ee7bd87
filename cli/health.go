package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/rdmaform/rdmaform/audit"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/providers"
)

// Bounds of `health --timeout`: Slurm kills a HealthCheckProgram after
// 60 s (and NHC's own default timeout is 30 s), and the Slurm steps of
// --slurm-drain come after the checks, within slurmStepBudget.
const (
	healthDefaultTimeout = 20 * time.Second
	healthMinTimeout     = time.Second
	healthMaxTimeout     = 40 * time.Second
	// slurmStepBudget bounds --slurm-drain's scontrol calls together.
	slurmStepBudget = 10 * time.Second
)

// slurmHealthReason starts every drain reason `health --slurm-drain`
// gives: a node drained with another reason is not its to resume.
const slurmHealthReason = "rdmaform health: "

// maxSlurmReason bounds the drain reason (sinfo -R shows the start; the
// whole list is in `rdmaform health` on the node).
const maxSlurmReason = 200

// slurmNodeRE: a Slurm node name that can be one argument of scontrol
// (not an option, no space, "=" or ","), as rdmaform.rdma.drain checks it.
var slurmNodeRE = regexp.MustCompile(`^[A-Za-z0-9_.][A-Za-z0-9_.\-]*$`)

func (a *app) healthCmd() *cobra.Command {
	var file, drift, node string
	var timeout time.Duration
	var slurmDrain bool
	unknown := func(err error) error { return &exitError{code: int(audit.NagiosUnknown), err: err} }
	cmd := &cobra.Command{
		Use:   "health -f SPEC [--timeout D] [--drift warning|critical] [--slurm-drain [--slurm-node NAME]] [-o text|json]",
		Short: "A quick health check of this host alone, for Slurm's HealthCheckProgram, NHC and Nagios",
		Long: `Check this host against SPEC, alone (no peers, no traffic), within
--timeout, and give the verdict as health-check frameworks read it: one
summary line, then one line per problem, and Nagios's exit code.

It runs the audit's checks without probes: the ports (state ACTIVE,
phys_state LinkUp, link layer, rate, subnet manager, RoCE v2 GID), the
P_Keys, the lossless path, GPUDirect readiness (when the spec has gpu:),
the firmware and the staged ledger (a value staged for the next boot; a
value a reboot did not activate), and drift (plan would change
something). Nothing on the host changes.

  0  OK        every check passed (waived ones included: --waivers is
               audit's; health has none);
  1  WARNING   drift, or a value staged for the next boot;
  2  CRITICAL  a failed port, P_Key, lossless or GPUDirect check, a
               device the spec names that is not there, a firmware value
               that did not take; drift with --drift critical; the checks
               did not finish within --timeout (a hung tool: as Nagios
               and monitoring-plugins treat a timeout);
  3  UNKNOWN   no verdict: a bad spec or command line, part of the host
               that could not be read, a spec for another host.

The first line is "RDMA STATUS: the most severe problem (and N more) |
checks=N critical=N warning=N unknown=N".

--timeout D (default 20s, from 1s to 40s) bounds the checks: Slurm kills
a HealthCheckProgram after 60 s. With --slurm-drain the host's Slurm node
(--slurm-node, else SLURMD_NODENAME, else the first label of the
hostname) is drained on CRITICAL with the reason "rdmaform health:
PROBLEM", and resumed on OK or WARNING only when that reason is still
its drain reason: a node someone else drained stays drained. UNKNOWN
changes nothing (a bad spec copied to every node must not drain a
cluster). scontrol finds the cluster as it always does
(/etc/slurm/slurm.conf or SLURM_CONF); its calls get 10s together.
Slurm's HealthCheckProgram takes no arguments, and slurmd runs it with
no PATH (SLURMD_NODENAME is set): point it at a script that sets PATH
and runs 'exec rdmaform health -f SPEC --slurm-drain'. NHC drains by
itself: check_cmd_status rdmaform health -f SPEC.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if timeout < healthMinTimeout || timeout > healthMaxTimeout {
				return a.healthUnknown(fmt.Errorf("--timeout %s: give a duration from %s to %s (Slurm kills a health check after 60s)", timeout, healthMinTimeout, healthMaxTimeout))
			}
			var o audit.HealthOptions
			switch drift {
			case "warning":
			case "critical":
				o.DriftCritical = true
			default:
				return a.healthUnknown(fmt.Errorf("--drift %q: want warning or critical", drift))
			}
			if cmd.Flags().Changed("slurm-node") && !slurmDrain {
				return a.healthUnknown(errors.New("--slurm-node names the node --slurm-drain drains: give --slurm-drain too"))
			}
			if slurmDrain {
				if node == "" {
					node = a.slurmNodeName()
				}
				if !slurmNodeRE.MatchString(node) {
					return a.healthUnknown(fmt.Errorf("Slurm node %q: not a node name scontrol takes (set --slurm-node)", node))
				}
			}
			spec, err := a.loadSpec(file)
			if err != nil {
				var ee *exitError
				if errors.As(err, &ee) && ee.err != nil {
					err = ee.err
				}
				return a.healthUnknown(err)
			}
			h, err := a.host()
			if err != nil {
				return a.healthUnknown(err)
			}
			defer a.recordSimCalls()
			now, err := a.now()
			if err != nil {
				return a.healthUnknown(err)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			r, err := audit.Run(ctx, h, spec, providers.All(), audit.Options{Now: now, GPUPath: &providers.GPUPath{}})
			var verdict audit.Health
			switch {
			case ctx.Err() != nil && cmd.Context().Err() == nil:
				// The checks' own deadline, not an interrupt: a hung tool.
				verdict = audit.Health{Status: audit.NagiosCritical, Problems: []audit.HealthProblem{{Status: audit.NagiosCritical,
					Resource: "host", Check: "timeout", Message: fmt.Sprintf("the checks did not finish within %s", timeout)}}}
				if err != nil {
					verdict.Problems[0].Message += " (" + err.Error() + ")"
				}
			case err != nil:
				return a.healthUnknown(err)
			default:
				verdict = audit.Judge(r, o)
			}
			doc := healthDoc{FormatVersion: FormatVersion, Spec: spec.Src.File, Health: verdict, Summary: verdict.SummaryLine()}
			if r != nil {
				doc.Host = r.Host
			}
			status := verdict.Status
			if slurmDrain {
				sctx, scancel := context.WithTimeout(cmd.Context(), slurmStepBudget)
				defer scancel()
				doc.Slurm = a.slurmHealth(sctx, node, verdict)
				if doc.Slurm.Error != "" && status != audit.NagiosCritical {
					// A resume that failed leaves the node drained: say so.
					status = audit.NagiosUnknown
				}
			}
			doc.ExitCode = int(status)
			if a.jsonOut() {
				if err := a.writeJSON(doc); err != nil {
					return err
				}
			} else {
				printHealth(a.env.Stdout, doc)
			}
			if doc.Slurm != nil && doc.Slurm.Error != "" {
				return &exitError{code: int(status), err: errors.New(doc.Slurm.Error)}
			}
			if status != audit.NagiosOK {
				return exitCode(int(status))
			}
			return nil
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return unknown(err) })
	cmd.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if err := a.checkOutput(cmd); err != nil {
			return unknown(err)
		}
		return nil
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the host's spec `FILE` (- for stdin)")
	cmd.Flags().DurationVar(&timeout, "timeout", healthDefaultTimeout, "bound the checks to `D` (1s to 40s); past it the verdict is CRITICAL")
	cmd.Flags().StringVar(&drift, "drift", "warning", "what drift is: warning or critical")
	cmd.Flags().BoolVar(&slurmDrain, "slurm-drain", false, "drain this host's Slurm node on CRITICAL; resume it on OK or WARNING if health drained it")
	cmd.Flags().StringVar(&node, "slurm-node", "", "the Slurm node `NAME` (default SLURMD_NODENAME, else the hostname's first label)")
	a.outputFlag(cmd, "text", "text", "json")
	a.hostFlags(cmd)
	return cmd
}

// healthUnknown is an UNKNOWN verdict before any check ran: the summary
// line on stdout (frameworks read it), the error on stderr, exit 3.
func (a *app) healthUnknown(err error) error {
	text := err.Error()
	var fe *findingsError
	if errors.As(err, &fe) && len(fe.Report) > 0 {
		// The first finding, where it is: "node.yaml:5:17: error: ...".
		text = fe.Report[0].String()
		if n := len(fe.Report) - 1; n > 0 {
			text += fmt.Sprintf(" (and %d more)", n)
		}
	}
	line := "RDMA UNKNOWN: " + strings.ReplaceAll(strings.Join(strings.Fields(text), " "), "|", "/")
	if !a.jsonOut() {
		// With -o json the error is the errors document, as for every
		// command.
		fmt.Fprintln(a.env.Stdout, line)
	}
	return &exitError{code: int(audit.NagiosUnknown), err: err}
}

// healthDoc is `health -o json`.
type healthDoc struct {
	FormatVersion int    `json:"format_version"`
	Host          string `json:"host"`
	Spec          string `json:"spec"`
	// Summary is the text's first line.
	Summary  string `json:"summary"`
	ExitCode int    `json:"exit_code"`
	audit.Health
	Slurm *slurmHealthJSON `json:"slurm,omitempty"`
}

// slurmHealthJSON is what --slurm-drain did.
type slurmHealthJSON struct {
	Node string `json:"node"`
	// State and Reason are the node's before (scontrol show node).
	State  string `json:"state"`
	Reason string `json:"reason"`
	// Action: drained, resumed, or none.
	Action string `json:"action"`
	// Note says why nothing was done when that matters.
	Note  string `json:"note,omitempty"`
	Error string `json:"error,omitempty"`
}

func printHealth(w io.Writer, d healthDoc) {
	fmt.Fprintln(w, d.Summary)
	for _, p := range d.Problems {
		fmt.Fprintf(w, "%s %s\n", p.Status, p.Line())
	}
	if s := d.Slurm; s != nil {
		switch {
		case s.Error != "":
			fmt.Fprintf(w, "slurm: node %s: %s\n", s.Node, s.Error)
		case s.Action != "none":
			fmt.Fprintf(w, "slurm: node %s %s\n", s.Node, s.Action)
		case s.Note != "":
			fmt.Fprintf(w, "slurm: node %s: %s\n", s.Node, s.Note)
		}
	}
}

// slurmNodeName is this host's Slurm node name: SLURMD_NODENAME (which
// slurmd gives its health check program), else the first label of the
// running kernel's hostname.
func (a *app) slurmNodeName() string {
	if n := a.getenv("SLURMD_NODENAME"); n != "" {
		return n
	}
	h, err := host.NewLive(a.env.Environ)
	if err != nil {
		return ""
	}
	name, _ := h.Hostname()
	short, _, _ := strings.Cut(name, ".")
	return short
}

// slurmHealth drains the node on CRITICAL and resumes it on OK or
// WARNING when its drain reason is health's, through the real scontrol
// (the cluster's, even when the host is simulated).
//
// Equivalent to:
//
//	scontrol show node -o NODE
//	scontrol update nodename=NODE state=drain reason="rdmaform health: ..."
//	scontrol update nodename=NODE state=resume
func (a *app) slurmHealth(ctx context.Context, node string, v audit.Health) *slurmHealthJSON {
	out := &slurmHealthJSON{Node: node, Action: "none"}
	run := &host.ExecRunner{Env: append(append([]string{}, a.env.Environ...), "LC_ALL=C")}
	scontrol := func(args ...string) (string, error) {
		c := host.Cmd{Args: append([]string{"scontrol"}, args...), Timeout: slurmStepBudget}
		res, err := run.Run(ctx, c)
		if err != nil {
			return "", err // *host.ExitError: the command line and its stderr
		}
		return string(res.Stdout), nil
	}
	show, err := scontrol("show", "node", "-o", node)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	state, reason, ok := parseSlurmNode(show)
	if !ok {
		out.Error = fmt.Sprintf("scontrol show node -o %s printed no State field: %s", node, strings.TrimSpace(show))
		return out
	}
	out.State, out.Reason = state, reason
	drained := slurmDrainFlag(state)
	ours := strings.HasPrefix(reason, slurmHealthReason)
	switch v.Status {
	case audit.NagiosCritical:
		if drained {
			out.Note = "already drained (" + reason + ")"
			return out
		}
		want := slurmHealthReason + v.SummaryText()
		if len(want) > maxSlurmReason {
			want = want[:maxSlurmReason]
			for !utf8.ValidString(want) {
				want = want[:len(want)-1]
			}
		}
		if _, err := scontrol("update", "nodename="+node, "state=drain", "reason="+want); err != nil {
			out.Error = err.Error()
			return out
		}
		out.Action = "drained"
	case audit.NagiosOK, audit.NagiosWarning:
		if !drained {
			return out
		}
		if !ours {
			out.Note = "stays drained: its reason (" + reason + ") is not rdmaform health's"
			return out
		}
		if _, err := scontrol("update", "nodename="+node, "state=resume"); err != nil {
			out.Error = err.Error()
			return out
		}
		out.Action = "resumed"
	default:
		out.Note = "UNKNOWN changes nothing"
	}
	return out
}

// parseSlurmNode reads the State and Reason fields of one `scontrol show
// node -o` line: Key=Value fields separated by spaces; Reason, when set,
// comes last and may hold spaces, followed by " [USER@TIME]"
// (slurm_sprint_node_table, src/api/node_info.c, Slurm 22.05; the Slurm
// lab's real scontrol in TestHealthDrainsSlurmNode).
func parseSlurmNode(line string) (state, reason string, ok bool) {
	for _, f := range strings.Fields(line) {
		if v, found := strings.CutPrefix(f, "State="); found {
			state, ok = v, true
			break
		}
	}
	if i := strings.Index(line, " Reason="); i >= 0 {
		reason = strings.TrimSpace(line[i+len(" Reason="):])
	}
	if reason == "(null)" {
		reason = ""
	}
	return state, reason, ok
}

// slurmDrainFlag: the node has the DRAIN flag (IDLE+DRAIN, DRAINED,
// DRAINING, ALLOCATED+DRAIN, DOWN+DRAIN, ...).
func slurmDrainFlag(state string) bool {
	words := strings.Split(strings.ToUpper(state), "+")
	if words[0] == "DRAINED" || words[0] == "DRAINING" {
		return true
	}
	for _, w := range words[1:] {
		if w == "DRAIN" {
			return true
		}
	}
	return false
}
