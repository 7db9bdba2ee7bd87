// Package cli is rdmaform's command line: subcommands, flags, exit codes.
// Run is the whole program, so tests drive it exactly as users do.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/version"
)

// Env is everything the program gets from its process.
type Env struct {
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	Environ []string
	// StdoutTTY / StdinTTY / StderrTTY tell whether those are terminals
	// (colour, prompts, live progress).
	StdoutTTY bool
	StdinTTY  bool
	StderrTTY bool
	// Ctx is cancelled on SIGINT/SIGTERM; nil means context.Background().
	Ctx context.Context
	// Self is the rdmaform program to start for the rollback watcher of
	// apply --confirm-timeout; "" (tests running in-process) means none is
	// started and only the in-process timer guards the confirmation.
	Self string
	// SelfArgs come right after Self to make it the rdmaform command line
	// (none for rdmaform itself; the Ansible module needs its marker).
	SelfArgs []string
}

// SignalError is the cause of Env.Ctx's end when a signal stopped the run.
type SignalError struct{ Signal os.Signal }

func (e *SignalError) Error() string { return "interrupted by " + e.Signal.String() }

// ExitCode is the shell's code for a run a signal ended: 128 + its number
// (130 for SIGINT, 143 for SIGTERM).
func (e *SignalError) ExitCode() int {
	if s, ok := e.Signal.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 130
}

// OSEnv returns the process's environment. Its context ends, with a
// *SignalError as the cause, at the first SIGINT or SIGTERM; a second one
// acts as if rdmaform did not handle it (the process ends at once).
func OSEnv() Env {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		signal.Reset(os.Interrupt, syscall.SIGTERM)
		cancel(&SignalError{Signal: s})
	}()
	return Env{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Environ: os.Environ(),
		StdoutTTY: isTTY(os.Stdout), StdinTTY: isTTY(os.Stdin), StderrTTY: isTTY(os.Stderr), Ctx: ctx, Self: host.SelfPath(),
	}
}

// isTTY: a terminal answers the terminal ioctl; /dev/null, a character
// device too, does not.
func isTTY(f *os.File) bool { return host.IsTerminal(f.Fd()) }

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error // printed unless nil
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func exitCode(code int) error { return &exitError{code: code} }

// app is the state shared by subcommands.
type app struct {
	env     Env
	rootDir string
	simDir  string
	sim     *sim.Sim
	// output is the command's -o FORMAT; wroteDoc: a JSON document is
	// already on stdout (an error after it goes to stderr).
	output      string
	wroteDoc    bool
	noColorFlag bool
	// quiet, verbose: -q and -v of the commands that read the host.
	quiet, verbose bool
	// results is what plan and apply made, for RunResults.
	results Results
	// wrapHost, when set, wraps the host the global flags open (the
	// kernel lab's RunWrapped).
	wrapHost func(*host.Host) *host.Host
}

// Results is what a command run in this process made, for a caller that
// wants the values rather than their text (the Ansible module).
type Results struct {
	// Plan is the plan `plan` made, or the one `apply` acted on; nil when
	// none was made (a bad spec, a host that could not be read).
	Plan *plan.Plan
	// Report is what apply.Converge did for `apply`.
	Report *apply.Report
	// Facts is what `facts` found.
	Facts *FactsDoc
}

// exitCodesHelp ends the help of the root command and of the commands
// that act on a spec: plan.ExitCodes.
var exitCodesHelp = exitCodesText()

// Run runs rdmaform with args (without the program name) and returns the
// exit code.
func Run(args []string, env Env) int {
	code, _ := RunResults(args, env)
	return code
}

// RunResults runs rdmaform as Run does, and returns what plan and apply
// made as values as well.
func RunResults(args []string, env Env) (int, *Results) {
	return (&app{env: env}).run(args)
}

