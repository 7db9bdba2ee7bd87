package crdgen

import (
	"encoding/json"
	"fmt"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/rdmaform/rdmaform/schema"
)

// HostSpecSchema converts the spec's JSON Schema (draft-07, what make
// schema writes) into a structural OpenAPI v3 schema, the form a CRD
// takes:
//
//   - "type": [T, "null"] is type T, nullable; const is a one-value enum;
//   - additionalProperties false becomes x-kubernetes-preserve-unknown-fields:
//     the API server keeps an unknown key (it would otherwise drop it
//     without a word) and the agent refuses it with its path, as rdmaform
//     validate does;
//   - integer-or-string (a P_Key) is x-kubernetes-int-or-string; any other
//     anyOf (IPoIB true or a mapping, a firmware value) keeps the value as
//     it is, for the agent to check;
//   - propertyNames has no CRD form: the agent checks names.
func HostSpecSchema() (*apiextensionsv1.JSONSchemaProps, error) {
	js, err := schema.JSONSchema()
	if err != nil {
		return nil, err
	}
	var root map[string]any
	if err := json.Unmarshal(js, &root); err != nil {
		return nil, err
	}
	s, err := convert(root, "$")
	if err != nil {
		return nil, err
	}
	return s, nil
}

func convert(n map[string]any, path string) (*apiextensionsv1.JSONSchemaProps, error) {
	s := &apiextensionsv1.JSONSchemaProps{}
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := n[k]
		switch k {
		case "$schema", "$id", "title", "propertyNames":
		case "default":
			// Documentation only: in a CRD the API server would write
			// the default into every stored hostSpec; rdmaform's own
			// loader gives a key that is not there its default.
		case "description":
			s.Description = v.(string)
		case "type":
			switch t := v.(type) {
			case string:
				s.Type = t
			case []any:
				for _, e := range t {
					if e == "null" {
						s.Nullable = true
					} else if s.Type == "" {
						s.Type = e.(string)
					} else {
						return nil, fmt.Errorf("%s: more than one type %v", path, t)
					}
				}
			}
		case "const":
			s.Enum = []apiextensionsv1.JSON{jsonOf(v)}
			if s.Type == "" {
				s.Type = jsonType(v)
			}
		case "enum":
			for _, e := range v.([]any) {
				if e == nil {
					s.Nullable = true
					continue
				}
				s.Enum = append(s.Enum, jsonOf(e))
			}
		case "minimum":
			f := v.(float64)
			s.Minimum = &f
		case "maximum":
			f := v.(float64)
			s.Maximum = &f
		case "maxLength":
			i := int64(v.(float64))
			s.MaxLength = &i
		case "pattern":
			s.Pattern = v.(string)
		case "required":
			for _, r := range v.([]any) {
				s.Required = append(s.Required, r.(string))
			}
		case "properties":
			s.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
			for name, p := range v.(map[string]any) {
				ps, err := convert(p.(map[string]any), path+"."+name)
				if err != nil {
					return nil, err
				}
				s.Properties[name] = *ps
			}
		case "items":
			is, err := convert(v.(map[string]any), path+"[]")
			if err != nil {
				return nil, err
			}
			s.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: is}
		case "additionalProperties":
			switch a := v.(type) {
			case bool:
				if !a {
					keep := true
					s.XPreserveUnknownFields = &keep
				}
			case map[string]any:
				as, err := convert(a, path+".*")
				if err != nil {
					return nil, err
				}
				s.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: as}
			}
		case "anyOf":
			types := map[string]bool{}
			for _, alt := range v.([]any) {
				if t, ok := alt.(map[string]any)["type"].(string); ok {
					types[t] = true
				}
			}
			if types["null"] {
				s.Nullable = true
				delete(types, "null")
			}
			if len(types) == 2 && types["integer"] && types["string"] {
				s.XIntOrString = true
			} else {
				keep := true
				s.XPreserveUnknownFields = &keep
			}
		default:
			return nil, fmt.Errorf("%s: JSON Schema keyword %q has no conversion", path, k)
		}
	}
	return s, nil
}

func jsonOf(v any) apiextensionsv1.JSON {
	b, _ := json.Marshal(v) // values decoded from JSON always encode
	return apiextensionsv1.JSON{Raw: b}
}

func jsonType(v any) string {
	switch x := v.(type) {
	case float64:
		if x == float64(int64(x)) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case bool:
		return "boolean"
	}
	return ""
}
