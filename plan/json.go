package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// In JSON a value keeps its type: attribute values and pending values are
// held as text (the form the tools print and the spec writes), and are
// written as what they are: a whole decimal number as a number, true and
// false as booleans, nothing ("" before a create, after a delete) as
// null, anything else (IB, 0x8002, 192.0.2.1/24) as a string. Reading a
// plan back (a saved plan) gives the same text.

// typedValue is the JSON form of a value held as text.
type typedValue string

// MarshalJSON implements json.Marshaler.
func (v typedValue) MarshalJSON() ([]byte, error) {
	s := string(v)
	switch {
	case s == "":
		return []byte("null"), nil
	case s == "true" || s == "false":
		return []byte(s), nil
	case isDecimal(s):
		return []byte(s), nil
	}
	return json.Marshal(s)
}

// UnmarshalJSON implements json.Unmarshaler.
func (v *typedValue) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*v = ""
	case bytes.Equal(b, []byte("true")), bytes.Equal(b, []byte("false")):
		*v = typedValue(b)
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*v = typedValue(s)
	default:
		if !isDecimal(string(b)) {
			return fmt.Errorf("value %s is not a whole number, a boolean, a string or null", b)
		}
		*v = typedValue(b)
	}
	return nil
}

// isDecimal: a whole number written the one way strconv writes it (no
// sign on zero, no leading zeros, no +), within int64, so the text comes
// back unchanged.
func isDecimal(s string) bool {
	n, err := strconv.ParseInt(s, 10, 64)
	return err == nil && strconv.FormatInt(n, 10) == s
}

type attrJSON struct {
	Name   string     `json:"name"`
	Before typedValue `json:"before"`
	After  typedValue `json:"after"`
}

// MarshalJSON implements json.Marshaler.
func (a Attr) MarshalJSON() ([]byte, error) {
	return json.Marshal(attrJSON{Name: a.Name, Before: typedValue(a.Before), After: typedValue(a.After)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (a *Attr) UnmarshalJSON(b []byte) error {
	var j attrJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*a = Attr{Name: j.Name, Before: string(j.Before), After: string(j.After)}
	return nil
}

type pendingJSON struct {
	Address   Address    `json:"address"`
	Attribute string     `json:"attribute"`
	Current   typedValue `json:"current"`
	NextBoot  typedValue `json:"next_boot"`
	Source    *Source    `json:"source,omitempty"`
}

// MarshalJSON implements json.Marshaler.
func (p Pending) MarshalJSON() ([]byte, error) {
	return json.Marshal(pendingJSON{Address: p.Address, Attribute: p.Attribute, Current: typedValue(p.Current), NextBoot: typedValue(p.NextBoot), Source: p.Source})
}

// UnmarshalJSON implements json.Unmarshaler.
func (p *Pending) UnmarshalJSON(b []byte) error {
	var j pendingJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*p = Pending{Address: j.Address, Attribute: j.Attribute, Current: string(j.Current), NextBoot: string(j.NextBoot), Source: j.Source}
	return nil
}
