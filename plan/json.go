package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// In JSON a value keeps its type, and the two values of one attribute
// (before and after, current and next boot) have the same type: values
// are held as text (the form the tools print and the spec writes), and
// an attribute's values are written as numbers when every one of them is
// a whole decimal number, as booleans when every one is true or false
// (in any case: mlxconfig prints False where a spec writes false), and
// as strings otherwise (IB, 0x8002, 192.0.2.1/24, and "none" -> "3" in
// the same attribute); nothing ("" before a create, after a delete) is
// null. Typing each value alone gave "before": "False", "after": true.
// Reading a plan back (a saved plan) gives the same text, but for the
// case of a boolean.

// typedValue is the JSON form of a value held as text; kind is the type
// of its attribute (valueKind), for writing.
type typedValue struct {
	s    string
	kind valueKind
}

// valueKind is the JSON type of an attribute's values.
type valueKind int

const (
	kindString valueKind = iota
	kindNumber
	kindBool
)

// kindOf is the one type of an attribute whose values are vals ("" is
// none and does not count).
func kindOf(vals ...string) valueKind {
	num, boolean, any := true, true, false
	for _, v := range vals {
		if v == "" {
			continue
		}
		any = true
		num = num && isDecimal(v)
		boolean = boolean && isBool(v)
	}
	switch {
	case !any:
		return kindString
	case num:
		return kindNumber
	case boolean:
		return kindBool
	}
	return kindString
}

func isBool(s string) bool { return strings.EqualFold(s, "true") || strings.EqualFold(s, "false") }

// TextValues is an attribute's values (before and after, current and
// next boot) as text shows them: spelt as JSON writes them, so that
// booleans are true and false in lower case when every value is one
// (mlxconfig prints False and True, a spec writes true: the text said
// "SRIOV_EN: False -> true"), and everything else as it is.
func TextValues(vals ...string) []string {
	out := append([]string(nil), vals...)
	if kindOf(vals...) == kindBool {
		for i, v := range out {
			out[i] = strings.ToLower(v)
		}
	}
	return out
}

// typed gives an attribute's values their one type.
func typed(vals ...string) []typedValue {
	k := kindOf(vals...)
	out := make([]typedValue, len(vals))
	for i, v := range vals {
		out[i] = typedValue{s: v, kind: k}
	}
	return out
}

// MarshalJSON implements json.Marshaler.
func (v typedValue) MarshalJSON() ([]byte, error) {
	switch {
	case v.s == "":
		return []byte("null"), nil
	case v.kind == kindBool:
		return []byte(strings.ToLower(v.s)), nil
	case v.kind == kindNumber:
		return []byte(v.s), nil
	}
	return json.Marshal(v.s)
}

// UnmarshalJSON implements json.Unmarshaler.
func (v *typedValue) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*v = typedValue{}
	case bytes.Equal(b, []byte("true")), bytes.Equal(b, []byte("false")):
		*v = typedValue{s: string(b), kind: kindBool}
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*v = typedValue{s: s}
	default:
		if !isDecimal(string(b)) {
			return fmt.Errorf("value %s is not a whole number, a boolean, a string or null", b)
		}
		*v = typedValue{s: string(b), kind: kindNumber}
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
	v := typed(a.Before, a.After)
	return json.Marshal(attrJSON{Name: a.Name, Before: v[0], After: v[1]})
}

// UnmarshalJSON implements json.Unmarshaler.
func (a *Attr) UnmarshalJSON(b []byte) error {
	var j attrJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*a = Attr{Name: j.Name, Before: j.Before.s, After: j.After.s}
	return nil
}

type pendingJSON struct {
	Address   Address    `json:"address"`
	Attribute string     `json:"attribute"`
	Current   typedValue `json:"current"`
	NextBoot  typedValue `json:"next_boot"`
	Source    *Source    `json:"source,omitempty"`
	// Activation: how the value can become current.
	Activation *ActivateBy `json:"activation,omitempty"`
}

// MarshalJSON implements json.Marshaler.
func (p Pending) MarshalJSON() ([]byte, error) {
	v := typed(p.Current, p.NextBoot)
	return json.Marshal(pendingJSON{Address: p.Address, Attribute: p.Attribute, Current: v[0], NextBoot: v[1], Source: p.Source, Activation: p.Activation})
}

// UnmarshalJSON implements json.Unmarshaler.
func (p *Pending) UnmarshalJSON(b []byte) error {
	var j pendingJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*p = Pending{Address: j.Address, Attribute: j.Attribute, Current: j.Current.s, NextBoot: j.NextBoot.s, Source: j.Source, Activation: j.Activation}
	return nil
}
