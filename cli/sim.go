package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/bootunit"
	"github.com/rdmaform/rdmaform/sim"
)

func (a *app) simCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Create and drive simulated hosts",
		Long: `A simulated host is a directory with the state of a machine with RDMA
adapters (sim.yaml) and the sysfs/configfs tree rendered from it. Run any
command against it with --sim DIR.`,
	}
	cmd.AddCommand(a.simNewCmd(), a.simRebootCmd(), a.simToolCmd())
	cmd.AddCommand(a.simFaultCmd())
	return cmd
}

func (a *app) simNewCmd() *cobra.Command {
	var profile, hostname string
	var adapters int
	var latency []string
	cmd := &cobra.Command{
		Use:   "new DIR --profile NAME",
		Short: "Create a simulated host",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if host.Exists(mustRoot(args[0]), "/"+sim.StateFile) {
				return &exitError{code: plan.ExitError, err: fmt.Errorf("%s already holds a simulated host", args[0])}
			}
			if cmd.Flags().Changed("adapters") && adapters < 1 {
				return &exitError{code: plan.ExitError, err: fmt.Errorf("--adapters %d: a host has at least 1 adapter", adapters)}
			}
			st, err := sim.NewState(profile, hostname, adapters)
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			if st.Latency, err = parseLatency(latency); err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			if _, err := sim.Create(args[0], st); err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			fmt.Fprintf(a.env.Stdout, "created simulated host %s (%s) in %s\n", hostname, profile, args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&profile, "profile", "cx5-roce", "host profile: "+fmt.Sprint(sim.ProfileNames()))
	_ = cmd.RegisterFlagCompletionFunc("profile", cobra.FixedCompletions(sim.ProfileNames(), cobra.ShellCompDirectiveNoFileComp))
	cmd.Flags().StringVar(&hostname, "hostname", "node1", "hostname of the simulated host")
	cmd.Flags().IntVar(&adapters, "adapters", 0, "number of dual-port adapters: 1-4 for cx5-roce, cx6-vpi-ib, cx6-vpi-sm and cx6dx-ofed (default 1), 1-64 for gpu-node (default 8); refused by cx3-mlx4 and vm-soft")
	cmd.Flags().StringArrayVar(&latency, "latency", nil, "emulated run time of a tool, `TOOL=DURATION` (e.g. mlxconfig=1.4s), or of its runs with an argument (\"mlxfwreset reset=20s\"); repeatable")
	return cmd
}

// parseLatency reads --latency TOOL=DURATION flags.
func parseLatency(flags []string) (map[string]sim.Duration, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	out := map[string]sim.Duration{}
	for _, f := range flags {
		tool, d, ok := strings.Cut(f, "=")
		if !ok || tool == "" {
			return nil, fmt.Errorf("--latency %q: want TOOL=DURATION, e.g. mlxconfig=1.4s", f)
		}
		v, err := time.ParseDuration(d)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("--latency %q: %q is not a duration such as 1.4s", f, d)
		}
		out[tool] = sim.Duration(v)
	}
	return out, nil
}

func mustRoot(dir string) host.FS {
	f, err := host.NewRootFS(dir)
	if err != nil {
		return nil
	}
	return f
}

