package services

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/systemdlab"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

const labUnit = `[Unit]
Description=rdmaform services provider test unit

[Service]
ExecStart=/bin/sleep infinity

[Install]
WantedBy=default.target
`

const failingUnit = `[Unit]
Description=rdmaform services provider test unit that fails

[Service]
Type=oneshot
ExecStart=/bin/false

[Install]
WantedBy=default.target
`

// labHost is a host with no RDMA devices whose service manager is the lab's.
func labHost(t *testing.T, l *systemdlab.Lab) *host.Host {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "sys/class/infiniband"), 0o755); err != nil {
		t.Fatal(err)
	}
	fsys, err := host.NewRootFS(root)
	if err != nil {
		t.Fatal(err)
	}
	bus := &host.SystemdBus{Address: l.Address, JobTimeout: 30 * time.Second}
	t.Cleanup(bus.Close)
	return &host.Host{FS: fsys, Systemd: bus, Name: "systemd lab"}
}

func build(t *testing.T, h *host.Host, src string) *plan.Plan {
	t.Helper()
	spec, rep := schema.Parse("spec.yaml", []byte(src))
	if len(rep) > 0 {
		t.Fatalf("spec: %v", rep)
	}
	res, err := plan.Build(context.Background(), h, spec, []plan.Provider{New()})
	if err != nil {
		t.Fatal(err)
	}
	return res.Plan
}

func addresses(p *plan.Plan) []string {
	var s []string
	for _, c := range p.Changes {
		s = append(s, c.Address.String())
	}
	for _, e := range p.Errors {
		s = append(s, e.String())
	}
	return s
}

// applyThenEmpty applies a spec's plan with the real manager and requires
// the next plan to be empty.
func applyThenEmpty(t *testing.T, h *host.Host, src string, want []string) {
	t.Helper()
	p := build(t, h, src)
	if diff := cmp.Diff(want, addresses(p)); diff != "" {
		t.Fatalf("plan (-want +got):\n%s", diff)
	}
	out := apply.Run(context.Background(), h, p, []plan.Provider{New()}, apply.Options{})
	if out.Err != nil {
		t.Fatalf("apply: %v", out.Err)
	}
	if got := addresses(build(t, h, src)); len(got) != 0 {
		t.Fatalf("plan after apply is not empty: %v", got)
	}
}

// TestLabEnableStartDisableStop drives a real systemd manager: enable and
// start a unit, then stop and disable it, each apply followed by an empty
// plan, and the manager's own view checked after each.
func TestLabEnableStartDisableStop(t *testing.T) {
	l := systemdlab.Start(t)
	l.AddUnit(t, "rdmaform-lab.service", labUnit)
	h := labHost(t, l)
	ctx := context.Background()

	applyThenEmpty(t, h, "version: 1\nservices:\n  - name: rdmaform-lab\n    enabled: true\n    active: true\n", []string{"service[rdmaform-lab.service]"})
	st, err := h.Systemd.Unit(ctx, "rdmaform-lab.service")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(host.UnitState{LoadState: "loaded", ActiveState: "active", UnitFileState: "enabled"}, st); diff != "" {
		t.Errorf("after enable+start (-want +got):\n%s", diff)
	}
	if _, err := os.Lstat(filepath.Join(l.UnitDir, "default.target.wants", "rdmaform-lab.service")); err != nil {
		t.Errorf("enable made no wants symlink: %v", err)
	}

	applyThenEmpty(t, h, "version: 1\nservices:\n  - name: rdmaform-lab\n    enabled: false\n    active: false\n", []string{"service[rdmaform-lab.service]"})
	st, err = h.Systemd.Unit(ctx, "rdmaform-lab.service")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(host.UnitState{LoadState: "loaded", ActiveState: "inactive", UnitFileState: "disabled"}, st); diff != "" {
		t.Errorf("after stop+disable (-want +got):\n%s", diff)
	}
}

// TestLabFailures: what the real manager says of a missing unit and of a
// unit whose start fails.
func TestLabFailures(t *testing.T) {
	l := systemdlab.Start(t)
	l.AddUnit(t, "rdmaform-lab-fails.service", failingUnit)
	h := labHost(t, l)

	want := []string{"spec.yaml:3:11: error: $.services[0].name: unit rdmaform-lab-nosuch.service does not exist on this host (LoadState=not-found): install the package that provides it"}
	if diff := cmp.Diff(want, addresses(build(t, h, "version: 1\nservices:\n  - name: rdmaform-lab-nosuch\n    active: true\n"))); diff != "" {
		t.Errorf("missing unit (-want +got):\n%s", diff)
	}

	p := build(t, h, "version: 1\nservices:\n  - name: rdmaform-lab-fails\n    active: true\n")
	out := apply.Run(context.Background(), h, p, []plan.Provider{New()}, apply.Options{})
	var je *host.JobError
	if !errors.As(out.Err, &je) {
		t.Fatalf("apply of a failing unit: %v, want a *host.JobError", out.Err)
	}
	if diff := cmp.Diff(host.JobError{Unit: "rdmaform-lab-fails.service", Op: "start", Result: "failed"}, *je); diff != "" {
		t.Errorf("job error (-want +got):\n%s", diff)
	}
}
