package cli_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/internal/testlab/need"
)

// ansibleInventory runs the real ansible-inventory --list on an
// inventory file (INI or YAML) and returns its JSON, reading no
// configuration of this machine.
func ansibleInventory(t *testing.T, name, content string) string {
	t.Helper()
	need.Tool(t, "ansible-inventory", "apt-get install ansible-core")
	dir := t.TempDir()
	src := filepath.Join(dir, name)
	cfg := filepath.Join(dir, "ansible.cfg")
	for f, data := range map[string]string{src: content, cfg: ""} {
		if err := os.WriteFile(f, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "home"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "inventory.json")
	cmd := exec.Command("ansible-inventory", "-i", src, "--list", "--output", out)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(dir, "home"), "LANG=C.UTF-8", "ANSIBLE_CONFIG=" + cfg,
		"ANSIBLE_LOCAL_TEMP=" + filepath.Join(dir, "tmp"), "ANSIBLE_INVENTORY_UNPARSED_WARNING=0"}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ansible-inventory: %v\n%s", err, b)
	}
	return out
}

func waveHosts(t *testing.T, doc map[string]any) [][]string {
	t.Helper()
	var got [][]string
	for _, w := range doc["waves"].([]any) {
		var hs []string
		for _, h := range w.(map[string]any)["hosts"].([]any) {
			hs = append(hs, h.(string))
		}
		got = append(got, hs)
	}
	return got
}

// TestWavesAnsibleInventory: waves from what the real ansible-inventory
// --list prints of an INI inventory (group variables, roles as a string
// and as a list, pending as the INI's string) and of a YAML one (typed
// values, a number as a domain).
func TestWavesAnsibleInventory(t *testing.T) {
	s := loadSchemas(t)
	ini := ansibleInventory(t, "hosts.ini", `[rdma]
node01 rdmaform_domain=leaf1 rdmaform_roles=sm
node02 rdmaform_domain=leaf1
node03 rdmaform_domain=leaf2 rdmaform_roles="['sm', 'login']"
node04 rdmaform_domain=leaf2

[done]
node05

[done:vars]
rdmaform_domain=leaf3
rdmaform_pending=false
`)
	doc := s.check(t, "waves, INI", "waves", runJSON(t, "", 0, "waves", "--inventory", ini, "--max-unavailable", "2", "-o", "json"))
	// Both subnet manager hosts were dealt into wave 1; node03 swapped
	// with node04, the other host of its leaf.
	if diff := cmp.Diff([][]string{{"node01", "node04"}, {"node02", "node03"}}, waveHosts(t, doc)); diff != "" {
		t.Errorf("INI: waves (-want +got):\n%s", diff)
	}
	if doc["format"] != "ansible-inventory" || doc["hosts"] != 5.0 || doc["pending"] != 4.0 || doc["domains"] != true {
		t.Errorf("INI: %v", doc)
	}
	left := doc["left_out"].([]any)
	if len(left) != 1 || left[0].(map[string]any)["host"] != "node05" || left[0].(map[string]any)["reason"] != "inventory: rdmaform_pending=false" {
		t.Errorf("INI: left_out %v, want node05 for its group's rdmaform_pending=false", left)
	}
	reason := doc["waves"].([]any)[1].(map[string]any)["reasons"].(map[string]any)["node03"]
	if !strings.Contains(reason.(string), "domain leaf2") || !strings.Contains(reason.(string), "subnet manager host") {
		t.Errorf("INI: node03's reason %q", reason)
	}

	yml := ansibleInventory(t, "hosts.yml", `all:
  children:
    rack7:
      vars: {rdmaform_domain: 7}
      hosts:
        a1: {rdmaform_roles: [sm], rdmaform_pending: true}
        a2: {}
    rack8:
      vars: {rdmaform_domain: 8}
      hosts:
        b1: {rdmaform_roles: [sm]}
        b2: {rdmaform_pending: false}
`)
	doc = s.check(t, "waves, YAML", "waves", runJSON(t, "", 0, "waves", "--inventory", yml, "--max-unavailable", "100%", "-o", "json"))
	if diff := cmp.Diff([][]string{{"a2", "b1"}, {"a1"}}, waveHosts(t, doc)); diff != "" {
		t.Errorf("YAML: waves (-want +got):\n%s", diff)
	}

	// Without domains: accepted, by count only, and it says so.
	bare := ansibleInventory(t, "bare.ini", "[rdma]\nn1\nn2\nn3\n")
	doc = s.check(t, "waves, no domains", "waves", runJSON(t, "", 0, "waves", "--inventory", bare, "--max-unavailable", "2", "-o", "json"))
	if doc["domains"] != false || doc["note"] != "the inventory names no domain: waves by count only" {
		t.Errorf("no domains: %v", doc)
	}
	text := runJSON(t, "", 0, "waves", "--inventory", bare, "--max-unavailable", "2")
	for _, line := range []string{
		bare + " (ansible-inventory): 3 hosts, 3 pending in 2 waves; at most 2 per wave (the inventory names no domain: waves by count only)\n",
		"wave 1 (2 hosts): n1 n3\n",
		"  n1: 1st of 3 pending hosts, dealt in turn into 2 waves of at most 2 (no domains in the inventory)\n",
	} {
		if !strings.Contains(text, line) {
			t.Errorf("text lacks %q:\n%s", line, text)
		}
	}
}

