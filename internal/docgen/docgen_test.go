package docgen

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sources reads the committed files the pages are made from.
func sources(t *testing.T) Sources {
	t.Helper()
	var src Sources
	for f, dst := range map[string]*[]byte{JSONPageFile: &src.JSONPage, OutputSchemaFile: &src.OutputSchema} {
		b, err := os.ReadFile(filepath.Join("../..", f))
		if err != nil {
			t.Fatal(err)
		}
		*dst = b
	}
	return src
}

// TestReferenceCurrent: every page of docs/reference that make docs
// writes is what the code gives now. A change to the spec's types, a
// command, a flag, an output schema, an exit code or a metric without
// make docs fails here.
func TestReferenceCurrent(t *testing.T) {
	pages, err := Pages(sources(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		file := filepath.Join("docs", "reference", p.Name)
		committed, err := os.ReadFile(filepath.Join("../..", file))
		if err != nil {
			t.Errorf("%v: run make docs", err)
			continue
		}
		if diff := cmp.Diff(string(committed), string(p.Data)); diff != "" {
			t.Errorf("%s is stale: run make docs (-committed +generated):\n%s", file, diff)
		}
	}
	for _, want := range []string{"spec.md", "commands.md", "json.md", "exit-codes.md", "metrics.md"} {
		found := false
		for _, p := range pages {
			found = found || p.Name == want
		}
		if !found {
			t.Errorf("make docs does not write docs/reference/%s", want)
		}
	}
}

// TestPagesDeterministic: two runs give the same pages, whatever the
// environment says (no dates, no host names, no environment defaults).
func TestPagesDeterministic(t *testing.T) {
	a, err := Pages(sources(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("NODE_NAME", "node-from-env")
	t.Setenv("POD_NAMESPACE", "ns-from-env")
	t.Setenv("SOURCE_DATE_EPOCH", "1")
	b, err := Pages(sources(t))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, b, cmp.AllowUnexported(Page{})); diff != "" {
		t.Errorf("two runs differ:\n%s", diff)
	}
	for _, p := range b {
		for _, leak := range []string{"node-from-env", "ns-from-env", "1970"} {
			if strings.Contains(string(p.Data), leak) {
				t.Errorf("%s holds %q from the environment", p.Name, leak)
			}
		}
	}
}

// TestSpecPageNeedsDescriptions: the spec page refuses a schema with a
// key that says nothing, naming each such key by its path, nested ones
// and those under a list or an alternative too.
func TestSpecPageNeedsDescriptions(t *testing.T) {
	js := `{"type": "object", "properties": {
	  "said": {"description": "documented", "type": "string"},
	  "bare": {"type": "integer"},
	  "list": {"description": "a list", "type": "array", "items": {"type": "object", "properties": {
	    "inner": {"type": "string"},
	    "fine": {"description": "fine", "type": "string"}}}},
	  "either": {"description": "true or a mapping", "anyOf": [{"type": "boolean"}, {"type": "object", "properties": {
	    "quiet": {"description": " ", "type": "integer"}}}]}}}`
	_, err := specPage([]byte(js))
	if err == nil {
		t.Fatal("no error for three keys without a description")
	}
	for _, want := range []string{"3 key(s)", "$.bare", "$.list[].inner", "$.either.quiet"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	for _, quiet := range []string{"said", "fine"} {
		if strings.Contains(err.Error(), quiet) {
			t.Errorf("error %q names %s, which has a description", err, quiet)
		}
	}
	page, err := specPage([]byte(`{"type": "object", "properties": {"said": {"description": "documented", "type": ["integer", "null"], "minimum": 1, "maximum": 9, "default": 3}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if row := "| `said` | integer |  | 1 to 9 | `3` | documented |"; !strings.Contains(string(page), row) {
		t.Errorf("page lacks the row %s:\n%s", row, page)
	}
}

// TestJSONPageParts: json.md's generated parts name definitions of the
// output schema; an unknown one, an unclosed part, or a definition no
// part shows (without a shapes part) is an error.
func TestJSONPageParts(t *testing.T) {
	js := []byte(`{"$defs": {
	  "doc": {"type": "object", "required": ["a"], "properties": {"a": {"$ref": "#/$defs/shape"}, "b": {"type": "array", "items": {"type": "object", "properties": {"c": {"enum": ["x", "y"]}}}}}},
	  "shape": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "description": "a count"}}}}}`)
	begin := func(name string) string { return "<!-- BEGIN GENERATED: schema " + name + " -->" }
	const end = "<!-- END GENERATED -->"
	for _, c := range []struct {
		name, page, says string
	}{
		{"unknown definition", begin("nope") + "\n" + end + "\n" + begin("shapes") + "\n" + end + "\n", `has no definition "nope"`},
		{"no end", "prose\n" + begin("doc") + "\nold\n", "has no END GENERATED"},
		{"end alone", "prose\n" + end + "\n", "END GENERATED without a BEGIN"},
		{"shown twice", begin("doc") + "\n" + end + "\n" + begin("doc") + "\n" + end + "\n" + begin("shapes") + "\n" + end + "\n", `"doc" is shown twice`},
		{"no shapes part", begin("doc") + "\n" + end + "\n", "definitions no other part shows: shape"},
	} {
		if _, err := jsonPage([]byte(c.page), js); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.says)
		}
	}
	page := "# Doc\n\nProse.\n\n" + begin("doc") + "\nstale\n" + end + "\n\nMore prose.\n\n" + begin("shapes") + "\n" + end + "\n"
	got, err := jsonPage([]byte(page), js)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Prose.\n\n" + begin("doc") + "\n<a id=\"json-doc\"></a>\n",
		// No field of doc has a description: no such column.
		"| field | type | required | values |\n",
		"| `a` | [`shape`](#json-shape) | yes |  |\n",
		"| `b[].c` | string |  | one of `x`, `y` |\n",
		"\n" + end + "\n\nMore prose.\n",
		"### `shape`\n\n<a id=\"json-shape\"></a>\n",
		"| `n` | integer |  | at least 0 | a count |\n",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("page lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(string(got), "stale") {
		t.Errorf("the old part is still there:\n%s", got)
	}
	again, err := jsonPage(got, js)
	if err != nil || string(again) != string(got) {
		t.Errorf("a second run changes the page (err %v):\n%s", err, again)
	}
}

// TestReferenceLinks: every link of a generated page to a page of
// docs/reference, or to an anchor, finds its page and its <a id>.
func TestReferenceLinks(t *testing.T) {
	pages, err := Pages(sources(t))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]map[string]bool{}
	idRE := regexp.MustCompile(`<a id="([^"]+)"></a>`)
	for _, p := range pages {
		ids[p.Name] = map[string]bool{}
		for _, m := range idRE.FindAllStringSubmatch(string(p.Data), -1) {
			if ids[p.Name][m[1]] {
				t.Errorf("%s: id %q twice", p.Name, m[1])
			}
			ids[p.Name][m[1]] = true
		}
	}
	linkRE := regexp.MustCompile(`\]\(([a-z-]*\.md)?(?:#([^)]+))?\)`)
	n := 0
	for _, p := range pages {
		for _, m := range linkRE.FindAllStringSubmatch(string(p.Data), -1) {
			target, id := m[1], m[2]
			if target == "" {
				target = p.Name
			}
			n++
			page, ok := ids[target]
			switch {
			case !ok:
				t.Errorf("%s links to %s, which make docs does not write", p.Name, target)
			case id != "" && !page[id]:
				t.Errorf("%s links to %s#%s, which has no such anchor", p.Name, target, id)
			}
		}
	}
	if n < 50 {
		t.Errorf("only %d links checked", n)
	}
}
