package audit_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

const example = "../examples/lossless-roce.yaml"

// losslessCheck audits spec on the simulated host dir and returns its
// lossless check of qos[mlx5_0/1] and the report's warnings.
func losslessCheck(t *testing.T, dir, spec string) (status, message string, warnings []string) {
	t.Helper()
	_, out, errs := clitest.Run(t, "--sim", dir, "audit", "-f", spec, "-o", "json")
	var r struct {
		Checks []struct {
			Resource, Check, Status, Message string
		}
		Warnings []string
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s%s", err, out, errs)
	}
	n := 0
	for _, c := range r.Checks {
		if c.Check == "lossless" {
			n++
			if c.Resource != "qos[mlx5_0/1]" {
				t.Errorf("lossless check of %s", c.Resource)
			}
			status, message = c.Status, c.Message
		}
	}
	if n != 1 {
		t.Fatalf("%d lossless checks, want one\n%s", n, out)
	}
	return status, message, r.Warnings
}

func applied(t *testing.T, dir, spec string) {
	t.Helper()
	if code, out, errs := clitest.Run(t, "--sim", dir, "apply", "--yes", "-f", spec); code != 0 {
		t.Fatalf("apply %s: exit %d\n%s%s", spec, code, out, errs)
	}
}

// TestAuditLosslessChain: audit follows the host's chain as it is. On
// the factory cx6dx-ofed host rdma_cm differs from the spec and is not
// read again (that would create its configfs group): not followed; after the lossless example the whole chain passes; PFC or ECN
// turned off behind the example's back fails at that link.
func TestAuditLosslessChain(t *testing.T) {
	dir := simtest.Dir(t, "cx6dx-ofed", nil)
	st, msg, warn := losslessCheck(t, dir, example)
	if st != "pass" || !strings.HasPrefix(msg, "the rdma_cm ToS is not known (rdma_cm[mlx5_0/1] differs from the spec: see its drift check)") || len(warn) != 0 {
		t.Errorf("factory host: %s %q, warnings %q", st, msg, warn)
	}
	applied(t, dir, example)
	const whole = "rdma_cm ToS 106 (the host) → DSCP 26 → priority 3 (dscp map) → PFC on → ECN on → traffic class 3 (vendor); CNPs carry DSCP 48 → priority 6"
	if st, msg, warn := losslessCheck(t, dir, example); st != "pass" || msg != whole || len(warn) != 0 {
		t.Errorf("after apply: %s %q, warnings %q", st, msg, warn)
	}
	for _, c := range []struct{ qos, status, want string }{
		{"{pfc: []}", "fail", "rdma_cm ToS 106 (the host) → DSCP 26 → priority 3 (dscp map) → PFC is off on priority 3"},
		{"{ecn: [4]}", "fail", "→ PFC on, but ECN (DCQCN) is off on priority 3"},
		{"{trust: pcp}", "pass", "warning: rdma_cm ToS 106 (the host) → DSCP 26, but the port trusts pcp: RoCE's priority is then its VLAN PCP"},
	} {
		applied(t, dir, example)
		applied(t, dir, clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: \"0000:af:00.0\"\n    ports:\n      - port: 1\n        qos: "+c.qos+"\n"))
		st, msg, warn := losslessCheck(t, dir, example)
		if st != c.status || !strings.Contains(msg, c.want) || (len(warn) == 1) != (c.status == "pass") {
			t.Errorf("after %s: %s %q, warnings %q; want %s with %q", c.qos, st, msg, warn, c.status, c.want)
		}
	}
}

// TestAuditLosslessUpstream: on the upstream cx5-roce host ECN per
// priority cannot be read; the chain passes without it and says so.
func TestAuditLosslessUpstream(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	spec := clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: \"0000:5e:00.0\"\n    ports:\n      - port: 1\n        roce: {mode: v2, dscp: 26, ecn: true}\n        qos: {trust: dscp, pfc: [3], pause: false}\n")
	applied(t, dir, spec)
	st, msg, _ := losslessCheck(t, dir, spec)
	if st != "pass" || !strings.Contains(msg, "→ PFC on → ECN not readable: the driver has no MLNX_OFED per-priority ECN tree") {
		t.Errorf("%s %q", st, msg)
	}
}