// run runs rdmaform with args for RunResults (and the kernel lab's
// RunWrapped).
func (a *app) run(args []string) (int, *Results) {
	env := &a.env
	if env.Ctx == nil {
		env.Ctx = context.Background()
	}
	if env.Stdin == nil {
		env.Stdin = strings.NewReader("")
	}
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	cmd, err := root.ExecuteContextC(env.Ctx)
	if err == nil {
		return 0, &a.results
	}
	if a.output == "" {
		// The command failed before its -o was checked (a flag or an
		// argument cobra refused): its error still follows -o json.
		a.output = outputOf(cmd, args)
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			a.reportError(env.Stderr, ee.err)
		}
		return ee.code, &a.results
	}
	a.reportError(env.Stderr, err)
	return plan.ExitError, &a.results
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "rdmaform",
		Short: "Configure the RDMA side of Linux hosts from one YAML spec",
		Long: `rdmaform configures RDMA adapters, firmware, RoCE, IPoIB, Soft-RoCE,
addresses, modules and services from one YAML spec: plan shows what
would change, apply changes it and proves it by planning again.

` + exitCodesHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Get().String(),
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return a.checkOutput(cmd)
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	// -v is --verbose wherever it exists (the commands that read the
	// host); the version is --version only, never -v.
	root.Flags().Bool("version", false, "print rdmaform's version (as 'rdmaform version')")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		if cmd.Flags().ShorthandLookup("v") == nil && strings.Contains(err.Error(), "'v' in -v") {
			return fmt.Errorf("%w (-v is --verbose, a flag of the commands that read the host; the version is --version)", err)
		}
		return err
	})
	root.PersistentFlags().BoolVar(&a.noColorFlag, "no-color", false, "no ANSI colours (also NO_COLOR=1 or TERM=dumb; colours only ever go to a terminal)")
	root.PersistentFlags().StringVar(&a.rootDir, "root", "", "read and write sysfs, configfs, /etc and /run under `DIR` (offline rendering, tests)")
	root.PersistentFlags().StringVar(&a.simDir, "sim", "", "run against the simulated host in `DIR`")
	root.MarkFlagsMutuallyExclusive("root", "sim")
	root.AddCommand(a.validateCmd(), a.confirmCmd(), a.planCmd(), a.applyCmd(), a.showCmd(), a.auditCmd(), a.lintCmd(), a.probeCmd(), a.showPlanCmd(), a.rollbackCmd(), a.simCmd(), a.statusCmd(), a.versionCmd(), a.wavesCmd(), a.factsCmd())
	root.AddCommand(a.activateCmd(), a.fabricTestCmd(), a.firmwareSummaryCmd(), a.healthCmd())
	root.SetHelpTemplate(root.HelpTemplate())
	return root
}

// host opens the host the global flags name, with every command's
// timeout capped by RDMAFORM_COMMAND_TIMEOUT when it is set.
func (a *app) host() (*host.Host, error) {
	h, err := a.openHost()
	if err != nil {
		return nil, err
	}
	max, err := host.TimeoutFromEnv(a.env.Environ)
	if err != nil {
		return nil, err
	}
	if a.wrapHost != nil {
		h = a.wrapHost(h)
	}
	h.Runner = a.verboseRunner(host.CapTimeout(h.Runner, max))
	h.NM = host.CapNM(h.NM, max)
	return h, nil
}

func (a *app) openHost() (*host.Host, error) {
	switch {
	case a.simDir != "":
		s, err := sim.Open(a.simDir)
		if err != nil {
			return nil, err
		}
		a.sim = s
		return s.Host()
	case a.rootDir != "":
		return host.NewRooted(a.rootDir, a.env.Environ)
	}
	return host.NewLive(a.env.Environ)
}

// hint is the command line of a follow-up command for messages, with the
// global flags of this run that pick the host (--sim DIR, --root DIR), so
// that it can be pasted as it is.
func (a *app) hint(args ...string) string {
	parts := []string{"rdmaform"}
	switch {
	case a.simDir != "":
		parts = append(parts, "--sim", a.simDir)
	case a.rootDir != "":
		parts = append(parts, "--root", a.rootDir)
	}
	return host.Cmd{Args: append(parts, args...)}.String()
}

// recordSimCalls appends the simulated tools' command lines to the file
// RDMAFORM_SIM_CALLS names, for scenario tests.
func (a *app) recordSimCalls() {
	if a.sim == nil {
		return
	}
	for _, kv := range a.env.Environ {
		if f, ok := strings.CutPrefix(kv, "RDMAFORM_SIM_CALLS="); ok && f != "" {
			calls := a.sim.Calls()
			if len(calls) == 0 {
				return
			}
			old, _ := host.ReadLocalFile(f, nil)
			_ = host.WriteLocalFile(f, append(old, []byte(strings.Join(calls, "\n")+"\n")...), 0o644)
		}
	}
}

// Command returns rdmaform's command tree, for generating its manual
// pages and shell completions (cmd/rdmaform-docs); running it needs Run.
func Command() *cobra.Command {
	a := &app{env: Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard}}
	return a.rootCmd()
}
