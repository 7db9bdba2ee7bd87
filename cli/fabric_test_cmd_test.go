package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/host"
)

// fabricResults simulates the engine: it measures every pair of the
// rounds of a schedule or retest document (about 392 Gb/s and 1.9 µs,
// a slow host 60 % and 2.5×) and writes the results file.
func fabricResults(t *testing.T, s *jsonSchemas, file, roundsDoc, slow string) {
	t.Helper()
	var d struct {
		Rounds []struct{ Pairs [][2]string }
	}
	if err := json.Unmarshal([]byte(roundsDoc), &d); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(`{"format_version": 1, "results": [`)
	i := 0
	for _, r := range d.Rounds {
		for _, p := range r.Pairs {
			bw, lat := 392+float64(i%7)-3, 1.9+float64(i%5)/100
			if p[0] == slow || p[1] == slow {
				bw, lat = bw*0.6, lat*2.5
			}
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "\n  {\"hosts\": [%q, %q], \"bandwidth_gbps\": %g, \"latency_us\": %g}", p[0], p[1], bw, lat)
			i++
		}
	}
	b.WriteString("]}\n")
	s.check(t, file, "fabric_test_results", b.String())
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFabricTestPlantedSlowHost: the commands as an engine runs them
// on 200 hosts with one slow host: the schedule (199 rounds of 100
// pairs), the first round's results (WARNING, exit 1: two suspects),
// the retest round, and the report that names the slow host (CRITICAL,
// exit 2); every document matches its schema.
func TestFabricTestPlantedSlowHost(t *testing.T) {
	s := loadSchemas(t)
	dir := t.TempDir()
	var inv strings.Builder
	inv.WriteString("hosts:\n")
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(&inv, "  - {name: gpu%03d, fabric: ib0, link_layer: InfiniBand}\n", i)
	}
	invFile := filepath.Join(dir, "inv.yaml")
	if err := os.WriteFile(invFile, []byte(inv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	sched := runJSON(t, "", 0, "fabric-test", "schedule", "--inventory", invFile, "-o", "json")
	doc := s.check(t, "schedule", "fabric_test_rounds", sched)
	rounds := doc["rounds"].([]any)
	if len(rounds) != 199 || len(rounds[0].(map[string]any)["pairs"].([]any)) != 100 || doc["stage"] != "schedule" {
		t.Fatalf("schedule: %d rounds, stage %v", len(rounds), doc["stage"])
	}
	// The first round only.
	var first struct {
		Rounds []json.RawMessage `json:"rounds"`
	}
	_ = json.Unmarshal([]byte(sched), &first)
	r1 := filepath.Join(dir, "round1.json")
	fabricResults(t, s, r1, `{"rounds": [`+string(first.Rounds[0])+`]}`, "gpu077")

	rep := s.check(t, "report, round 1", "fabric_test_report", runJSON(t, "", 1, "fabric-test", "report", "--inventory", invFile, "--results", r1, "-o", "json"))
	if rep["status"] != "WARNING" || rep["exit_code"] != float64(1) || len(rep["suspects"].([]any)) != 2 || rep["retest"] != true || len(rep["bad_hosts"].([]any)) != 0 {
		t.Fatalf("report after round 1: %v", rep)
	}
	retest := runJSON(t, "", 0, "fabric-test", "retest", "--inventory", invFile, "--results", r1, "-o", "json")
	rd := s.check(t, "retest", "fabric_test_rounds", retest)
	if rd["stage"] != "retest" || len(rd["rounds"].([]any)) != 1 {
		t.Fatalf("retest: %v", rd)
	}
	r2 := filepath.Join(dir, "retest1.json")
	fabricResults(t, s, r2, retest, "gpu077")
	rep = s.check(t, "report, retest", "fabric_test_report", runJSON(t, "", 2, "fabric-test", "report", "--inventory", invFile, "--results", r1, "--results", r2, "-o", "json"))
	var named []string
	for _, b := range rep["bad_hosts"].([]any) {
		named = append(named, b.(map[string]any)["host"].(string))
	}
	if diff := cmp.Diff([]string{"gpu077"}, named); diff != "" || rep["status"] != "CRITICAL" || len(rep["suspects"].([]any)) != 0 || rep["retest"] != false {
		t.Errorf("report after the retest: bad hosts (-want +got):\n%s%v", diff, rep)
	}
	// Nothing left to retest: an empty round list.
	done := s.check(t, "retest, done", "fabric_test_rounds", runJSON(t, "", 0, "fabric-test", "retest", "--inventory", invFile, "--results", r1, "--results", r2, "-o", "json"))
	if len(done["rounds"].([]any)) != 0 {
		t.Errorf("retest after the verdict: %v", done["rounds"])
	}
	text := runJSON(t, "", 2, "fabric-test", "report", "--inventory", invFile, "--results", r1, "--results", r2)
	if !strings.HasPrefix(text, "FABRIC CRITICAL - 1 bad host: gpu077 | pairs=102 bad_pairs=2 bad_hosts=1 unmeasured=0\n") {
		t.Errorf("text report:\n%s", text)
	}
	// The whole schedule: named at once, and the other 199 hosts are
	// measured, none untested.
	all := filepath.Join(dir, "all.json")
	fabricResults(t, s, all, sched, "gpu077")
	rep = s.check(t, "report, whole schedule", "fabric_test_report", runJSON(t, "", 2, "fabric-test", "report", "--inventory", invFile, "--results", all, "-o", "json"))
	if rep["pairs"] != float64(19900) || len(rep["bad_pairs"].([]any)) != 199 || len(rep["untested"].([]any)) != 0 {
		t.Errorf("whole schedule: %v pairs, %d bad", rep["pairs"], len(rep["bad_pairs"].([]any)))
	}
	// No slow host: OK, exit 0.
	fabricResults(t, s, all, sched, "")
	rep = s.check(t, "report, healthy", "fabric_test_report", runJSON(t, "", 0, "fabric-test", "report", "--inventory", invFile, "--results", all, "-o", "json"))
	if rep["status"] != "OK" || len(rep["bad_pairs"].([]any)) != 0 {
		t.Errorf("healthy: %v", rep["status"])
	}
	if text := runJSON(t, "", 0, "fabric-test", "report", "--inventory", invFile, "--results", all); !strings.HasPrefix(text, "FABRIC OK - 19900 pairs, none bad | pairs=19900 bad_pairs=0 bad_hosts=0 unmeasured=0\n") {
		t.Errorf("text, healthy:\n%s", text)
	}
}

// TestFabricTestScheduleGroups: hosts of two link layers on one fabric
// and a host alone are kept apart, in text and JSON.
func TestFabricTestScheduleGroups(t *testing.T) {
	s := loadSchemas(t)
	dir := t.TempDir()
	inv := filepath.Join(dir, "inv.json")
	// ansible-inventory --list's shape, with rdmaform_link_layer.
	if err := os.WriteFile(inv, []byte(`{"_meta": {"hostvars": {
  "n1": {"rdmaform_fabric": "f", "rdmaform_link_layer": "InfiniBand"},
  "n2": {"rdmaform_fabric": "f", "rdmaform_link_layer": "InfiniBand"},
  "n3": {"rdmaform_fabric": "f", "rdmaform_link_layer": "InfiniBand"},
  "e1": {"rdmaform_fabric": "f", "rdmaform_link_layer": "Ethernet"},
  "e2": {"rdmaform_fabric": "f", "rdmaform_link_layer": "Ethernet"},
  "solo": {"rdmaform_fabric": "g", "rdmaform_link_layer": "Ethernet"}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	text := runJSON(t, "", 0, "fabric-test", "schedule", "--inventory", inv)
	want := inv + `: schedule, 3 rounds of 4 pairs
  fabric f, Ethernet: 2 hosts
  fabric f, InfiniBand: 3 hosts
  fabric g, Ethernet: 1 host
round 1: e1-e2 n2-n3
round 2: n1-n3
round 3: n1-n2
left out: solo: the only host of fabric g, Ethernet: no peer to test with
`
	if diff := cmp.Diff(want, text); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
	out := runJSON(t, "", 0, "fabric-test", "schedule", "--inventory", inv, "-o", "json")
	doc := s.check(t, "schedule", "fabric_test_rounds", out)
	if len(doc["left_out"].([]any)) != 1 || len(doc["groups"].([]any)) != 3 {
		t.Errorf("%v", doc)
	}
	var d struct {
		Rounds []struct{ Pairs [][2]string }
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	wantRounds := [][][2]string{{{"e1", "e2"}, {"n2", "n3"}}, {{"n1", "n3"}}, {{"n1", "n2"}}}
	var got [][][2]string
	for _, r := range d.Rounds {
		got = append(got, r.Pairs)
	}
	if diff := cmp.Diff(wantRounds, got); diff != "" {
		t.Errorf("JSON rounds (-want +got):\n%s", diff)
	}
}

// TestFabricTestReportExitCodes: each Nagios code from its condition,
// the thresholds at their limits and one past (3, UNKNOWN), and bad
// input 3 for report, 1 for schedule and retest.
func TestFabricTestReportExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	inv := write("inv.yaml", "hosts:\n  - {name: a}\n  - {name: b}\n  - {name: c}\n  - {name: d}\n")
	good := write("good.json", `{"format_version": 1, "results": [
  {"hosts": ["a", "b"], "bandwidth_gbps": 400, "latency_us": 2},
  {"hosts": ["c", "d"], "bandwidth_gbps": 372, "latency_us": 4.2}]}`)
	partial := write("partial.json", `{"format_version": 1, "results": [{"hosts": ["a", "b"], "bandwidth_gbps": 400, "latency_us": 2}]}`)
	failed := write("failed.json", `{"format_version": 1, "results": [
  {"hosts": ["a", "b"], "bandwidth_gbps": 400, "latency_us": 2},
  {"hosts": ["c", "d"], "error": "ib_write_bw: Couldn't connect to d"}]}`)
	named := write("named.json", `{"format_version": 1, "results": [
  {"hosts": ["a", "b"], "bandwidth_gbps": 400, "latency_us": 2},
  {"hosts": ["c", "d"], "error": "ib_write_bw: Couldn't connect to d"},
  {"hosts": ["a", "d"], "bandwidth_gbps": 100, "latency_us": 2},
  {"hosts": ["b", "c"], "bandwidth_gbps": 399, "latency_us": 2}]}`)
	// d's runs with a and with c, both good with b, failed: d is not
	// measured, not bad.
	unmeasured := write("unmeasured.json", `{"format_version": 1, "results": [
  {"hosts": ["a", "b"], "bandwidth_gbps": 400, "latency_us": 2},
  {"hosts": ["b", "c"], "bandwidth_gbps": 399, "latency_us": 2},
  {"hosts": ["a", "d"], "error": "rdmaform probe: no result: d was not ready within 600 s"},
  {"hosts": ["c", "d"], "error": "rdmaform probe: no result: d was not ready within 600 s"}]}`)
	notInv := write("stranger.json", `{"format_version": 1, "results": [
  {"hosts": ["a", "z"], "bandwidth_gbps": 400, "latency_us": 2}]}`)
	// A results file of 16 MiB is read; one byte more is refused.
	goodText, _ := os.ReadFile(good)
	atLimit := write("at-limit.json", string(goodText)+strings.Repeat(" ", host.MaxLocalFile-len(goodText)))
	pastLimit := write("past-limit.json", string(goodText)+strings.Repeat(" ", host.MaxLocalFile-len(goodText)+1))
	report := func(args ...string) []string {
		return append([]string{"fabric-test", "report", "--inventory", inv}, args...)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{report("--results", good), 0, "FABRIC OK - 2 pairs, none bad"},
		{report("--results", good, "--min-bandwidth", "93.01"), 1, "FABRIC WARNING - 1 bad pair, 2 suspect hosts"},
		{report("--results", good, "--max-latency", "2.09"), 1, "FABRIC WARNING"},
		{report("--results", good, "--min-bandwidth", "100"), 1, "FABRIC WARNING"},
		{report("--results", good, "--min-bandwidth", "1", "--max-latency", "10"), 0, "FABRIC OK"},
		{report("--results", good, "--max-latency", "1"), 1, "FABRIC WARNING"},
		{report("--results", partial), 1, "FABRIC WARNING - 2 hosts with no result"},
		{report("--results", failed), 1, "bad pair c-d: not measured: ib_write_bw: Couldn't connect to d"},
		{report("--results", named), 2, "FABRIC CRITICAL - 1 bad host: d"},
		{report("--results", unmeasured), 1, "FABRIC WARNING - 1 host not measured: d | pairs=4 bad_pairs=2 bad_hosts=0 unmeasured=1\n"},
		{report("--results", unmeasured), 1, "not measured d: in no good pair, and not measured with a, which is good with another host: rdmaform probe: no result: d was not ready within 600 s\n"},
		{report("--results", unmeasured, named), 2, "FABRIC CRITICAL - 1 bad host: d"},
		{report("--results", good, "--min-bandwidth", "100.01"), 3, ""},
		{report("--results", good, "--min-bandwidth", "0.99"), 3, ""},
		{report("--results", good, "--max-latency", "10.01"), 3, ""},
		{report("--results", good, "--max-latency", "0.99"), 3, ""},
		{report("--results", good, "--max-latency", "x"), 3, ""},
		{report("--results", notInv), 3, ""},
		{report(), 3, ""},
		{report("--results", good, "extra"), 3, ""},
		{report("--results", partial, good), 0, "FABRIC OK - 2 pairs, none bad"},
		// The latest result of a pair counts: c-d measured well after
		// its error clears d, and a-d is a path between good hosts;
		// the other way round d is named.
		{report("--results", named, good), 1, "FABRIC WARNING - 1 bad path between good hosts"},
		{report("--results", good, named), 2, "FABRIC CRITICAL - 1 bad host: d"},
		{report("--results", atLimit), 0, "FABRIC OK"},
		{report("--results", pastLimit), 3, ""},
		{report("--results", good, "--no-such-flag"), 3, ""},
		{report("--results", good, "-o", "yaml"), 3, ""},
		{report("--results", filepath.Join(dir, "missing.json")), 3, ""},
		{[]string{"fabric-test", "retest", "--inventory", inv, "--results", good, "--min-bandwidth", "93.01"}, 0, "retest, 1 round of 2 pairs\n  the fabric with no name, no link layer given: 4 hosts\nround 1: c-a d-b\n"},
		{[]string{"fabric-test", "retest", "--inventory", inv, "--results", good}, 0, "retest, 0 rounds of 0 pairs\n"},
		{[]string{"fabric-test", "retest", "--inventory", inv, "--results", notInv}, 1, ""},
		{[]string{"fabric-test", "retest", "--inventory", inv, "--results", good, "--max-latency", "10.01"}, 1, ""},
		{[]string{"fabric-test", "schedule", "--inventory", filepath.Join(dir, "missing.yaml")}, 1, ""},
		{[]string{"fabric-test", "schedule"}, 1, ""},
	} {
		out := runJSON(t, "", tc.code, tc.args...)
		if !strings.Contains(out, tc.want) {
			t.Errorf("%v: stdout\n%s\nwant %q", tc.args[2:], out, tc.want)
		}
	}
	// The unmeasured host in JSON, as the schema says.
	rep := loadSchemas(t).check(t, "report, unmeasured", "fabric_test_report", runJSON(t, "", 1, report("--results", unmeasured, "-o", "json")...))
	if u, _ := rep["unmeasured"].([]any); len(u) != 1 || u[0].(map[string]any)["host"] != "d" || len(rep["bad_hosts"].([]any)) != 0 || len(rep["suspects"].([]any)) != 0 {
		t.Errorf("report -o json: unmeasured %v, bad hosts %v, suspects %v; want d unmeasured alone", rep["unmeasured"], rep["bad_hosts"], rep["suspects"])
	}
}

// TestFabricResultsSchemaAgrees: the results file's schema
// (fabric_test_results) accepts what fabric-test report reads and
// refuses what it refuses (exit 3), for the shapes the schema can say.
func TestFabricResultsSchemaAgrees(t *testing.T) {
	s := loadSchemas(t)
	sch, err := s.c.Compile(outputSchemaID + "#/$defs/fabric_test_results")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	inv := filepath.Join(dir, "inv.yaml")
	if err := os.WriteFile(inv, []byte("hosts:\n  - {name: a}\n  - {name: b}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	row := func(r string) string { return `{"format_version": 1, "results": [` + r + `]}` }
	for _, tc := range []struct {
		doc  string
		exit int // 3: refused
	}{
		{row(`{"hosts": ["a", "b"], "bandwidth_gbps": 100000, "latency_us": 10000000}`), 0},
		{row(`{"hosts": ["a", "b"], "error": "ib_write_bw failed"}`), 1},
		{row(`{"hosts": ["a", "b"], "bandwidth_gbps": 100000.5, "latency_us": 1}`), 3},
		{row(`{"hosts": ["a", "b"], "bandwidth_gbps": 1, "latency_us": 10000001}`), 3},
		{row(`{"hosts": ["a", "b"], "bandwidth_gbps": 0, "latency_us": 1}`), 3},
		{row(`{"hosts": ["a", "b"], "bandwidth_gbps": 1}`), 3},
		{row(`{"hosts": ["a", "b"], "bandwidth_gbps": 1, "latency_us": 1, "error": "x"}`), 3},
		{row(`{"hosts": ["a", "b"], "error": ""}`), 3},
		{row(`{"hosts": ["a"], "error": "x"}`), 3},
		{row(`{"hosts": ["a", "b"], "error": "x", "x": 1}`), 3},
		{`{"format_version": 2, "results": []}`, 3},
		{`{"results": []}`, 3},
	} {
		inst, err := jsonschemaUnmarshal(tc.doc)
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(inst); (err == nil) != (tc.exit != 3) {
			t.Errorf("schema: %s: %v, want ok=%v", tc.doc, err, tc.exit != 3)
		}
		file := filepath.Join(dir, "r.json")
		if err := os.WriteFile(file, []byte(tc.doc), 0o644); err != nil {
			t.Fatal(err)
		}
		runJSON(t, "", tc.exit, "fabric-test", "report", "--inventory", inv, "--results", file, "-o", "json")
	}
}

// TestFabricTestStatusLine: the text report's status line names at most
// 10 hosts (then how many more), the lines under it all of them; a
// CRITICAL line says how many hosts were not measured besides.
func TestFabricTestStatusLine(t *testing.T) {
	dir := t.TempDir()
	inv := "hosts:\n  - {name: g1}\n  - {name: g2}\n  - {name: slow}\n"
	for i := 1; i <= 11; i++ {
		inv += fmt.Sprintf("  - {name: u%02d}\n", i)
	}
	invFile := filepath.Join(dir, "inv.yaml")
	if err := os.WriteFile(invFile, []byte(inv), 0o644); err != nil {
		t.Fatal(err)
	}
	results := func(name string, unmeasured int, slow bool) string {
		rs := []string{`{"hosts": ["g1", "g2"], "bandwidth_gbps": 400, "latency_us": 2}`}
		for i := 1; i <= unmeasured; i++ {
			rs = append(rs, fmt.Sprintf(`{"hosts": ["g1", "u%02d"], "error": "no result: u%02d was not ready at the barrier within 600s"}`, i, i))
		}
		if slow {
			rs = append(rs, `{"hosts": ["g2", "slow"], "bandwidth_gbps": 100, "latency_us": 2}`)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(`{"format_version": 1, "results": [`+strings.Join(rs, ",\n")+"]}"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ten := "u01 u02 u03 u04 u05 u06 u07 u08 u09 u10"
	for _, tc := range []struct {
		file        string
		code, lines int
		first       string
	}{
		{results("ten.json", 10, false), 1, 10, "FABRIC WARNING - 10 hosts not measured: " + ten + " | "},
		{results("eleven.json", 11, false), 1, 11, "FABRIC WARNING - 11 hosts not measured: " + ten + " and 1 more | "},
		{results("slow.json", 11, true), 2, 11, "FABRIC CRITICAL - 1 bad host: slow, 11 not measured | "},
	} {
		out := runJSON(t, "", tc.code, "fabric-test", "report", "--inventory", invFile, "--results", tc.file)
		if !strings.HasPrefix(out, tc.first) {
			t.Errorf("%s: status line %q, want %q...", filepath.Base(tc.file), strings.SplitN(out, "\n", 2)[0], tc.first)
		}
		if n := strings.Count(out, "\nnot measured u"); n != tc.lines {
			t.Errorf("%s: %d hosts under the status line, want %d\n%s", filepath.Base(tc.file), n, tc.lines, out)
		}
	}
}
