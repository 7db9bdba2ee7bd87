package nmcli

import (
	"errors"
	"fmt"
	"strings"
)

// ExitCode is nmcli's exit status (nmcli(1) "Exit Status").
type ExitCode int

const (
	ExitOK                 ExitCode = 0
	ExitUnknown            ExitCode = 1  // unknown or unspecified error; also "Failed to modify connection"
	ExitInvalidInput       ExitCode = 2  // bad property value, unknown option or field
	ExitTimeout            ExitCode = 3  // --wait expired
	ExitActivationFailed   ExitCode = 4  // also "Failed to add ... connection" from the daemon
	ExitDeactivationFailed ExitCode = 5  //
	ExitDisconnectFailed   ExitCode = 6  //
	ExitDeletionFailed     ExitCode = 7  //
	ExitNotRunning         ExitCode = 8  // NetworkManager is not running
	ExitVersionMismatch    ExitCode = 9  // nmcli and NetworkManager versions differ
	ExitNotFound           ExitCode = 10 // connection, device or access point does not exist
)

func (c ExitCode) String() string {
	switch c {
	case ExitOK:
		return "success"
	case ExitUnknown:
		return "error"
	case ExitInvalidInput:
		return "invalid input"
	case ExitTimeout:
		return "timeout"
	case ExitActivationFailed:
		return "activation failed"
	case ExitDeactivationFailed:
		return "deactivation failed"
	case ExitDisconnectFailed:
		return "disconnect failed"
	case ExitDeletionFailed:
		return "deletion failed"
	case ExitNotRunning:
		return "NetworkManager not running"
	case ExitVersionMismatch:
		return "version mismatch"
	case ExitNotFound:
		return "no such connection or device"
	}
	return fmt.Sprintf("exit status %d", int(c))
}

// Error is an nmcli run that exited non-zero.
type Error struct {
	Argv    []string // the command line, argv[0] "nmcli"
	Code    ExitCode
	Message string // NetworkManager's message: stderr, lines joined with "; "
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: exit %d (%s): %s", strings.Join(e.Argv, " "), int(e.Code), e.Code, e.Message)
}

// Is matches another *Error with the same code, so a caller can write
// errors.Is(err, &nmcli.Error{Code: nmcli.ExitNotFound}).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && t.Argv == nil && t.Message == ""
}

func newError(argv []string, code int, stderr []byte) *Error {
	var lines []string
	for _, l := range strings.Split(string(stderr), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return &Error{Argv: argv, Code: ExitCode(code), Message: strings.Join(lines, "; ")}
}

func code(err error) (ExitCode, []string, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Code, e.Argv, true
	}
	return 0, nil, false
}

// IsNotRunning reports an nmcli run that found no NetworkManager: none on
// the bus (exit 8), or no system bus at all (exit 1, "Could not create
// NMClient object").
func IsNotRunning(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Code == ExitNotRunning || (e.Code == 1 && strings.Contains(e.Message, "Could not create NMClient object"))
}

// IsActivationFailed reports a `connection up` that failed (exit 4): no
// suitable device, the IPoIB interface missing, a mode the device refuses.
// Exit 4 from `connection add` is a rejected profile, not this.
func IsActivationFailed(err error) bool {
	c, argv, ok := code(err)
	return ok && c == ExitActivationFailed && isVerb(argv, "up")
}

// IsNoSuchConnection reports a selector that matched no profile (exit 10);
// `connection down` of a profile that is not active also exits 10.
func IsNoSuchConnection(err error) bool {
	c, _, ok := code(err)
	return ok && c == ExitNotFound
}

// IsInvalidInput reports a value or option nmcli refused before asking
// NetworkManager (exit 2).
func IsInvalidInput(err error) bool {
	c, _, ok := code(err)
	return ok && c == ExitInvalidInput
}

// IsRejected reports a profile NetworkManager refused as a whole: `Failed
// to add` (exit 4 from add) or `Failed to modify connection` (exit 1 from
// modify).
func IsRejected(err error) bool {
	c, argv, ok := code(err)
	if !ok {
		return false
	}
	return (c == ExitActivationFailed && isVerb(argv, "add")) || (c == ExitUnknown && isVerb(argv, "modify"))
}

// isVerb reports whether argv is `nmcli [options] connection VERB ...`.
func isVerb(argv []string, verb string) bool {
	for i, a := range argv {
		if a == "connection" && i+1 < len(argv) {
			return argv[i+1] == verb
		}
	}
	return false
}
