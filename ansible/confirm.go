package ansible

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/words"
	"github.com/rdmaform/rdmaform/plan"
)

// An apply with confirm_timeout must outlive the task that starts it: the
// task's answer is what tells the playbook it may go on to a confirming
// task, and that task is the proof the host can still be reached. So the
// module starts rdmaform apply --confirm-timeout in a background process
// of its own, waits until that apply waits for confirmation (or has
// ended), and returns. If the next task cannot reach the host, nothing
// confirms and the apply reverts its changes at the timeout by itself.

// BackgroundArg, as the only argument, makes the module's executable the
// background apply (Background) rather than the module. Only the module
// starts it so; Ansible passes the path of an arguments file.
const BackgroundArg = "--rdmaform-ansible-background-apply"

// CLIArg, as the first argument, makes the module's executable the
// rdmaform command line (the rest of the arguments): the rollback watcher
// of the background apply runs so.
const CLIArg = "--rdmaform-cli"

// SelfCopy is where the background apply installs a copy of the module's
// executable (rooted under root or sim) for its rollback watcher or
// timer to run: Ansible removes the module's own file when the task ends.
const SelfCopy = "/run/rdmaform/rdmaform-ansible"

// LogFile receives the output of each background apply, appended (rooted
// under root or sim). /run is a tmpfs: a reboot empties it.
const LogFile = "/run/rdmaform/ansible-confirm.log"

// startBound is how long the module waits for its background apply to
// wait for confirmation: it takes the host lock (30s at most), plans,
// applies and verifies first.
const startBound = 5 * time.Minute

// Confirm describes an apply waiting for confirmation in the background.
type Confirm struct {
	// PID is the background rdmaform apply's process.
	PID int `json:"pid"`
	// Log is the file on the host with its output (under root or sim).
	Log string `json:"log"`
	// Timeout is confirm_timeout; Deadline is when the changes are
	// reverted unless a run with state confirmed comes first.
	Timeout  string    `json:"timeout"`
	Deadline time.Time `json:"deadline"`
}

// Background is the background apply: it reads module arguments (JSON)
// from stdin and runs
//
//	rdmaform [--sim DIR|--root DIR] apply -f SPEC --yes --confirm-timeout D [--allow-firmware]
//
// writing its output to stdout and stderr (the log file), and returns its
// exit code.
func Background(env cli.Env) int {
	data, err := io.ReadAll(env.Stdin)
	if err != nil {
		fmt.Fprintf(env.Stderr, "rdmaform module: reading the background apply's arguments: %v\n", err)
		return plan.ExitError
	}
	a, err := ParseArgs(data)
	if err == nil && (a.State != Applied || a.ConfirmTimeout <= 0) {
		err = errors.New("not an apply with confirm_timeout")
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "rdmaform module: background apply: %v\n", err)
		return plan.ExitError
	}
	m := &module{args: a, env: env}
	// The rollback must survive this process: the apply arms a watcher
	// (or a systemd timer) running a copy of this executable as rdmaform.
	var self string
	fsys, err := m.hostFS()
	if err == nil {
		self, err = fsys.Resolve(SelfCopy)
	}
	if err == nil {
		err = host.InstallSelf(self)
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "rdmaform module: background apply: installing %s for the rollback watcher: %v\n", self, err)
		return plan.ExitError
	}
	m.env.Self, m.env.SelfArgs = self, []string{CLIArg}
	fmt.Fprintf(env.Stdout, "=== %s pid %d: rdmaform apply --confirm-timeout %s\n", time.Now().UTC().Format(time.RFC3339), os.Getpid(), a.ConfirmTimeout)
	code, _ := m.rdmaformTo(env.Stdout, env.Stderr, "apply", m.confirmApplyArgs()...)
	fmt.Fprintf(env.Stdout, "=== %s pid %d: exit %d\n", time.Now().UTC().Format(time.RFC3339), os.Getpid(), code)
	return code
}

func (m *module) confirmApplyArgs() []string {
	args := []string{"--yes", "--confirm-timeout", m.args.ConfirmTimeout.String()}
	if m.args.AllowFirmware {
		// The module has checked allow_firmware already; apply in confirm
		// mode refuses firmware changes without the flag.
		args = append(args, "--allow-firmware")
	}
	return args
}

// backgroundArgs are the module arguments of the background apply: only
// what it needs, never Ansible's own keys.
func (m *module) backgroundArgs() ([]byte, error) {
	a := map[string]any{"confirm_timeout": m.args.ConfirmTimeout.String(), "allow_firmware": m.args.AllowFirmware}
	for k, v := range map[string]string{"spec": m.args.Spec, "content": m.args.Content, "root": m.args.Root, "sim": m.args.Sim} {
		if v != "" {
			a[k] = v
		}
	}
	return json.Marshal(a)
}

// hostFS is the host's filesystem: what the rooted /run/rdmaform paths
// are under (the live host's /, a --root tree, a simulated host).
func (m *module) hostFS() (*host.RootFS, error) {
	switch {
	case m.args.Sim != "":
		return host.NewRootFS(m.args.Sim)
	case m.args.Root != "":
		return host.NewRootFS(m.args.Root)
	}
	return host.NewRootFS("/")
}

