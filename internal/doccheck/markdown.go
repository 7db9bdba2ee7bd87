// Package doccheck reads the project's Markdown (README.md and docs/) for
// its tests: the fenced blocks with their info strings, the headings'
// anchors as GitHub makes them, and the links. The tests in this package
// validate every YAML block, plan every spec block on the simulated host
// it names, run every console block marked "run" with the built binary,
// and check every link inside the repository (docs/architecture/testing-labs.md,
// "The documentation's tests").
package doccheck

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Block is a fenced code block.
type Block struct {
	Line int      // 1-based line of the opening fence
	Lang string   // first word of the info string ("yaml", "console")
	Tags []string // the info string's other words ("fragment", "run", "file=PATH")
	Text string   // the content, the fence's indentation removed
}

// Tag reports whether the block's info string has the word tag.
func (b Block) Tag(tag string) bool {
	for _, t := range b.Tags {
		if t == tag {
			return true
		}
	}
	return false
}

// Value is the value of a key=value word of the info string.
func (b Block) Value(key string) (string, bool) {
	for _, t := range b.Tags {
		if v, ok := strings.CutPrefix(t, key+"="); ok {
			return v, true
		}
	}
	return "", false
}

var fenceRE = regexp.MustCompile("^( *)(```+|~~~+)(.*)$")

// Blocks returns the fenced code blocks of a Markdown text, and an error
// for a fence that is never closed.
func Blocks(text string) ([]Block, error) {
	lines := strings.Split(text, "\n")
	var out []Block
	for i := 0; i < len(lines); i++ {
		m := fenceRE.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent, fence := len(m[1]), m[2]
		words := strings.Fields(m[3])
		b := Block{Line: i + 1}
		if len(words) > 0 {
			b.Lang, b.Tags = words[0], words[1:]
		}
		var body []string
		closed := false
		for i++; i < len(lines); i++ {
			t := strings.TrimLeft(lines[i], " ")
			if strings.HasPrefix(t, fence) && strings.TrimSpace(strings.TrimLeft(t, fence[:1])) == "" {
				closed = true
				break
			}
			l := lines[i]
			for k := 0; k < indent && strings.HasPrefix(l, " "); k++ {
				l = l[1:]
			}
			body = append(body, l)
		}
		if !closed {
			return out, fmt.Errorf("line %d: the fence %s is never closed", b.Line, fence)
		}
		b.Text = strings.Join(body, "\n")
		if len(body) > 0 {
			b.Text += "\n"
		}
		out = append(out, b)
	}
	return out, nil
}

// prose is text with its fenced blocks blanked out (the lines kept, so
// that line numbers stay) and, unless keepSpans, its inline code spans
// removed.
func prose(text string, keepSpans bool) []string {
	lines := strings.Split(text, "\n")
	fence := ""
	for i, l := range lines {
		m := fenceRE.FindStringSubmatch(l)
		switch {
		case fence == "" && m != nil:
			fence = m[2]
			lines[i] = ""
		case fence != "":
			if t := strings.TrimLeft(l, " "); strings.HasPrefix(t, fence) && strings.TrimSpace(strings.TrimLeft(t, fence[:1])) == "" {
				fence = ""
			}
			lines[i] = ""
		case !keepSpans:
			lines[i] = codeSpan.ReplaceAllString(l, "")
		}
	}
	return lines
}

var codeSpan = regexp.MustCompile("`[^`]*`")

// Link is a Markdown link or image target outside code.
type Link struct {
	Line   int
	Target string
}

var linkRE = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// Links returns the inline links of a Markdown text, outside code blocks
// and code spans.
func Links(text string) []Link {
	var out []Link
	for i, l := range prose(text, false) {
		for _, m := range linkRE.FindAllStringSubmatch(l, -1) {
			out = append(out, Link{Line: i + 1, Target: m[1]})
		}
	}
	return out
}

var (
	headingRE = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	anchorRE  = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	mdLinkRE  = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	tagRE     = regexp.MustCompile(`<[^>]+>`)
)

// Anchors returns the anchors a Markdown text has on GitHub: each
// heading's slug (a repeated slug gets -1, -2, ...) and the ids of HTML
// anchors (<a id="x">, <a name="x">).
func Anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range prose(text, true) {
		for _, m := range anchorRE.FindAllStringSubmatch(l, -1) {
			out[m[1]] = true
		}
		m := headingRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := Slug(m[2])
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// Slug is GitHub's anchor for a heading's text: the text as rendered
// (link text kept, tags and emphasis dropped), lower case, every
// character but letters, digits, spaces, hyphens and underscores removed,
// spaces turned into hyphens.
func Slug(heading string) string {
	heading = mdLinkRE.ReplaceAllString(heading, "$1")
	heading = tagRE.ReplaceAllString(heading, "")
	heading = strings.NewReplacer("`", "", "*", "").Replace(heading)
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}
