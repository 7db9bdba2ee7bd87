package sim

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/sim/mlxemu"
)

// toolFunc emulates one program: it gets the arguments after the program
// name and returns what the program prints and its exit code.
type toolFunc func(ctx context.Context, s *Sim, args []string, stdin []byte) (stdout, stderr string, code int)

// tools are the programs a simulated host can have on its PATH.
var tools = map[string]toolFunc{
	"modprobe":  modprobe,
	"mlxconfig": firmwareTool("mlxconfig"),
	"mstconfig": firmwareTool("mstconfig"),
	"mst":       mstTool,
	"mstflint": func(ctx context.Context, s *Sim, args []string, _ []byte) (string, string, int) {
		return flintTool(ctx, s, args)
	},
	"flint": func(ctx context.Context, s *Sim, args []string, _ []byte) (string, string, int) {
		return flintTool(ctx, s, args)
	},
	"nmcli":   nmcliTool,
	"dcb":     dcbTool,
	"ethtool": ethtoolTool,
	"ip":      ipTool,
	"rdma":    rdmaTool,
	// Firmware reset (sim/fwreset.go).
	"mstfwreset": fwresetTool("mstfwreset"),
	"mlxfwreset": fwresetTool("mlxfwreset"),
	// Probes (sim/probe.go): the simulated fabric.
	"ping":            pingTool,
	"rping":           rpingTool,
	"ibv_rc_pingpong": pingpongTool,
	// Bandwidth and latency probes (sim/perftest.go).
	"ib_write_bw":  perftestTool("ib_write_bw"),
	"ib_read_bw":   perftestTool("ib_read_bw"),
	"ib_send_bw":   perftestTool("ib_send_bw"),
	"ib_write_lat": perftestTool("ib_write_lat"),
	// The subnet manager (sim/opensm.go).
	"sminfo": sminfoTool,
	// The bootloader (sim/grub.go).
	"update-grub":    updateGrubTool,
	"grubby":         unsupportedBootTool,
	"kernel-install": unsupportedBootTool,
}

// taskset runs another emulated program (through the runner, which
// reads tools): it joins the table at init.
func init() { tools["taskset"] = tasksetTool }

// runner runs emulated programs in-process, with the simulated host's
// latencies and faults, and the same errors a real runner returns.
type runner struct {
	sim *Sim
}

var _ host.Runner = (*runner)(nil)

// Run implements host.Runner.
func (r *runner) Run(ctx context.Context, c host.Cmd) (host.Result, error) {
	if len(c.Args) == 0 {
		return host.Result{}, &host.ExitError{Cmd: c, Code: -1, Err: fmt.Errorf("empty command")}
	}
	name := c.Args[0]
	r.sim.lock()
	r.sim.calls = append(r.sim.calls, c.String())
	installed := r.sim.state.HasTool(name)
	latency := r.sim.state.latencyOf(c.Args)
	fault := r.sim.takeLocked(faultTool, name, strings.Join(c.Args[1:], " "))
	firmware := installed && (name == "mlxconfig" || name == "mstconfig" || name == "mstfwreset" || name == "mlxfwreset")
	if firmware {
		r.sim.enterFirmware()
		if name == "mstfwreset" || name == "mlxfwreset" {
			r.sim.knowRendering()
		}
	}
	r.sim.unlock()
	if firmware {
		res, err := r.run(ctx, c, installed, fault, latency)
		if serr := r.sim.leaveFirmware(); serr != nil && err == nil {
			return res, &host.ExitError{Cmd: c, Code: 1, Stdout: res.Stdout, Stderr: append(res.Stderr, serr.Error()+"\n"...)}
		}
		return res, err
	}
	return r.run(ctx, c, installed, fault, latency)
}

