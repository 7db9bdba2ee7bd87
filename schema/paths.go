package schema

import (
	"strconv"
	"strings"
)

// Path builds the path of a spec element as findings and Sources name it:
// a string is a key, an int an index. Path("devices", 2, "ports", 0,
// "roce") is $.devices[2].ports[0].roce; Path() is $.
func Path(parts ...any) string {
	var b strings.Builder
	b.WriteString("$")
	for _, p := range parts {
		switch v := p.(type) {
		case int:
			b.WriteString("[" + strconv.Itoa(v) + "]")
		case string:
			b.WriteString("." + v)
		default:
			panic("schema.Path: a key is a string and an index an int")
		}
	}
	return b.String()
}
