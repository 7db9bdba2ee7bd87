package docgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// node is a JSON value that keeps its object members in order, so pages
// list keys as the schema gives them.
type node struct {
	// keys and members, for an object.
	keys    []string
	members map[string]*node
	// items, for an array.
	items []*node
	isObj bool
	isArr bool
	// val is a scalar: string, json.Number, bool or nil.
	val any
}

// parseJSON reads one JSON document.
func parseJSON(data []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return n, nil
}

func parseValue(dec *json.Decoder) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &node{isObj: true, members: map[string]*node{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				if _, dup := n.members[k]; !dup {
					n.keys = append(n.keys, k)
				}
				n.members[k] = v
			}
			_, err := dec.Token() // }
			return n, err
		case '[':
			n := &node{isArr: true}
			for dec.More() {
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				n.items = append(n.items, v)
			}
			_, err := dec.Token() // ]
			return n, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	}
	return &node{val: tok}, nil
}

// get returns an object's member, nil when there is none.
func (n *node) get(k string) *node {
	if n == nil || !n.isObj {
		return nil
	}
	return n.members[k]
}

// str is a string member's value, "" otherwise.
func (n *node) str(k string) string {
	if m := n.get(k); m != nil {
		if s, ok := m.val.(string); ok {
			return s
		}
	}
	return ""
}

// strings are the string items of an array member, or the member's one
// string.
func (n *node) strs(k string) []string {
	m := n.get(k)
	if m == nil {
		return nil
	}
	if s, ok := m.val.(string); ok {
		return []string{s}
	}
	var out []string
	for _, it := range m.items {
		if s, ok := it.val.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// literal is a scalar as JSON writes it (strings quoted).
func (n *node) literal() string {
	switch v := n.val.(type) {
	case nil:
		if n.isObj || n.isArr {
			return "…"
		}
		return "null"
	case string:
		b, _ := json.Marshal(v)
		return string(b)
	default:
		return fmt.Sprint(v)
	}
}

// text is a scalar as a reader writes it: strings without quotes.
func (n *node) text() string {
	if s, ok := n.val.(string); ok {
		return s
	}
	return n.literal()
}
