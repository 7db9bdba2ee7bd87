package audit_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/audit"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/fstree"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers"
	"github.com/rdmaform/rdmaform/schema"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// now is the audits' clock in these tests.
var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// newSim creates a simulated host of a profile, changed by mutate.
func newSim(t *testing.T, profile string, mutate func(st *sim.State)) (*sim.Sim, *host.Host) {
	t.Helper()
	return simtest.New(t, profile, 0, mutate) // 0: the profile's own number of cards
}

func parse(t *testing.T, text string) *schema.Spec {
	t.Helper()
	spec, rep := schema.Parse("golden.yaml", []byte(text))
	if len(rep) > 0 {
		t.Fatalf("golden spec: %v", rep)
	}
	return spec
}

// stageLinkType writes LINK_TYPE_P1=v to the Next Boot column of every
// function of the card, as mlxconfig set does.
func stageLinkType(st *sim.State, v int64) {
	for _, a := range st.Firmware {
		for i := range a.Params {
			if a.Params[i].Name == "LINK_TYPE_P1" {
				a.Params[i].Next = v
			}
		}
	}
}

// cableToEthernet puts an Ethernet switch port at the other end of
// mlx5_0's cable: the InfiniBand port never comes up (seed 000).
func cableToEthernet(st *sim.State) {
	p := st.Device("mlx5_0").Port(1)
	p.Peer, p.State, p.PhysState = "Ethernet", "DOWN", "Polling"
}

type outcome struct {
	Resource, Check, Status, Message string
}

func outcomes(r *audit.Report, resource string) []outcome {
	var out []outcome
	for _, c := range r.Checks {
		if c.Resource == resource {
			out = append(out, outcome{c.Resource, c.Check, c.Status.String(), c.Message})
		}
	}
	return out
}

const hint = "both ends down because one is InfiniBand and the other Ethernet: check LINK_TYPE on this port and the switch port"

// TestSeed000Diagnosis: a port down because its cable's other end speaks
// the other link layer is diagnosed when its link layer is not the one the
// spec expects or firmware changes it at the next boot; a port down with
// the expected link layer and nothing staged is only down.
func TestSeed000Diagnosis(t *testing.T) {
	ethGolden := `version: 1
devices:
  - pci: "0000:3b:00.0"
    firmware: {params: {LINK_TYPE_P1: ETH}}
    ports:
      - {port: 1, link_layer: Ethernet, roce: {mode: v2}, expect: {state: ACTIVE, phys_state: LinkUp}}
`
	tests := []struct {
		name   string
		mutate func(st *sim.State)
		golden string
		want   []outcome
		exit   int
	}{
		{
			name:   "LINK_TYPE ETH staged, port still InfiniBand, Ethernet peer",
			mutate: func(st *sim.State) { stageLinkType(st, 2); cableToEthernet(st) },
			golden: ethGolden,
			want: []outcome{
				{"port[mlx5_0/1]", "link_layer", "pending", "InfiniBand now, Ethernet after the reboot (LINK_TYPE_P1=ETH staged for next boot)"},
				{"port[mlx5_0/1]", "phys_state", "fail", "Polling, expected LinkUp; " + hint},
				{"port[mlx5_0/1]", "state", "fail", "DOWN (physical state Polling), expected ACTIVE; " + hint},
			},
			exit: plan.ExitChanges,
		},
		{
			name:   "golden wants Ethernet, firmware not set yet",
			mutate: cableToEthernet,
			golden: ethGolden,
			want: []outcome{
				{"port[mlx5_0/1]", "link_layer", "fail", "InfiniBand, expected Ethernet; firmware is not set yet (LINK_TYPE_P1=ETH, then a reboot)"},
				{"port[mlx5_0/1]", "phys_state", "fail", "Polling, expected LinkUp; " + hint},
				{"port[mlx5_0/1]", "state", "fail", "DOWN (physical state Polling), expected ACTIVE; " + hint},
			},
			exit: plan.ExitChanges,
		},
		{
			name:   "expected link layer, nothing staged: down, no diagnosis",
			mutate: cableToEthernet,
			golden: "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    ports: [{port: 1, link_layer: InfiniBand}]\n",
			want: []outcome{
				{"port[mlx5_0/1]", "link_layer", "pass", ""},
				{"port[mlx5_0/1]", "phys_state", "fail", "Polling, expected LinkUp"},
				{"port[mlx5_0/1]", "state", "fail", "DOWN (physical state Polling), expected ACTIVE"},
			},
			exit: plan.ExitChanges,
		},
		{
			name: "link up, no subnet manager",
			mutate: func(st *sim.State) {
				p := st.Device("mlx5_0").Port(1)
				p.State, p.SMLID = "INIT", 0
			},
			golden: "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    ports: [{port: 1, link_layer: InfiniBand}]\n",
			want: []outcome{
				{"port[mlx5_0/1]", "link_layer", "pass", ""},
				{"port[mlx5_0/1]", "phys_state", "pass", ""},
				{"port[mlx5_0/1]", "state", "fail", "INIT (physical state LinkUp), expected ACTIVE; the link is up but no subnet manager has configured the port: run opensm on one node of the fabric"},
				{"port[mlx5_0/1]", "subnet_manager", "fail", "no subnet manager answers on this port (state INIT, sm_lid 0x0): run opensm on one node of the fabric"},
			},
			exit: plan.ExitChanges,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, h := newSim(t, "cx6-vpi-ib", tt.mutate)
			r, err := audit.Run(context.Background(), h, parse(t, tt.golden), providers.All(), audit.Options{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, outcomes(r, "port[mlx5_0/1]")); diff != "" {
				t.Errorf("port checks (-want +got):\n%s", diff)
			}
			if got := r.ExitCode(); got != tt.exit {
				t.Errorf("exit code %d, want %d\n%s", got, tt.exit, audit.Text(r))
			}
		})
	}
}

