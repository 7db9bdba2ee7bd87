package cli_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/spf13/cobra"

	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/internal/testlab/need"
	"github.com/rdmaform/rdmaform/providers/firmware"
)

// jsonCommands is every command whose -o takes json, by its path below
// rdmaform ("plan", "sim new"), from the command tree itself.
func jsonCommands(t *testing.T) []string {
	t.Helper()
	var out []string
	var walk func(c *cobra.Command, prefix string)
	walk = func(c *cobra.Command, prefix string) {
		for _, sub := range c.Commands() {
			name := strings.TrimSpace(prefix + " " + sub.Name())
			if f := sub.Flags().Lookup("output"); f != nil && strings.Contains(f.Usage, "json") {
				out = append(out, name)
			}
			walk(sub, name)
		}
	}
	walk(cli.Command(), "")
	sort.Strings(out)
	return out
}

// TestJSONErrorShapeEveryCommand makes every command that has -o json
// fail, with an error at a position in a file wherever the command reads
// one the user names, and checks that its document matches the schema
// and that every error in it has the one error shape: {"path", "source":
// {"file", "line", "col"}, "message"}, never the position in the message
// text. Errors that come inside a command's own document (a plan's
// host-dependent findings, lint's findings, apply's plan) are checked
// the same way. A command with -o json that has no case here fails the
// test.
func TestJSONErrorShapeEveryCommand(t *testing.T) {
	s := loadSchemas(t)
	dir := t.TempDir()
	roce := filepath.Join(dir, "roce")
	runJSON(t, "", 0, "sim", "new", roce, "--profile", "cx5-roce")
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// roce.mode v3 at 6:22.
	bad := write("bad.yaml", "version: 1\ndevices:\n  - pci: \"0000:5e:00.0\"\n    ports:\n      - port: 1\n        roce: {mode: v3}\n")
	// A device the host does not have: a plan finding at 3:10.
	absent := write("absent.yaml", "version: 1\ndevices:\n  - pci: \"0000:99:00.0\"\n    ports:\n      - port: 1\n        roce: {mode: v2}\n")
	// A firmware parameter mstflint's database does not know: its value
	// at 5:35.
	param := write("param.yaml", "version: 1\ndevices:\n  - pci: \"0000:5e:00.0\"\n    firmware:\n      params: {NO_SUCH_PARAMETER: 1}\n")
	// An inventory key rdmaform does not know, at 3:19.
	inv := write("inventory.yaml", "hosts:\n  - {name: node1}\n  - {name: node2, rack: 7}\n")
	// A waiver with a key waivers do not have, at 2:3.
	waivers := write("waivers.yaml", "- {resource: \"rdma_cm[mlx5_0/1]\", check: drift, reason: r, expires: 2030-01-01,\n   until: 2031-01-01}\n")
	// A plan file of --plans that is no plan: the file as a whole.
	plans := filepath.Join(dir, "plans")
	if err := os.Mkdir(plans, 0o755); err != nil {
		t.Fatal(err)
	}
	notPlan := write("plans/node1.json", `{"format_version": 1}`)
	write("plans/node2.json", `{"format_version": 1, "changes": [], "pending": [], "deferred": [], "summary": {}}`)
	okInv := write("ok-inventory.yaml", "hosts:\n  - {name: node1}\n  - {name: node2}\n")
	// A fabric test's result naming a host the inventory lacks: its
	// hosts at 2:13; a results file with a key it does not have, at 1:38.
	stranger := write("stranger.json", "{\"format_version\": 1, \"results\": [\n  {\"hosts\": [\"node1\", \"z\"], \"bandwidth_gbps\": 1, \"latency_us\": 1}]}\n")
	badResults := write("bad-results.json", `{"format_version": 1, "results": [], "x": 1}`)
	// An audit report whose JSON stops at 2:10 (firmware-summary).
	notReport := write("not-report.json", "{\"format_version\": 1,\n \"host\": }\n")
	// A saved plan cut short: the JSON stops after 2:20.
	cut := write("cut.plan", "{\"kind\": \"rdmaform-plan\",\n \"format_version\": 1,\n")

	type pos struct {
		file      string
		line, col int
	}
	cases := []struct {
		name, cmd string
		args      []string
		def       string // the document: errors, plan, apply, lint
		field     string // where the errors are in it: errors, plan.errors
		want      *pos   // the first error's source; nil: no file is involved
	}{
		{"validate, a spec finding", "validate", []string{"validate", "--no-param-db", "-o", "json", "-f", bad}, "errors", "errors", &pos{bad, 6, 22}},
		{"validate, a firmware parameter", "validate", []string{"validate", "-o", "json", "-f", param}, "errors", "errors", &pos{param, 5, 35}},
		{"plan, a spec finding", "plan", []string{"--sim", roce, "plan", "-o", "json", "-f", bad}, "errors", "errors", &pos{bad, 6, 22}},
		{"plan, a host finding", "plan", []string{"--sim", roce, "plan", "-o", "json", "-f", absent}, "plan", "errors", &pos{absent, 3, 10}},
		{"apply, a spec finding", "apply", []string{"--sim", roce, "apply", "--yes", "-o", "json", "-f", bad}, "errors", "errors", &pos{bad, 6, 22}},
		{"apply, a saved plan cut short", "apply", []string{"--sim", roce, "apply", "--yes", "-o", "json", "-f", cut}, "errors", "errors", &pos{cut, 2, 21}},
		{"apply, a host finding", "apply", []string{"--sim", roce, "apply", "--yes", "-o", "json", "-f", absent}, "apply", "plan.errors", &pos{absent, 3, 10}},
		{"activate", "activate", []string{"--sim", roce, "activate", "--yes", "-o", "json", "-f", bad}, "errors", "errors", &pos{bad, 6, 22}},
		{"status", "status", []string{"--sim", roce, "status", "-o", "json", "-f", bad}, "errors", "errors", &pos{bad, 6, 22}},
		{"audit, a spec finding", "audit", []string{"--sim", roce, "audit", "-o", "json", "-f", bad}, "errors", "errors", &pos{bad, 6, 22}},
		{"audit, waivers", "audit", []string{"--sim", roce, "audit", "-o", "json", "-f", "../examples/roce.yaml", "--waivers", waivers}, "errors", "errors", &pos{waivers, 2, 4}},
		{"lint", "lint", []string{"lint", "-o", "json", "../examples/roce.yaml", bad}, "lint", "errors", &pos{bad, 6, 22}},
		{"probe", "probe", []string{"--sim", roce, "probe", "-o", "json", "-f", bad}, "errors", "errors", &pos{bad, 6, 22}},
		{"waves", "waves", []string{"waves", "-o", "json", "--inventory", inv}, "errors", "errors", &pos{inv, 3, 19}},
		{"waves, a plan file", "waves", []string{"waves", "-o", "json", "--inventory", okInv, "--plans", plans}, "errors", "errors", &pos{notPlan, 0, 0}},
		{"fabric-test schedule", "fabric-test schedule", []string{"fabric-test", "schedule", "-o", "json", "--inventory", inv}, "errors", "errors", &pos{inv, 3, 19}},
		{"fabric-test report", "fabric-test report", []string{"fabric-test", "report", "-o", "json", "--inventory", okInv, "--results", stranger}, "errors", "errors", &pos{stranger, 2, 13}},
		{"fabric-test retest", "fabric-test retest", []string{"fabric-test", "retest", "-o", "json", "--inventory", okInv, "--results", badResults}, "errors", "errors", &pos{badResults, 1, 38}},
		{"health", "health", []string{"--sim", roce, "health", "-o", "json", "-f", bad}, "errors", "errors", &pos{bad, 6, 22}},
		{"firmware-summary", "firmware-summary", []string{"firmware-summary", "-o", "json", notReport}, "errors", "errors", &pos{notReport, 2, 10}},
		{"show-plan", "show-plan", []string{"show-plan", "-o", "json", cut}, "errors", "errors", &pos{cut, 2, 21}},
		// facts, show and version read no file the user names: their
		// errors have a message alone.
		{"facts", "facts", []string{"--sim", filepath.Join(dir, "nothing"), "facts", "-o", "json"}, "errors", "errors", nil},
		{"show", "show", []string{"--sim", filepath.Join(dir, "nothing"), "show", "-o", "json"}, "errors", "errors", nil},
		{"version", "version", []string{"version", "-o", "json", "--no-such-flag"}, "errors", "errors", nil},
	}
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.cmd] = true
	}
	for _, cmd := range jsonCommands(t) {
		if !covered[cmd] {
			t.Errorf("rdmaform %s has -o json and no error case here", cmd)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "validate, a firmware parameter" {
				need.File(t, firmware.ParamDBPath, "apt-get install mstflint")
			}
			exit := 1
			if c.cmd == "fabric-test report" || c.cmd == "health" {
				exit = 3 // Nagios's UNKNOWN
			}
			doc := s.check(t, strings.Join(c.args, " "), c.def, runJSON(t, "", exit, c.args...))
			var errs []any
			switch c.field {
			case "errors":
				errs, _ = doc["errors"].([]any)
			case "plan.errors":
				p, _ := doc["plan"].(map[string]any)
				errs, _ = p["errors"].([]any)
			}
			if len(errs) == 0 {
				t.Fatalf("no %s in %v", c.field, doc)
			}
			for _, e := range errs {
				m := e.(map[string]any)
				msg, _ := m["message"].(string)
				// The position is the source's, never the message's.
				for _, f := range []string{bad, absent, param, inv, waivers, cut, notPlan, stranger, badResults, notReport} {
					if strings.Contains(msg, f+":") {
						t.Errorf("the message carries a position: %q", msg)
					}
				}
			}
			first := errs[0].(map[string]any)
			src, _ := first["source"].(map[string]any)
			if c.want == nil {
				if src != nil {
					t.Errorf("first error %v has a source; want none", first)
				}
				return
			}
			if src == nil || src["file"] != c.want.file || src["line"] != float64(c.want.line) || src["col"] != float64(c.want.col) {
				t.Errorf("first error %v; want its source at %s:%d:%d", first, c.want.file, c.want.line, c.want.col)
			}
			if p, _ := first["path"].(string); !strings.HasPrefix(p, "$") && c.cmd != "waves" && !strings.HasPrefix(c.cmd, "fabric-test") {
				t.Errorf("first error %v has no spec path", first)
			}
		})
	}
}

