package plan

import (
	"encoding/json"
	"testing"
)

// TestTypedJSON: values held as text are written as numbers, booleans,
// null or strings, and read back as the same text.
func TestTypedJSON(t *testing.T) {
	for _, tt := range []struct{ text, json string }{
		{"106", `106`},
		{"0", `0`},
		{"-1", `-1`},
		{"9223372036854775807", `9223372036854775807`},   // the largest int64
		{"9223372036854775808", `"9223372036854775808"`}, // one past it
		{"007", `"007"`},
		{"+5", `"+5"`},
		{"-0", `"-0"`},
		{"1.5", `"1.5"`},
		{"true", `true`},
		{"false", `false`},
		{"True", `"True"`},
		{"", `null`},
		{"IB", `"IB"`},
		{"0x8002", `"0x8002"`},
		{"192.0.2.1/24", `"192.0.2.1/24"`},
	} {
		a := Attr{Name: "x", Before: tt.text, After: tt.text}
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		want := `{"name":"x","before":` + tt.json + `,"after":` + tt.json + `}`
		if string(b) != want {
			t.Errorf("%q: got %s, want %s", tt.text, b, want)
		}
		var back Attr
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%q: %v", tt.text, err)
		}
		if back != a {
			t.Errorf("%q: read back %+v", tt.text, back)
		}
		p := Pending{Address: Addr("firmware", "0000:3b:00.0"), Attribute: "NUM_OF_VFS", Current: tt.text, NextBoot: tt.text}
		b, _ = json.Marshal(p)
		var pb Pending
		if err := json.Unmarshal(b, &pb); err != nil || pb != p {
			t.Errorf("%q: pending %s read back as %+v (%v)", tt.text, b, pb, err)
		}
	}
	var a Attr
	if err := json.Unmarshal([]byte(`{"name":"x","before":1.5,"after":null}`), &a); err == nil {
		t.Errorf("a fraction was accepted as a value: %+v", a)
	}
}