// TestWavesLimits: every flag at its limit and one past it, through the
// command line; a bad value is exit 1 with an error document.
func TestWavesLimits(t *testing.T) {
	s := loadSchemas(t)
	inv := filepath.Join(t.TempDir(), "inv.yaml")
	var b strings.Builder
	b.WriteString("hosts:\n")
	for _, h := range []string{"a1 leaf1", "a2 leaf1", "a3 leaf1", "b1 leaf2", "b2 leaf2", "c1 leaf3", "c2 leaf3", "d1 leaf4", "d2 leaf4", "e1 leaf5"} {
		name, domain, _ := strings.Cut(h, " ")
		b.WriteString("  - {name: " + name + ", domain: " + domain + "}\n")
	}
	if err := os.WriteFile(inv, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args  []string
		waves int
		err   string
	}{
		{[]string{"--max-unavailable", "0"}, 0, `--max-unavailable: bad limit: "0": want a number of hosts (1 to 100000) or a percentage (1% to 100%)`},
		{[]string{"--max-unavailable", "1"}, 10, ""},
		{[]string{"--max-unavailable", "100000"}, 3, ""}, // the limit, as the rollout role's
		{[]string{"--max-unavailable", "100001"}, 0, `--max-unavailable: bad limit: "100001": want a number of hosts (1 to 100000) or a percentage (1% to 100%)`},
		{[]string{"--max-unavailable", "ten"}, 0, `--max-unavailable: bad limit: "ten": want a number of hosts (1 to 100000) or a percentage (1% to 100%)`},
		{[]string{"--max-unavailable", "0%"}, 0, `--max-unavailable: bad limit: "0%": a percentage is 1% to 100%`},
		{[]string{"--max-unavailable", "1%"}, 10, ""}, // 1% of 10 hosts: at least 1
		{[]string{"--max-unavailable", "100%"}, 3, ""},
		{[]string{"--max-unavailable", "101%"}, 0, `--max-unavailable: bad limit: "101%": a percentage is 1% to 100%`},
		{[]string{"--max-unavailable", "10", "--max-per-domain", "0"}, 0, "bad limit: --max-per-domain 0: want 1 to 100000"},
		{[]string{"--max-unavailable", "10", "--max-per-domain", "1"}, 3, ""},
		{[]string{"--max-unavailable", "10", "--max-per-domain", "3"}, 1, ""},
		{[]string{"--max-unavailable", "10", "--max-per-domain", "100000"}, 1, ""},
		{[]string{"--max-unavailable", "10", "--max-per-domain", "100001"}, 0, "bad limit: --max-per-domain 100001: want 1 to 100000"},
		{[]string{"--max-unavailable", "9", "--max-per-domain", "3"}, 2, ""},
		{[]string{}, 5, ""}, // the default: 20% of 10 hosts
	} {
		args := append([]string{"waves", "--inventory", inv, "-o", "json"}, tc.args...)
		if tc.err != "" {
			doc := s.check(t, strings.Join(tc.args, " "), "errors", runJSON(t, "", 1, args...))
			if msg := doc["errors"].([]any)[0].(map[string]any)["message"]; msg != tc.err {
				t.Errorf("%v: error %q, want %q", tc.args, msg, tc.err)
			}
			continue
		}
		doc := s.check(t, strings.Join(tc.args, " "), "waves", runJSON(t, "", 0, args...))
		if n := len(doc["waves"].([]any)); n != tc.waves {
			t.Errorf("%v: %d waves, want %d", tc.args, n, tc.waves)
		}
	}
}

