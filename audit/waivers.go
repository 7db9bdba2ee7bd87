package audit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/rdmaform/rdmaform/schema"
)

// Waiver is a known exception: a check of a resource that may fail (or
// wait for a reboot) until a date, for a reason. A waiver file is a YAML
// list:
//
//   - {resource: "rdma_cm[mlx5_0/1]", check: drift, reason: "vendor case 123", expires: 2027-01-31}
//
// check "*" waives every check of the resource. A waiver holds through
// its expiry date and lapses the day after; a lapsed waiver leaves the
// check failing and says so.
type Waiver struct {
	Resource string
	Check    string
	Reason   string
	// Expires is the last day the waiver holds, YYYY-MM-DD.
	Expires string
	Pos     schema.Pos
}

const dateLayout = "2006-01-02"

// knownChecks are the check names a waiver may name.
var knownChecks = append([]string{"*"}, checkOrder...)

// LoadWaivers reads a waiver file, reporting every problem with its
// position (unknown keys, missing fields, dates that are not dates).
func LoadWaivers(file string, data []byte) ([]Waiver, schema.Report) {
	var rep schema.Report
	add := func(path string, n *yaml.Node, format string, args ...any) {
		pos := schema.Pos{File: file, Line: 1, Col: 1}
		if n != nil && n.Line > 0 {
			pos.Line, pos.Col = n.Line, n.Column
		}
		rep = append(rep, schema.Finding{Path: path, Pos: pos, Message: fmt.Sprintf(format, args...)})
	}
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil // an empty file waives nothing
		}
		add("$", nil, "invalid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
		return nil, rep
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil, nil
	}
	if root.Kind != yaml.SequenceNode {
		add("$", root, "a waiver file is a list of {resource, check, reason, expires}")
		return nil, rep
	}
	var out []Waiver
	for i, item := range root.Content {
		p := fmt.Sprintf("$[%d]", i)
		if item.Kind != yaml.MappingNode {
			add(p, item, "a waiver is a mapping of resource, check, reason, expires")
			continue
		}
		w := Waiver{Pos: schema.Pos{File: file, Line: item.Line, Col: item.Column}}
		fields := map[string]*string{"resource": &w.Resource, "check": &w.Check, "reason": &w.Reason, "expires": &w.Expires}
		seen := map[string]bool{}
		for j := 0; j+1 < len(item.Content); j += 2 {
			k, v := item.Content[j], item.Content[j+1]
			dst, ok := fields[k.Value]
			switch {
			case !ok:
				add(p+"."+k.Value, k, "unknown key %q; a waiver has resource, check, reason, expires", k.Value)
				continue
			case seen[k.Value]:
				add(p+"."+k.Value, k, "duplicate key %q", k.Value)
				continue
			case v.Kind != yaml.ScalarNode || v.Tag == "!!null":
				add(p+"."+k.Value, v, "must be a value")
				continue
			}
			seen[k.Value] = true
			*dst = v.Value
		}
		bad := false
		for _, k := range []string{"resource", "check", "reason", "expires"} {
			if strings.TrimSpace(*fields[k]) == "" {
				add(p, item, "%s: is required", k)
				bad = true
			}
		}
		if w.Check != "" && !contains(knownChecks, w.Check) {
			add(p+".check", item, "unknown check %q (known: %s)", w.Check, strings.Join(knownChecks, ", "))
			bad = true
		}
		if w.Expires != "" {
			if _, err := time.Parse(dateLayout, w.Expires); err != nil {
				add(p+".expires", item, "%q is not a date (YYYY-MM-DD)", w.Expires)
				bad = true
			}
		}
		if !bad {
			out = append(out, w)
		}
	}
	rep.Sort()
	return out, rep
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func (w Waiver) matches(r Result) bool {
	return w.Resource == r.Resource && (w.Check == "*" || w.Check == r.Check)
}

// Current reports whether the waiver holds on the date of now (in UTC):
// through its expiry day.
func (w Waiver) Current(now time.Time) bool {
	return now.UTC().Format(dateLayout) <= w.Expires
}

// applyWaivers marks failing and pending results that a current waiver
// covers as waived; a lapsed waiver is attached to the result, which keeps
// failing. It returns a warning for each waiver that matched nothing
// (the check passes now, or the resource is gone: the waiver can go).
func applyWaivers(rs []Result, ws []Waiver, now time.Time) []string {
	used := make([]bool, len(ws))
	for i := range rs {
		r := &rs[i]
		if r.Status == Pass {
			continue
		}
		best := -1
		for j, w := range ws {
			if !w.matches(*r) {
				continue
			}
			used[j] = true
			// A current waiver wins over a lapsed one; then the latest.
			if best < 0 || (w.Current(now) && !ws[best].Current(now)) ||
				(w.Current(now) == ws[best].Current(now) && w.Expires > ws[best].Expires) {
				best = j
			}
		}
		if best < 0 {
			continue
		}
		w := ws[best]
		r.Waiver = &AppliedWaiver{Reason: w.Reason, Expires: w.Expires, Expired: !w.Current(now)}
		if w.Current(now) {
			r.Status = Waived
		}
	}
	var warnings []string
	for j, w := range ws {
		if !used[j] {
			warnings = append(warnings, fmt.Sprintf("%s: waiver for %s %s matches no failing check; it can be removed", w.Pos, w.Resource, w.Check))
		}
	}
	return warnings
}
