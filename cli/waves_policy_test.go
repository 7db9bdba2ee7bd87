package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWavesPolicy: waves --policy on what the real ansible-inventory
// --list prints: compartments are its groups (a child group's hosts are
// its parent's too), each rolled after the one before, with a canary
// and a ramp; --canary over the file's; --explain says, per host, its
// domain, SM pair, compartment and ramp step.
func TestWavesPolicy(t *testing.T) {
	s := loadSchemas(t)
	inv := ansibleInventory(t, "hosts.yml", `all:
  children:
    gpu:
      children:
        gpu_a: {hosts: {g1: {rdmaform_domain: leaf1, rdmaform_roles: [sm], rdmaform_fabric: ib0}, g2: {rdmaform_domain: leaf2}}}
        gpu_b: {hosts: {g3: {rdmaform_domain: leaf1}, g4: {rdmaform_domain: leaf2}, g5: {rdmaform_domain: leaf1}, g6: {rdmaform_domain: leaf2}, g7: {rdmaform_domain: leaf1}}}
    storage:
      hosts:
        s1: {rdmaform_domain: leaf3, rdmaform_roles: [sm], rdmaform_fabric: ib0}
        s2: {rdmaform_domain: leaf3}
        s3: {rdmaform_domain: leaf4}
    login:
      hosts:
        l1: {rdmaform_domain: leaf4}
`)
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(`version: 1
max_unavailable: 4
max_per_domain: 2
bake: 5m
ramp:
  factor: 2
stop: {failed_hosts: 2, failed_percent: 25}
compartments:
  groups: [storage, gpu]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := s.check(t, "waves --policy", "waves", runJSON(t, "", 0, "waves", "--inventory", inv, "--policy", policy, "-o", "json"))
	// storage (3): 1, 2; gpu (7): 1, 2, 4 (2 of a domain); the rest: l1.
	want := [][]string{{"s1"}, {"s2", "s3"}, {"g1"}, {"g2", "g3"}, {"g4", "g5", "g6", "g7"}, {"l1"}}
	if d := cmp.Diff(want, waveHosts(t, doc)); d != "" {
		t.Errorf("waves (-want +got):\n%s", d)
	}
	// What the rollout role reads: the policy and each wave's step.
	wantPolicy := map[string]any{"canary": 1.0, "bake_seconds": 300.0, "failed_hosts": 2.0, "failed_percent": 25.0,
		"compartments": []any{"storage", "gpu"}, "order": "sequential"}
	if d := cmp.Diff(wantPolicy, doc["policy"]); d != "" {
		t.Errorf("policy (-want +got):\n%s", d)
	}
	var steps []any
	for _, w := range doc["waves"].([]any) {
		steps = append(steps, w.(map[string]any)["step"])
	}
	wantSteps := []any{
		map[string]any{"compartment": "storage", "ramp": 0.0, "rule": "canary: 1 host", "size": 1.0},
		map[string]any{"compartment": "storage", "ramp": 1.0, "rule": "ramp step 1: 1 × 2, rounded up = 2", "size": 2.0},
		map[string]any{"compartment": "gpu", "ramp": 0.0, "rule": "canary: 1 host", "size": 1.0},
		map[string]any{"compartment": "gpu", "ramp": 1.0, "rule": "ramp step 1: 1 × 2, rounded up = 2", "size": 2.0},
		map[string]any{"compartment": "gpu", "ramp": 2.0, "rule": "ramp step 2: 2 × 2, rounded up = 4", "size": 4.0},
		map[string]any{"compartment": "(other hosts)", "ramp": 0.0, "rule": "canary: 1 host", "size": 1.0},
	}
	if d := cmp.Diff(wantSteps, steps); d != "" {
		t.Errorf("steps (-want +got):\n%s", d)
	}
	// Without a policy: the default stop rule, no bake, no ramp.
	doc = s.check(t, "waves without a policy", "waves", runJSON(t, "", 0, "waves", "--inventory", inv, "-o", "json"))
	wantPolicy = map[string]any{"canary": 0.0, "bake_seconds": 0.0, "failed_hosts": 1.0, "failed_percent": -1.0, "compartments": []any{}}
	if d := cmp.Diff(wantPolicy, doc["policy"]); d != "" {
		t.Errorf("policy without a file (-want +got):\n%s", d)
	}
	// --canary over the file's (1): the first wave of each compartment.
	doc = s.check(t, "waves --canary 2", "waves", runJSON(t, "", 0, "waves", "--inventory", inv, "--policy", policy, "--canary", "2", "-o", "json"))
	// Each wave takes from the domain with the most hosts left (a tie:
	// the first by name), at most 2 of it.
	want = [][]string{{"s1", "s2"}, {"s3"}, {"g1", "g3"}, {"g2", "g4", "g5", "g7"}, {"g6"}, {"l1"}}
	if d := cmp.Diff(want, waveHosts(t, doc)); d != "" {
		t.Errorf("--canary 2: waves (-want +got):\n%s", d)
	}

	text := runJSON(t, "", 0, "waves", "--inventory", inv, "--policy", policy, "--explain")
	for _, line := range []string{
		"waves: 6, because compartment storage: 3 pending hosts in 2 waves; compartment gpu: 7 pending hosts in 3 waves; compartment (other hosts): 1 pending host in 1 wave\n",
		"stop: after 2 failed hosts, or when more than 25% of a wave failed\n" +
			"failed hosts stay drained and count against max_unavailable 4: a later wave takes its first hosts up to 4 less the failed hosts still drained (at most 1 below the stop rule), the others wait; a wave that can take none stops the line\n",
		"bake: 5m0s after each wave but the last\n",
		"\nwave 1 (1 host): canary: 1 host\n  s1:\n" +
			"    domain: leaf3, 1 of its 2 pending hosts in this wave (at most 2)\n" +
			"    SM pair: subnet manager host of fabric ib0, never in a wave with its others: g1 (wave 3)\n" +
			"    compartment: storage (inventory group), 1st of 2, each rolled before the next\n" +
			"    ramp: canary: 1 host\n",
		"\nwave 5 (4 hosts): ramp step 2: 2 × 2, rounded up = 4\n  g4:\n" +
			"    domain: leaf2, 2 of its 3 pending hosts in this wave (at most 2)\n" +
			"    SM pair: not a subnet manager host\n" +
			"    compartment: gpu (inventory group), 2nd of 2, each rolled before the next\n",
		"\nwave 6 (1 host): canary: 1 host\n  l1:\n",
		"    compartment: (other hosts), in none of the groups storage, gpu; rolled last\n",
	} {
		if !strings.Contains(text, line) {
			t.Errorf("--explain lacks %q:\n%s", line, text)
		}
	}
	// Without a policy --explain says there is no ramp nor compartment.
	text = runJSON(t, "", 0, "waves", "--inventory", inv, "--max-unavailable", "4", "--explain")
	for _, line := range []string{"    compartment: none (the policy names none)\n", "    ramp: no ramp: waves of equal size; domain leaf1 has 4 pending hosts, at most 1 of a domain per wave\n", "stop: after 1 failed host\n"} {
		if strings.Contains(text, "count against max_unavailable") {
			t.Errorf("--explain with failed_hosts 1 (the first failure stops the line) speaks of failed hosts counted:\n%s", text)
		}
		if !strings.Contains(text, line) {
			t.Errorf("--explain without a policy lacks %q:\n%s", line, text)
		}
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\nramp:\n  steps: [1, 0]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--policy", policy, "--canary", "4"}, ""}, // max_unavailable 4: the limit
		{[]string{"--policy", policy, "--canary", "5"}, "bad limit: canary 5: more than max_unavailable (4 hosts per wave)"},
		{[]string{"--policy", policy, "--canary", "5", "--max-unavailable", "5"}, ""}, // the flag over the file
		{[]string{"--policy", policy, "--canary", "100000", "--max-unavailable", "100000"}, ""},
		{[]string{"--policy", policy, "--canary", "100001", "--max-unavailable", "100000"}, `--canary "100001": want a number of hosts from 1 to 100000`},
		{[]string{"--policy", policy, "--canary", "0"}, `--canary "0": want a number of hosts from 1 to 100000`},
		{[]string{"--policy", policy, "--canary", "+1"}, `--canary "+1": want a number of hosts from 1 to 100000`},
		{[]string{"--canary", "1"}, "--canary 1: a canary wave needs a ramp for the waves after it (ramp.steps or ramp.factor in --policy FILE)"},
		{[]string{"--policy", bad}, `ramp.steps[1]: want a number of hosts (1 to 100000) or a percentage (1% to 100%), not "0"`},
		{[]string{"--policy", filepath.Join(dir, "none.yaml")}, "reading the policy: open " + filepath.Join(dir, "none.yaml") + ": no such file or directory"},
		{[]string{"--policy", "-"}, "--policy -: the policy is a file (stdin is the inventory's)"},
		{[]string{"--explain"}, "--explain prints text: not with -o json"},
	} {
		args := append([]string{"waves", "--inventory", inv, "-o", "json"}, tc.args...)
		if tc.err == "" {
			s.check(t, strings.Join(tc.args, " "), "waves", runJSON(t, "", 0, args...))
			continue
		}
		doc := s.check(t, strings.Join(tc.args, " "), "errors", runJSON(t, "", 1, args...))
		e := doc["errors"].([]any)[0].(map[string]any)
		if msg := e["message"]; msg != tc.err {
			t.Errorf("%v: error %q, want %q", tc.args, msg, tc.err)
		}
		if tc.args[len(tc.args)-1] == bad {
			// The position is the error's source, never part of its message.
			src, _ := e["source"].(map[string]any)
			if src["file"] != bad || src["line"] != 3.0 || src["col"] != 14.0 {
				t.Errorf("%v: source %v, want %s:3:14", tc.args, src, bad)
			}
		}
	}
}
