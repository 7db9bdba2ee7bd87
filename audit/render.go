package audit

import (
	"encoding/xml"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/internal/words"
	"github.com/rdmaform/rdmaform/probe"
)

// Formats an audit report is rendered in.
var Formats = []string{"text", "json", "junit", "prometheus"}

// Render writes the report in one of Formats.
func Render(w io.Writer, r *Report, format string) error {
	var b []byte
	var err error
	switch format {
	case "text", "":
		b = []byte(Text(r))
	case "json":
		b, err = r.JSON()
	case "junit":
		b, err = JUnit(r)
	case "prometheus":
		b = []byte(Prometheus(r))
	default:
		return fmt.Errorf("unknown format %q (%s)", format, strings.Join(Formats, ", "))
	}
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// Text renders the report for people: errors, then every check that did
// not pass (with its spec line), then the summary line.
func Text(r *Report) string {
	var b strings.Builder
	for _, e := range r.Errors {
		fmt.Fprintf(&b, "%s\n", e.String())
	}
	if len(r.Errors) > 0 {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Audit of %s against %s (%s):\n", r.Host, r.Spec, r.Time.Format("2006-01-02 15:04:05 UTC"))
	for _, c := range r.Checks {
		if c.Status == Pass {
			continue
		}
		line := fmt.Sprintf("  %-7s %s %s", strings.ToUpper(c.Status.String()), c.Resource, c.Check)
		if c.Message != "" {
			line += ": " + c.Message
		}
		if c.Waiver != nil {
			if c.Waiver.Expired {
				line += fmt.Sprintf(" (waiver expired %s: %s)", c.Waiver.Expires, c.Waiver.Reason)
			} else {
				line += fmt.Sprintf(" (waived until %s: %s)", c.Waiver.Expires, c.Waiver.Reason)
			}
		}
		if c.Source != nil && c.Source.Line > 0 {
			line += " # " + c.Source.String()
		}
		b.WriteString(line + "\n")
	}
	for _, l := range firmwareLines(r.Firmware) {
		b.WriteString("  " + l + "\n")
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "  warning: %s\n", w)
	}
	b.WriteString("\n" + SummaryLine(r) + "\n")
	fmt.Fprintf(&b, "(rdmaform %s, commit %s)\n", r.Rdmaform.Version, r.Rdmaform.Commit)
	return b.String()
}

// SummaryLine is the one function that words an audit's summary.
func SummaryLine(r *Report) string {
	s := r.Summary
	line := fmt.Sprintf("Audit: %d %s, %d passed, %d failed, %d pending a reboot, %d waived.", s.Checks, words.Plural(s.Checks, "check", "checks"), s.Passed, s.Failed, s.Pending, s.Waived)
	switch {
	case s.Errors > 0:
		line += fmt.Sprintf(" %d %s: the audit is incomplete.", s.Errors, words.Plural(s.Errors, "error", "errors"))
	case s.Compliant:
		line += " The host matches the golden spec."
	case s.Failed == 0:
		line += " The host matches the golden spec after a reboot."
	default:
		line += " The host does not match the golden spec."
	}
	return line
}

// JUnit XML, as CI systems (Jenkins, GitLab, GitHub test reporters) read
// it: one testsuite per audit, one testcase per check (classname the
// resource, name the check), failed and pending checks as <failure>,
// waived ones as <skipped> with the waiver's reason, errors as a testcase
// with <error>. Every attribute the Ant JUnit schema requires is present.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr"`
	Hostname   string          `xml:"hostname,attr"`
	ID         int             `xml:"id,attr"`
	Package    string          `xml:"package,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
	SystemOut  string          `xml:"system-out"`
	SystemErr  string          `xml:"system-err"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure"`
	Error     *junitProblem `xml:"error"`
	Skipped   *junitSkipped `xml:"skipped"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// JUnit renders the report as JUnit XML.
func JUnit(r *Report) ([]byte, error) {
	host := r.Host
	if host == "" {
		host = "localhost"
	}
	s := junitSuite{Name: "rdmaform audit " + host, Time: "0", Timestamp: r.Time.Format("2006-01-02T15:04:05"), Hostname: host,
		Package: "rdmaform", Properties: []junitProperty{{Name: "spec", Value: r.Spec}, {Name: "format_version", Value: strconv.Itoa(FormatVersion)},
			{Name: "rdmaform_version", Value: r.Rdmaform.Version}, {Name: "rdmaform_commit", Value: r.Rdmaform.Commit}}}
	for _, c := range r.Checks {
		tc := junitCase{Name: c.Check, Classname: c.Resource, Time: "0"}
		detail := c.Message
		if c.Source != nil && c.Source.Line > 0 {
			detail += "\nspec: " + c.Source.String()
		}
		switch c.Status {
		case Fail:
			msg := c.Message
			if c.Waiver != nil {
				msg += fmt.Sprintf(" (waiver expired %s: %s)", c.Waiver.Expires, c.Waiver.Reason)
			}
			tc.Failure = &junitProblem{Message: msg, Type: c.Check, Text: detail}
			s.Failures++
		case Pending:
			tc.Failure = &junitProblem{Message: "pending a reboot: " + c.Message, Type: "pending_reboot", Text: detail}
			s.Failures++
		case Waived:
			tc.Skipped = &junitSkipped{Message: fmt.Sprintf("waived until %s: %s", c.Waiver.Expires, c.Waiver.Reason)}
			s.Skipped++
		}
		s.Cases = append(s.Cases, tc)
	}
	for _, e := range r.Errors {
		s.Cases = append(s.Cases, junitCase{Name: "error", Classname: "audit", Time: "0",
			Error: &junitProblem{Message: e.Message, Type: "error", Text: e.String()}})
		s.Errors++
	}
	s.Tests = len(s.Cases)
	all := junitSuites{Name: "rdmaform audit", Tests: s.Tests, Failures: s.Failures, Errors: s.Errors, Skipped: s.Skipped, Time: "0", Suites: []junitSuite{s}}
	b, err := xml.MarshalIndent(all, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(append([]byte(xml.Header), b...), '\n'), nil
}

// Metric is one Prometheus metric family rdmaform writes: the audit's
// (MetricFamilies) and the agent's. docs/reference/metrics.md is made
// from these tables; the renderers write HELP and TYPE from them.
type Metric struct {
	Name string
	Type string // gauge or counter
	Help string
	// Labels of every series, in the order they are written.
	Labels []string
	// Note says what the reference should add: when the family is
	// written, if not always, or what its labels hold.
	Note string
}

// Header is the family's HELP and TYPE lines.
func (m Metric) Header() string {
	return fmt.Sprintf("# HELP %s %s\n# TYPE %s %s\n", m.Name, m.Help, m.Name, m.Type)
}

// The audit's families (audit -o prometheus, and the agent's /metrics).
var (
	MetricBuildInfo        = Metric{Name: "rdmaform_build_info", Type: "gauge", Help: "The rdmaform that wrote this file.", Labels: []string{"version", "commit"}}
	MetricDrift            = Metric{Name: "rdmaform_drift", Type: "gauge", Help: "Whether plan would change the resource to match the golden spec (1) or not (0); waived drift is 0.", Labels: []string{"resource"}}
	MetricPendingReboot    = Metric{Name: "rdmaform_pending_reboot", Type: "gauge", Help: "Whether the resource waits for a reboot to match the golden spec (1) or not (0); waived is 0.", Labels: []string{"resource"}}
	MetricHealth           = Metric{Name: "rdmaform_health", Type: "gauge", Help: "Whether a health check fails (0) or not (1): a waived failure and a check that holds after the pending reboot are 1.", Labels: []string{"resource", "check"}}
	MetricWaived           = Metric{Name: "rdmaform_waived", Type: "gauge", Help: "Checks a current waiver covers (1).", Labels: []string{"resource", "check"}}
	MetricActivationFailed = Metric{Name: "rdmaform_activation_failed", Type: "gauge", Help: "Firmware values rdmaform staged that a reboot did not make current (1): power-cycle, or reset the firmware.", Labels: []string{"resource", "parameter"}}
	MetricProbeSuccess     = Metric{Name: "rdmaform_probe_success", Type: "gauge", Help: "Whether a probe of the spec passed (1) or failed (0).", Labels: []string{"name", "kind", "target"}, Note: "only with audit --probes and a spec that has probes; a probe that could not run has no series (it is an audit error)"}
	MetricProbeRTT         = Metric{Name: "rdmaform_probe_rtt_seconds", Type: "gauge", Help: "Average round trip of a passed connectivity probe, in seconds.", Labels: []string{"name", "kind", "target"}, Note: "only with audit --probes and a spec that has connectivity probes; passed probes only"}
	MetricProbeBandwidth   = Metric{Name: "rdmaform_probe_bandwidth_bits_per_second", Type: "gauge", Help: "What a bandwidth probe measured, in bits per second: one direction, the lower of the two when bidirectional (perftest's own bidirectional figure is their sum).", Labels: []string{"name", "kind", "target"}, Note: "only with audit --probes and a spec that has bandwidth probes; failed probes too (their figure is below the floor)"}
	MetricProbeFloor       = Metric{Name: "rdmaform_probe_bandwidth_floor_bits_per_second", Type: "gauge", Help: "A bandwidth probe's floor, in bits per second (a share of the port's rate, or the figure the spec gives).", Labels: []string{"name", "kind", "target"}, Note: "only with audit --probes and a spec that has bandwidth probes with a floor"}
	MetricProbeLatency     = Metric{Name: "rdmaform_probe_latency_seconds", Type: "gauge", Help: "What a latency probe measured, in seconds: perftest's typical (median) latency.", Labels: []string{"name", "kind", "target"}, Note: "only with audit --probes and a spec that has latency probes; failed probes too (their figure is above the ceiling)"}
	MetricProbeCeiling     = Metric{Name: "rdmaform_probe_latency_ceiling_seconds", Type: "gauge", Help: "A latency probe's ceiling, in seconds.", Labels: []string{"name", "kind", "target"}, Note: "only with audit --probes and a spec that has latency probes with a ceiling"}
	MetricAuditErrors      = Metric{Name: "rdmaform_audit_errors", Type: "gauge", Help: "Parts of the host the audit could not read (a failed tool or service)."}
	MetricLastRun          = Metric{Name: "rdmaform_last_run_timestamp_seconds", Type: "gauge", Help: "When the audit ran, in seconds since the epoch."}
	MetricAuditTimestamp   = Metric{Name: "rdmaform_audit_timestamp_seconds", Type: "gauge", Help: "When the audit ran (the first name of rdmaform_last_run_timestamp_seconds)."}
)

// MetricFamilies are the families Prometheus writes, in its order.
var MetricFamilies = []Metric{MetricBuildInfo, MetricDrift, MetricPendingReboot, MetricHealth, MetricWaived, MetricActivationFailed,
	MetricProbeSuccess, MetricProbeRTT, MetricProbeBandwidth, MetricProbeFloor, MetricProbeLatency, MetricProbeCeiling, MetricAuditErrors, MetricLastRun, MetricAuditTimestamp}

// Prometheus renders the report in the Prometheus text exposition format,
// for node_exporter's textfile collector (MetricFamilies). Gauges show
// the effective status: a waived failure counts as passing (alerts stay
// quiet for known exceptions) and is listed in rdmaform_waived.
//
// Drift, pending reboots and failures are separate gauges: a health check
// that waits for a reboot (a link layer that staged firmware changes) is
// 1 in rdmaform_pending_reboot and does not read as failing health.
func Prometheus(r *Report) string {
	type family struct {
		Metric
		lines []string
	}
	drift := &family{Metric: MetricDrift}
	pending := &family{Metric: MetricPendingReboot}
	health := &family{Metric: MetricHealth}
	waived := &family{Metric: MetricWaived}
	bad := func(c Result) int {
		if c.Status == Fail || c.Status == Pending {
			return 1
		}
		return 0
	}
	// A resource is pending when any of its checks is: its pending_reboot
	// check, or a health check that holds after the reboot.
	pendingRes := map[string]int{}
	var pendingOrder []string
	for _, c := range r.Checks {
		if c.Check == CheckPendingReboot || c.Status == Pending {
			if _, ok := pendingRes[c.Resource]; !ok {
				pendingOrder = append(pendingOrder, c.Resource)
			}
			if c.Status == Pending || (c.Check == CheckPendingReboot && c.Status == Fail) {
				pendingRes[c.Resource] = 1
			} else {
				pendingRes[c.Resource] += 0
			}
		}
	}
	for _, res := range pendingOrder {
		pending.lines = append(pending.lines, fmt.Sprintf("rdmaform_pending_reboot{resource=\"%s\"} %d", escapeLabel(res), pendingRes[res]))
	}
	for _, c := range r.Checks {
		res := `resource="` + escapeLabel(c.Resource) + `"`
		rc := res + `,check="` + escapeLabel(c.Check) + `"`
		switch c.Check {
		case CheckDrift:
			drift.lines = append(drift.lines, fmt.Sprintf("rdmaform_drift{%s} %d", res, bad(c)))
		case CheckPendingReboot, CheckProbe:
		default:
			failing := 0
			if c.Status == Fail {
				failing = 1
			}
			health.lines = append(health.lines, fmt.Sprintf("rdmaform_health{%s} %d", rc, 1-failing))
		}
		if c.Status == Waived {
			waived.lines = append(waived.lines, fmt.Sprintf("rdmaform_waived{%s} 1", rc))
		}
	}
	activation := &family{Metric: MetricActivationFailed}
	for _, af := range r.ActivationFailures {
		activation.lines = append(activation.lines, fmt.Sprintf("rdmaform_activation_failed{resource=\"%s\",parameter=\"%s\"} 1", escapeLabel(af.Address.String()), escapeLabel(af.Attribute)))
	}
	var b strings.Builder
	b.WriteString(MetricBuildInfo.Header())
	fmt.Fprintf(&b, "rdmaform_build_info{version=\"%s\",commit=\"%s\"} 1\n",
		escapeLabel(r.Rdmaform.Version), escapeLabel(r.Rdmaform.Commit))
	for _, f := range []*family{drift, pending, health, waived, activation} {
		b.WriteString(f.Header())
		sort.Strings(f.lines)
		for _, l := range f.lines {
			b.WriteString(l + "\n")
		}
	}
	if len(r.Probes) > 0 {
		// Probes that could not run are audit errors, not failures.
		b.WriteString(MetricProbeSuccess.Header())
		for _, p := range r.Probes {
			if p.Outcome != probe.OutcomeError {
				fmt.Fprintf(&b, "rdmaform_probe_success{name=\"%s\",kind=\"%s\",target=\"%s\"} %d\n", escapeLabel(p.Name), p.Kind, escapeLabel(p.Target), map[bool]int{true: 1}[p.Passed])
			}
		}
		// A bandwidth or latency probe has no round trip: its figures
		// are families of their own, failed runs included (the figure
		// says how far below the floor a host is).
		perf := func(m Metric, value func(*probe.Perf) float64) {
			var lines []string
			for _, p := range r.Probes {
				if p.Outcome == probe.OutcomeError || p.Perf == nil || value(p.Perf) <= 0 {
					continue
				}
				lines = append(lines, fmt.Sprintf("%s{name=\"%s\",kind=\"%s\",target=\"%s\"} %.10g\n", m.Name, escapeLabel(p.Name), p.Kind, escapeLabel(p.Target), value(p.Perf)))
			}
			if len(lines) > 0 {
				b.WriteString(m.Header())
				b.WriteString(strings.Join(lines, ""))
			}
		}
		b.WriteString(MetricProbeRTT.Header())
		for _, p := range r.Probes {
			if p.Passed && p.Perf == nil {
				fmt.Fprintf(&b, "rdmaform_probe_rtt_seconds{name=\"%s\",kind=\"%s\",target=\"%s\"} %g\n", escapeLabel(p.Name), p.Kind, escapeLabel(p.Target), p.RTTms/1000)
			}
		}
		// Base units, printed to 10 significant digits (the conversion's
		// rounding would print 1.6 µs as 1.6000000000000001e-06).
		perf(MetricProbeBandwidth, func(p *probe.Perf) float64 { return p.BandwidthGbps * 1e9 })
		perf(MetricProbeFloor, func(p *probe.Perf) float64 { return p.FloorGbps * 1e9 })
		perf(MetricProbeLatency, func(p *probe.Perf) float64 { return p.LatencyUs / 1e6 })
		perf(MetricProbeCeiling, func(p *probe.Perf) float64 { return p.CeilingUs / 1e6 })
	}
	fmt.Fprintf(&b, "%srdmaform_audit_errors %d\n", MetricAuditErrors.Header(), len(r.Errors))
	fmt.Fprintf(&b, "%srdmaform_last_run_timestamp_seconds %d\n", MetricLastRun.Header(), r.Time.Unix())
	fmt.Fprintf(&b, "%srdmaform_audit_timestamp_seconds %d\n", MetricAuditTimestamp.Header(), r.Time.Unix())
	return b.String()
}

// escapeLabel escapes a label value as the exposition format requires:
// backslash, double quote and line feed.
func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}
