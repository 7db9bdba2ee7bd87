package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// SchemaID is where the published JSON Schema lives; editors fetch it by
// this address (docs/getting-started/writing-a-spec.md, "Editor support").
const SchemaID = "https://raw.githubusercontent.com/rdmaform/rdmaform/main/schema/rdmaform.schema.json"

// pkeyTextPattern is the string form of a P_Key the schema accepts: hex
// with 0x, or decimal. The loader reads both with strconv.ParseInt(s, 0,
// 64); the range and the reserved values are checked by Validate.
const pkeyTextPattern = `^0x[0-9a-fA-F]{1,4}$|^[0-9]+$`

// requiredKeys are the keys Validate reports as "is required" (its
// v.spec.Src.Has checks); the struct tags cannot say it, because
// omitempty is about writing a spec (show), not about reading one.
// TestJSONSchemaRequiredMatchesValidate proves each entry against Validate.
var requiredKeys = map[reflect.Type][]string{
	reflect.TypeOf(Spec{}):            {"version"},
	reflect.TypeOf(Port{}):            {"port"},
	reflect.TypeOf(SRIOV{}):           {"num_vfs"},
	reflect.TypeOf(VF{}):              {"vf"},
	reflect.TypeOf(IPoIB{}):           {"name", "parent"},
	reflect.TypeOf(Rxe{}):             {"name", "netdev"},
	reflect.TypeOf(Interface{}):       {"name"},
	reflect.TypeOf(Service{}):         {"name"},
	reflect.TypeOf(SMPort{}):          {"device", "port"},
	reflect.TypeOf(Partition{}):       {"name", "pkey"},
	reflect.TypeOf(PartitionMember{}): {"guid"},
	reflect.TypeOf(ACSBridge{}):       {"pci", "control"},
}

// JSONSchema returns the JSON Schema (draft-07, which every YAML editor
// plugin reads) of a spec, generated from the Go types: keys from the
// yaml tags, enum/min/max/doc tags as enum/minimum/maximum/description,
// additionalProperties false on every mapping. It says what a spec's
// shape is; the rules that need code (name safety, address formats,
// duplicates, ownership, cross-field checks) stay in Validate, which
// rdmaform validate runs with positions.
//
// Every field must say what it is (a doc tag): JSONSchema fails naming
// the fields that do not, so the published schema and the reference
// generated from it (docs/reference/spec.md) describe every key.
func JSONSchema() ([]byte, error) {
	return jsonSchemaOf(reflect.TypeOf(Spec{}))
}

