package ansible

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/words"
	"github.com/rdmaform/rdmaform/plan"
)

// A firmware reset of the NIC that carries the SSH session ends the
// task's connection, and with it the module. So state activated runs
// rdmaform activate in a detached process of its own (as the background
// apply of confirm_timeout), which writes its outcome to
// ActivationFile; the module waits for that file and returns it. When
// the connection was lost, the next task with state activated (after
// the reconnect) finds the outcome there and returns it, once.

// BackgroundActivateArg, as the only argument, makes the module's
// executable the detached activation (BackgroundActivate).
const BackgroundActivateArg = "--rdmaform-ansible-background-activate"

// ActivationFile is the detached activation's record, rooted under root
// or sim: written when it starts (running), rewritten when it ends (its
// exit code and output). /run: a reboot empties it.
const ActivationFile = "/run/rdmaform/ansible-activate.json"

// ActivationLog receives the detached activations' output, appended.
const ActivationLog = "/run/rdmaform/ansible-activate.log"

// activation is ActivationFile's content.
type activation struct {
	PID     int       `json:"pid"`
	BootID  string    `json:"boot_id,omitempty"`
	Started time.Time `json:"started"`
	// Staged is how many staged values it was started for.
	Staged int `json:"staged"`
	// Done: it ended; Code is rdmaform activate's exit code, Stdout and
	// Stderr what it printed.
	Done   bool       `json:"done"`
	Ended  *time.Time `json:"ended,omitempty"`
	Code   int        `json:"code"`
	Stdout []string   `json:"stdout,omitempty"`
	Stderr []string   `json:"stderr,omitempty"`
	// Collected: a module run returned the outcome; it is not returned
	// again.
	Collected bool `json:"collected,omitempty"`
}

// stagedEnv tells the detached activation how many staged values it
// activates (for its message).
const stagedEnv = "RDMAFORM_ANSIBLE_STAGED"

// maxActivationFile bounds the record as it is read back.
const maxActivationFile = 4 << 20

func readActivation(fsys host.FS) (*activation, error) {
	b, err := host.ReadStateFile(fsys, ActivationFile, maxActivationFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	a := &activation{}
	if err := json.Unmarshal(b, a); err != nil {
		return nil, fmt.Errorf("%s: not a record the module wrote: %v; look at it, then move it away", ActivationFile, err)
	}
	return a, nil
}

func writeActivation(fsys host.FS, a *activation) error {
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return err
	}
	return fsys.WriteFile(ActivationFile, append(b, '\n'), 0o600)
}

// BackgroundActivate is the detached activation: it reads the module's
// arguments (JSON) on stdin, records itself as running, runs
//
//	rdmaform [--sim DIR|--root DIR] activate -f SPEC --by fw-reset -q [--wait D]
//
// and records its exit code and output. Its own output goes to
// ActivationLog too.
func BackgroundActivate(env cli.Env) int {
	data, err := io.ReadAll(env.Stdin)
	if err != nil {
		fmt.Fprintf(env.Stderr, "rdmaform module: reading the detached activation's arguments: %v\n", err)
		return plan.ExitError
	}
	a, err := ParseArgs(data)
	if err == nil && a.State != Activated {
		err = errors.New("not an activation")
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "rdmaform module: detached activation: %v\n", err)
		return plan.ExitError
	}
	m := &module{args: a, env: env}
	fsys, err := m.hostFS()
	if err != nil {
		fmt.Fprintf(env.Stderr, "rdmaform module: detached activation: %v\n", err)
		return plan.ExitError
	}
	var staged int
	for _, kv := range env.Environ {
		if v, ok := strings.CutPrefix(kv, stagedEnv+"="); ok {
			fmt.Sscan(v, &staged)
		}
	}
	boot, _ := host.ReadAttr(fsys, "/proc/sys/kernel/random/boot_id")
	rec := &activation{PID: os.Getpid(), BootID: boot, Started: time.Now().UTC().Truncate(time.Second), Staged: staged}
	if err := writeActivation(fsys, rec); err != nil {
		fmt.Fprintf(env.Stderr, "rdmaform module: detached activation: recording it: %v\n", err)
		return plan.ExitError
	}
	fmt.Fprintf(env.Stdout, "=== %s pid %d: rdmaform activate --by fw-reset\n", rec.Started.Format(time.RFC3339), rec.PID)
	var stdout, stderr bytes.Buffer
	code, _ := m.rdmaformTo(io.MultiWriter(&stdout, env.Stdout), io.MultiWriter(&stderr, env.Stderr), "activate", m.activateArgs()...)
	ended := time.Now().UTC().Truncate(time.Second)
	rec.Done, rec.Ended, rec.Code, rec.Stdout, rec.Stderr = true, &ended, code, lines(stdout.String()), lines(stderr.String())
	if err := writeActivation(fsys, rec); err != nil {
		fmt.Fprintf(env.Stderr, "rdmaform module: detached activation: recording its end: %v\n", err)
	}
	fmt.Fprintf(env.Stdout, "=== %s pid %d: exit %d\n", ended.Format(time.RFC3339), rec.PID, code)
	return code
}

