// Package session is rdmaform's apply session, shared by the CLI, the
// Ansible module and the Kubernetes agent: the host it opens (--sim,
// --root or the live host), planning, and an apply with everything around
// apply.Converge that makes it safe on a shared host: the host's apply
// lock, the refusal while another apply waits for its confirmation or a
// rollback journal is left (journal.go, files.go), the saved plan's
// check, the reboot marker, the changes an apply of one activation left.
// It prints nothing: the caller's hooks show, ask and arm; values and
// typed errors come back.
package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers"
	"github.com/rdmaform/rdmaform/schema"
	"github.com/rdmaform/rdmaform/sim"
)

// Target is the host a session works on: the simulated host in Sim, the
// tree under Root, or (both empty) the live host.
type Target struct {
	Sim  string
	Root string
}

// Args are the target as rdmaform's global flags: --sim DIR, --root DIR
// or none.
func (t Target) Args() []string {
	switch {
	case t.Sim != "":
		return []string{"--sim", t.Sim}
	case t.Root != "":
		return []string{"--root", t.Root}
	}
	return nil
}

// Open opens the target, with every command's timeout capped by
// RDMAFORM_COMMAND_TIMEOUT when environ sets it. The simulator is
// returned too when the target is one (nil otherwise), for its calls.
func Open(t Target, environ []string) (*host.Host, *sim.Sim, error) {
	if t.Sim != "" && t.Root != "" {
		return nil, nil, fmt.Errorf("a simulated host (%s) and a root (%s): give one", t.Sim, t.Root)
	}
	max, err := host.TimeoutFromEnv(environ)
	if err != nil {
		return nil, nil, err
	}
	var h *host.Host
	var s *sim.Sim
	switch {
	case t.Sim != "":
		if s, err = sim.Open(t.Sim); err == nil {
			h, err = s.Host()
		}
	case t.Root != "":
		h, err = host.NewRooted(t.Root, environ)
	default:
		h, err = host.NewLive(environ)
	}
	if err != nil {
		return nil, s, err
	}
	h.Runner = host.CapTimeout(h.Runner, max)
	h.NM = host.CapNM(h.NM, max)
	return h, s, nil
}

// Plan plans spec on h with every provider; with only, the plan is a
// partial one of that activation (plan.Restrict: the other changes are
// its LeftOut).
func Plan(ctx context.Context, h *host.Host, spec *schema.Spec, only *plan.Activation) (*plan.Result, error) {
	res, err := plan.Build(ctx, h, spec, providers.All())
	if err != nil || only == nil {
		return res, err
	}
	res.Plan.Restrict(*only)
	return res, nil
}

// Hint makes the command line of a follow-up command for messages
// (rdmaform with the caller's global flags, then args).
type Hint func(args ...string) string

// DefaultHint is "rdmaform ARGS".
func DefaultHint(args ...string) string {
	return host.Cmd{Args: append([]string{"rdmaform"}, args...)}.String()
}

func (f Hint) or() Hint {
	if f == nil {
		return DefaultHint
	}
	return f
}

// BusyError: the host takes no apply now. Either an apply waits for its
// confirmation (Waiting, what ConfirmFile says), or a rollback journal
// is left that nobody waits on (Journal): a rollback that failed
// part-way, or an apply killed before its confirmation whose rollback is
// due. A later rollback of that journal would undo what the apply
// changes. Nothing was changed.
type BusyError struct {
	Waiting string
	Journal *Journal
	// Damaged: a journal is left and neither copy reads back.
	Damaged *DamagedError
	hint    Hint
}

func (e *BusyError) Error() string {
	hint := e.hint.or()
	switch {
	case e.Damaged != nil:
		return fmt.Sprintf("%v: nothing can roll back the apply it was written for; check the host, then run '%s' to drop it and keep the host as it is; nothing was changed", e.Damaged, hint("rollback", "--abandon"))
	case e.Journal == nil:
		return fmt.Sprintf("an apply is waiting for confirmation on this host (%s): run '%s' or '%s' first; nothing was changed", e.Waiting, hint("confirm"), hint("rollback"))
	case e.Journal.Unfinished != nil:
		u := e.Journal.Unfinished
		return fmt.Sprintf("a rollback failed part-way (%s, by %s; still to undo: %s): run '%s' to finish it, or '%s' to keep the host as it is; nothing was changed",
			u.At.Format(time.RFC3339), u.By, strings.Join(u.Failed, ", "), hint("rollback"), hint("rollback", "--abandon"))
	}
	return fmt.Sprintf("the apply of pid %d was not confirmed and its rollback is due at %s: run '%s' first, or wait for it; nothing was changed",
		e.Journal.PID, e.Journal.Deadline.Format(time.RFC3339), hint("rollback"))
}

// CheckFree refuses, with a *BusyError, an apply while another one waits
// for its confirmation on h or a rollback journal is left; hint names
// the commands that free the host in the message.
func CheckFree(h *host.Host, hint Hint) error {
	// A journal that does not read back first: confirm or rollback, which
	// the other refusals name, cannot help then.
	j, jerr := ReadJournal(h)
	if dmg := (*DamagedError)(nil); errors.As(jerr, &dmg) {
		return &BusyError{Damaged: dmg, hint: hint}
	}
	switch pending, err := ReadNote(h, ConfirmFile); {
	case err == nil:
		return &BusyError{Waiting: pending, hint: hint}
	case !errors.Is(err, fs.ErrNotExist):
		// Something stands at its name: no apply until it is cleared.
		return &BusyError{Waiting: err.Error(), hint: hint}
	}
	switch {
	case errors.Is(jerr, fs.ErrNotExist):
		return nil
	case jerr != nil:
		return jerr
	}
	return &BusyError{Journal: j, hint: hint}
}

// NowEnv names the environment variable that sets an audit's clock
// (RFC 3339 or YYYY-MM-DD), so tests and replays do not depend on the
// wall clock.
const NowEnv = "RDMAFORM_NOW"

// Now is the time of an audit: NowEnv in environ when set, else the clock.
func Now(environ []string) (time.Time, error) {
	for _, kv := range environ {
		v, ok := strings.CutPrefix(kv, NowEnv+"=")
		if !ok || v == "" {
			continue
		}
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			return t, nil
		}
		if t, err := time.Parse("2006-01-02", v); err == nil {
			return t, nil
		}
		return time.Time{}, fmt.Errorf("%s=%q is neither RFC 3339 nor YYYY-MM-DD", NowEnv, v)
	}
	return time.Now(), nil
}
