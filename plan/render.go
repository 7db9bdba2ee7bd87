package plan

import (
	"fmt"
	"io"
	"strings"

	"github.com/rdmaform/rdmaform/internal/words"
)

// TextOptions control the human rendering.
type TextOptions struct {
	Color bool // ANSI colours; only when writing to a terminal
}

const (
	addrWidth  = 45
	labelWidth = 15
)

var colors = map[string]string{
	"+": "\x1b[32m", "~": "\x1b[33m", "-": "\x1b[31m", "!": "\x1b[36m", "?": "\x1b[35m", "E": "\x1b[1;31m",
}

const reset = "\x1b[0m"

// WriteText renders the plan for people. It works from the same data the
// JSON form carries, so the two never drift.
func WriteText(w io.Writer, p *Plan, o TextOptions) error {
	var b strings.Builder
	mark := func(sym string) string {
		if o.Color {
			return colors[sym] + sym + reset
		}
		return sym
	}
	for _, f := range p.Errors {
		if o.Color {
			fmt.Fprintf(&b, "%s%s%s\n", colors["E"], f.String(), reset)
		} else {
			fmt.Fprintf(&b, "%s\n", f.String())
		}
	}
	if len(p.Errors) > 0 {
		b.WriteString("\n")
	}
	for _, c := range p.Changes {
		addr := c.Address.String()
		if len(addr) < addrWidth {
			addr += strings.Repeat(" ", addrWidth-len(addr))
		} else {
			addr += " "
		}
		line := fmt.Sprintf("  %s %s%-*s", mark(c.Action.Symbol()), addr, labelWidth, c.Activation.Label())
		if c.Source != nil && c.Source.Line > 0 {
			line += "# " + c.Source.String()
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
		for _, a := range c.Attributes {
			v := TextValues(a.Before, a.After)
			switch {
			case c.Action == Create || a.Before == "":
				fmt.Fprintf(&b, "      %s: %s\n", a.Name, v[1])
			case c.Action == Delete || a.After == "":
				fmt.Fprintf(&b, "      %s: %s -> (none)\n", a.Name, v[0])
			default:
				fmt.Fprintf(&b, "      %s: %s -> %s\n", a.Name, v[0], v[1])
			}
		}
		if len(c.DependsOn) > 0 {
			fmt.Fprintf(&b, "      (after %s)\n", JoinAddrs(c.DependsOn, ", "))
		}
	}
	for _, pe := range p.Pending {
		fmt.Fprintf(&b, "  %s %s\n", mark("!"), pe.Text())
	}
	for _, d := range p.Deferred {
		fmt.Fprintf(&b, "  %s %s %s\n", mark("?"), d.Address, d.Reason)
	}
	if len(p.Changes)+len(p.Pending)+len(p.Deferred) > 0 {
		b.WriteString("\n")
	}
	b.WriteString(SummaryLine(p) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// SummaryLine is the one function that words a plan's summary.
func SummaryLine(p *Plan) string {
	s := p.Summary
	if len(p.Errors) > 0 {
		n := len(p.Errors)
		return fmt.Sprintf("Plan failed: %d %s. Nothing will be changed.", n, words.Plural(n, "error", "errors"))
	}
	left := ""
	if n := len(p.LeftOut); n > 0 {
		// A partial plan (apply --only) never says the host matches:
		// the changes it leaves out are still to be made.
		left = fmt.Sprintf(" Left for an apply without --only: %d %s (%s).", n, words.Plural(n, "change", "changes"), LeftOutText(p.LeftOut))
	}
	if len(p.Changes) == 0 && len(p.Pending) == 0 && len(p.Deferred) == 0 {
		if left != "" {
			return fmt.Sprintf("No %s changes.", p.Only) + left
		}
		return "No changes. The host matches the spec."
	}
	line := fmt.Sprintf("Plan: %d to add, %d to change, %d to remove.", s.Add, s.Change, s.Remove)
	if p.Only != "" {
		line = fmt.Sprintf("Plan (%s changes only): %d to add, %d to change, %d to remove.", p.Only, s.Add, s.Change, s.Remove)
	}
	if s.RebootRequired {
		line += " Reboot required."
	} else if len(p.Deferred) > 0 {
		line += fmt.Sprintf(" %d deferred until a reboot.", len(p.Deferred))
	}
	return line + left
}
