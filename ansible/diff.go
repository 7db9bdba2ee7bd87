package ansible

import (
	"fmt"
	"strings"

	"github.com/rdmaform/rdmaform/plan"
)

// DiffItem is one resource's before/after in Ansible's diff format; a
// list of them is shown as one unified diff per resource with --diff.
type DiffItem struct {
	BeforeHeader string `json:"before_header"`
	AfterHeader  string `json:"after_header"`
	Before       string `json:"before"`
	After        string `json:"after"`
}

// Diff renders each change of the plan from its attributes: "name: value"
// lines, empty before a create and after a delete. Changes staged for the
// next boot say so in the after header.
func Diff(p *plan.Plan) []DiffItem {
	out := []DiffItem{}
	for _, c := range p.Changes {
		var before, after strings.Builder
		for _, a := range c.Attributes {
			if c.Action != plan.Create && a.Before != "" {
				fmt.Fprintf(&before, "%s: %s\n", a.Name, a.Before)
			}
			if c.Action != plan.Delete && a.After != "" {
				fmt.Fprintf(&after, "%s: %s\n", a.Name, a.After)
			}
		}
		d := DiffItem{
			BeforeHeader: c.Address.String() + " (host)",
			AfterHeader:  c.Address.String() + " (spec)",
			Before:       before.String(),
			After:        after.String(),
		}
		switch c.Action {
		case plan.Create:
			d.BeforeHeader = c.Address.String() + " (absent)"
		case plan.Delete:
			d.AfterHeader = c.Address.String() + " (absent)"
		}
		if l := c.Activation.Label(); l != "" {
			d.AfterHeader += ", " + l
		}
		out = append(out, d)
	}
	return out
}