func jsonSchemaOf(t reflect.Type) ([]byte, error) {
	if missing := undocumented(t, "$", map[reflect.Type]bool{}); len(missing) > 0 {
		return nil, fmt.Errorf("schema: %d field(s) without a doc tag: %s", len(missing), strings.Join(missing, ", "))
	}
	root := typeSchema(t)
	root = append(obj{
		{"$schema", "http://json-schema.org/draft-07/schema#"},
		{"$id", SchemaID},
		{"title", "rdmaform spec"},
		{"description", "The desired RDMA configuration of a Linux host (rdmaform plan/apply). Generated from the Go types by make schema; do not edit."},
	}, root...)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// undocumented lists the fields of t and of the types under it that have
// no doc tag, as "$.path (Type.Field)".
func undocumented(t reflect.Type, path string, seen map[reflect.Type]bool) []string {
	switch {
	case t == paramsType || t == dscpMapType || t == pkeyType:
		return nil
	case t.Kind() == reflect.Pointer:
		return undocumented(t.Elem(), path, seen)
	case t.Kind() == reflect.Slice:
		return undocumented(t.Elem(), path+"[]", seen)
	case t.Kind() != reflect.Struct || seen[t]:
		return nil
	}
	seen[t] = true
	var out []string
	for _, fi := range fieldsOf(t) {
		f := t.Field(fi.index)
		p := path + "." + fi.key
		if strings.TrimSpace(f.Tag.Get("doc")) == "" {
			out = append(out, fmt.Sprintf("%s (%s.%s)", p, t.Name(), f.Name))
		}
		out = append(out, undocumented(f.Type, p, seen)...)
	}
	return out
}

// kv is one member of an ordered JSON object.
type kv struct {
	Key   string
	Value any
}

// obj is a JSON object that keeps its members in order, so the schema
// reads in the order of the Go fields and regenerates byte for byte.
type obj []kv

// MarshalJSON implements json.Marshaler.
func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.Key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		v, err := marshalNoEscape(m.Value)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// typeSchema is the schema of a Go type of the spec.
func typeSchema(t reflect.Type) obj {
	switch t {
	case paramsType:
		return paramsSchema()
	case dscpMapType:
		return obj{
			{"type", "object"},
			{"propertyNames", obj{{"pattern", `^([0-9]|[1-5][0-9]|6[0-3])$`}}},
			{"additionalProperties", obj{{"type", "integer"}, {"minimum", 0}, {"maximum", 7}}},
		}
	case partIPoIBType:
		return obj{{"anyOf", []obj{{{"type", "boolean"}}, structSchema(t.Elem())}}}
	case pkeyType:
		return obj{{"anyOf", []obj{
			{{"type", "integer"}, {"minimum", 1}, {"maximum", 0xffff}},
			{{"type", "string"}, {"pattern", pkeyTextPattern}},
		}}}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return typeSchema(t.Elem())
	case reflect.Struct:
		return structSchema(t)
	case reflect.Slice:
		return obj{{"type", "array"}, {"items", typeSchema(t.Elem())}}
	case reflect.String:
		return obj{{"type", "string"}}
	case reflect.Int:
		return obj{{"type", "integer"}}
	case reflect.Bool:
		return obj{{"type", "boolean"}}
	}
	// A spec type the generator does not know is a programming error that
	// TestJSONSchemaFile catches at once.
	panic(fmt.Sprintf("schema: no JSON Schema for Go type %s", t))
}

func structSchema(t reflect.Type) obj {
	var props obj
	required := requiredKeys[t]
	for _, fi := range fieldsOf(t) {
		f := t.Field(fi.index)
		s := fieldSchema(f)
		if fi.key == "version" && t == reflect.TypeOf(Spec{}) {
			s = obj{{"const", Version}}
		}
		if !contains(required, fi.key) {
			s = nullable(s)
		}
		if doc := f.Tag.Get("doc"); doc != "" {
			s = append(obj{{"description", doc}}, s...)
		}
		props = append(props, kv{fi.key, s})
	}
	s := obj{{"type", "object"}, {"properties", props}}
	if len(required) > 0 {
		s = append(s, kv{"required", required})
	}
	return append(s, kv{"additionalProperties", false})
}

// fieldSchema adds a field's enum, min and max tags to its type's schema:
// the same tags Validate enforces.
func fieldSchema(f reflect.StructField) obj {
	s := typeSchema(f.Type)
	if enum := f.Tag.Get("enum"); enum != "" {
		s = append(s, kv{"enum", strings.Split(enum, ",")})
	}
	if lo, err := strconv.Atoi(f.Tag.Get("min")); err == nil {
		s = append(s, kv{"minimum", lo})
	}
	if hi, err := strconv.Atoi(f.Tag.Get("max")); err == nil {
		s = append(s, kv{"maximum", hi})
	}
	if pat := f.Tag.Get("pattern"); pat != "" {
		s = append(s, kv{"pattern", pat})
	}
	if def, ok := f.Tag.Lookup("default"); ok {
		s = append(s, kv{"default", defaultValue(f.Type, def)})
	}
	return s
}

// defaultValue is a default tag as the JSON value of the field's type:
// a number for an int, a boolean for a bool, else the text.
func defaultValue(t reflect.Type, def string) any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int:
		if n, err := strconv.Atoi(def); err == nil {
			return n
		}
	case reflect.Bool:
		if b, err := strconv.ParseBool(def); err == nil {
			return b
		}
	}
	return def
}

// nullable lets an optional key be given as null: the loader reads
// "key:" with no value as not given.
func nullable(s obj) obj {
	out := make(obj, 0, len(s))
	for _, m := range s {
		switch m.Key {
		case "type":
			m.Value = []any{m.Value, "null"}
		case "enum":
			vals := []any{}
			for _, v := range m.Value.([]string) {
				vals = append(vals, v)
			}
			m.Value = append(vals, nil)
		case "anyOf":
			m.Value = append(append([]obj{}, m.Value.([]obj)...), obj{{"type", "null"}})
		}
		out = append(out, m)
	}
	return out
}

// paramsSchema is a mapping of firmware parameter names to values, with
// the very patterns Validate uses (paramNameRE, paramValueRE). Numbers
// and booleans are what YAML makes of 8 and true.
func paramsSchema() obj {
	return obj{
		{"type", "object"},
		{"propertyNames", obj{{"pattern", paramNameRE.String()}}},
		{"additionalProperties", obj{{"anyOf", []obj{
			{{"type", "string"}, {"pattern", paramValueRE.String()}, {"maxLength", 64}},
			{{"type", "number"}},
			{{"type", "boolean"}},
		}}}},
	}
}
