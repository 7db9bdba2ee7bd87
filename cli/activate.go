package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
	"github.com/rdmaform/rdmaform/session"
)

// activateOptions are activate's flags.
type activateOptions struct {
	by    string
	yes   bool
	force bool
	wait  time.Duration
}

func (a *app) activateCmd() *cobra.Command {
	var file string
	var o activateOptions
	var lockTimeout, confirmTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "activate [-f SPEC] [--by fw-reset|reboot] [--yes] [--force] [-o text|json]",
		Short: "Make staged firmware values current (firmware reset or reboot), then prove it",
		Long: `Make what is staged for the next boot current, then verify. Each
pending item says how it can become current (plan, status): a firmware
reset of its card (mstfwreset/mlxfwreset), a reboot, or a power cycle.

--by fw-reset resets each card once (both functions), cards in parallel.
Before anything changes every precondition is checked and reported, and
nothing is changed when one fails: a kernel user of RDMA (a module
holding the RDMA core: /sys/module/ib_core/holders; an NFS mount over
RDMA: /proc/mounts; NVMe over RDMA: /sys/class/nvme/*/transport; an
rdma_cm ID of the kernel's: rdma resource show cm_id) is refused unless
--force; a BlueField DPU is refused; a card whose
firmware reports no reset level needs a power cycle (exit 1). VFs are set
to 0 before the reset and restored after (count and settings). The card
registers again: activate waits (--wait) for its RDMA devices and
netdevs, applies the spec's runtime part again (-f SPEC), and verifies
that the plan is empty; a card not back within --wait fails (exit 1),
named with what did not come back. A card that only a reboot activates
is left: exit 3. An interrupt (Ctrl-C, SIGTERM) does not stop a reset:
the reset tool gets SIGTERM only after apply's grace period (a minute)
and is never killed; activate waits for the card and its VFs, then
stops without applying the runtime part (exit 130 or 143). What the
resets undo (each PF's VF count and its VFs' settings) is written to
/run/rdmaform/activate.json before the first one: after an activate that
was killed, the next one gives the VFs back first and, with -f, applies
the spec again. After the resets the staged ledger drops what runs now,
and rdmaform leaves /run/reboot-required when nothing it staged waits.

--by reboot reboots through systemd, only with --yes or a confirmed
prompt; on a host without rdmaform's enabled boot unit it names what the
reboot loses (VFs, runtime settings) and the apply that sets them again.
Without --by, the cheapest way every pending item allows; an empty --by
is refused.

Exit 0: everything staged is current (with -f: the plan is empty, also
when nothing is staged); 1: an error, a refusal or a power cycle needed;
2: nothing is staged but the plan is not empty (-f); 3: a reboot is still
needed; 130/143: interrupted by SIGINT/SIGTERM.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("confirm-timeout") {
				return &exitError{code: plan.ExitError, err: fmt.Errorf("activate --confirm-timeout: a firmware reset cannot be undone but by another one (the configuration it loaded is the one that was staged), and a reboot cannot be taken back; nothing was changed (stage with apply --confirm-timeout --allow-firmware, then activate)")}
			}
			switch o.by {
			case "":
				if cmd.Flags().Changed("by") {
					// Given empty (--by ''): a typo or an unset variable,
					// not a request for the default.
					return &exitError{code: plan.ExitError, err: fmt.Errorf("--by %q: the ways are fw-reset and reboot (leave --by out for the cheapest every pending item allows)", o.by)}
				}
			case plan.ByFWReset, plan.ByReboot:
			case plan.ByPowerCycle:
				return &exitError{code: plan.ExitError, err: fmt.Errorf("--by power-cycle: rdmaform cannot power-cycle a host; do it out of band (BMC, PDU), then run rdmaform plan")}
			default:
				return &exitError{code: plan.ExitError, err: fmt.Errorf("--by %q: the ways are fw-reset and reboot", o.by)}
			}
			if o.wait < session.MinActivateWait || o.wait > session.MaxActivateWait {
				return &exitError{code: plan.ExitError, err: fmt.Errorf("--wait %s: between %s and %s", o.wait, session.MinActivateWait, session.MaxActivateWait)}
			}
			if o.force && o.by == plan.ByReboot {
				return &exitError{code: plan.ExitError, err: fmt.Errorf("--force overrides a firmware reset's refusal; a reboot has none")}
			}
			var spec *schema.Spec
			if file != "" {
				var err error
				if spec, err = a.loadSpec(file); err != nil {
					return err
				}
			}
			h, err := a.host()
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			defer a.recordSimCalls()
			return a.activate(cmd.Context(), h, spec, o, lockTimeout)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&file, "file", "f", "", "spec `FILE` (- for stdin): its pending items, and its runtime part applied again after a reset")
	fl.StringVar(&o.by, "by", "", "activate by `WAY`: fw-reset or reboot (default: the cheapest every pending item allows)")
	fl.BoolVarP(&o.yes, "yes", "y", false, "reboot without asking (--by reboot)")
	fl.BoolVar(&o.force, "force", false, "reset even while a kernel user of RDMA (NVMe/NFS over RDMA, SRP, iSER) holds the RDMA core")
	fl.DurationVar(&o.wait, "wait", 2*time.Minute, "how long a reset card may take to register again (1s to 1h)")
	fl.DurationVar(&lockTimeout, "lock-timeout", 30*time.Second, "how long to wait for an apply on this host to finish")
	fl.DurationVar(&confirmTimeout, "confirm-timeout", 0, "refused: a firmware reset or reboot cannot be taken back")
	a.outputFlag(cmd, "text", "text", "json")
	a.hostFlags(cmd)
	return cmd
}

// activate runs session.Activate with the command's prompt, text and
// JSON document.
func (a *app) activate(ctx context.Context, h *host.Host, spec *schema.Spec, o activateOptions, lockTimeout time.Duration) error {
	so := session.ActivateOptions{
		Spec: spec, By: o.by, Force: o.force, Wait: o.wait, Yes: o.yes,
		Ask: func() error {
			return a.askFirst("activate --by reboot", "reboots", "use --yes to reboot without asking")
		},
		LockTimeout: lockTimeout,
		LockWaiting: func(holder string) { fmt.Fprintln(a.info(), session.Waiting(lockTimeout, holder)) },
		Warn:        a.env.Stderr, Info: a.info(), Environ: a.env.Environ, Pending: pendingAll, Hint: a.hint,
	}
	if !a.jsonOut() {
		so.Out = a.env.Stdout
	}
	res, err := session.Activate(ctx, h, so)
	if err != nil {
		var ee *session.ExitError
		if errors.As(err, &ee) {
			return &exitError{code: ee.Code, err: ee.Err}
		}
		var xe *exitError
		if errors.As(err, &xe) {
			return err // the prompt's
		}
		return &exitError{code: plan.ExitError, err: err}
	}
	if a.jsonOut() {
		if err := a.writeJSON(res.Doc); err != nil {
			return err
		}
	}
	if a.sim != nil && res.Code == plan.ExitOK && res.Doc != nil && res.Doc.By == plan.ByReboot {
		// The simulated host rebooted under this process, which lives
		// on: its boot unit runs now, as after rdmaform sim reboot (on a
		// real host systemd starts it at boot). Its lines go where the
		// document does not.
		w := a.env.Stdout
		if a.jsonOut() {
			w = a.env.Stderr
		}
		if err := a.runBootUnit(a.sim, a.simDir, w); err != nil {
			return err
		}
	}
	return exitCode(res.Code)
}