// seed000Report is the audit the format goldens render: firmware staged,
// an Ethernet peer, a drifted rdma_cm default elsewhere, one current and
// one lapsed waiver.
func seed000Report(t *testing.T) *audit.Report {
	t.Helper()
	_, h := newSim(t, "cx6-vpi-ib", func(st *sim.State) { stageLinkType(st, 2); cableToEthernet(st) })
	golden := parse(t, `version: 1
host: {hostname: node1}
devices:
  - pci: "0000:3b:00.0"
    firmware: {params: {LINK_TYPE_P1: ETH}}
    ports:
      - {port: 1, link_layer: Ethernet, roce: {mode: v2, tos: 106}, expect: {state: ACTIVE, phys_state: LinkUp, min_rate: 100}}
  - pci: "0000:3b:00.1"
    ports:
      - {port: 1, link_layer: InfiniBand, expect: {min_rate: 400}}
ipoib:
  - {name: "ib1 \"p8002\"", parent: ib1, pkey: 0x8002, ipv4: {addresses: [192.0.2.1/24]}}
  - {name: p8005, parent: ib1, pkey: 0x8005, ipv4: {addresses: [198.51.100.1/24]}}
`)
	ws, rep := audit.LoadWaivers("waivers.yaml", []byte(`
- {resource: "firmware[0000:3b:00.0]", check: pending_reboot, reason: "reboot in the March window", expires: 2026-03-31}
- {resource: "port[mlx5_1/1]", check: rate, reason: "NDR optics on order", expires: 2026-02-28}
- {resource: "port[mlx5_9/1]", check: state, reason: "gone", expires: 2027-01-31}
`))
	if len(rep) > 0 {
		t.Fatal(rep)
	}
	r, err := audit.Run(context.Background(), h, golden, providers.All(), audit.Options{Now: now, Waivers: ws})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestFormatsGolden renders one audit in every format.
func TestFormatsGolden(t *testing.T) {
	r := seed000Report(t)
	for _, f := range []struct{ format, file string }{
		{"text", "report.txt"}, {"json", "report.json"}, {"junit", "report.xml"}, {"prometheus", "report.prom"},
	} {
		t.Run(f.format, func(t *testing.T) {
			var b bytes.Buffer
			if err := audit.Render(&b, r, f.format); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", f.file)
			if *update {
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), b.String()); diff != "" {
				t.Errorf("%s (-want +got):\n%s", f.format, diff)
			}
		})
	}
}

