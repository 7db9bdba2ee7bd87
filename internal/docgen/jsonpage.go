package docgen

import (
	"fmt"
	"regexp"
	"strings"
)

var (
	beginRE = regexp.MustCompile(`^<!-- BEGIN GENERATED: schema (\S+)\b.* -->$`)
	endRE   = regexp.MustCompile(`^<!-- END GENERATED -->$`)
)

// jsonPage is docs/reference/json.md: the committed page, whose prose is
// written by hand, with each generated part (between BEGIN GENERATED and
// END GENERATED comments) made again from the output schema js. A part
// names a definition ($defs) of the schema, or "shapes": every
// definition no other part shows.
func jsonPage(page, js []byte) ([]byte, error) {
	root, err := parseJSON(js)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", OutputSchemaFile, err)
	}
	defs := root.get("$defs")
	if defs == nil || len(defs.keys) == 0 {
		return nil, fmt.Errorf("%s has no $defs", OutputSchemaFile)
	}
	// First pass: the parts and which definitions they show.
	type part struct {
		name       string
		begin, end int // line numbers, 0-based
	}
	var parts []part
	lines := strings.Split(string(page), "\n")
	shown := map[string]bool{}
	for i := 0; i < len(lines); i++ {
		m := beginRE.FindStringSubmatch(lines[i])
		if m == nil {
			if endRE.MatchString(lines[i]) {
				return nil, fmt.Errorf("json.md:%d: END GENERATED without a BEGIN", i+1)
			}
			continue
		}
		p := part{name: m[1], begin: i}
		for j := i + 1; j < len(lines); j++ {
			if beginRE.MatchString(lines[j]) {
				return nil, fmt.Errorf("json.md:%d: BEGIN GENERATED inside the part that begins at line %d", j+1, i+1)
			}
			if endRE.MatchString(lines[j]) {
				p.end = j
				break
			}
		}
		if p.end == 0 {
			return nil, fmt.Errorf("json.md:%d: BEGIN GENERATED: schema %s has no END GENERATED", i+1, p.name)
		}
		if p.name != "shapes" {
			if defs.get(p.name) == nil {
				return nil, fmt.Errorf("json.md:%d: %s has no definition %q", i+1, OutputSchemaFile, p.name)
			}
			if shown[p.name] {
				return nil, fmt.Errorf("json.md:%d: definition %q is shown twice", i+1, p.name)
			}
			shown[p.name] = true
		}
		parts = append(parts, p)
		i = p.end
	}
	shapes := 0
	for _, p := range parts {
		if p.name == "shapes" {
			shapes++
		}
	}
	if shapes != 1 {
		var rest []string
		for _, k := range defs.keys {
			if !shown[k] {
				rest = append(rest, k)
			}
		}
		if shapes > 1 || len(rest) > 0 {
			return nil, fmt.Errorf("json.md needs exactly one part 'schema shapes' (has %d) for the definitions no other part shows: %s", shapes, strings.Join(rest, ", "))
		}
	}
	d := describer{ref: func(r string) string {
		name := strings.TrimPrefix(r, "#/$defs/")
		return fmt.Sprintf("[%s](#%s)", code(name), anchor("json-", name))
	}}
	var out []string
	last := 0
	for _, p := range parts {
		out = append(out, lines[last:p.begin+1]...)
		var body strings.Builder
		if p.name == "shapes" {
			for _, k := range defs.keys {
				if shown[k] {
					continue
				}
				fmt.Fprintf(&body, "### %s\n\n", code(k))
				writeDef(&body, d, k, defs.get(k))
			}
		} else {
			writeDef(&body, d, p.name, defs.get(p.name))
		}
		out = append(out, strings.Split(strings.TrimRight(body.String(), "\n")+"\n", "\n")...)
		out = append(out, lines[p.end])
		last = p.end + 1
	}
	out = append(out, lines[last:]...)
	return []byte(strings.Join(out, "\n")), nil
}

// writeDef writes a definition: its anchor, its description, and a table
// of its fields (inline objects' fields as a.b, lists' as a[].b), or for
// a definition that is no object its type and values.
func writeDef(b *strings.Builder, d describer, name string, n *node) {
	fmt.Fprintf(b, "<a id=%q></a>\n\n", anchor("json-", name))
	if desc := n.str("description"); desc != "" {
		b.WriteString(desc + "\n\n")
	}
	if n.get("properties") == nil {
		d.object = func(*node) string { return "object" }
		fmt.Fprintf(b, "%s: %s", code(name), d.typ(n))
		if l := limits(n); len(l) > 0 {
			fmt.Fprintf(b, "; %s", strings.Join(l, "; "))
		}
		b.WriteString(".\n\n")
		return
	}
	type row struct{ field, typ, req, values, desc string }
	var rows []row
	described := false
	var collect func(prefix string, n *node)
	collect = func(prefix string, n *node) {
		props := n.get("properties")
		required := map[string]bool{}
		for _, r := range n.strs("required") {
			required[r] = true
		}
		for _, k := range props.keys {
			p := props.members[k]
			field := prefix + k
			d.object = func(*node) string { return "object" }
			r := row{field: code(field), typ: cell(d.typ(p)), values: cell(strings.Join(limits(p), "; ")), desc: cell(p.str("description"))}
			if required[k] {
				r.req = "yes"
			}
			described = described || r.desc != ""
			rows = append(rows, r)
			switch it := p.get("items"); {
			case p.get("properties") != nil:
				collect(field+".", p)
			case it != nil && it.get("properties") != nil:
				collect(field+"[].", it)
			}
		}
	}
	collect("", n)
	// The description column only when a field has one.
	if described {
		b.WriteString("| field | type | required | values | description |\n| --- | --- | --- | --- | --- |\n")
	} else {
		b.WriteString("| field | type | required | values |\n| --- | --- | --- | --- |\n")
	}
	for _, r := range rows {
		if described {
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", r.field, r.typ, r.req, r.values, r.desc)
		} else {
			fmt.Fprintf(b, "| %s | %s | %s | %s |\n", r.field, r.typ, r.req, r.values)
		}
	}
	b.WriteString("\n")
}
