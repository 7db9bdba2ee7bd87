package plan

import (
	"encoding/json"
	"strings"
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
		{"True", `true`}, // mlxconfig's spelling: read back as true
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
		if want := (Attr{Name: "x", Before: lowerBool(tt.text), After: lowerBool(tt.text)}); back != want {
			t.Errorf("%q: read back %+v", tt.text, back)
		}
		p := Pending{Address: Addr("firmware", "0000:3b:00.0"), Attribute: "NUM_OF_VFS", Current: tt.text, NextBoot: tt.text}
		b, _ = json.Marshal(p)
		var pb Pending
		p.Current, p.NextBoot = lowerBool(tt.text), lowerBool(tt.text)
		if err := json.Unmarshal(b, &pb); err != nil || pb != p {
			t.Errorf("%q: pending %s read back as %+v (%v)", tt.text, b, pb, err)
		}
	}
	var a Attr
	if err := json.Unmarshal([]byte(`{"name":"x","before":1.5,"after":null}`), &a); err == nil {
		t.Errorf("a fraction was accepted as a value: %+v", a)
	}
}

func lowerBool(s string) string {
	if isBool(s) {
		return strings.ToLower(s)
	}
	return s
}

// TestAttrValuesShareAType: an attribute's before and after (a pending
// item's current and next boot) are written with one JSON type, chosen
// from both: numbers only when both are numbers, booleans only when both
// are booleans (mlxconfig's False with a spec's true), strings otherwise
// ("none" -> "3" is two strings, not a string and a number).
func TestAttrValuesShareAType(t *testing.T) {
	for _, tt := range []struct{ before, after, json string }{
		{"False", "true", `"before":false,"after":true`},
		{"false", "True", `"before":false,"after":true`},
		{"0", "8", `"before":0,"after":8`},
		{"none", "3", `"before":"none","after":"3"`},
		{"0,1,2,3,4,5,6,7", "3", `"before":"0,1,2,3,4,5,6,7","after":"3"`},
		{"1", "true", `"before":"1","after":"true"`},
		{"IB", "2", `"before":"IB","after":"2"`},
		{"", "2044", `"before":null,"after":2044`},
		{"", "true", `"before":null,"after":true`},
		{"no", "yes", `"before":"no","after":"yes"`},
	} {
		b, err := json.Marshal(Attr{Name: "x", Before: tt.before, After: tt.after})
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"name":"x",` + tt.json + `}`; string(b) != want {
			t.Errorf("%q -> %q: %s, want %s", tt.before, tt.after, b, want)
		}
		p, _ := json.Marshal(Pending{Address: Addr("firmware", "0000:3b:00.0"), Attribute: "x", Current: tt.before, NextBoot: tt.after})
		want := strings.NewReplacer(`"before"`, `"current"`, `"after"`, `"next_boot"`).Replace(tt.json)
		if !strings.Contains(string(p), want) {
			t.Errorf("pending %q -> %q: %s, want %s", tt.before, tt.after, p, want)
		}
	}
}
