package ansible_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestAnsibleFacts: under the real ansible-core, state facts sets the
// fact rdmaform (rdmaform facts -o json) without changing anything, in
// check mode too, and a later task of the play reads it: a class of
// adapters picked by part number, and the firmware a staging apply left
// pending on both functions of the card.
func TestAnsibleFacts(t *testing.T) {
	l := newLab(t)
	dir := newSim(t, "cx6-vpi-ib")
	res, status, out := l.adhoc(t, map[string]any{"state": "facts", "sim": dir}, "--check")
	if status != "SUCCESS" || res["changed"] != false {
		t.Fatalf("facts in check mode: status %s, changed %v\n%s", status, res["changed"], out)
	}
	facts, _ := res["ansible_facts"].(map[string]any)
	rdma, _ := facts["rdmaform"].(map[string]any)
	devs, _ := rdma["devices"].([]any)
	if len(devs) != 2 || devs[0].(map[string]any)["part_number"] != "MCX653106A-HDAT" {
		t.Fatalf("ansible_facts: %v", facts)
	}

	spec, err := filepath.Abs("../examples/ib-to-eth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err = l.playbook(t, `
- hosts: localhost
  gather_facts: false
  tasks:
    - name: read the RDMA devices
      rdmaform: {state: facts, sim: "`+dir+`"}
      register: before
    - ansible.builtin.assert:
        that:
          - before is not changed
          - ansible_facts.rdmaform.format_version == 1
          - ansible_facts.rdmaform.devices | selectattr('part_number', 'equalto', 'MCX653106A-HDAT') | map(attribute='pci') | list == ['0000:3b:00.0', '0000:3b:00.1']
          - ansible_facts.rdmaform.devices | map(attribute='link_layers') | list == [['InfiniBand'], ['InfiniBand']]
          - ansible_facts.rdmaform.devices[0].pending == []
    - name: stage the link type
      rdmaform: {spec: "`+spec+`", sim: "`+dir+`", allow_firmware: true}
    - name: read them again
      rdmaform: {state: facts, sim: "`+dir+`"}
    - ansible.builtin.assert:
        that:
          - ansible_facts.rdmaform.devices | map(attribute='pending') | map('length') | list == [1, 1]
          - ansible_facts.rdmaform.devices[1].pending[0].attribute == 'LINK_TYPE_P1'
`)
	if err != nil {
		t.Fatalf("playbook: %v\n%s", err, out)
	}
	if !strings.Contains(out, "ok=5") {
		t.Errorf("playbook recap:\n%s", out)
	}
}
