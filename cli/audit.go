package cli

import (
	"bytes"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmaform/rdmaform/audit"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers"
	"github.com/rdmaform/rdmaform/session"
)

// nowEnv names the environment variable that sets the audit's clock.
const nowEnv = session.NowEnv

func (a *app) auditCmd() *cobra.Command {
	var file, format, reportFile, waiverFile string
	var probes bool
	cmd := &cobra.Command{
		Use:   "audit -f GOLDEN [-o text|json|junit|prometheus] [--report-file FILE] [--waivers FILE] [--probes]",
		Short: "Compare the host with a golden spec: drift, pending reboots, health",
		Long: `Audit the host against a golden spec (for example one 'rdmaform show'
captured) without changing anything: the plan is built, never applied.
Each resource is reported with these checks:

  drift           plan would change it (the attributes that differ)
  pending_reboot  it waits for a reboot (firmware staged for next boot)
  finding         a host-dependent problem at a spec line (a device that
                  is not there, RoCE on an InfiniBand port, ...)
  port health     link_layer (as the spec expects), phys_state (LinkUp or
                  expect.phys_state), state (ACTIVE or expect.state), rate
                  (at least expect.min_rate), subnet_manager (InfiniBand:
                  sm_lid set and the port ACTIVE), roce_v2_gid (roce.mode
                  v2: a RoCE v2 GID in the port's table), roce_mode
                  (roce without mode: which version the kernel uses there,
                  v1 on a ConnectX-3 that is not a Pro; always passes)
  pkey            an IPoIB connection's P_Key is in its port's table
  lossless        a port with qos: its lossless path holds on the host
                  (rdma_cm ToS -> DSCP -> priority -> PFC, ECN, an ETS
                  share; CNPs lossless or strict); fails at the first
                  broken link, warns on trust pcp
  hostname        the host is host.hostname
  probe           with --probes: each connectivity probe of the spec
                  passed (see rdmaform probe; a probe that cannot run,
                  such as one whose tool is missing, is an error)

A port that stays down (Polling, Disabled) while its link layer is not
the expected one, or while firmware changes it at the next boot, gets the
diagnosis: both ends down because one is InfiniBand and the other
Ethernet.

Formats: text (what did not pass), json (every check, stable and
versioned), junit (one testcase per check; waived checks are skipped),
prometheus (text exposition for node_exporter's textfile collector:
rdmaform_build_info, rdmaform_drift, rdmaform_pending_reboot,
rdmaform_health, rdmaform_error, rdmaform_waived,
rdmaform_audit_errors, rdmaform_last_run_timestamp_seconds).
--report-file writes the report to FILE atomically (temporary file,
rename) instead of stdout. --format is the old name of -o (deprecated).

--waivers FILE lists known exceptions, each waived until its date:
  - {resource: "rdma_cm[mlx5_0/1]", check: drift, reason: "...", expires: 2027-01-31}
A waived check does not fail the audit; once the date has passed it fails
again. ` + nowEnv + ` (RFC 3339 or YYYY-MM-DD) sets the audit's clock.

Exit codes: 0 compliant; 1 error (bad spec or waivers, a tool or service
that could not be read); 2 drift, a failed health check or a finding;
3 only pending reboots.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("format") {
				fmt.Fprintln(a.env.Stderr, "rdmaform: audit --format is deprecated: use -o/--output FORMAT (and --report-file FILE to write a file)")
				if cmd.Flags().Changed("output") && format != a.output {
					return &exitError{code: plan.ExitError, err: fmt.Errorf("--format %s and -o %s disagree: give -o alone", format, a.output)}
				}
				a.output = format
				if err := a.checkOutput(cmd); err != nil {
					return err
				}
			}
			now, err := a.now()
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			if err := checkOutFile("--report-file", reportFile); err != nil {
				return err
			}
			var waivers []audit.Waiver
			if waiverFile != "" {
				data, err := host.ReadLocalFile(waiverFile, a.env.Stdin)
				if err != nil {
					return &exitError{code: plan.ExitError, err: fmt.Errorf("reading waivers: %w", err)}
				}
				ws, rep := audit.LoadWaivers(waiverFile, data)
				if len(rep) > 0 {
					return &exitError{code: plan.ExitError, err: &findingsError{Name: waiverFile, Report: rep}}
				}
				waivers = ws
			}
			spec, err := a.loadSpec(file)
			if err != nil {
				return err
			}
			h, err := a.host()
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			defer a.recordSimCalls()
			r, err := audit.Run(cmd.Context(), h, spec, providers.All(), audit.Options{Waivers: waivers, Now: now, Probes: probes, GPUPath: &providers.GPUPath{}})
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			var b bytes.Buffer
			if err := audit.Render(&b, r, a.output); err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			if reportFile == "" {
				if _, err := a.env.Stdout.Write(b.Bytes()); err != nil {
					return err
				}
				a.wroteDoc = true
			} else {
				if err := host.WriteLocalFile(reportFile, b.Bytes(), 0o644); err != nil {
					return &exitError{code: plan.ExitError, err: fmt.Errorf("writing %s: %w", reportFile, err)}
				}
				fmt.Fprintln(a.info(), audit.SummaryLine(r))
			}
			return exitCode(r.ExitCode())
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "golden spec `FILE` (- for stdin)")
	a.outputFlag(cmd, "text", audit.Formats...)
	cmd.Flags().StringVar(&format, "format", "", "deprecated: the old name of -o/--output")
	cmd.Flags().StringVar(&reportFile, "report-file", "", "write the report to `FILE` atomically (temporary file, rename) instead of stdout")
	cmd.Flags().StringVar(&waiverFile, "waivers", "", "known exceptions, YAML `FILE`")
	cmd.Flags().BoolVar(&probes, "probes", false, "run the spec's probes too (one check per probe; rdmaform_probe_success, rdmaform_probe_rtt_seconds and the bandwidth and latency figures in prometheus)")
	a.hostFlags(cmd)
	return cmd
}

// now is the time of an audit: RDMAFORM_NOW when set, else the clock
// (session.Now).
func (a *app) now() (time.Time, error) { return session.Now(a.env.Environ) }

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