// TestJSONErrorSchemaRefusesTheOldShapes: the schema's error is one
// shape; the flat file/line/col form and a source without its line are
// refused.
func TestJSONErrorSchemaRefusesTheOldShapes(t *testing.T) {
	s := loadSchemas(t)
	sch, err := s.c.Compile(outputSchemaID + "#/$defs/errors")
	if err != nil {
		t.Fatal(err)
	}
	for doc, ok := range map[string]bool{
		`{"format_version": 1, "errors": [{"message": "m"}]}`:                                                                         true,
		`{"format_version": 1, "errors": [{"path": "$.a", "source": {"file": "f", "line": 1, "col": 2}, "message": "m"}]}`:            true,
		`{"format_version": 1, "errors": [{"file": "f", "line": 1, "col": 2, "path": "$.a", "message": "m"}]}`:                        false,
		`{"format_version": 1, "errors": [{"path": "$.a", "source": {"file": "f"}, "message": "m"}]}`:                                 false,
		`{"format_version": 1, "errors": [{"path": "", "source": {"file": "f", "line": 1, "col": 2}, "message": "m"}]}`:               false,
		`{"format_version": 1, "errors": [{"path": "$.a", "source": {"file": "f", "line": 1, "col": 2}, "message": ""}]}`:             false,
		`{"format_version": 1, "errors": [{"path": "$.a", "source": {"file": "f", "line": 1, "col": 2}, "message": "m", "x": true}]}`: false,
	} {
		inst, err := jsonschemaUnmarshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(inst); (err == nil) != ok {
			t.Errorf("%s: validate gave %v, want ok=%v", doc, err, ok)
		}
	}
}

func jsonschemaUnmarshal(doc string) (any, error) {
	return jsonschema.UnmarshalJSON(strings.NewReader(doc))
}