// run is one tool run after the bookkeeping: the fault or the emulated
// tool, after the emulated latency.
func (r *runner) run(ctx context.Context, c host.Cmd, installed bool, fault *Fault, latency time.Duration) (host.Result, error) {
	name := c.Args[0]
	fn := tools[name]
	if !installed || fn == nil {
		return host.Result{}, &host.ExitError{Cmd: c, Code: -1, Err: fmt.Errorf("%w on PATH (simulated host)", host.ErrNotFound)}
	}
	ctx, cancel := context.WithTimeout(ctx, c.EffectiveTimeout())
	defer cancel()
	if fault != nil && fault.Hang {
		<-ctx.Done()
		return host.Result{}, &host.ExitError{Cmd: c, Code: -1, Err: host.CtxErr(ctx)}
	}
	termed, aborted := false, ""
	if latency > 0 {
		start := time.Now()
		t := time.NewTimer(latency)
		select {
		case <-t.C:
		case <-ctx.Done():
			if !c.Gentle {
				// Killed: the run ends here, having done nothing.
				t.Stop()
				return host.Result{}, &host.ExitError{Cmd: c, Code: -1, Err: host.CtxErr(ctx)}
			}
			// A gentle command gets SIGTERM and is waited for (host.
			// Cmd.Gentle). A firmware reset tool stops at it in the first
			// half of its run (before it resets the PCI link: its signal
			// handler undoes the reset request) and ignores it in the
			// second; the other emulated tools run to their end.
			termed = true
			if stop := onSIGTERM[name]; stop != nil && time.Since(start) < latency/2 {
				t.Stop()
				aborted = stop()
			} else {
				<-t.C
			}
		}
	}
	var stdout, stderr string
	var code int
	switch {
	case fault != nil && fault.Drop:
		// Exits 0 having done nothing: the write did not stick.
	case fault != nil:
		stdout, stderr, code = fault.Stdout, fault.Stderr, fault.Exit
	case aborted != "":
		stdout, code = aborted, 1
	case termed:
		stdout, stderr, code = fn(context.WithoutCancel(ctx), r.sim, c.Args[1:], c.Stdin)
	default:
		stdout, stderr, code = fn(ctx, r.sim, c.Args[1:], c.Stdin)
	}
	res := host.Result{Stdout: []byte(stdout), Stderr: []byte(stderr)}
	if c.Progress != nil {
		// The emulated tool printed at once what the real one prints
		// as it goes: its lines reach the caller the same way.
		lw := host.NewLineWriter(c.Progress)
		_, _ = lw.Write(res.Stdout)
		lw.Flush()
	}
	if code == serverStopped && ctx.Err() != nil {
		// A server (rping -s) ran until it was stopped: the real runner
		// says why it stopped it.
		return res, &host.ExitError{Cmd: c, Code: -1, Stdout: res.Stdout, Stderr: res.Stderr, Err: host.CtxErr(ctx)}
	}
	if code != 0 {
		ee := &host.ExitError{Cmd: c, Code: code, Stdout: res.Stdout, Stderr: res.Stderr}
		if termed {
			ee.Err = host.CtxErr(ctx) // as the real runner says why it stopped it
		}
		return res, ee
	}
	return res, nil
}

// onSIGTERM are the emulated tools that stop at SIGTERM early in a run,
// and what they print then.
var onSIGTERM = map[string]func() string{
	"mstfwreset": func() string { return mlxemu.ResetSignalExit(int(syscall.SIGTERM)) },
	"mlxfwreset": func() string { return mlxemu.ResetSignalExit(int(syscall.SIGTERM)) },
}

// latencyOf is how long a run of args takes: Latency["TOOL ARG"] when
// ARG is one of its arguments (mlxfwreset reset: a reset takes longer
// than a query), else Latency["TOOL"].
func (st *State) latencyOf(args []string) time.Duration {
	for _, a := range args[1:] {
		if d, ok := st.Latency[args[0]+" "+a]; ok {
			return time.Duration(d)
		}
	}
	return time.Duration(st.Latency[args[0]])
}

// modprobe emulates kmod's modprobe for the modules the host has.
func modprobe(_ context.Context, s *Sim, args []string, _ []byte) (string, string, int) {
	var names []string
	remove := false
	for _, a := range args {
		switch {
		case a == "--":
		case a == "-r" || a == "--remove":
			remove = true
		case strings.HasPrefix(a, "-"):
		default:
			names = append(names, strings.ReplaceAll(a, "-", "_"))
		}
	}
	if len(names) == 0 {
		return "", "modprobe: ERROR: missing parameters. See -h.\n", 1
	}
	var errOut string
	code := 0
	err := s.mutate(false, func(st *State) error {
		for _, n := range names {
			if remove {
				st.Modules = without(st.Modules, n)
				continue
			}
			if st.ModuleLoaded(n) {
				continue
			}
			if !contains(st.Available, n) {
				errOut += fmt.Sprintf("modprobe: FATAL: Module %s not found in directory /lib/modules/6.1.0-sim-amd64\n", n)
				code = 1
				continue
			}
			if n == "rdma_cm" && st.ConfigfsModule && !st.ModuleLoaded("configfs") {
				// rdma_cm's configfs support needs configfs: modprobe
				// loads it first (modules.dep).
				st.Modules = append(st.Modules, "configfs")
			}
			st.Modules = append(st.Modules, n)
			s.loadedModule(st, n)
		}
		return nil
	})
	if err != nil {
		return "", err.Error() + "\n", 1
	}
	return "", errOut, code
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func without(xs []string, s string) []string {
	var out []string
	for _, x := range xs {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

var _ host.Looker = (*runner)(nil)

// LookPath implements host.Looker: a tool is installed when the simulated
// host lists it and the simulator can emulate it.
func (r *runner) LookPath(name string) (string, error) {
	r.sim.lock()
	installed := r.sim.state.HasTool(name)
	r.sim.unlock()
	if !installed || tools[name] == nil {
		return "", fmt.Errorf("%s: %w on PATH (simulated host)", name, host.ErrNotFound)
	}
	return "/usr/bin/" + name, nil
}
