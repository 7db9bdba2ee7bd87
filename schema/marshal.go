package schema

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Marshal renders a spec as YAML that Parse reads back to the same value:
// keys in struct order, firmware parameters in spec order, P_Keys as hex
// with the full-membership bit (0x0002 is written 0x8002), and every empty value left out except where emptiness means
// something: an interface's `addresses: []` (remove every static address)
// and an empty ipv4/ipv6 block (`{}`: the family is disabled).
func Marshal(s *Spec) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(Node(s)); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Node returns the spec as a YAML mapping node, for callers that add
// comments before encoding (show puts each adapter's identity there).
func Node(s *Spec) *yaml.Node {
	n, _ := nodeOf(reflect.ValueOf(s).Elem(), false)
	return n
}

// MappingValue returns the value node of key in a mapping node, or nil.
func MappingValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	return mappingValue(m, key)
}

// nodeOf renders one value; ok is false when the value is empty and
// omitEmpty says to leave it out.
func nodeOf(v reflect.Value, omitEmpty bool) (*yaml.Node, bool) {
	switch v.Type() {
	case paramsType:
		ps := v.Interface().(Params)
		if len(ps) == 0 && (omitEmpty || ps == nil) {
			return nil, false
		}
		m := &yaml.Node{Kind: yaml.MappingNode}
		if len(ps) == 0 {
			m.Style = yaml.FlowStyle
		}
		for _, p := range ps {
			m.Content = append(m.Content, strNode(p.Name), paramValueNode(p.Value))
		}
		return m, true
	case dscpMapType:
		m := v.Interface().(DSCPMap)
		if len(m) == 0 && (omitEmpty || m == nil) {
			return nil, false
		}
		n := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		for _, e := range m {
			n.Content = append(n.Content,
				&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(e.DSCP)},
				&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(e.Prio)})
		}
		return n, true
	case pkeyType:
		// Written as configured (a limited member's key has bit 0x8000
		// clear, and its entry says membership: limited).
		k := v.Interface().(PKey)
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: fmt.Sprintf("0x%04x", k.Value)}, true
	}
	if v.Type() == partIPoIBType && !v.IsNil() && v.Elem().IsZero() {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"}, true
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil, false
		}
		// A pointer that is set is rendered even when what it points to
		// is empty: tos: 0, enabled: false, ipv4: {} all mean something.
		n, _ := nodeOf(v.Elem(), false)
		return n, true
	case reflect.Struct:
		m := &yaml.Node{Kind: yaml.MappingNode}
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			n, ok := nodeOf(v.Field(i), opts == "omitempty")
			if !ok {
				continue
			}
			m.Content = append(m.Content, strNode(name), n)
		}
		if len(m.Content) == 0 {
			m.Style = yaml.FlowStyle
		}
		return m, true
	case reflect.Slice:
		if v.IsNil() || (v.Len() == 0 && omitEmpty) {
			return nil, false
		}
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		if k := v.Type().Elem().Kind(); k == reflect.String || k == reflect.Int {
			// Lists of names, addresses and numbers read best on one line.
			seq.Style = yaml.FlowStyle
		}
		if v.Len() == 0 {
			seq.Style = yaml.FlowStyle
		}
		for i := 0; i < v.Len(); i++ {
			n, _ := nodeOf(v.Index(i), false)
			seq.Content = append(seq.Content, n)
		}
		return seq, true
	case reflect.String:
		if v.String() == "" && omitEmpty {
			return nil, false
		}
		return strNode(v.String()), true
	case reflect.Int:
		if v.Int() == 0 && omitEmpty {
			return nil, false
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(v.Int(), 10)}, true
	case reflect.Bool:
		if !v.Bool() && omitEmpty {
			return nil, false
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v.Bool())}, true
	}
	panic(fmt.Sprintf("schema.Marshal: cannot render %s", v.Type()))
}

// strNode is a string scalar: the encoder quotes it when it would
// otherwise read as something else (true, 8, null, 0000:3b:00.0 stays
// plain only when it is unambiguous).
func strNode(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	if strings.Count(s, ":") >= 2 && NormalizePCI(s) == s {
		// PCI addresses are quoted, as operators write them.
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

// paramValueNode is a firmware value as an operator writes it: plain
// (ETH, 8, true), quoted only when YAML would read it as null.
func paramValueNode(v string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Value: v}
	switch strings.ToLower(v) {
	case "", "null", "~":
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}
