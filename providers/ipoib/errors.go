package ipoib

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rdmaform/rdmaform/host"
)

// Step is the step of a change that failed.
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

// ConnError is a failed NetworkManager step on one connection. Err is the
// *host.NMError (the D-Bus method, NetworkManager's error name and
// message) or the error that kept rdmaform from asking.
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

// polkit actions NetworkManager checks (org.freedesktop.NetworkManager.policy).
const (
	actionModifySystem   = "org.freedesktop.NetworkManager.settings.modify.system"
	actionNetworkControl = "org.freedesktop.NetworkManager.network-control"
)

// Hint explains a NetworkManager failure class to an operator, or "" when
// there is nothing to add to NetworkManager's own message.
func Hint(err error) string {
	var e *host.NMError
	if !errors.As(err, &e) {
		return ""
	}
	switch {
	case e.NotRunning():
		return "NetworkManager is not running: systemctl start NetworkManager"
	case strings.HasSuffix(e.Name, ".PermissionDenied"):
		action := actionModifySystem
		if e.Method == "ActivateConnection" || e.Method == "DeactivateConnection" {
			action = actionNetworkControl
		}
		return "NetworkManager refused rdmaform: run it as root, or let its user have the polkit action " + action
	case IsNoSuchConnection(err):
		return "the connection changed since the plan was made: plan again"
	case e.Name == host.NMErrActivationFailed || e.Name == host.NMErrUnknownDevice:
		return "NetworkManager could not activate it on this host"
	case strings.HasSuffix(e.Name, ".InvalidProperty") || strings.HasSuffix(e.Name, ".MissingProperty") || strings.HasSuffix(e.Name, ".InvalidSetting"):
		return "NetworkManager rejected the profile"
	case e.Method == "DeactivateConnection":
		return "NetworkManager could not deactivate it"
	case e.Method == "Delete":
		return "NetworkManager could not delete it"
	}
	return ""
}

// IsNoSuchConnection reports a profile NetworkManager does not have (any
// more): GetConnectionByUuid found none, or its object went away.
func IsNoSuchConnection(err error) bool {
	var e *host.NMError
	return errors.As(err, &e) && (e.Name == host.NMErrInvalidConnection || e.Name == host.NMErrUnknownConnection || e.Name == "org.freedesktop.DBus.Error.UnknownObject")
}

// IsActivationFailed reports an activation NetworkManager refused or that
// failed: no suitable device, the IPoIB interface missing, a mode the
// device refuses.
func IsActivationFailed(err error) bool {
	var e *host.NMError
	return errors.As(err, &e) && e.Method == "ActivateConnection" && !e.NotRunning() && !IsNoSuchConnection(err)
}
