package mlxfmt

import (
	"errors"
	"fmt"
	"strings"
)

// Exit codes of mlxconfig/mstconfig (mlxcfg_status.h).
const (
	ExitOK      = 0 // success, -h, -v
	ExitAborted = 2 // the user did not answer y/yes at the prompt
	ExitError   = 3 // any -E- error
	ExitNoUsage = 5 // index-range errors, printed without usage
)

// ErrBadValue is returned by SetArg for a value rdmaform refuses to pass.
var ErrBadValue = errors.New("mlxfmt: bad value")

// ErrNoTable is returned by ParseQuery when the output holds neither a
// Configurations table nor an -E- line.
var ErrNoTable = errors.New("mlxfmt: no Configurations table in output")

// ErrorKind classifies an -E- line of mlxconfig/mstconfig.
type ErrorKind int

const (
	ErrOther           ErrorKind = iota // any other -E- line
	ErrOpenDevice                       // Failed to open the device
	ErrNoDevices                        // No devices found / Failed to get devices.
	ErrUnknownParam                     // Unknown Parameter / Failed to find Param / TLV
	ErrReadOnly                         // Operation is not supported (Read only TLV: x)
	ErrUnknownValue                     // Unknown value x
	ErrAborted                          // Aborted by user.
	ErrInvalidArgument                  // Invalid Configuration argument x
	ErrDuplicateParam                   // Duplicate parameter, X.
	ErrTooLarge                         // Parameter X' value is larger than maximum allowed N
)

// String names the kind.
func (k ErrorKind) String() string {
	switch k {
	case ErrOther:
		return "other"
	case ErrOpenDevice:
		return "open-device"
	case ErrNoDevices:
		return "no-devices"
	case ErrUnknownParam:
		return "unknown-parameter"
	case ErrReadOnly:
		return "read-only"
	case ErrUnknownValue:
		return "unknown-value"
	case ErrAborted:
		return "aborted"
	case ErrInvalidArgument:
		return "invalid-argument"
	case ErrDuplicateParam:
		return "duplicate-parameter"
	case ErrTooLarge:
		return "too-large"
	}
	return fmt.Sprintf("ErrorKind(%d)", int(k))
}

// ToolError is one -E- line of mlxconfig/mstconfig, classified, so callers
// branch on Kind (or errors.Is with a *ToolError of the same Kind) and quote
// Message to the operator.
type ToolError struct {
	Kind ErrorKind
	// Param is the parameter named by ErrUnknownParam and ErrDuplicateParam.
	Param string
	// Value is the value of ErrUnknownValue, or the argument of
	// ErrInvalidArgument.
	Value string
	// TLV is the TLV named by ErrReadOnly.
	TLV string
	// Message is the tool's text after "-E- ".
	Message string
}

// Error quotes the tool.
func (e *ToolError) Error() string { return "mlxconfig: " + e.Message }

// Is matches another *ToolError of the same Kind, so
// errors.Is(err, &mlxfmt.ToolError{Kind: mlxfmt.ErrUnknownParam}) works.
func (e *ToolError) Is(target error) bool {
	t, ok := target.(*ToolError)
	return ok && t.Kind == e.Kind
}

// Line renders the error as the tool prints it, with its newline.
func (e *ToolError) Line() string { return "-E- " + e.Message + "\n" }

// Constructors for the messages the tools print (formats.md §1.7).

// OpenDeviceError is "-E- Failed to open the device".
func OpenDeviceError() *ToolError {
	return &ToolError{Kind: ErrOpenDevice, Message: "Failed to open the device"}
}

// ReadOnlyError is "-E- Operation is not supported (Read only TLV: tlv)".
func ReadOnlyError(tlv string) *ToolError {
	return &ToolError{Kind: ErrReadOnly, TLV: tlv, Message: "Operation is not supported (Read only TLV: " + tlv + ")"}
}

// UnknownValueError is "-E- Unknown value v".
func UnknownValueError(v string) *ToolError {
	return &ToolError{Kind: ErrUnknownValue, Value: v, Message: "Unknown value " + v}
}

