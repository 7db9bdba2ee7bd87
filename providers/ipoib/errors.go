package ipoib

import (
	"errors"
	"fmt"

	"github.com/rdmaform/rdmaform/providers/ipoib/nmcli"
)

// Step is the nmcli step of a change that failed.
type Step int

// Steps.
const (
	StepAdd Step = iota
	StepModify
	StepUp
	StepDown
	StepDelete
)

func (s Step) String() string {
	switch s {
	case StepAdd:
		return "add"
	case StepModify:
		return "modify"
	case StepUp:
		return "activate"
	case StepDown:
		return "deactivate"
	case StepDelete:
		return "delete"
	}
	return fmt.Sprintf("Step(%d)", int(s))
}

// ConnError is a failed nmcli step on one connection. Err is the
// *nmcli.Error (command line, exit code, NetworkManager's message) or the
// error that kept nmcli from running.
type ConnError struct {
	Name string // connection.id
	UUID string // "" when the profile was never added
	Step Step
	Err  error
}

func (e *ConnError) Error() string {
	who := fmt.Sprintf("connection %q", e.Name)
	if e.UUID != "" {
		who += " (uuid " + e.UUID + ")"
	}
	what := e.Step.String() + " failed"
	if e.Step == StepUp && e.UUID != "" {
		what = "activation failed; the saved profile is kept and stays down"
	}
	msg := fmt.Sprintf("%s: %s: %v", who, what, e.Err)
	if h := Hint(e.Err); h != "" {
		msg += " (" + h + ")"
	}
	return msg
}

func (e *ConnError) Unwrap() error { return e.Err }

// Hint explains an nmcli failure class to an operator, or "" when there is
// nothing to add to NetworkManager's own message.
func Hint(err error) string {
	var e *nmcli.Error
	if !errors.As(err, &e) {
		return ""
	}
	switch e.Code {
	case nmcli.ExitUnknown:
		if nmcli.IsRejected(err) {
			return "NetworkManager rejected the profile"
		}
		return "nmcli failed without a specific reason; is the system D-Bus reachable?"
	case nmcli.ExitInvalidInput:
		return "nmcli refused an argument rdmaform built; this nmcli may be older or newer than NetworkManager 1.42: please report it"
	case nmcli.ExitTimeout:
		return "NetworkManager did not finish in time"
	case nmcli.ExitActivationFailed:
		if nmcli.IsRejected(err) {
			return "NetworkManager rejected the profile"
		}
		return "NetworkManager could not activate it on this host"
	case nmcli.ExitDeactivationFailed:
		return "NetworkManager could not deactivate it"
	case nmcli.ExitDisconnectFailed:
		return "NetworkManager could not disconnect the device"
	case nmcli.ExitDeletionFailed:
		return "NetworkManager could not delete it"
	case nmcli.ExitNotRunning:
		return "NetworkManager is not running: systemctl start NetworkManager"
	case nmcli.ExitVersionMismatch:
		return "nmcli and the running NetworkManager are different versions: restart NetworkManager after an upgrade"
	case nmcli.ExitNotFound:
		return "the connection changed since the plan was made: plan again"
	}
	return ""
}
