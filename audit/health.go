package audit

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rdmaform/rdmaform/schema"
)

// NagiosStatus is a verdict in the terms health-check frameworks (Nagios,
// NHC, Slurm's HealthCheckProgram wrappers) read: the exit code is the
// value.
type NagiosStatus int

// Nagios's exit codes.
const (
	NagiosOK       NagiosStatus = 0
	NagiosWarning  NagiosStatus = 1
	NagiosCritical NagiosStatus = 2
	NagiosUnknown  NagiosStatus = 3
)

func (s NagiosStatus) String() string {
	switch s {
	case NagiosOK:
		return "OK"
	case NagiosWarning:
		return "WARNING"
	case NagiosCritical:
		return "CRITICAL"
	case NagiosUnknown:
		return "UNKNOWN"
	}
	return fmt.Sprintf("NagiosStatus(%d)", int(s))
}

// MarshalText implements encoding.TextMarshaler.
func (s NagiosStatus) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// rank orders the verdicts for the host's: CRITICAL, then UNKNOWN (the
// host could not be judged: that outranks a warning, so that a check
// that could not run is never hidden behind a pending reboot), then
// WARNING, then OK.
func (s NagiosStatus) rank() int {
	switch s {
	case NagiosCritical:
		return 3
	case NagiosUnknown:
		return 2
	case NagiosWarning:
		return 1
	}
	return 0
}

// HealthOptions tune a health verdict.
type HealthOptions struct {
	// DriftCritical makes drift (plan would change something) critical;
	// by default it is a warning: the host works, but not as the spec
	// says.
	DriftCritical bool
}

// HealthProblem is one check that did not pass, with its verdict.
type HealthProblem struct {
	Status   NagiosStatus `json:"status"`
	Resource string       `json:"resource"`
	Check    string       `json:"check"`
	Message  string       `json:"message,omitempty"`
}

// Line is the problem as one line: "port[mlx5_0/1] state: DOWN".
func (p HealthProblem) Line() string {
	s := p.Resource + " " + p.Check
	if p.Message != "" {
		s += ": " + p.Message
	}
	return oneLine(s)
}

// Health is the verdict of `rdmaform health` on one host.
type Health struct {
	Status NagiosStatus `json:"status"`
	// Problems, the most severe first.
	Problems []HealthProblem `json:"problems"`
	Checks   int             `json:"checks"`
	Passed   int             `json:"passed"`
	Waived   int             `json:"waived"`
}

// Judge turns an audit report into a health verdict:
//
//   - CRITICAL: a failed health check (port state, physical state, link
//     layer, rate, subnet manager, RoCE v2 GID, P_Key, lossless path,
//     GPUDirect), a finding (a device the spec names is not there), a
//     firmware value a reboot did not activate (the staged ledger's
//     "did not take"); drift too with DriftCritical;
//   - UNKNOWN: part of the host could not be read (an audit error), or
//     the spec is for another host (hostname): then the rest of the
//     checks say nothing, and the verdict is UNKNOWN whatever they say;
//   - WARNING: drift, a value staged for the next boot (pending reboot);
//   - OK: everything passed (waived checks count as passed).
func Judge(r *Report, o HealthOptions) Health {
	h := Health{Checks: r.Summary.Checks, Passed: r.Summary.Passed, Waived: r.Summary.Waived, Problems: []HealthProblem{}}
	wrongHost := false
	for _, c := range r.Checks {
		var st NagiosStatus
		switch c.Status {
		case Pass, Waived:
			continue
		case Pending:
			st = NagiosWarning
		case Fail:
			switch c.Check {
			case CheckDrift:
				st = NagiosWarning
				if o.DriftCritical {
					st = NagiosCritical
				}
			case CheckHostname:
				st, wrongHost = NagiosUnknown, true
			default:
				st = NagiosCritical
			}
		}
		h.Problems = append(h.Problems, HealthProblem{Status: st, Resource: c.Resource, Check: c.Check, Message: c.Message})
	}
	failed := map[schema.Pos]bool{}
	for _, af := range r.ActivationFailures {
		if af.Source != nil {
			failed[*af.Source] = true
		}
		h.Problems = append(h.Problems, HealthProblem{Status: NagiosCritical, Resource: af.Address.String(), Check: "activation",
			Message: fmt.Sprintf("%s staged %s at %s did not take: still %s after the reboot", af.Attribute, af.Staged, af.StagedAt, af.Current)})
	}
	for _, e := range r.Errors {
		if failed[e.Pos] {
			continue // the activation failure above
		}
		h.Problems = append(h.Problems, HealthProblem{Status: NagiosUnknown, Resource: "host", Check: "error", Message: e.Message})
	}
	sort.SliceStable(h.Problems, func(i, j int) bool { return h.Problems[i].Status.rank() > h.Problems[j].Status.rank() })
	switch {
	case wrongHost:
		h.Status = NagiosUnknown
	case len(h.Problems) > 0:
		h.Status = h.Problems[0].Status
	}
	return h
}

// Count is the number of problems with status s.
func (h Health) Count(s NagiosStatus) int {
	n := 0
	for _, p := range h.Problems {
		if p.Status == s {
			n++
		}
	}
	return n
}

// SummaryLine is the verdict as health-check frameworks show it, one line
// in the Nagios plugin form "RDMA STATUS: text | perfdata":
//
//	RDMA OK: 12 checks passed | checks=12 critical=0 warning=0 unknown=0
//	RDMA CRITICAL: port[mlx5_0/1] state: DOWN, want ACTIVE (and 2 more) | checks=12 ...
//
// The first problem is the most severe one.
func (h Health) SummaryLine() string {
	return fmt.Sprintf("RDMA %s: %s | checks=%d critical=%d warning=%d unknown=%d", h.Status, h.SummaryText(), h.Checks,
		h.Count(NagiosCritical), h.Count(NagiosWarning), h.Count(NagiosUnknown))
}

// SummaryText is the summary line's text: the most severe problem and
// how many more, or how many checks passed.
func (h Health) SummaryText() string {
	if len(h.Problems) > 0 {
		text := h.Problems[0].Line()
		if n := len(h.Problems) - 1; n > 0 {
			text += fmt.Sprintf(" (and %d more)", n)
		}
		return text
	}
	text := fmt.Sprintf("%d checks passed", h.Passed)
	if h.Waived > 0 {
		text += fmt.Sprintf(" (%d waived)", h.Waived)
	}
	return text
}

// oneLine folds a message onto one line: a framework takes the first line
// of a plugin's output as its summary, and Slurm's drain reason is one
// line. "|" starts the perfdata in Nagios's format, so it becomes "/".
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", "/")
}
