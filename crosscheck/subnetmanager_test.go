package crosscheck

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLintSubnetManagers: the subnet managers of a fabric and the IPoIB
// P_Keys of its hosts, checked together.
func TestLintSubnetManagers(t *testing.T) {
	sm := func(prio, parts string) string {
		return "version: 1\nsubnet_manager:\n  priority: " + prio + "\n  partitions:\n" + parts
	}
	storage := "    - {name: storage, pkey: 0x8002, members: [{guid: all, membership: limited}, {guid: self, membership: full}]}\n"
	client := func(pkey, membership string) string {
		return "version: 1\nipoib:\n  - {name: st, parent: ib0, pkey: " + pkey + membership + ", ipv4: {addresses: [192.0.2.1/24]}}\n"
	}
	cases := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"one master, same partitions, limited client", map[string]string{
			"sm1.yaml": sm("10", storage), "sm2.yaml": sm("5", storage), "c.yaml": client("0x0002", ", membership: limited"),
		}, nil},
		{"a tie at the top", map[string]string{
			"sm1.yaml": sm("5", storage), "sm2.yaml": sm("5", storage),
		}, []string{
			"sm1.yaml:3:13: warning: $.subnet_manager.priority: subnet managers sm1, sm2 of fabric default share the highest priority 5: the lowest port GUID becomes master, which no spec says; give the intended master a higher priority",
			"sm2.yaml:3:13: warning: $.subnet_manager.priority: subnet managers sm1, sm2 of fabric default share the highest priority 5: the lowest port GUID becomes master, which no spec says; give the intended master a higher priority",
		}},
		{"other fabrics do not tie", map[string]string{
			"sm1.yaml": sm("5", storage), "sm2.yaml": "version: 1\nsubnet_manager:\n  fabric: lab\n  priority: 5\n",
		}, nil},
		{"a standby with other partitions", map[string]string{
			"sm1.yaml": sm("10", storage), "sm2.yaml": sm("5", "    - {name: storage, pkey: 0x8002, members: [{guid: all, membership: full}]}\n    - {name: extra, pkey: 0x0003}\n"),
		}, []string{
			"sm2.yaml:5:5: error: $.subnet_manager.partitions: the partitions of sm2 differ from those of sm1, the master of fabric default (0x0002 differs, 0x0003 extra): when this standby takes over it programs its own; give both the same partitions",
		}},
		{"a P_Key no subnet manager has", map[string]string{
			"sm1.yaml": sm("10", storage), "c.yaml": client("0x8003", ""),
		}, []string{
			"c.yaml:3:35: error: $.ipoib[0].pkey: partition 0x0003 of IPoIB connection st is not in the partitions of subnet manager sm1 (at sm1.yaml:3:3): the port will not have the P_Key and the interface stays down",
		}},
		{"full membership asked, every port limited", map[string]string{
			"sm1.yaml": sm("10", "    - {name: storage, pkey: 0x8002, members: [{guid: all_cas}, {guid: all_switches, membership: full}]}\n"), "c.yaml": client("0x8002", ""),
		}, []string{
			"c.yaml:3:35: error: $.ipoib[0].pkey: partition 0x0002 (storage) has no full member in subnet manager sm1's spec: limited members cannot talk to each other",
		}},
		{"full membership asked, all limited but the SM's port full", map[string]string{
			"sm1.yaml": sm("10", storage), "c.yaml": client("0x8002", ""),
		}, []string{
			"c.yaml:3:35: error: $.ipoib[0].pkey: IPoIB connection st asks full membership of 0x0002, but subnet manager sm1 makes only its own port a full member of storage: use membership: limited, or make this host a full member",
		}},
		{"members by GUID: cannot tell which host", map[string]string{
			"sm1.yaml": sm("10", "    - {name: storage, pkey: 0x8002, members: [{guid: 0x0002c903000a1b2c}]}\n"), "c.yaml": client("0x8002", ""),
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var order []string
			for _, n := range []string{"sm1.yaml", "sm2.yaml", "c.yaml"} {
				if _, ok := c.files[n]; ok {
					order = append(order, n)
				}
			}
			var got []string
			for _, f := range Lint(hosts(t, c.files, order...)) {
				got = append(got, f.String())
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("lint (-want +got):\n%s", d)
			}
		})
	}
}