func (a *app) simRebootCmd() *cobra.Command {
	var keepFirmware, noBootUnit bool
	cmd := &cobra.Command{
		Use:   "reboot DIR [--keep-firmware] [--no-boot-unit]",
		Short: "Reboot a simulated host: Next Boot firmware becomes current, runtime state is lost, the boot unit runs",
		Long: `Reboot a simulated host: firmware Next Boot values become current (ports
come up with their new link layer), runtime state is lost (rdma_cm values,
Soft-RoCE links, VFs, mlx4 port types written through sysfs, addresses,
MTUs, DCB and pause settings), modules are those loaded at boot and listed
in modules-load.d, /run is emptied (the reboot-required marker goes) and
the boot_id changes.

Units enabled in systemd are marked active. The boot unit
(rdmaform.service, persistence: boot-unit), when enabled, then runs as
systemd runs it: its ExecStartPre and ExecStart lines, read from
DIR/etc/systemd/system/rdmaform.service, each against the simulated host
(rdmaform --sim DIR ...), a "-" line's failure ignored, its
SuccessExitStatus counted as success. So a reboot ends where a real one
does: the runtime settings of the boot unit's spec are set again. A
command that fails leaves the unit failed and this command exits 1.

--no-boot-unit skips the boot unit (the unit stays marked active, as
before the boot unit's run was simulated); to do by hand what it does:

  rdmaform --sim DIR rollback --after-boot
  rdmaform --sim DIR apply --yes --only runtime -f DIR/etc/rdmaform/boot.yaml

--keep-firmware is a warm reboot that does not reload the adapters'
firmware (as on servers where only a cold boot or a firmware reset does):
Next Boot values stay staged and Current ones unchanged; everything else
happens as above.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := sim.Open(args[0])
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			if err := s.RebootWith(sim.RebootOptions{KeepFirmware: keepFirmware}); err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			fmt.Fprintf(a.env.Stdout, "rebooted %s (boot %d)\n", args[0], s.State().Boot)
			if noBootUnit {
				return nil
			}
			return a.runBootUnit(s, args[0], a.env.Stdout)
		},
	}
	cmd.Flags().BoolVar(&keepFirmware, "keep-firmware", false, "a warm reboot that does not reload the firmware: staged values stay staged")
	cmd.Flags().BoolVar(&noBootUnit, "no-boot-unit", false, "do not run the boot unit (rdmaform.service) after the reboot")
	return cmd
}

// runBootUnit runs the simulated host's enabled boot unit as systemd
// starts a oneshot at boot: each Exec line in order, rdmaform itself
// against the simulated host; a failed line ends the start (unless its
// "-" prefix says to go on) and leaves the unit failed. Each line's output
// is shown indented under it, as its journal would hold it, on w.
func (a *app) runBootUnit(s *sim.Sim, dir string, w io.Writer) error {
	job, err := s.BootJob(bootunit.UnitName)
	if err != nil {
		return &exitError{code: plan.ExitError, err: err}
	}
	if job == nil {
		return nil
	}
	for _, l := range job.Exec {
		if !slices.Contains(sim.InstalledBinaries, l.Argv[0]) {
			_ = s.EndStart(job.Unit, false)
			return &exitError{code: plan.ExitError, err: fmt.Errorf("%s: %s=%s: the simulator runs only rdmaform installed at %s, not %s", job.Unit, l.Key, l.Line, strings.Join(sim.InstalledBinaries, " or "), l.Argv[0])}
		}
		var out bytes.Buffer
		code := Run(append([]string{"--sim", dir}, simPaths(dir, l.Argv[1:])...), Env{Stdout: &out, Stderr: &out, Environ: a.env.Environ, Ctx: a.env.Ctx})
		fmt.Fprintf(w, "%s: %s=%s: exit %d\n", job.Unit, l.Key, l.Line, code)
		for _, line := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
			if line != "" {
				fmt.Fprintf(w, "    %s\n", line)
			}
		}
		if a.env.Ctx != nil && a.env.Ctx.Err() != nil {
			return &exitError{code: plan.ExitError, err: context.Cause(a.env.Ctx)}
		}
		if job.Succeeded(code) || l.IgnoreFailure {
			continue
		}
		if err := s.EndStart(job.Unit, false); err != nil {
			return &exitError{code: plan.ExitError, err: err}
		}
		return &exitError{code: plan.ExitError, err: fmt.Errorf("%s failed at boot: %s=%s exited %d (see its output above)", job.Unit, l.Key, l.Line, code)}
	}
	if err := s.EndStart(job.Unit, true); err != nil {
		return &exitError{code: plan.ExitError, err: err}
	}
	fmt.Fprintf(w, "%s: started\n", job.Unit)
	return nil
}

// simPaths gives the files a boot unit's command line names on the host
// their place in the simulated host's tree: an absolute path that exists
// under DIR is DIR/PATH (rdmaform --sim reads spec files from the real
// file system).
func simPaths(dir string, args []string) []string {
	root := mustRoot(dir)
	out := make([]string, len(args))
	for i, arg := range args {
		out[i] = arg
		if filepath.IsAbs(arg) && root != nil && host.Exists(root, arg) {
			out[i] = filepath.Join(dir, arg)
		}
	}
	return out
}

func (a *app) simToolCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "tool DIR -- PROGRAM [ARGS...]",
		Short: "Run an emulated tool of a simulated host and print what it prints",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := sim.Open(args[0])
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			res, err := s.RunTool(cmd.Context(), args[1:])
			a.env.Stdout.Write(res.Stdout)
			a.env.Stderr.Write(res.Stderr)
			var ee *host.ExitError
			if errors.As(err, &ee) {
				if ee.Code < 0 {
					return &exitError{code: 127, err: err}
				}
				a.env.Stdout.Write(ee.Stdout[len(res.Stdout):])
				return exitCode(ee.Code)
			}
			return err
		},
	}
}
