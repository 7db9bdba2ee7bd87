package docgen

import (
	"fmt"
	"regexp"
	"strings"
)

// describer turns JSON Schema nodes into the words of a reference table.
type describer struct {
	// ref is the text for a $ref ("#/$defs/position").
	ref func(ref string) string
	// object is the text for an inline object with properties.
	object func(n *node) string
}

// typ is what kind of value a node allows: "integer", "list of string",
// "boolean or mapping", a link to a definition or a section.
func (d describer) typ(n *node) string {
	if n == nil {
		return "any"
	}
	if r := n.str("$ref"); r != "" {
		return d.ref(r)
	}
	if c := n.get("const"); c != nil {
		return kindOf(c)
	}
	if alts := n.get("anyOf"); alts != nil {
		var parts []string
		for _, a := range alts.items {
			if a.str("type") == "null" {
				continue
			}
			parts = append(parts, d.typ(a))
		}
		return strings.Join(parts, " or ")
	}
	var types []string
	for _, t := range n.strs("type") {
		if t != "null" {
			types = append(types, t)
		}
	}
	if len(types) == 0 {
		if e := n.get("enum"); e != nil {
			for _, v := range e.items {
				if v.val != nil {
					return kindOf(v)
				}
			}
		}
		return "any"
	}
	var parts []string
	for _, t := range types {
		switch t {
		case "array":
			if it := n.get("items"); it != nil {
				parts = append(parts, "list of "+d.typ(it))
			} else {
				parts = append(parts, "list")
			}
		case "object":
			switch ap := n.get("additionalProperties"); {
			case n.get("properties") != nil:
				parts = append(parts, d.object(n))
			case ap != nil && ap.isObj:
				parts = append(parts, "mapping to "+d.typ(ap))
			default:
				parts = append(parts, "mapping")
			}
		default:
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, " or ")
}

// kindOf is the JSON type of a literal.
func kindOf(v *node) string {
	switch x := v.val.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case nil:
		return "null"
	default:
		if strings.ContainsAny(fmt.Sprint(x), ".eE") {
			return "number"
		}
		return "integer"
	}
}

// limits are a node's constraints: the constant, enum values, bounds,
// lengths, patterns, and those of its items, keys, values and
// alternatives.
func limits(n *node) []string {
	if n == nil {
		return nil
	}
	var out []string
	if c := n.get("const"); c != nil {
		out = append(out, "always "+code(c.literal()))
	}
	if e := n.get("enum"); e != nil {
		var vals []string
		for _, v := range e.items {
			if v.val != nil {
				vals = append(vals, code(v.text()))
			}
		}
		out = append(out, "one of "+strings.Join(vals, ", "))
	}
	lo, hi := n.get("minimum"), n.get("maximum")
	switch {
	case lo != nil && hi != nil:
		out = append(out, fmt.Sprintf("%s to %s", lo.literal(), hi.literal()))
	case lo != nil:
		out = append(out, "at least "+lo.literal())
	case hi != nil:
		out = append(out, "at most "+hi.literal())
	}
	if m := n.get("minLength"); m != nil {
		out = append(out, atLeast(m, "characters"))
	}
	if m := n.get("maxLength"); m != nil {
		out = append(out, "at most "+m.literal()+" characters")
	}
	if m := n.get("minItems"); m != nil {
		out = append(out, atLeast(m, "items"))
	}
	if m := n.get("maxItems"); m != nil {
		out = append(out, "at most "+m.literal()+" items")
	}
	if f := n.str("format"); f != "" {
		out = append(out, "format "+f)
	}
	if p := n.str("pattern"); p != "" {
		out = append(out, "matches "+code(p))
	}
	if pn := n.get("propertyNames"); pn != nil {
		for _, l := range limits(pn) {
			out = append(out, "keys: "+l)
		}
	}
	if ap := n.get("additionalProperties"); ap != nil && ap.isObj {
		for _, l := range limits(ap) {
			out = append(out, "values: "+l)
		}
	}
	if it := n.get("items"); it != nil && it.get("properties") == nil {
		for _, l := range limits(it) {
			out = append(out, "each: "+l)
		}
	}
	if alts := n.get("anyOf"); alts != nil {
		for _, a := range alts.items {
			if a.get("properties") != nil {
				continue
			}
			if l := limits(a); len(l) > 0 {
				out = append(out, altName(a)+": "+strings.Join(l, ", "))
			}
		}
	}
	return out
}

// atLeast says a minimum length: "not empty" for a string of 1, "at
// least 1 item" for a list.
func atLeast(m *node, what string) string {
	switch {
	case m.literal() == "1" && what == "characters":
		return "not empty"
	case m.literal() == "1":
		return "at least 1 item"
	}
	return "at least " + m.literal() + " " + what
}

// altName names an alternative of anyOf by its type.
func altName(a *node) string {
	if t := a.strs("type"); len(t) > 0 {
		return strings.Join(t, " or ")
	}
	return "value"
}

// code is s as inline code, with a fence long enough for the backticks
// it holds.
func code(s string) string {
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

var spaceRE = regexp.MustCompile(`\s+`)

// cell is s made fit for a table cell: on one line, | escaped.
func cell(s string) string {
	return strings.ReplaceAll(spaceRE.ReplaceAllString(strings.TrimSpace(s), " "), "|", `\|`)
}

// anchor is an HTML id made of s: lowercase letters, digits and -.
func anchor(prefix, s string) string {
	var b strings.Builder
	b.WriteString(prefix)
	dash := true
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}