// junitSchema is what CI systems read of a JUnit report: every attribute
// the Ant JUnit schema requires, decoded back from the XML.
type junitSchema struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    *int     `xml:"tests,attr"`
	Failures *int     `xml:"failures,attr"`
	Errors   *int     `xml:"errors,attr"`
	Skipped  *int     `xml:"skipped,attr"`
	Suites   []struct {
		Name      *string `xml:"name,attr"`
		Tests     *int    `xml:"tests,attr"`
		Failures  *int    `xml:"failures,attr"`
		Errors    *int    `xml:"errors,attr"`
		Skipped   *int    `xml:"skipped,attr"`
		Time      *string `xml:"time,attr"`
		Timestamp *string `xml:"timestamp,attr"`
		Hostname  *string `xml:"hostname,attr"`
		Cases     []struct {
			Name      *string `xml:"name,attr"`
			Classname *string `xml:"classname,attr"`
			Time      *string `xml:"time,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
			} `xml:"failure"`
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
			Error *struct{} `xml:"error"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// TestJUnitReadsBack decodes the JUnit report as a CI system would: the
// required attributes are there, the counts agree with the test cases,
// and a waived check is skipped with its reason.
func TestJUnitReadsBack(t *testing.T) {
	r := seed000Report(t)
	b, err := audit.JUnit(r)
	if err != nil {
		t.Fatal(err)
	}
	var got junitSchema
	if err := xml.Unmarshal(b, &got); err != nil {
		t.Fatalf("not XML: %v\n%s", err, b)
	}
	if got.Tests == nil || got.Failures == nil || got.Errors == nil || got.Skipped == nil || len(got.Suites) != 1 {
		t.Fatalf("testsuites lacks tests/failures/errors/skipped or has %d suites", len(got.Suites))
	}
	s := got.Suites[0]
	for name, v := range map[string]bool{"name": s.Name != nil, "tests": s.Tests != nil, "failures": s.Failures != nil, "errors": s.Errors != nil,
		"skipped": s.Skipped != nil, "time": s.Time != nil, "timestamp": s.Timestamp != nil, "hostname": s.Hostname != nil} {
		if !v {
			t.Errorf("testsuite has no %s attribute", name)
		}
	}
	var tests, failures, skipped, errs int
	var waived []string
	for _, c := range s.Cases {
		if c.Name == nil || c.Classname == nil || c.Time == nil {
			t.Errorf("a testcase lacks name, classname or time")
		}
		tests++
		switch {
		case c.Failure != nil:
			failures++
		case c.Skipped != nil:
			skipped++
			waived = append(waived, *c.Classname+" "+*c.Name+": "+c.Skipped.Message)
		case c.Error != nil:
			errs++
		}
	}
	counts := func(t, f, e, s int) [4]int { return [4]int{t, f, e, s} }
	want := counts(tests, failures, errs, skipped)
	if got := counts(*s.Tests, *s.Failures, *s.Errors, *s.Skipped); got != want {
		t.Errorf("testsuite counts %v, test cases say %v", got, want)
	}
	if got := counts(*got.Tests, *got.Failures, *got.Errors, *got.Skipped); got != want {
		t.Errorf("testsuites counts %v, test cases say %v", got, want)
	}
	if tests != r.Summary.Checks+r.Summary.Errors {
		t.Errorf("%d test cases for %d checks and %d errors", tests, r.Summary.Checks, r.Summary.Errors)
	}
	wantWaived := []string{"firmware[0000:3b:00.0] pending_reboot: waived until 2026-03-31: reboot in the March window"}
	if diff := cmp.Diff(wantWaived, waived); diff != "" {
		t.Errorf("skipped test cases (-want +got):\n%s", diff)
	}
}

var (
	sampleRE = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*")*)?\})? -?[0-9.e+]+$`)
	helpRE   = regexp.MustCompile(`^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+)$`)
)

// TestPrometheusExposition checks the exposition grammar line by line:
// each sample's family has HELP and TYPE gauge before it, label values
// are escaped (the connection name holds a double quote), and nothing else
// is in the file.
func TestPrometheusExposition(t *testing.T) {
	r := seed000Report(t)
	text := audit.Prometheus(r)
	typed := map[string]bool{}
	helped := map[string]bool{}
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if m := helpRE.FindStringSubmatch(line); m != nil {
			if m[1] == "TYPE" {
				if m[3] != "gauge" {
					t.Errorf("line %d: %s is a %s, want gauge", i+1, m[2], m[3])
				}
				typed[m[2]] = true
			} else {
				helped[m[2]] = true
			}
			continue
		}
		m := sampleRE.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("line %d is not a sample: %q", i+1, line)
			continue
		}
		if !typed[m[1]] || !helped[m[1]] {
			t.Errorf("line %d: %s has no HELP/TYPE before its samples", i+1, m[1])
		}
	}
	for _, want := range []string{
		`rdmaform_health{resource="ipoib[ib1 \"p8002\"]",check="pkey"} 1`,
		`rdmaform_pending_reboot{resource="firmware[0000:3b:00.0]"} 0`,
		`rdmaform_waived{resource="firmware[0000:3b:00.0]",check="pending_reboot"} 1`,
		`rdmaform_health{resource="port[mlx5_1/1]",check="rate"} 0`,
		`rdmaform_audit_timestamp_seconds 1772366400`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("no line %s", want)
		}
	}
}

