package mlxfmt

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The firmware reset tool: mstfwreset (mstflint) and mlxfwreset (MFT), one
// Python source. Its `-d DEV query` prints three tables (mstflint's
// mlxfwresetlib/cmd_reg_mfrl.py query_text, cmd_reg_mcam.py
// reset_sync_query_text), each row "{0}: {1:<62}-{2:<14}{3}":
//
//	Reset-levels:
//	0: Driver, PCI link, network link will remain up ("live-Patch")  -Not Supported
//	3: Driver restart and PCI reset                                  -Supported     (default)
//	4: Warm Reboot                                                   -Supported
//
//	Reset-types (relevant only for reset-levels 3,4):
//	0: Full chip reset                                               -Supported     (default)
//	...
//	Reset-sync (relevant only for reset-level 3):
//	0: Tool is the owner                                             -Supported     (default)
//	1: Driver is the owner                                           -Not supported
//
// and on failure one "-E- MESSAGE." line (exit 1). See
// testdata/real/mstfwreset.

// Reset levels rdmaform acts on (CmdRegMfrl).
const (
	ResetLevelLivePatch = 0 // the running firmware is patched; a configuration change is not loaded
	ResetLevelPCI       = 3 // driver restart and PCI reset: the firmware reloads
	ResetLevelWarmBoot  = 4 // warm reboot
)

// ResetOption is one row of a reset query table.
type ResetOption struct {
	Value       int    `json:"value"`
	Description string `json:"description"`
	Supported   bool   `json:"supported"`
	Default     bool   `json:"default,omitempty"`
}

// ResetQuery is the parsed output of `mstfwreset -d DEV query`.
type ResetQuery struct {
	Levels []ResetOption `json:"levels"`
	Types  []ResetOption `json:"types,omitempty"`
	Sync   []ResetOption `json:"sync,omitempty"`
}

// Supports reports whether the query lists level as supported.
func (q ResetQuery) Supports(level int) bool {
	for _, l := range q.Levels {
		if l.Value == level {
			return l.Supported
		}
	}
	return false
}

// Level returns the row of a level, if listed.
func (q ResetQuery) Level(level int) (ResetOption, bool) {
	for _, l := range q.Levels {
		if l.Value == level {
			return l, true
		}
	}
	return ResetOption{}, false
}

// ResetErrorKind classifies the reset tool's -E- line.
type ResetErrorKind int

const (
	// ResetErrOther is any other message.
	ResetErrOther ResetErrorKind = iota
	// ResetErrNoLevel: the device reports no reset level at all ("There is
	// no supported reset-level"): no reset, nor a warm reboot, reloads its
	// firmware; only a power cycle does.
	ResetErrNoLevel
	// ResetErrLevel: the level asked for is not supported now.
	ResetErrLevel
	// ResetErrDevice: the device could not be identified or opened.
	ResetErrDevice
	// ResetErrVFs: the tool could not remove the card's VFs.
	ResetErrVFs
	// ResetErrAborted: the question was not answered yes.
	ResetErrAborted
)

// String names the kind.
func (k ResetErrorKind) String() string {
	switch k {
	case ResetErrOther:
		return "other"
	case ResetErrNoLevel:
		return "no-reset-level"
	case ResetErrLevel:
		return "level-not-supported"
	case ResetErrDevice:
		return "device"
	case ResetErrVFs:
		return "vfs"
	case ResetErrAborted:
		return "aborted"
	}
	return fmt.Sprintf("ResetErrorKind(%d)", int(k))
}

// ResetToolError is the reset tool's -E- message, classified. Message is
// the text after "-E- ", without the '.' main() adds.
type ResetToolError struct {
	Kind    ResetErrorKind
	Message string
}

func (e *ResetToolError) Error() string { return "-E- " + e.Message }

// Is matches another *ResetToolError of the same Kind.
func (e *ResetToolError) Is(target error) bool {
	t, ok := target.(*ResetToolError)
	return ok && t.Kind == e.Kind
}

// ErrNoResetTable is returned by ParseResetQuery for an output with
// neither a Reset-levels table nor an -E- line.
var ErrNoResetTable = errors.New("mlxfmt: no Reset-levels table in the reset tool's output")

var resetRowRE = regexp.MustCompile(`^(\d+): (.*?)\s*-(Supported|Not Supported|Not supported)\s*(\(default\))?\s*$`)

// ParseResetError finds the reset tool's -E- message in its output: the
// first line starting "-E- ", joined with the following lines up to the
// '.' main() prints after the exception's text (which may end in a
// newline, so the '.' stands on a line of its own). It returns nil when
// there is none.
func ParseResetError(out []byte) *ResetToolError {
	lines := strings.Split(string(out), "\n")
	for i, l := range lines {
		rest, ok := strings.CutPrefix(strings.TrimRight(l, " \r"), "-E- ")
		if !ok {
			continue
		}
		msg := rest
		if !strings.HasSuffix(msg, ".") && i+1 < len(lines) && strings.TrimSpace(lines[i+1]) == "." {
			msg += "."
		}
		msg = strings.TrimSuffix(msg, ".")
		e := &ResetToolError{Kind: ResetErrOther, Message: msg}
		switch {
		case strings.HasPrefix(msg, "There is no supported reset-level"):
			e.Kind = ResetErrNoLevel
		case strings.HasPrefix(msg, "Reset-level '") && strings.HasSuffix(msg, "is not supported in the current state of this device"):
			e.Kind = ResetErrLevel
		case strings.HasPrefix(msg, "Failed to Identify Device") || strings.HasPrefix(msg, "Unsupported Device"):
			e.Kind = ResetErrDevice
		case strings.HasPrefix(msg, "Reset virtual functions failed"):
			e.Kind = ResetErrVFs
		case msg == "Aborted by user":
			e.Kind = ResetErrAborted
		}
		return e
	}
	return nil
}

// ParseResetQuery reads `mstfwreset -d DEV query`. An -E- line is
// returned as a *ResetToolError.
func ParseResetQuery(out []byte) (ResetQuery, error) {
	if e := ParseResetError(out); e != nil {
		return ResetQuery{}, e
	}
	var q ResetQuery
	var table *[]ResetOption
	for _, l := range strings.Split(string(out), "\n") {
		l = strings.TrimRight(l, " \r")
		switch {
		case l == "":
			continue
		case l == "Reset-levels:":
			table = &q.Levels
			continue
		case strings.HasPrefix(l, "Reset-types"):
			table = &q.Types
			continue
		case strings.HasPrefix(l, "Reset-sync"):
			table = &q.Sync
			continue
		}
		m := resetRowRE.FindStringSubmatch(l)
		if m == nil || table == nil {
			continue // a note the tool prints (a warning, a newer table)
		}
		n, _ := strconv.Atoi(m[1])
		*table = append(*table, ResetOption{Value: n, Description: m[2], Supported: m[3] == "Supported", Default: m[4] != ""})
	}
	if len(q.Levels) == 0 {
		return q, ErrNoResetTable
	}
	return q, nil
}
