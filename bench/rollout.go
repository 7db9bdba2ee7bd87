package bench

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/rdmaform/rdmaform/internal/testlab/benchlab"
	"github.com/rdmaform/rdmaform/sim"
)

// RolloutSpec is what the rollout benchmark rolls out: port 1 of each
// host's ConnectX-6 VPI to Ethernet (a firmware value, activated by a
// firmware reset) and RoCE v2 on it once it is.
const RolloutSpec = `version: 1
devices:
  - pci: "0000:3b:00.0"
    firmware:
      params:
        LINK_TYPE_P1: ETH
    ports:
      - port: 1
        link_layer: Ethernet
        roce:
          mode: v2
          tos: 106
`

// RolloutFleet creates n simulated cx6-vpi-ib hosts under dir (host
// names node0001...), each firmware reset taking reset (the activation
// latency A: the reset run of mlxfwreset or mstfwreset, not its query,
// so that one activation takes A and not twice that), and returns the Ansible inventory (YAML) of them: local
// connection, their rdmaform_sim, and a failure domain each, domains
// leaves in all.
func RolloutFleet(dir string, n, domains int, reset time.Duration) ([]byte, error) {
	var b strings.Builder
	b.WriteString("rdma:\n  hosts:\n")
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("node%04d", i)
		st, err := sim.NewState("cx6-vpi-ib", name, 0)
		if err != nil {
			return nil, err
		}
		st.Latency = map[string]sim.Duration{"mlxfwreset reset": sim.Duration(reset), "mstfwreset reset": sim.Duration(reset)}
		hdir := filepath.Join(dir, name)
		if _, err := sim.Create(hdir, st); err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "    %s: {ansible_connection: local, rdmaform_sim: %s, rdmaform_domain: leaf%02d}\n", name, hdir, (i-1)%domains+1)
	}
	return []byte(b.String()), nil
}

// InstallCollection lays the collection rdmaform.rdma out under
// dst/ansible_collections as ansible-galaxy installs it, from the source
// tree src (ansible/) and the module binary built for this machine.
func InstallCollection(src, dst, module string) error {
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
	if arch == "" {
		return fmt.Errorf("the collection has no build for %s", runtime.GOARCH)
	}
	root := filepath.Join(dst, "ansible_collections", "rdmaform", "rdma")
	files := []string{"galaxy.yml", "meta/runtime.yml", "plugins/action/rdmaform.py", "plugins/strategy/fleet.py", "plugins/modules/rdmaform.py", "plugins/modules/drain.py", "plugins/modules/fabric_pairs.py"}
	if err := filepath.WalkDir(filepath.Join(src, "roles"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, rerr := filepath.Rel(src, p)
			files = append(files, rel)
			return rerr
		}
		return err
	}); err != nil {
		return err
	}
	for _, f := range files {
		data, err := benchlab.ReadFile(filepath.Join(src, f))
		if err != nil {
			return err
		}
		if err := benchlab.WriteFile(filepath.Join(root, f), data); err != nil {
			return err
		}
	}
	data, err := benchlab.ReadFile(module)
	if err != nil {
		return err
	}
	return benchlab.WriteExecutable(filepath.Join(root, "plugins", "modules", "rdmaform_"+arch), data)
}

// SerialPlaybook is the plain `serial:` playbook that does what the
// rollout role does, batch after batch of pct% of the hosts: plan (the
// fleet summary's part, in check mode too), stage, and activate by
// firmware reset with the module's state activated, as the role does.
// check: only the plan and a line per host.
func SerialPlaybook(pct int) []byte {
	return []byte(fmt.Sprintf(`- name: RDMA rollout with serial
  hosts: rdma
  gather_facts: false
  serial: "%d%%"
  max_fail_percentage: 0
  vars:
    spec: "{{ lookup('ansible.builtin.file', rdma_spec_file) }}"
  tasks:
    - name: Plan
      rdmaform.rdma.rdmaform:
        content: "{{ spec }}"
        state: planned
        sim: "{{ rdmaform_sim }}"
      check_mode: false
      register: plan
    - name: What this host needs
      ansible.builtin.debug:
        msg: "{{ inventory_hostname }}: {{ plan.plan.changes | length }} changes, {{ plan.pending | length }} pending"
    - name: Stage
      rdmaform.rdma.rdmaform:
        content: "{{ spec }}"
        allow_firmware: true
        sim: "{{ rdmaform_sim }}"
      when: not ansible_check_mode
    - name: Activate
      rdmaform.rdma.rdmaform:
        content: "{{ spec }}"
        state: activated
        sim: "{{ rdmaform_sim }}"
      when: not ansible_check_mode
`, pct))
}