// TestAuditAndShowLeaveTheHostAlone: capture and audit read the host and
// change nothing, not even the simulated host's state file; rdma_cm's
// configfs groups they create for reading are gone again.
func TestAuditAndShowLeaveTheHostAlone(t *testing.T) {
	s, _ := newSim(t, "cx5-roce", func(st *sim.State) { st.Modules = append(st.Modules, "rdma_cm") })
	before := fstree.Snapshot(t, s.Dir)
	// Each phase opens the simulated host afresh, as each rdmaform run does.
	open := func() *host.Host {
		s, err := sim.Open(s.Dir)
		if err != nil {
			t.Fatal(err)
		}
		h, err := s.Host()
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	c, err := plan.Capture(context.Background(), open(), providers.All(), plan.CaptureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Spec.Devices[0].Ports[0].Roce == nil {
		t.Fatalf("rdma_cm was not captured: %+v", c.Spec.Devices[0].Ports[0])
	}
	golden, err := schema.Marshal(c.Spec)
	if err != nil {
		t.Fatal(err)
	}
	golden = bytes.Replace(golden, []byte("tos: 0"), []byte("tos: 106"), 1) // drift to report
	r, err := audit.Run(context.Background(), open(), parse(t, string(golden)), providers.All(), audit.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.ExitCode(); got != plan.ExitChanges {
		t.Errorf("exit code %d, want %d (drift):\n%s", got, plan.ExitChanges, audit.Text(r))
	}
	if diff := cmp.Diff(before, fstree.Snapshot(t, s.Dir)); diff != "" {
		t.Errorf("the host changed (-before +after):\n%s", diff)
	}
}

// TestCaptureThenPlanIsEmpty: on every simulated profile, and on hosts
// with each section configured, what Capture describes plans nothing on
// the same host (pending reboots aside) and survives Marshal and Parse.
func TestCaptureThenPlanIsEmpty(t *testing.T) {
	tests := []struct {
		name    string
		profile string
		mutate  func(st *sim.State)
		exit    int
	}{
		{"cx6-vpi-ib", "cx6-vpi-ib", nil, plan.ExitOK},
		{"cx5-roce", "cx5-roce", nil, plan.ExitOK},
		{"cx3-mlx4", "cx3-mlx4", nil, plan.ExitOK},
		{"vm-soft", "vm-soft", nil, plan.ExitOK},
		{"gpu-node", "gpu-node", nil, plan.ExitOK},
		{"cx5-roce with rdma_cm values", "cx5-roce", func(st *sim.State) {
			st.Modules = append(st.Modules, "rdma_cm")
			st.RdmaCM = map[string]sim.RoceDefaults{"mlx5_0/1": {Mode: "IB/RoCE v1", Tos: 106}}
		}, plan.ExitOK},
		{"cx6-vpi-ib with LINK_TYPE_P1 staged", "cx6-vpi-ib", func(st *sim.State) { stageLinkType(st, 2) }, plan.ExitReboot},
		{"vm-soft with an address and a module file", "vm-soft", func(st *sim.State) {
			st.Netdevs[0].Addrs = []string{"192.168.21.1/24"}
		}, plan.ExitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, h := newSim(t, tt.profile, tt.mutate)
			c, err := plan.Capture(context.Background(), h, providers.All(), plan.CaptureOptions{})
			if err != nil {
				t.Fatal(err)
			}
			b, err := schema.Marshal(c.Spec)
			if err != nil {
				t.Fatal(err)
			}
			spec := parse(t, string(b))
			res, err := plan.Build(context.Background(), h, spec, providers.All())
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Plan.ExitCode(); got != tt.exit {
				var out bytes.Buffer
				_ = plan.WriteText(&out, res.Plan, plan.TextOptions{})
				t.Errorf("plan of the captured spec: exit %d, want %d\n%s\n%s", got, tt.exit, out.String(), b)
			}
		})
	}
}

// TestEffectiveRoCEMode: a port whose golden spec sets RoCE settings but
// no mode gets a roce_mode check saying which version the kernel uses
// there: v1 on a ConnectX-3 that is not a Pro, v2 elsewhere.
func TestEffectiveRoCEMode(t *testing.T) {
	for _, c := range []struct {
		profile, spec, resource, want string
	}{
		{"cx5-roce", "version: 1\ndevices:\n  - name: mlx5_0\n    ports: [{port: 1, roce: {tos: 106}}]\n", "port[mlx5_0/1]", "the kernel uses RoCE v2 (its default)"},
		{"cx3-mlx4", "version: 1\ndevices:\n  - name: mlx4_0\n    ports: [{port: 1, roce: {tos: 106}}]\n", "port[mlx4_0/1]", "the kernel uses RoCE v1 (a ConnectX-3 that is not a Pro has RoCE v1 only)"},
	} {
		t.Run(c.profile, func(t *testing.T) {
			_, h := newSim(t, c.profile, func(st *sim.State) {
				if d := st.Device("mlx4_0"); d != nil {
					d.Port(1).LinkLayer = "Ethernet" // an mlx4 port set to eth
				}
			})
			r, err := audit.Run(context.Background(), h, parse(t, c.spec), providers.All(), audit.Options{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			var got []outcome
			for _, o := range outcomes(r, c.resource) {
				if o.Check == audit.CheckRoCEMode {
					got = append(got, o)
				}
			}
			want := []outcome{{c.resource, audit.CheckRoCEMode, "pass", "mode not set: " + c.want}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("roce_mode (-want +got):\n%s\n%s", diff, audit.Text(r))
			}
		})
	}
}

// TestUnreadableFirmwareIsAnError: a firmware tool that fails is an audit
// error (exit 1, in errors), not drift or a failed check.
func TestUnreadableFirmwareIsAnError(t *testing.T) {
	s, _ := newSim(t, "cx6-vpi-ib", nil)
	if err := s.AddFault(sim.Fault{Tool: "mlxconfig", Match: "q", Exit: 1, Stdout: "-E- Failed to open the device\n", Times: 10}); err != nil {
		t.Fatal(err)
	}
	s2, err := sim.Open(s.Dir)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s2.Host()
	if err != nil {
		t.Fatal(err)
	}
	spec := parse(t, "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params: {LINK_TYPE_P1: IB}\n")
	r, err := audit.Run(context.Background(), h, spec, providers.All(), audit.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode() != plan.ExitError || len(r.Errors) != 1 || !strings.Contains(r.Errors[0].Message, "Failed to open the device") {
		t.Errorf("exit %d, errors %v; want 1 and the tool's message\n%s", r.ExitCode(), r.Errors, audit.Text(r))
	}
	for _, c := range r.Checks {
		if c.Check == audit.CheckFinding || c.Check == audit.CheckDrift {
			t.Errorf("the unreadable firmware also counts as %s: %+v", c.Check, c)
		}
	}
}