// applyInBackground starts the background apply and waits, at most
// startBound, until it waits for confirmation or has ended. res holds the
// plan made before.
func (m *module) applyInBackground(p *plan.Plan, res Result) Result {
	fail := func(msg string) Result {
		res.Failed, res.RC, res.Msg = true, plan.ExitError, msg
		return res
	}
	fsys, err := m.hostFS()
	if err != nil {
		return fail(err.Error())
	}
	if b, err := fsys.ReadFile(cli.ConfirmFile); err == nil {
		return fail(fmt.Sprintf("an apply already waits for confirmation on this host (%s: %s); confirm it (state: confirmed) or let it revert, then run again; nothing was changed", cli.ConfirmFile, strings.TrimSpace(string(b))))
	}
	if err := fsys.MkdirAll("/run/rdmaform", 0o755); err != nil {
		return fail(err.Error())
	}
	var offset int64
	if fi, err := fsys.Stat(LogFile); err == nil {
		offset = fi.Size()
	}
	args, err := m.backgroundArgs()
	if err != nil {
		return fail(err.Error())
	}
	bg, err := host.DetachSelf([]string{BackgroundArg}, m.env.Environ, args, fsys, LogFile)
	if err != nil {
		return fail(err.Error())
	}
	info := &Confirm{PID: bg.PID(), Log: LogFile, Timeout: m.args.ConfirmTimeout.String()}
	logLines := func() []string {
		b, _ := fsys.ReadFile(LogFile)
		if int64(len(b)) < offset {
			return nil
		}
		return lines(string(b[offset:]))
	}

	bound := time.NewTimer(startBound)
	defer bound.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-bg.Done():
			return m.endedBeforeConfirm(p, res, bg.ExitCode(), logLines())
		default:
		}
		if fi, err := fsys.Stat(cli.ConfirmFile); err == nil {
			// The file is written (atomically) when the wait starts.
			info.Deadline = fi.ModTime().Add(m.args.ConfirmTimeout).UTC().Truncate(time.Second)
			res.Changed, res.RC, res.Confirm = true, plan.ExitOK, info
			res.StdoutLines = logLines()
			if after, _, err := m.plan(); err == nil {
				res.Pending, res.Deferred, res.RebootRequired = after.Pending, after.Deferred, rebootRequired(after)
			}
			res.Msg = fmt.Sprintf("applied %d %s, reverted at %s (in %s) unless confirmed: run the rdmaform module with state: confirmed once the host is still reachable (or rdmaform confirm on it)",
				len(p.Changes), words.Plural(len(p.Changes), "change", "changes"), info.Deadline.Format(time.RFC3339), info.Timeout)
			return res
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fail(fmt.Sprintf("watching for %s: %v; the apply goes on in the background (pid %d, log %s)", cli.ConfirmFile, err, info.PID, LogFile))
		}
		select {
		case <-bound.C:
			res.Changed, res.Confirm, res.StdoutLines = true, info, logLines()
			return fail(fmt.Sprintf("the background apply has neither ended nor started waiting for confirmation within %s; it goes on (pid %d, log %s) and reverts its changes %s after it starts waiting unless confirmed", startBound, info.PID, LogFile, info.Timeout))
		case <-tick.C:
		case <-bg.Done():
		}
	}
}

// endedBeforeConfirm is the result of a background apply that ended
// without waiting for confirmation: it failed (and reverted what it had
// changed), was refused, or found nothing to do.
func (m *module) endedBeforeConfirm(p *plan.Plan, res Result, code int, log []string) Result {
	res.RC, res.StdoutLines = code, log
	after, _, err := m.plan()
	if err != nil {
		res.Failed, res.Changed = true, true // what it did cannot be told
		res.Msg = fmt.Sprintf("the background apply exited %d; planning after it: %v", code, err)
		return res
	}
	res.Pending, res.Deferred, res.RebootRequired = after.Pending, after.Deferred, rebootRequired(after)
	res.Changed = !reflect.DeepEqual(comparable(p), comparable(after))
	switch code {
	case plan.ExitOK, plan.ExitReboot:
		res.Msg = "the apply ended without waiting for confirmation: it changed nothing"
	default:
		res.Failed = true
		res.Msg = fmt.Sprintf("the background apply exited %d (log %s):\n%s", code, LogFile, strings.Join(log, "\n"))
	}
	return res
}

// confirm keeps the changes of the apply waiting for confirmation.
//
// Equivalent to: rdmaform [--sim DIR|--root DIR] confirm
func (m *module) confirm() Result {
	if m.args.CheckMode {
		// The apply task started nothing in check mode: report whether a
		// confirmation waits, and never fail for want of one.
		fsys, err := m.hostFS()
		if err != nil {
			return failed(plan.ExitError, err.Error())
		}
		res := Result{Pending: []plan.Pending{}, Deferred: []plan.Deferred{}}
		res.Changed = host.Exists(fsys, cli.ConfirmFile)
		res.Msg = "nothing waits for confirmation"
		if res.Changed {
			res.Msg = "an apply waits for confirmation: it would be confirmed"
		}
		return res
	}
	var stdout, stderr strings.Builder
	code := cli.Run(append(m.hostArgs(), "confirm"), cli.Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Environ: m.env.Environ, Ctx: m.env.Ctx})
	res := failed(code, strings.TrimSpace(stderr.String()))
	res.StdoutLines, res.StderrLines = lines(stdout.String()), lines(stderr.String())
	if code != plan.ExitOK {
		return res
	}
	res.Failed, res.Changed = false, true
	res.Msg = "confirmed: the changes of the apply waiting on this host are kept"
	return res
}