// TestWavesFromPlans: what is pending comes from each host's real
// rdmaform plan -o json on simulated hosts: a host with changes is in a
// wave, a converged host and a host whose plan has errors are left out
// with the reason, a missing plan is an error.
func TestWavesFromPlans(t *testing.T) {
	s := loadSchemas(t)
	dir := t.TempDir()
	plans := filepath.Join(dir, "plans")
	if err := os.Mkdir(plans, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := "../examples/roce.yaml"
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\ndevices:\n  - pci: \"0000:99:00.0\"\n    ports:\n      - port: 1\n        roce: {mode: v2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hosts := map[string]string{}
	for _, h := range []string{"todo", "done", "broken"} {
		hosts[h] = filepath.Join(dir, h)
		runJSON(t, "", 0, "sim", "new", hosts[h], "--profile", "cx5-roce")
	}
	runJSON(t, "", 0, "--sim", hosts["done"], "apply", "--yes", "-f", spec)
	save := func(h string, code int, spec string) {
		out := runJSON(t, "", code, "--sim", hosts[h], "plan", "-o", "json", "-f", spec)
		if err := os.WriteFile(filepath.Join(plans, h+".json"), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	save("todo", 2, spec)
	save("done", 0, spec)
	save("broken", 1, bad)
	inv := filepath.Join(dir, "inv.json")
	if err := os.WriteFile(inv, []byte(`{"hosts": [{"name": "todo", "domain": "leaf1"}, {"name": "done", "domain": "leaf1"}, {"name": "broken", "domain": "leaf2"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := s.check(t, "waves --plans", "waves", runJSON(t, "", 0, "waves", "--inventory", inv, "--plans", plans, "-o", "json"))
	if diff := cmp.Diff([][]string{{"todo"}}, waveHosts(t, doc)); diff != "" {
		t.Errorf("waves (-want +got):\n%s", diff)
	}
	reasons := map[string]string{}
	for _, l := range doc["left_out"].([]any) {
		l := l.(map[string]any)
		reasons[l["host"].(string)] = l["reason"].(string)
	}
	if want := filepath.Join(plans, "done.json") + ": nothing to change, nothing pending"; reasons["done"] != want {
		t.Errorf("done: %q, want %q", reasons["done"], want)
	}
	if !strings.Contains(reasons["broken"], "broken.json: the plan has 1 error, fix it first: ") {
		t.Errorf("broken: %q", reasons["broken"])
	}
	if r := doc["waves"].([]any)[0].(map[string]any)["reasons"].(map[string]any)["todo"].(string); !strings.Contains(r, "pending: "+filepath.Join(plans, "todo.json")+": 2 changes") {
		t.Errorf("todo's reason %q names no plan", r)
	}

	if err := os.Remove(filepath.Join(plans, "done.json")); err != nil {
		t.Fatal(err)
	}
	doc = s.check(t, "waves, a plan missing", "errors", runJSON(t, "", 1, "waves", "--inventory", inv, "--plans", plans, "-o", "json"))
	if msg := doc["errors"].([]any)[0].(map[string]any)["message"].(string); !strings.Contains(msg, "no plan in "+plans+" for 1 host: done") {
		t.Errorf("a missing plan: %q", msg)
	}

	// The message names 5 hosts without a plan, and counts the rest.
	empty := t.TempDir()
	for n, want := range map[int]string{
		5: "no plan in " + empty + " for 5 hosts: m1, m2, m3, m4, m5 (want",
		6: "no plan in " + empty + " for 6 hosts: m1, m2, m3, m4, m5 and 1 more (want",
	} {
		var names []string
		for k := 1; k <= n; k++ {
			names = append(names, fmt.Sprintf(`{"name": "m%d"}`, k))
		}
		inv := filepath.Join(dir, fmt.Sprintf("missing%d.json", n))
		if err := os.WriteFile(inv, []byte(`{"hosts": [`+strings.Join(names, ", ")+`]}`), 0o644); err != nil {
			t.Fatal(err)
		}
		doc := s.check(t, "waves, plans missing", "errors", runJSON(t, "", 1, "waves", "--inventory", inv, "--plans", empty, "-o", "json"))
		if msg := doc["errors"].([]any)[0].(map[string]any)["message"].(string); !strings.Contains(msg, want) {
			t.Errorf("%d plans missing: %q, want %q", n, msg, want)
		}
	}
}

// TestWavesNamesAndEscapes: a host name that is not one (a newline, an
// ESC sequence, a space) is refused at its position, and nothing of it
// reaches the terminal raw; the real ansible-inventory's IPv4 and IPv6
// hosts are host names; domains and a plan file's error messages, which
// anyone may write, are printed escaped and on their own line.
func TestWavesNamesAndEscapes(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a\\nb", "\\e[31mnode1", "node 1", "a\\0b", "a\\tb"} {
		inv := filepath.Join(dir, "bad.yaml")
		if err := os.WriteFile(inv, []byte("hosts:\n  - {name: node0}\n  - {name: \""+name+"\"}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runCLI(t, "waves", "--inventory", inv)
		if code != 1 || stdout != "" || !strings.Contains(stderr, inv+":3:12: hosts[1].name: ") || !strings.Contains(stderr, "is not a host name") ||
			strings.ContainsAny(stderr, "\x1b\x00\t") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("waves with host %s: exit %d\nstdout:\n%s\nstderr:\n%q", name, code, stdout, stderr)
		}
	}

	// ansible-inventory --list names hosts by address too.
	inv := ansibleInventory(t, "hosts.ini", "[rdma]\n192.0.2.10\n2001:db8::10\nnode1.example.net\n")
	doc := loadSchemas(t).check(t, "waves of addresses", "waves", runJSON(t, "", 0, "waves", "--inventory", inv, "--max-unavailable", "3", "-o", "json"))
	if diff := cmp.Diff([][]string{{"192.0.2.10", "2001:db8::10", "node1.example.net"}}, waveHosts(t, doc)); diff != "" {
		t.Errorf("waves (-want +got):\n%s", diff)
	}

	// A domain with an escape sequence and a plan file whose error
	// message has a newline and an ESC.
	plans := filepath.Join(dir, "plans")
	if err := os.Mkdir(plans, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(plans, "node2.json"), []byte(`{"format_version": 1, "changes": [], "pending": [], "deferred": [], "errors": [{"message": "bad\nline\u001b[2J"}], "summary": {"add": 0, "change": 0, "remove": 0, "reboot_required": false}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(plans, "node1.json"), []byte(`{"format_version": 1, "changes": [{}], "pending": [], "deferred": [], "summary": {"add": 0, "change": 1, "remove": 0, "reboot_required": false}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(dir, "inv.yaml")
	if err := os.WriteFile(own, []byte("hosts:\n  - {name: node1, domain: \"leaf\\e]0;owned\\a\"}\n  - {name: node2, domain: leaf2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "waves", "--inventory", own, "--plans", plans)
	if code != 0 || strings.ContainsAny(stdout, "\x1b\x07") || !strings.Contains(stdout, `  node1: domain leaf\x1b]0;owned\x07: 1st of its 1 pending host,`) ||
		!strings.Contains(stdout, `  node2: `+filepath.Join(plans, "node2.json")+`: the plan has 1 error, fix it first: bad\nline\x1b[2J`+"\n") {
		t.Errorf("waves with escapes: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}
