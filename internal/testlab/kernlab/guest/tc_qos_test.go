//go:build kernlab

package guest

import (
	"strings"
	"testing"
)

// TestQoSOnRealKernel (in a file that sorts after the scenarios, which
// want a guest with no rxe module loaded) plans a lossless RoCE profile for a Soft-RoCE
// port on the real kernel with the real dcb and ethtool: a veth has no
// DCB, no pause operations and no OFED ECN tree, and the plan says so at
// the spec line, quoting the tools' own answers, and changes nothing.
// Without the qos block the same spec converges.
func TestQoSOnRealKernel(t *testing.T) {
	veth(t, "kqa", "kqb")
	base := `version: 1
modules: [rdma_rxe]
rxe:
  - {name: rxe6, netdev: kqa}
`
	converge(t, writeSpec(t, base))
	spec := writeSpec(t, base+`devices:
  - name: rxe6
    ports:
      - port: 1
        qos: {trust: dscp, pfc: [3], pause: false, ecn: [3]}
`)
	out, _ := mustCode(t, 1, "plan", "-f", spec)
	for _, want := range []string{
		"$.devices[0].ports[0].qos: kqa has no DCB support: `dcb -j pfc show dev kqa` answered \"Attribute read: Operation not supported\"",
		"$.devices[0].ports[0].qos: global pause of kqa cannot be read: `ethtool -a kqa` answered \"netlink error: Operation not supported\"",
		"$.devices[0].ports[0].qos: kqa has no per-priority ECN tree (/sys/class/net/kqa/ecn/roce_rp",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "qos[rxe6/1]") {
		t.Errorf("a change was planned for a port without DCB:\n%s", out)
	}
	// show leaves qos out for such a port (it has nothing to capture).
	capture, _ := mustCode(t, 0, "show")
	if strings.Contains(capture, "qos:") {
		t.Errorf("show captured qos for a veth:\n%s", capture)
	}
}
