package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/rdmaform/rdmaform/cli"
)

// The JSON Schemas every -o json document is checked against: one file of
// definitions for rdmaform's own documents (docs/reference/json.md describes them)
// and the spec's schema for show -o json, which prints a spec.
const (
	outputSchemaFile = "../docs/json/output.schema.json"
	outputSchemaID   = "https://github.com/rdmaform/rdmaform/docs/json/output.schema.json"
	specSchemaFile   = "../schema/rdmaform.schema.json"
)

type jsonSchemas struct {
	c *jsonschema.Compiler
}

func loadSchemas(t *testing.T) *jsonSchemas {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	for id, file := range map[string]string{outputSchemaID: outputSchemaFile, "spec.schema.json": specSchemaFile} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if err := c.AddResource(id, doc); err != nil {
			t.Fatal(err)
		}
	}
	return &jsonSchemas{c: c}
}

// check validates out against the definition def ("plan", "errors", ...;
// "spec" for the spec schema) and returns it decoded.
func (s *jsonSchemas) check(t *testing.T, what, def, out string) map[string]any {
	t.Helper()
	id := outputSchemaID + "#/$defs/" + def
	if def == "spec" {
		id = "spec.schema.json"
	}
	sch, err := s.c.Compile(id)
	if err != nil {
		t.Fatalf("schema %s: %v", def, err)
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	if err != nil {
		t.Fatalf("%s: stdout is not one JSON document: %v\n%s", what, err, out)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("%s: does not match #/$defs/%s: %v\n%s", what, def, err, out)
	}
	var m map[string]any
	_ = json.Unmarshal([]byte(out), &m) // numbers as float64, for the assertions
	return m
}

func runJSON(t *testing.T, stdin string, want int, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Run(args, cli.Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Environ: []string{"NO_COLOR=1", "RDMAFORM_NOW=2026-03-01T12:00:00Z"}})
	if code != want {
		t.Fatalf("rdmaform %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out.String(), errb.String())
	}
	return out.String()
}

// TestJSONOutputs runs every command that reports with -o json on
// simulated hosts, in its success, change, reboot and error cases, and
// validates each document against the committed JSON Schemas.
func TestJSONOutputs(t *testing.T) {
	s := loadSchemas(t)
	dir := t.TempDir()
	roce, vpi := filepath.Join(dir, "roce"), filepath.Join(dir, "vpi")
	runJSON(t, "", 0, "sim", "new", roce, "--profile", "cx5-roce")
	runJSON(t, "", 0, "sim", "new", vpi, "--profile", "cx6-vpi-ib")
	roceSpec, ibToEth := "../examples/roce.yaml", "../examples/ib-to-eth.yaml"
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\ndevices:\n  - pci: \"0000:5e:00.0\"\n    ports:\n      - port: 1\n        roce: {mode: v3}\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	v := s.check(t, "version", "version", runJSON(t, "", 0, "version", "-o", "json"))
	if v["format_version"] != float64(1) {
		t.Errorf("version: format_version %v", v["format_version"])
	}
	s.check(t, "validate", "validate", runJSON(t, "", 0, "validate", "--no-param-db", "-o", "json", "-f", roceSpec))

	// Typed values: tos 0 -> 106 are numbers, the mode strings.
	p := s.check(t, "plan with changes", "plan", runJSON(t, "", 2, "--sim", roce, "plan", "-o", "json", "-f", roceSpec))
	attrs := p["changes"].([]any)[0].(map[string]any)["attributes"].([]any)
	for _, a := range attrs {
		a := a.(map[string]any)
		if a["name"] == "tos" {
			if a["before"] != float64(0) || a["after"] != float64(106) {
				t.Errorf("tos: before %#v, after %#v; want the numbers 0 and 106", a["before"], a["after"])
			}
		}
		if a["name"] == "mode" && a["after"] != "v1" {
			t.Errorf("mode: after %#v, want \"v1\"", a["after"])
		}
	}
	if p["summary"].(map[string]any)["reboot_required"] != false {
		t.Errorf("summary.reboot_required is not the boolean false: %#v", p["summary"])
	}

	saved := filepath.Join(dir, "roce.plan")
	runJSON(t, "", 2, "--sim", roce, "plan", "-o", "json", "-f", roceSpec, "--out", saved)
	data, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	sp := s.check(t, "saved plan", "saved_plan", string(data))
	s.check(t, "show-plan", "saved_plan", runJSON(t, "", 0, "show-plan", saved, "-o", "json"))
	if b, _ := sp["rdmaform"].(map[string]any); b == nil || b["version"] == "" {
		t.Errorf("the saved plan does not record rdmaform's version: %v", sp["rdmaform"])
	}

	ap := s.check(t, "apply", "apply", runJSON(t, "", 0, "--sim", roce, "apply", "--yes", "-o", "json", "-f", roceSpec))
	if n := len(ap["applied"].([]any)); n != 2 {
		t.Errorf("apply: %d applied, want 2", n)
	}
	s.check(t, "apply, nothing to do", "apply", runJSON(t, "", 0, "--sim", roce, "apply", "--yes", "-o", "json", "-f", roceSpec))
	s.check(t, "plan, empty", "plan", runJSON(t, "", 0, "--sim", roce, "plan", "-o", "json", "-f", roceSpec))

	// A firmware change: pending and deferred items, exit 3.
	s.check(t, "plan, firmware", "plan", runJSON(t, "", 2, "--sim", vpi, "plan", "-o", "json", "-f", ibToEth))
	s.check(t, "apply, firmware", "apply", runJSON(t, "", 3, "--sim", vpi, "apply", "--yes", "-o", "json", "-f", ibToEth))
	pp := s.check(t, "plan, pending", "plan", runJSON(t, "", 3, "--sim", vpi, "plan", "-o", "json", "-f", ibToEth))
	if len(pp["pending"].([]any)) == 0 || len(pp["deferred"].([]any)) == 0 {
		t.Errorf("plan after staging firmware lacks pending or deferred items: %v", pp)
	}
	st := s.check(t, "status", "status", runJSON(t, "", 3, "--sim", vpi, "status", "-o", "json"))
	if st["reboot_required"] != true {
		t.Errorf("status: reboot_required %#v, want true", st["reboot_required"])
	}
	s.check(t, "status -f", "status", runJSON(t, "", 3, "--sim", vpi, "status", "-o", "json", "-f", ibToEth))
	s.check(t, "status, nothing", "status", runJSON(t, "", 0, "--sim", roce, "status", "-o", "json"))

	s.check(t, "audit", "audit", runJSON(t, "", 3, "--sim", vpi, "audit", "-o", "json", "-f", ibToEth))
	s.check(t, "audit, compliant", "audit", runJSON(t, "", 0, "--sim", roce, "audit", "-o", "json", "-f", roceSpec))

	// A firmware catalog: the audit's cards, and the fleet summary of
	// two hosts' reports (the ConnectX-5 current, the ConnectX-6 not
	// listed).
	catalog := filepath.Join(dir, "catalog.yaml")
	if err := os.WriteFile(catalog, []byte("version: 1\ndevices:\n  - match: {}\n    firmware:\n      catalog:\n        optional: true\n        entries:\n          - {psid: MT_0000000008, version: 16.35.2000, image: /fw.bin, sha256: "+strings.Repeat("0", 64)+", activation: fw-reset}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reports := filepath.Join(dir, "reports")
	if err := os.Mkdir(reports, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, h := range map[string]string{"roce": roce, "vpi": vpi} {
		out := s.check(t, "audit, catalog", "audit", runJSON(t, "", 0, "--sim", h, "audit", "-o", "json", "-f", catalog))
		if len(out["firmware"].([]any)) != 1 {
			t.Errorf("audit of %s: firmware %v, want its card", name, out["firmware"])
		}
		b, _ := json.Marshal(out)
		if err := os.WriteFile(filepath.Join(reports, name+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs := s.check(t, "firmware-summary", "firmware_summary", runJSON(t, "", 2, "firmware-summary", reports, "-o", "json"))
	if len(fs["psids"].([]any)) != 2 {
		t.Errorf("firmware-summary: %v, want two PSIDs", fs["psids"])
	}
	s.check(t, "firmware-summary, bad report", "errors", runJSON(t, "", 1, "firmware-summary", catalog, "-o", "json"))

	s.check(t, "lint", "lint", runJSON(t, "", 0, "lint", "-o", "json", roceSpec))
	l := s.check(t, "lint, bad spec", "lint", runJSON(t, "", 1, "lint", "-o", "json", roceSpec, bad))
	if len(l["errors"].([]any)) == 0 {
		t.Errorf("lint of a bad spec has no errors: %v", l)
	}
	// Two subnet managers at the same highest priority: warnings, exit 0.
	var tied []string
	for _, n := range []string{"sm1.yaml", "sm2.yaml"} {
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, []byte("version: 1\nsubnet_manager:\n  priority: 5\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		tied = append(tied, p)
	}
	w := s.check(t, "lint, warnings", "lint", runJSON(t, "", 0, append([]string{"lint", "-o", "json"}, tied...)...))
	if len(w["errors"].([]any)) != 0 || len(w["warnings"].([]any)) != 2 {
		t.Errorf("lint of two subnet managers at one priority: %v, want 2 warnings and no error", w)
	}

	s.check(t, "show", "spec", runJSON(t, "", 0, "--sim", roce, "show", "-o", "json"))

	// Probes on the simulated fabric: an address no netdev of the host
	// routes to fails, an interface the host lacks cannot run (exit 1).
	probes := filepath.Join(dir, "probes.yaml")
	if err := os.WriteFile(probes, []byte("version: 1\nprobes:\n  - name: icmp\n    ping: {to: 192.0.2.9, count: 2}\n  - name: nowhere\n    ping: {to: 192.0.2.9, interface: nosuch0}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pr := s.check(t, "probe", "probe", runJSON(t, "", 1, "--sim", roce, "probe", "-o", "json", "-f", probes))
	ps := pr["probes"].([]any)
	if r := ps[0].(map[string]any); r["passed"] != false || r["outcome"] != "failed" || !strings.Contains(r["reason"].(string), "Network is unreachable") {
		t.Errorf("probe without a route: %v", r)
	}
	if r := ps[1].(map[string]any); r["passed"] != false || r["outcome"] != "error" || !strings.Contains(r["reason"].(string), "SO_BINDTODEVICE nosuch0") {
		t.Errorf("probe on a missing interface: %v", r)
	}
	ar := s.check(t, "audit --probes", "audit", runJSON(t, "", 1, "--sim", roce, "audit", "-o", "json", "-f", probes, "--probes"))
	if len(ar["probes"].([]any)) != 2 || len(ar["errors"].([]any)) != 1 {
		t.Errorf("audit --probes: want both probes and one error: %v", ar)
	}

	// Errors are a JSON document too, positioned, with the text's exit code.
	for _, args := range [][]string{
		{"validate", "--no-param-db", "-o", "json", "-f", bad},
		{"--sim", roce, "plan", "-o", "json", "-f", bad},
		{"--sim", roce, "apply", "--yes", "-o", "json", "-f", bad},
		{"--sim", roce, "status", "-o", "json", "-f", bad},
		{"--sim", roce, "audit", "-o", "json", "-f", bad},
	} {
		e := s.check(t, strings.Join(args, " "), "errors", runJSON(t, "", 1, args...))
		first, _ := e["errors"].([]any)
		if len(first) == 0 {
			continue
		}
		f := first[0].(map[string]any)
		src, _ := f["source"].(map[string]any)
		if src["file"] != bad || src["line"] != float64(6) || src["col"] != float64(22) || f["path"] != "$.devices[0].ports[0].roce.mode" {
			t.Errorf("%s: first error %v, want %s:6:22 at $.devices[0].ports[0].roce.mode", strings.Join(args, " "), f, bad)
		}
	}
	e := s.check(t, "no such simulated host", "errors", runJSON(t, "", 1, "--sim", filepath.Join(dir, "nothing"), "plan", "-o", "json", "-f", roceSpec))
	if msg := e["errors"].([]any)[0].(map[string]any)["message"].(string); !strings.Contains(msg, "not a simulated host") {
		t.Errorf("error message %q", msg)
	}
}

// TestJSONSchemaCatchesStrings: the schema is strict enough to fail the
// documents the issue complained about (numbers and booleans as strings,
// a missing format_version, a field nobody documented).
func TestJSONSchemaCatchesStrings(t *testing.T) {
	s := loadSchemas(t)
	sch, err := s.c.Compile(outputSchemaID + "#/$defs/plan")
	if err != nil {
		t.Fatal(err)
	}
	good := `{"format_version": 1, "changes": [], "pending": [], "deferred": [], "summary": {"add": 0, "change": 0, "remove": 0, "reboot_required": false}}`
	for name, doc := range map[string]string{
		"good":                good,
		"count as string":     strings.Replace(good, `"add": 0`, `"add": "0"`, 1),
		"boolean as string":   strings.Replace(good, `"reboot_required": false`, `"reboot_required": "false"`, 1),
		"no format_version":   strings.Replace(good, `"format_version": 1, `, ``, 1),
		"format_version 2":    strings.Replace(good, `"format_version": 1`, `"format_version": 2`, 1),
		"undocumented field":  strings.Replace(good, `"changes": []`, `"changes": [], "extra": 1`, 1),
		"fraction as a value": strings.Replace(good, `"changes": []`, `"changes": [{"address": "a", "action": "update", "activation": "now", "attributes": [{"name": "mtu", "before": 1.5, "after": 2044}]}]`, 1),
	} {
		var v any
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatal(err)
		}
		err := sch.Validate(v)
		if (err == nil) != (name == "good") {
			t.Errorf("%s: validate gave %v", name, err)
		}
	}
}