// AbortedError is "-E- Aborted by user.".
func AbortedError() *ToolError {
	return &ToolError{Kind: ErrAborted, Message: "Aborted by user."}
}

// InvalidArgumentError is "-E- Invalid Configuration argument arg".
func InvalidArgumentError(arg string) *ToolError {
	return &ToolError{Kind: ErrInvalidArgument, Value: arg, Message: "Invalid Configuration argument " + arg}
}

// DuplicateParamError is "-E- Duplicate parameter, NAME.".
func DuplicateParamError(name string) *ToolError {
	return &ToolError{Kind: ErrDuplicateParam, Param: name, Message: "Duplicate parameter, " + name + "."}
}

// ParseErrorLine classifies one line; it returns nil unless the line starts
// with "-E-".
func ParseErrorLine(line string) *ToolError {
	line = strings.TrimRight(line, " \r\n")
	rest, ok := strings.CutPrefix(line, "-E-")
	if !ok {
		return nil
	}
	msg := strings.TrimPrefix(rest, " ")
	e := &ToolError{Kind: ErrOther, Message: msg}
	switch {
	case msg == "Failed to open the device":
		e.Kind = ErrOpenDevice
	case strings.HasPrefix(msg, "No devices found"), msg == "Failed to get devices.":
		e.Kind = ErrNoDevices
	case strings.HasPrefix(msg, "Unknown Parameter"):
		e.Kind = ErrUnknownParam
		e.Param = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(msg, "Unknown Parameter"), ":"))
	case strings.HasPrefix(msg, "Failed to find Param / TLV with name '"):
		e.Kind = ErrUnknownParam
		name := strings.TrimPrefix(msg, "Failed to find Param / TLV with name '")
		if i := strings.IndexByte(name, '\''); i >= 0 {
			name = name[:i]
		}
		e.Param = name
	case strings.HasPrefix(msg, "The Device doesn't support ") && strings.HasSuffix(msg, " parameter"):
		// A parameter the tool knows and this adapter lacks (mstflint's
		// GenericCommander: "The Device doesn't support %s parameter"),
		// printed after the Configurations header, exit 3.
		e.Kind = ErrUnknownParam
		e.Param = strings.TrimSuffix(strings.TrimPrefix(msg, "The Device doesn't support "), " parameter")
	case strings.HasPrefix(msg, "Parameter ") && strings.Contains(msg, "' value is larger than maximum allowed "):
		// After "Applying... Failed!": the firmware refused a value
		// above the parameter's maximum.
		name, max, _ := strings.Cut(strings.TrimPrefix(msg, "Parameter "), "' value is larger than maximum allowed ")
		e.Kind, e.Param, e.Value = ErrTooLarge, name, max
	case strings.HasPrefix(msg, "Operation is not supported (Read only TLV: "):
		e.Kind = ErrReadOnly
		e.TLV = strings.TrimSuffix(strings.TrimPrefix(msg, "Operation is not supported (Read only TLV: "), ")")
	case strings.HasPrefix(msg, "Unknown value "):
		e.Kind = ErrUnknownValue
		e.Value = strings.TrimPrefix(msg, "Unknown value ")
	case strings.HasPrefix(msg, "Aborted by user"):
		e.Kind = ErrAborted
	case strings.HasPrefix(msg, "Invalid Configuration argument "):
		e.Kind = ErrInvalidArgument
		e.Value = strings.TrimPrefix(msg, "Invalid Configuration argument ")
	case strings.HasPrefix(msg, "Duplicate parameter, "):
		e.Kind = ErrDuplicateParam
		e.Param = strings.TrimSuffix(strings.TrimPrefix(msg, "Duplicate parameter, "), ".")
	}
	return e
}

// ParseError returns the first -E- line of a tool's output, classified, or
// nil when there is none. Prompts can precede the -E- on the same line
// (" Apply new Configuration? (y/n) [n] : -E- Aborted by user."), so the
// marker is found anywhere in a line.
func ParseError(out []byte) *ToolError {
	for _, line := range strings.Split(string(out), "\n") {
		if i := strings.Index(line, "-E-"); i >= 0 {
			return ParseErrorLine(line[i:])
		}
	}
	return nil
}
