package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers"
	"github.com/rdmaform/rdmaform/providers/bootunit"
	"github.com/rdmaform/rdmaform/providers/gpudriver"
	"github.com/rdmaform/rdmaform/providers/kcmdline"
	"github.com/rdmaform/rdmaform/providers/modules"
	"github.com/rdmaform/rdmaform/schema"
	"github.com/rdmaform/rdmaform/session"
)

// The journal's files, as the session package names them (the rollback
// that survives rdmaform: see session.JournalFile).
const (
	JournalFile     = session.JournalFile
	RolledBackFile  = session.RolledBackFile
	BootJournalFile = session.BootJournalFile
	// watcherLog is where the watcher writes.
	watcherLog = "/run/rdmaform/rollback.log"
)

// watcherGrace is how long after the deadline the watcher lets an apply
// that is still alive decide (it reverts, or a confirm just came).
const watcherGrace = 2 * time.Second

// rollbackUnit names the transient timer and service that run
// 'rdmaform rollback --watch' at the deadline.
const rollbackUnit = "rdmaform-rollback"

// systemdAddressEnv names the service manager to arm the rollback timer
// with (the D-Bus address of its private socket), also under --sim and
// --root; by default the system's manager when systemd is the init
// system, and a detached watcher otherwise.
const systemdAddressEnv = "RDMAFORM_SYSTEMD_ADDRESS"

// rollbackManager is the service manager that holds the rollback timer,
// nil when there is none, and how the journal names it.
func (a *app) rollbackManager() (*host.SystemdBus, string) {
	if v := a.getenv(systemdAddressEnv); v != "" {
		return &host.SystemdBus{Address: v}, v
	}
	if a.simDir == "" && a.rootDir == "" && host.SystemdBooted() {
		return &host.SystemdBus{}, "system"
	}
	return nil, ""
}

// journalManager is the manager a journal's timer is held by.
func journalManager(j *session.Journal) *host.SystemdBus {
	switch j.Systemd {
	case "":
		return nil
	case "system":
		return &host.SystemdBus{}
	}
	return &host.SystemdBus{Address: j.Systemd}
}

