package names_test

import (
	"os"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/sim"
)

// TestDocsNamesExample: the names example of docs/guides/host-knobs.md plans, applies and ends
// with an empty plan on a ConnectX-5 host.
func TestDocsNamesExample(t *testing.T) {
	b, err := os.ReadFile("../../docs/guides/host-knobs.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "<!-- example: names (TestDocsNamesExample) -->\n```yaml\n")
	if !ok {
		t.Fatal("docs/guides/host-knobs.md has no names example")
	}
	body, _, _ := strings.Cut(rest, "```")
	dir := newHost(t, nil)
	spec := clitest.WriteSpec(t, body)
	code, out := rf(t, "--sim", dir, "plan", "-f", spec)
	want(t, code, 2, out, "~ rdma_netns[runtime]", "~ rdma_name[0000:5e:00.1]", "~ netdev_name[0000:5e:00.0]")
	code, out = rf(t, "--sim", dir, "apply", "--yes", "-f", spec)
	want(t, code, 0, out)
	code, out = rf(t, "--sim", dir, "plan", "-f", spec)
	want(t, code, 0, out, "No changes")
	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st := s.State(); st.RdmaNetnsMode != "exclusive" || st.Device("rail1") == nil || st.Netdev("rail0eth") == nil {
		t.Fatalf("state after the example's apply: mode %q, rail1 %v, rail0eth %v", st.RdmaNetnsMode, st.Device("rail1"), st.Netdev("rail0eth"))
	}
}

// TestDocsRailTemplate: the rail template of docs/guides/host-knobs.md names the six
// functions of a three-card GPU node; apply, then plan is empty.
func TestDocsRailTemplate(t *testing.T) {
	b, err := os.ReadFile("../../docs/guides/host-knobs.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "<!-- example: rail template (TestDocsRailTemplate) -->\n  ```yaml\n")
	if !ok {
		t.Fatal("docs/guides/host-knobs.md has no rail template example")
	}
	body, _, _ := strings.Cut(rest, "```")
	body = strings.ReplaceAll(body, "\n  ", "\n")
	dir := railHost(t, nil)
	spec := clitest.WriteSpec(t, strings.TrimPrefix(body, "  "))
	code, out := rf(t, "--sim", dir, "apply", "--yes", "-f", spec)
	want(t, code, 0, out, "name: mlx5_4 -> rdma_rail0", "name: ibp32s0f1 -> rail5")
	code, out = rf(t, "--sim", dir, "plan", "-f", spec)
	want(t, code, 0, out, "No changes")
}
