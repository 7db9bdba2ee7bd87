package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/coreos/go-systemd/v22/unit"
)

// StartJob is what systemd runs to start a unit whose file is in the
// simulated tree: its ExecStartPre=, ExecStart= and ExecStartPost= lines
// in that order, and the exit statuses it counts as success.
//
// The simulator cannot run arbitrary programs: the caller runs each
// command (rdmaform itself, against the simulated host) and tells the
// host how the start ended (EndStart).
type StartJob struct {
	Unit string
	Exec []ExecLine
	// Success are the exit statuses that count as success: 0 and those
	// of SuccessExitStatus=.
	Success []int
}

// ExecLine is one Exec*= line of a unit file, read as systemd reads it.
type ExecLine struct {
	// Key is ExecStartPre, ExecStart or ExecStartPost.
	Key string
	// Line is the value as the unit file has it, with its prefixes.
	Line string
	// Argv is the command line; Argv[0] is an absolute path.
	Argv []string
	// IgnoreFailure is the "-" prefix: a failure is logged and the start
	// goes on.
	IgnoreFailure bool
}

// Succeeded tells whether an exit status counts as success for the job.
func (j *StartJob) Succeeded(code int) bool {
	for _, c := range j.Success {
		if c == code {
			return true
		}
	}
	return false
}

// BootJob returns the start job of a unit a boot starts: a unit file
// under /etc/systemd/system of the simulated tree that is enabled (its
// .wants/ symlink exists). It returns nil when the unit is not there or
// not enabled, and an error for a line the simulator cannot run as
// systemd would (quotes, escapes, variables, specifiers, a relative
// path).
func (s *Sim) BootJob(name string) (*StartJob, error) {
	if err := checkUnitName(name); err != nil {
		return nil, err
	}
	uf, err := s.readUnitFile(name)
	if err != nil || !uf.exists || s.fileState(name, uf) != "enabled" {
		return nil, err
	}
	f, err := os.Open(filepath.Join(s.Dir, UnitDir, name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	opts, err := unit.Deserialize(f)
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", UnitDir, name, err)
	}
	job := &StartJob{Unit: name, Success: []int{0}}
	for _, key := range []string{"ExecStartPre", "ExecStart", "ExecStartPost"} {
		for _, o := range opts {
			if o.Section != "Service" || o.Name != key {
				continue
			}
			l, err := execLine(key, o.Value)
			if err != nil {
				return nil, fmt.Errorf("%s/%s: %s=%s: %w", UnitDir, name, key, o.Value, err)
			}
			job.Exec = append(job.Exec, l)
		}
	}
	for _, o := range opts {
		if o.Section != "Service" || o.Name != "SuccessExitStatus" {
			continue
		}
		for _, w := range strings.Fields(o.Value) {
			n, err := strconv.Atoi(w)
			if err != nil || n < 0 || n > 255 {
				return nil, fmt.Errorf("%s/%s: SuccessExitStatus=%s: the simulator knows exit statuses 0..255 only, not %q", UnitDir, name, o.Value, w)
			}
			job.Success = append(job.Success, n)
		}
	}
	return job, nil
}

// execLine reads one Exec*= value: its prefixes ("-" ignores a failure;
// "+", "!", "!!" and ":" change privileges or variable expansion, which
// the simulator does not model, so they change nothing here), then the
// words of the command line.
func execLine(key, v string) (ExecLine, error) {
	l := ExecLine{Key: key, Line: v}
	rest := v
	for rest != "" && strings.ContainsRune("-+!:@", rune(rest[0])) {
		switch rest[0] {
		case '-':
			l.IgnoreFailure = true
		case '@':
			return l, fmt.Errorf("the @ prefix (argv[0] of its own) is not simulated")
		}
		rest = rest[1:]
	}
	if strings.ContainsAny(rest, "\"'\\$%;") {
		return l, fmt.Errorf("quotes, escapes, variables, specifiers and ; are not simulated: write plain words")
	}
	l.Argv = strings.Fields(rest)
	if len(l.Argv) == 0 || !filepath.IsAbs(l.Argv[0]) {
		return l, fmt.Errorf("the command must start with an absolute path")
	}
	return l, nil
}

// EndStart records how a boot's start of a unit ended: active (a oneshot
// with RemainAfterExit), or failed.
func (s *Sim) EndStart(name string, ok bool) error {
	return s.mutate(true, func(st *State) error {
		u := st.units().ensure(name)
		u.Active, u.Failed = ok, !ok
		return nil
	})
}