func (a *app) getenv(key string) string {
	for _, kv := range a.env.Environ {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}

// rollbackEnv is the environment the timer's service runs with: the
// manager's own lacks the PATH to the tools and the buses this run uses.
func (a *app) rollbackEnv() []string {
	var env []string
	for _, kv := range a.env.Environ {
		k, _, _ := strings.Cut(kv, "=")
		if k == "PATH" || k == "DBUS_SYSTEM_BUS_ADDRESS" || strings.HasPrefix(k, "RDMAFORM_") {
			env = append(env, kv)
		}
	}
	return env
}

// armRollback records the before-state (session.NewJournal), takes
// NetworkManager's checkpoint, writes the journal and starts the watcher
// (or the systemd timer). It runs before the first change; an error
// refuses the apply.
func (a *app) armRollback(ctx context.Context, h *host.Host, spec *schema.Spec, p *plan.Plan, deadline time.Time) (err error) {
	j, err := session.NewJournal(ctx, h, spec, p, deadline)
	if err != nil {
		return err
	}
	used := map[string]bool{}
	for _, ch := range p.Changes {
		used[ch.Provider] = true
	}
	// A refused apply leaves nothing armed: no journal (a later rollback
	// would take it for its own and undo an unrelated change), no
	// checkpoint, no timer.
	written := false
	defer func() {
		if err != nil {
			a.endArmed(context.WithoutCancel(ctx), j, true)
			if written {
				session.Disarm(h)
			}
		}
	}()
	if used["ipoib"] && a.simDir == "" {
		// NetworkManager rolls back by itself: its timeout covers the
		// apply too (every change taking its command's whole timeout); the
		// question moves it to the operator's deadline.
		cp, err := a.createCheckpoint(ctx, time.Until(deadline)+time.Duration(len(p.Changes))*host.DefaultTimeout)
		if err != nil {
			return err
		}
		j.NMCheckpoint = cp
	}
	// Without a program to run (tests in-process), nothing holds the
	// deadline but this process.
	var mgr *host.SystemdBus
	if a.env.Self != "" {
		mgr, j.Systemd = a.rollbackManager()
	}
	written = true
	if err := j.Write(h); err != nil {
		return err
	}
	_ = h.FS.Remove(RolledBackFile)
	if a.env.Self == "" {
		return nil
	}
	argv := append([]string{a.env.Self}, a.env.SelfArgs...)
	argv = append(argv, a.hostArgs()...)
	argv = append(argv, "rollback", "--watch")
	if mgr != nil {
		// The service manager owns the deadline: a transient timer that
		// runs the rollback, outside this process and its session.
		defer mgr.Close()
		// The manager opens the log itself, by its real path: made here
		// first, a regular file inside the tree (host.OpenLog).
		log, logPath, err := host.OpenLog(h.FS, watcherLog)
		if err == nil {
			log.Close()
			err = mgr.ArmTimer(ctx, host.TransientTimer{Name: rollbackUnit, Description: "rdmaform: roll back an apply nobody confirmed",
				After: time.Until(deadline), Argv: argv, Env: a.rollbackEnv(), Log: logPath})
		}
		if err == nil {
			fmt.Fprintf(a.info(), "rdmaform: rollback armed (systemd timer %s.timer): without '%s' by %s, the changes are rolled back even if this process dies\n",
				rollbackUnit, a.hint("confirm"), j.Deadline.Local().Format(time.TimeOnly))
			return nil
		}
		fmt.Fprintf(a.env.Stderr, "rdmaform: warning: no systemd rollback timer (%v); a detached watcher holds the deadline\n", err)
		j.Systemd = ""
		if err := j.Write(h); err != nil {
			return err
		}
	}
	pid, err := host.StartDetached(argv, a.env.Environ, h.FS, watcherLog)
	if err != nil {
		return fmt.Errorf("starting the rollback watcher: %w", err)
	}
	// status tells whether it still runs.
	j.WatcherPID = pid
	if err := j.Write(h); err != nil {
		return err
	}
	fmt.Fprintf(a.info(), "rdmaform: rollback armed (watcher pid %d): without '%s' by %s, the changes are rolled back even if this process dies\n",
		pid, a.hint("confirm"), j.Deadline.Local().Format(time.TimeOnly))
	return nil
}

// createCheckpoint asks NetworkManager for a checkpoint that it rolls
// back itself after d. A pending one means another apply waits for
// confirmation: refused. NetworkManager not reachable over D-Bus: the
// journal alone covers the profiles (a warning says so).
func (a *app) createCheckpoint(ctx context.Context, d time.Duration) (string, error) {
	nm, err := host.DialNM(ctx, a.env.Environ)
	if err != nil {
		fmt.Fprintf(a.env.Stderr, "rdmaform: warning: no NetworkManager checkpoint (%v); the rollback journal covers the profiles\n", err)
		return "", nil
	}
	defer nm.Close()
	cp, err := nm.CheckpointCreate(ctx, d)
	switch {
	case errors.Is(err, host.ErrCheckpointPending):
		return "", fmt.Errorf("an apply is waiting for confirmation (%v): run '%s' or '%s' first", err, a.hint("confirm"), a.hint("rollback"))
	case err != nil:
		fmt.Fprintf(a.env.Stderr, "rdmaform: warning: no NetworkManager checkpoint (%v); the rollback journal covers the profiles\n", err)
		return "", nil
	}
	return cp, nil
}

// adjustCheckpoint moves NetworkManager's rollback of a checkpoint to d
// from now; a failure is a warning (the journal covers the profiles).
func (a *app) adjustCheckpoint(ctx context.Context, cp string, d time.Duration) {
	if cp == "" {
		return
	}
	nm, err := host.DialNM(ctx, a.env.Environ)
	if err == nil {
		defer nm.Close()
		err = nm.CheckpointAdjust(ctx, cp, d)
	}
	if err != nil {
		fmt.Fprintf(a.env.Stderr, "rdmaform: warning: NetworkManager checkpoint %s: %v\n", cp, err)
	}
}

// endArmed ends what a journal armed outside rdmaform: NetworkManager's
// checkpoint is committed (keep) or rolled back, and the rollback timer
// is stopped. Failures are warnings: the journal's removal is what counts.
func (a *app) endArmed(ctx context.Context, j *session.Journal, keep bool) {
	a.endCheckpoint(ctx, j.NMCheckpoint, keep)
	if mgr := journalManager(j); mgr != nil {
		defer mgr.Close()
		if err := mgr.DisarmTimer(ctx, rollbackUnit); err != nil {
			fmt.Fprintf(a.env.Stderr, "rdmaform: warning: stopping the rollback timer %s.timer: %v\n", rollbackUnit, err)
		}
	}
}

// endCheckpoint commits (keep) or rolls back NetworkManager's checkpoint
// of a journal; a failure is a warning, the journal still does its part.
func (a *app) endCheckpoint(ctx context.Context, cp string, keep bool) {
	if cp == "" {
		return
	}
	nm, err := host.DialNM(ctx, a.env.Environ)
	if err == nil {
		defer nm.Close()
		if keep {
			err = nm.CheckpointDestroy(ctx, cp)
		} else {
			err = nm.CheckpointRollback(ctx, cp)
		}
	}
	if err != nil {
		fmt.Fprintf(a.env.Stderr, "rdmaform: warning: NetworkManager checkpoint %s: %v\n", cp, err)
	}
}

// hostArgs are the global flags that pick this run's host.
func (a *app) hostArgs() []string {
	switch {
	case a.simDir != "":
		return []string{"--sim", a.absDir(a.simDir)}
	case a.rootDir != "":
		return []string{"--root", a.absDir(a.rootDir)}
	}
	return nil
}

func (a *app) absDir(d string) string {
	if abs, err := filepath.Abs(d); err == nil {
		return abs
	}
	return d
}

// realPath is where a host path is on this machine (under --sim/--root).
func (a *app) realPath(p string) string {
	switch {
	case a.simDir != "":
		return filepath.Join(a.absDir(a.simDir), p)
	case a.rootDir != "":
		return filepath.Join(a.absDir(a.rootDir), p)
	}
	return p
}

// rollbackJournal converges the journal's resources to their recorded
// state, records what it did, and drops the journal. It is a plain apply
// of the before-state: nothing arms a rollback of the rollback.
func (a *app) rollbackJournal(ctx context.Context, h *host.Host, j *session.Journal, who string) error {
	spec, rep := schema.Parse("rollback journal", []byte(j.Spec))
	if len(rep) > 0 {
		return fmt.Errorf("the rollback journal does not read back: %v", rep)
	}
	a.endCheckpoint(ctx, j.NMCheckpoint, false)
	touched := map[string]bool{}
	for _, ad := range j.Addresses {
		touched[ad] = true
	}
	if spec.Modules == nil && slices.ContainsFunc(j.Addresses, func(s string) bool { return strings.HasPrefix(s, modules.Kind+"[") }) {
		// No modules-load.d file before: what the apply listed goes.
		spec.Modules = []string{}
	}
	if spec.KernelArgs == nil && slices.ContainsFunc(j.Addresses, func(s string) bool { return strings.HasPrefix(s, kcmdline.Kind+"[") }) {
		// No grub.d file before: the one the apply wrote goes.
		spec.KernelArgs = []schema.KernelArg{}
	}
	if touched[gpudriver.ConfAddress.String()] && (spec.GPU == nil || spec.GPU.DriverParams == nil) {
		// No driver modprobe.d file before: the provider removes the one
		// the apply wrote, and drops what its staged ledger recorded for
		// it (restoring the file alone left the ledger saying a value
		// waits for the driver's next load).
		if spec.GPU == nil {
			spec.GPU = &schema.GPU{}
		}
		spec.GPU.DriverParams = []schema.GPUDriverParam{}
	}
	res, err := a.buildFiltered(ctx, h, spec, func(c *plan.Change) bool { return touched[c.Address.String()] })
	if err != nil {
		return err
	}
	// The modules the apply loaded are unloaded last, once what uses
	// them is gone, as the apply's own revert does.
	unloads := map[*plan.Change]string{}
	for _, name := range j.Loaded {
		c := modules.Unload(name)
		c.Provider = modules.New().Name()
		unloads[c] = name
		res.Plan.Changes = append(res.Plan.Changes, c)
	}
	out := apply.Run(ctx, h, res.Plan, providers.All(), apply.Options{Grace: apply.DefaultGrace})
	j.Loaded = nil
	for c, name := range unloads {
		if !slices.Contains(out.Done, c) {
			j.Loaded = append(j.Loaded, name)
		}
	}
	sort.Strings(j.Loaded)
	bootErr := false
	if j.BootSpec != nil {
		var err error
		if *j.BootSpec == "" {
			err = h.FS.Remove(bootunit.SpecPath)
			if errors.Is(err, fs.ErrNotExist) {
				err = nil
			}
		} else {
			err = h.FS.WriteFile(bootunit.SpecPath, []byte(*j.BootSpec), 0o644)
		}
		if err != nil {
			bootErr = true
			out.Err = errors.Join(out.Err, fmt.Errorf("restoring %s: %w", bootunit.SpecPath, err))
		}
	}
	// The files last: what the convergence wrote for the before-state
	// (an equivalent file, where there was none) becomes what was there.
	restored, fileFailed, ferr := session.RestoreFiles(h, j.Files)
	out.Err = errors.Join(out.Err, ferr)
	a.afterRestore(ctx, h, restored)
	if out.Err != nil {
		// The journal goes only once every undo succeeded: the next
		// rollback retries (what is back already plans nothing).
		failed := append(append([]plan.Address{}, out.Failed...), out.Skipped...)
		if bootErr {
			failed = append(failed, bootunit.Address)
		}
		for _, a := range fileFailed {
			if !slices.Contains(failed, a) {
				failed = append(failed, a)
			}
		}
		return session.KeepUnfinished(h, j, who, out.Applied, failed, out.Err, a.hint("rollback"))
	}
	// A module the apply loaded and listed is one resource, put back by
	// two changes (its modules-load.d entry, its unload): named once.
	// A file put back byte for byte that no change of the plan wrote (the
	// journal's spec cannot say what /etc/kernel/cmdline held) is named
	// too.
	back := session.UniqueAddrs(out.Applied)
	for _, f := range restored {
		if ad, err := plan.ParseAddr(f.Address); err == nil && !slices.Contains(back, ad) {
			back = append(back, ad)
		}
	}
	note := fmt.Sprintf("rolled back at %s by %s: %s\n", time.Now().UTC().Format(time.RFC3339), who, plan.JoinAddrs(back, ", "))
	if len(back) == 0 {
		note = fmt.Sprintf("rolled back at %s by %s: nothing needed putting back\n", time.Now().UTC().Format(time.RFC3339), who)
	}
	_ = h.FS.WriteFile(RolledBackFile, []byte(note), 0o644)
	session.Disarm(h)
	fmt.Fprint(a.msgs(), strings.Replace(note, "rolled back", "Rolled back", 1))
	return nil
}

func (a *app) rollbackCmd() *cobra.Command {
	var watch, afterBoot, abandon, yes bool
	cmd := &cobra.Command{
		Use:   "rollback [--watch | --after-boot | --abandon [--yes]]",
		Short: "Undo an apply --confirm-timeout that waits for confirmation, now",
		Long: `apply --confirm-timeout D records the host's state before its first
change in ` + JournalFile + ` and arms the deadline outside itself: a
transient systemd timer (` + rollbackUnit + `.timer) where systemd is the
init system, a detached watcher otherwise. 'rdmaform rollback' puts the
changed resources back now, whoever runs it; 'rdmaform confirm' keeps
them. At the deadline, rollback --watch (run by the timer, or the watcher
itself, in a session of its own) rolls back if nobody confirmed, even
when the apply was killed or its SSH session dropped. ` + systemdAddressEnv + `
names another service manager (the D-Bus address of its private socket). Firmware
staged for the next boot is not covered (apply refuses it in this mode
unless --allow-firmware, and a reboot cannot be taken back).

rollback --abandon drops the journal (both copies) and keeps the host as
it is, when the operator decides against the rollback: a rollback that
failed part-way, an apply killed before it asked, or the journal's copy a
reboot left for the boot unit. It stops the timer or watcher and commits
NetworkManager's checkpoint, as confirm does; a waiting apply takes it
for a confirmation. It asks first (only 'yes' is accepted); --yes does
not ask.

Exit codes: 0 rolled back, or abandoned (or confirmed before the
deadline, for the watcher); 1 nothing to roll back or abandon, the
rollback failed, or --abandon was not confirmed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if watch {
				return a.watch(cmd.Context())
			}
			h, err := a.host()
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			if afterBoot {
				return a.rollbackAfterBoot(cmd.Context(), h)
			}
			if abandon {
				return a.abandonJournal(cmd.Context(), h, yes)
			}
			if yes {
				return &exitError{code: plan.ExitError, err: fmt.Errorf("--yes goes with --abandon: a rollback does not ask")}
			}
			j, err := session.ReadJournal(h)
			var dmg *session.DamagedError
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return &exitError{code: plan.ExitError, err: fmt.Errorf("nothing to roll back: no apply waits for confirmation on this host")}
			case errors.As(err, &dmg):
				return &exitError{code: plan.ExitError, err: fmt.Errorf("%w: the state before the apply is lost, nothing can roll it back; check the host, then run '%s' to drop the journal and keep the host as it is", err, a.hint("rollback", "--abandon"))}
			case err != nil:
				return &exitError{code: plan.ExitError, err: err}
			}
			a.warnDamage(j)
			// Whoever removes the confirm file decides.
			if err := h.FS.Remove(ConfirmFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return &exitError{code: plan.ExitError, err: err}
			}
			// The timer goes too (its service would find nothing to do).
			if mgr := journalManager(j); mgr != nil {
				if err := mgr.DisarmTimer(cmd.Context(), rollbackUnit); err != nil {
					fmt.Fprintf(a.env.Stderr, "rdmaform: warning: stopping the rollback timer %s.timer: %v\n", rollbackUnit, err)
				}
				mgr.Close()
			}
			if err := a.rollbackJournal(context.WithoutCancel(cmd.Context()), h, j, "rdmaform rollback"); err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&watch, "watch", false, "wait for the journal's deadline, then roll back unless confirmed (apply starts this)")
	cmd.Flags().BoolVar(&afterBoot, "after-boot", false, "roll back an apply that was not confirmed before a reboot, if any (the boot unit runs this)")
	cmd.Flags().BoolVar(&abandon, "abandon", false, "drop the rollback journal and keep the host as it is (asks first)")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "with --abandon: do not ask")
	cmd.MarkFlagsMutuallyExclusive("watch", "after-boot", "abandon")
	return cmd
}

// abandonJournal drops the rollback journal (both copies) and keeps the
// host as it is: the operator decided against the rollback. What the
// journal armed ends as a confirm ends it (the timer stops,
// NetworkManager's checkpoint is committed); the journal goes before the
// confirm file, so a waiting apply reads it as confirmed. It asks first
// unless yes.
func (a *app) abandonJournal(ctx context.Context, h *host.Host, yes bool) error {
	j, err := session.ReadJournal(h)
	if errors.Is(err, fs.ErrNotExist) {
		// After a reboot only the copy the boot unit would roll back.
		j, err = session.ReadJournalFile(h, BootJournalFile)
	}
	// What is left of a journal that does not read back: abandoning is
	// the way out of it, so it goes whatever it holds.
	var left []string
	for _, f := range []string{JournalFile, BootJournalFile, damagedBootJournal} {
		if _, serr := h.FS.Lstat(f); serr == nil {
			left = append(left, f)
		}
	}
	if errors.Is(err, fs.ErrNotExist) && len(left) == 0 {
		return &exitError{code: plan.ExitError, err: fmt.Errorf("nothing to abandon: no rollback journal on this host")}
	}
	if j != nil {
		a.warnDamage(j)
		what := strings.Join(j.Addresses, ", ")
		if j.Unfinished != nil {
			what = strings.Join(j.Unfinished.Failed, ", ")
		}
		fmt.Fprintf(a.msgs(), "The rollback journal of the apply of pid %d holds the state before it of: %s.\nAbandoning it keeps the host as it is; nothing will roll it back.\n", j.PID, what)
	} else {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(a.msgs(), "The rollback journal does not read back: %v.\n", err)
		}
		fmt.Fprintf(a.msgs(), "Abandoning it drops %s and keeps the host as it is; nothing will roll it back.\n", strings.Join(left, ", "))
	}
	if !yes {
		if err := a.ask("rollback --abandon", "drops the rollback journal", "use --yes to abandon it without asking", "Do you want to abandon the rollback journal and keep the host as it is?"); err != nil {
			return err
		}
	}
	if j != nil {
		a.endArmed(context.WithoutCancel(ctx), j, true)
	} else if mgr, _ := a.rollbackManager(); mgr != nil && a.env.Self != "" {
		// Which manager holds the timer is in the journal; the one an apply
		// of this run would have armed it with is stopped.
		if err := mgr.DisarmTimer(context.WithoutCancel(ctx), rollbackUnit); err != nil {
			fmt.Fprintf(a.env.Stderr, "rdmaform: warning: stopping the rollback timer %s.timer: %v\n", rollbackUnit, err)
		}
		mgr.Close()
	}
	session.Disarm(h)
	var errs error
	for _, f := range []string{JournalFile, BootJournalFile, damagedBootJournal} {
		// Disarm leaves what is not a file (a FIFO goes with Remove too;
		// a directory only when empty): what stays is named.
		if err := h.FS.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = errors.Join(errs, fmt.Errorf("removing %s: %w", f, err))
		}
	}
	if err := h.FS.Remove(ConfirmFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = errors.Join(errs, err)
	}
	if errs != nil {
		return &exitError{code: plan.ExitError, err: errs}
	}
	_ = h.FS.Remove(RolledBackFile)
	what := strings.Join(left, ", ")
	if j != nil {
		what = strings.Join(j.Addresses, ", ")
		if j.Unfinished != nil {
			what = strings.Join(j.Unfinished.Failed, ", ")
		}
		fmt.Fprintf(a.msgs(), "Abandoned the rollback journal at %s: kept %s as they are.\n", time.Now().UTC().Format(time.RFC3339), what)
		return nil
	}
	fmt.Fprintf(a.msgs(), "Abandoned the rollback journal at %s: removed %s; the host is kept as it is.\n", time.Now().UTC().Format(time.RFC3339), what)
	return nil
}

// warnDamage says, as a warning, that the live journal was damaged and
// its copy stood in.
func (a *app) warnDamage(j *session.Journal) {
	if j != nil && j.Damage != "" {
		fmt.Fprintf(a.env.Stderr, "rdmaform: warning: the rollback journal is damaged: %s\n", j.Damage)
	}
}

// damagedBootJournal is where rollback --after-boot moves a journal copy
// that does not read back, so that every later boot does not fail on it;
// status names it until 'rollback --abandon' removes it.
const damagedBootJournal = BootJournalFile + ".damaged"

// watch is the watcher: until the deadline, it leaves the decision to the
// apply (or a confirm); at the deadline it takes the confirm file, and
// with it the decision, unless someone did first. If the apply is gone
// and left its journal (killed while applying, or while reverting), the
// watcher puts things back. Until it acts it only looks at its two files
// (the host is opened when there is something to do).
func (a *app) watch(ctx context.Context) error {
	// The tree's files, as every other command reaches them (host.FS):
	// under --sim and --root a symlink is followed only inside it.
	fsys, err := host.NewRootFS(a.realPath("/"))
	if err != nil {
		return &exitError{code: plan.ExitError, err: err}
	}
	for {
		// Read inside the tree, bounded; a damaged journal: its copy
		// stands in.
		j, err := session.LoadJournal(fsys)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // confirmed, or the apply reverted itself
		}
		if err != nil {
			return &exitError{code: plan.ExitError, err: err}
		}
		if !j.Asked {
			// The apply is still making its changes, or died doing so.
			if !host.ProcessAlive(j.PID) {
				return a.rollbackOrFail(j, fmt.Sprintf("the rollback watcher (the apply, pid %d, was gone before it asked for confirmation)", j.PID))
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		// An apply still alive at the deadline reverts by itself (with its
		// progress on the operator's terminal): the watcher leaves it
		// watcherGrace before taking the decision.
		late := time.Now().After(j.Deadline) && (!host.ProcessAlive(j.PID) || time.Now().After(j.Deadline.Add(watcherGrace)))
		if late {
			err := fsys.Remove(ConfirmFile)
			switch {
			case err == nil:
				// The apply waited and nobody confirmed: the watcher took
				// the decision.
				return a.rollbackOrFail(j, fmt.Sprintf("the rollback watcher (the apply, pid %d, %s)", j.PID, aliveWord(j.PID)))
			case !errors.Is(err, fs.ErrNotExist):
				return &exitError{code: plan.ExitError, err: err}
			case !host.ProcessAlive(j.PID):
				// The apply died before it waited (killed while applying),
				// or while it reverted: the watcher puts things back.
				return a.rollbackOrFail(j, fmt.Sprintf("the rollback watcher (the apply, pid %d, was gone)", j.PID))
			}
			// The apply still runs (its changes, or its own revert): it
			// decides; the watcher goes on watching in case it dies.
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (a *app) rollbackOrFail(j *session.Journal, who string) error {
	h, err := a.host()
	if err != nil {
		return &exitError{code: plan.ExitError, err: err}
	}
	if err := a.rollbackJournal(context.Background(), h, j, who); err != nil {
		return &exitError{code: plan.ExitError, err: err}
	}
	return nil
}

func aliveWord(pid int) string {
	if host.ProcessAlive(pid) {
		return "still running"
	}
	return "gone"
}

// rollbackAfterBoot rolls back an apply that waited for confirmation when
// the host went down: its journal's copy in /var/lib outlived the reboot,
// the live journal in /run did not. Nothing to do is success, so the boot
// unit goes on.
func (a *app) rollbackAfterBoot(ctx context.Context, h *host.Host) error {
	if _, err := h.FS.Stat(JournalFile); err == nil {
		return nil // no reboot since: the timer or watcher decides
	}
	j, err := session.ReadJournalFile(h, BootJournalFile)
	var dmg *host.StateFileError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.As(err, &dmg):
		// The only copy left does not read back: nothing can roll the
		// apply back. It is moved aside, so that the next boots do not
		// fail on it again, and status names it until an operator
		// abandons it.
		werr := h.FS.WriteFile(damagedBootJournal, []byte(fmt.Sprintf("%v\n", err)), 0o600)
		if werr == nil {
			werr = h.FS.Remove(BootJournalFile)
		}
		return &exitError{code: plan.ExitError, err: errors.Join(fmt.Errorf("an apply was not confirmed before the host restarted, but its journal is damaged (%w): nothing can roll it back; the host keeps its changes. Check the host, then run '%s' (status names it until then)", err, a.hint("rollback", "--abandon", "--yes")), werr)}
	case err != nil:
		return &exitError{code: plan.ExitError, err: err}
	}
	_ = h.FS.Remove(ConfirmFile)
	who := fmt.Sprintf("the boot unit (the apply, pid %d, was not confirmed before the host restarted; deadline %s)", j.PID, j.Deadline.Format(time.RFC3339))
	if err := a.rollbackJournal(context.WithoutCancel(ctx), h, j, who); err != nil {
		return &exitError{code: plan.ExitError, err: err}
	}
	return nil
}