func (m *module) activateArgs() []string {
	extra := []string{"--by", plan.ByFWReset, "-q"}
	if m.args.ActivateWait > 0 {
		extra = append(extra, "--wait", m.args.ActivateWait.String())
	}
	return extra
}

// activationArgs are the module arguments of the detached activation.
func (m *module) activationArgs() ([]byte, error) {
	a := map[string]any{"state": "activated"}
	if m.args.ActivateWait > 0 {
		a["activate_wait"] = m.args.ActivateWait.String()
	}
	for k, v := range map[string]string{"spec": m.args.Spec, "content": m.args.Content, "root": m.args.Root, "sim": m.args.Sim} {
		if v != "" {
			a[k] = v
		}
	}
	return json.Marshal(a)
}

// activationBound is how long the module waits for a detached activation
// it did not start to write its outcome: activate's own bounds (the
// lock, the resets, --wait, the re-apply) are within it.
const activationBound = 2 * time.Hour

// pendingActivation returns the outcome of a detached activation that a
// lost connection left uncollected (waiting for one still running), or
// nil when there is none.
func (m *module) pendingActivation(fsys host.FS) (*Result, error) {
	rec, err := readActivation(fsys)
	if err != nil || rec == nil || rec.Collected {
		return nil, err
	}
	for deadline := time.Now().Add(activationBound); !rec.Done; {
		if !host.ProcessAlive(rec.PID) {
			// Gone without its outcome (killed): activate's own record
			// (/run/rdmaform/activate.json) makes the next activation give
			// back what it took down.
			rec.Collected = true
			_ = writeActivation(fsys, rec)
			res := failed(plan.ExitError, fmt.Sprintf("the detached activation (pid %d, started %s) ended without recording its outcome (see %s); the next activation gives back what it took down", rec.PID, rec.Started.Format(time.RFC3339), ActivationLog))
			return &res, nil
		}
		if time.Now().After(deadline) {
			res := failed(plan.ExitError, fmt.Sprintf("the detached activation (pid %d, started %s) has not ended within %s; it goes on (log %s)", rec.PID, rec.Started.Format(time.RFC3339), activationBound, ActivationLog))
			return &res, nil
		}
		time.Sleep(200 * time.Millisecond)
		if rec, err = readActivation(fsys); err != nil || rec == nil {
			return nil, err
		}
	}
	rec.Collected = true
	if err := writeActivation(fsys, rec); err != nil {
		return nil, err
	}
	res := outcome(rec)
	return &res, nil
}

// outcome is the module's result of a finished detached activation.
func outcome(rec *activation) Result {
	res := Result{RC: rec.Code, Changed: true, Pending: []plan.Pending{}, Deferred: []plan.Deferred{}, StdoutLines: rec.Stdout, StderrLines: rec.Stderr}
	if rec.Code != plan.ExitOK {
		res.Failed = true
		res.Msg = joinNonEmpty(strings.TrimSpace(strings.Join(rec.Stderr, "\n")), strings.TrimSpace(strings.Join(rec.Stdout, "\n")))
		if res.Msg == "" {
			res.Msg = fmt.Sprintf("rdmaform activate exited %d", rec.Code)
		}
		return res
	}
	res.Msg = fmt.Sprintf("activated %d staged %s (detached, pid %d)", rec.Staged, words.Plural(rec.Staged, "value", "values"), rec.PID)
	return res
}

// activateDetached starts the detached activation for the staged values
// of p and waits for its outcome.
func (m *module) activateDetached(fsys host.FS, staged int) Result {
	if err := fsys.MkdirAll("/run/rdmaform", 0o755); err != nil {
		return failed(plan.ExitError, err.Error())
	}
	args, err := m.activationArgs()
	if err != nil {
		return failed(plan.ExitError, err.Error())
	}
	env := append(append([]string{}, m.env.Environ...), fmt.Sprintf("%s=%d", stagedEnv, staged))
	bg, err := host.DetachSelf([]string{BackgroundActivateArg}, env, args, fsys, ActivationLog)
	if err != nil {
		return failed(plan.ExitError, err.Error())
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		rec, err := readActivation(fsys)
		if err == nil && rec != nil && rec.PID == bg.PID() && rec.Done {
			rec.Collected = true
			if err := writeActivation(fsys, rec); err != nil {
				return failed(plan.ExitError, err.Error())
			}
			return outcome(rec)
		}
		select {
		case <-bg.Done():
			// Ended: its record is final, or it never wrote one.
			rec, err := readActivation(fsys)
			if err == nil && rec != nil && rec.PID == bg.PID() && rec.Done {
				continue
			}
			res := failed(bg.ExitCode(), fmt.Sprintf("the detached activation (pid %d) exited %d without recording its outcome (log %s)", bg.PID(), bg.ExitCode(), ActivationLog))
			if res.RC == 0 {
				res.RC = plan.ExitError
			}
			return res
		case <-tick.C:
		}
	}
}
