package cli

import (
	"encoding/json"
	"testing"
)

// TestAppendJSONString: the rounds document's strings are what
// encoding/json makes of them (it escapes more, <>& and U+2028, which
// JSON does not need): they decode to the same string.
func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "node01", "fe80::1", `a"b\c`, "tab\tnew\nline\x00\x1f", "é€", "<&>"} {
		b := appendJSONString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil || got != s {
			t.Errorf("%q: wrote %s, decodes to %q (%v)", s, b, got, err)
		}
	}
}
