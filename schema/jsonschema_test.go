package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

const schemaFile = "rdmaform.schema.json"

// TestJSONSchemaFile: the committed schema is the generated one. make
// schema (go test ./schema -run TestJSONSchemaFile -update) rewrites it.
func TestJSONSchemaFile(t *testing.T) {
	got, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(schemaFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatalf("%v (run make schema)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s is stale; run make schema (-committed +generated):\n%s", schemaFile, diff)
	}
}

// compiledSchema compiles the committed schema file: what editors get.
func compiledSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	data, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(SchemaID, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(SchemaID)
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}
	return s
}

// yamlInstance reads a YAML document the way an editor's YAML plugin does
// (the first document, as plain data) and returns it as a JSON value.
func yamlInstance(data []byte) (any, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	b, err := json.Marshal(stringKeys(v))
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

// stringKeys turns mappings with non-string keys (dscp_map: {26: 3}) into
// JSON objects, as an editor's YAML-to-JSON step does.
func stringKeys(v any) any {
	switch x := v.(type) {
	case map[any]any:
		m := map[string]any{}
		for k, e := range x {
			m[fmt.Sprint(k)] = stringKeys(e)
		}
		return m
	case map[string]any:
		for k, e := range x {
			x[k] = stringKeys(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = stringKeys(e)
		}
		return x
	}
	return v
}

func validateYAML(t *testing.T, s *jsonschema.Schema, data []byte) error {
	t.Helper()
	inst, err := yamlInstance(data)
	if err != nil {
		t.Fatalf("not YAML an editor can read: %v", err)
	}
	return s.Validate(inst)
}

// TestJSONSchemaAcceptsValidSpecs: every example spec, and the spec that
// uses every key, validate against the schema, so an editor never marks a
// spec rdmaform accepts.
func TestJSONSchemaAcceptsValidSpecs(t *testing.T) {
	s := compiledSchema(t)
	files, _ := filepath.Glob("../examples/*.yaml")
	if len(files) == 0 {
		t.Fatal("no example specs found")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, rep := Parse(f, data); len(rep) > 0 {
			t.Fatalf("%s is not a valid spec, fix it first:\n%v", f, rep)
		}
		if err := validateYAML(t, s, data); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	for name, spec := range map[string]string{
		"full":  fullSpec,
		"nulls": "version: 1\nhost:\ndevices:\n  - name: mlx5_0\n    firmware: {tool: ~, params: {LINK_TYPE_P1: 2}}\n    ports:\n      - {port: 1, roce: {mode: v2, tos: ~}}\nmodules:\npersistence: ~\n",
		"pkeys": "version: 1\nipoib:\n  - {name: a, parent: ib0, pkey: 0x8002}\n  - {name: b, parent: ib1, pkey: \"0x8003\"}\n  - {name: c, parent: ib2, pkey: \"32772\"}\n  - {name: d, parent: ib3, pkey: 32773}\n",
	} {
		if _, rep := Parse(name, []byte(spec)); len(rep) > 0 {
			t.Fatalf("%s is not a valid spec, fix it first:\n%v", name, rep)
		}
		if err := validateYAML(t, s, []byte(spec)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// notInSchema lists the bad specs an editor cannot flag through the
// schema, and why. Each stays checked: a "yaml" entry must fail to parse
// as YAML (the editor's parser reports it), a "code" entry must pass the
// schema (so when the schema learns to reject one, this list says to
// drop it). Every other bad spec must be rejected by the schema.
var notInSchema = map[string]string{
	"roce-tos-and-dscp":     "code: tos and dscp are each valid alone",
	"roce-ecn-without-dscp": "code: ecn is valid with dscp",
	// The YAML parser, not the schema, reports these.
	"alias-unknown":         "yaml: unknown anchor",
	"binary-garbage":        "yaml: control characters",
	"duplicate-key":         "yaml: duplicate mapping key",
	"fw-param-dup":          "yaml: duplicate mapping key",
	"syntax-tab":            "yaml: tab indentation",
	"syntax-colon-mid-line": "yaml: a second \": \" in a plain value",
	"syntax-reserved-char":  "yaml: @ cannot start a plain value",
	"syntax-unclosed":       "yaml: unclosed flow mapping",

	// One document per file is the loader's rule; an editor validates
	// each document of a stream on its own, and the first one is valid.
	"two-documents": "code: one document per file",

	// Duplicates across list entries: JSON Schema's uniqueItems compares
	// whole items, not one key (and not normalized PCI addresses).
	"duplicate-device":  "code: same device selected twice (81:00.0 = 0000:81:00.0)",
	"ipoib-dup-name":    "code: connection name twice",
	"modules-dup":       "code: rdma_ucm = rdma-ucm",
	"port-duplicate":    "code: port number twice",
	"rxe-same-netdev":   "code: one rxe link per netdev",
	"sriov-vf-dup-guid": "code: a VF GUID twice across devices",
	"sriov-vf-dup-mac":  "code: a VF MAC twice across devices (02:..:0a = 02:..:0A)",

	// One netdev owned by one section: a relation between sections.
	"netdev-two-owners": "code: netdev ownership",
	"pkey-child-owner":  "code: netdev ownership (P_Key child name)",

	// Relations between keys of one entry.
	"no-selector":         "code: exactly one of pci, name, node_guid, netdev",
	"two-selectors":       "code: exactly one of pci, name, node_guid, netdev",
	"roce-on-ib":          "code: roce needs link_layer Ethernet",
	"type-vs-link-layer":  "code: mlx4 type vs link_layer",
	"ipoib-mtu-datagram":  "code: datagram MTU depends on mode",
	"ipoib-gateway-alone": "code: a gateway needs addresses",
	"services-empty":      "code: enabled, active or both",

	// Formats and name safety are functions in names.go/validate.go
	// (NormalizePCI, CheckNetdev, netip parsing, ...); a pattern here would
	// be the same rule written twice, and drift. rdmaform validate reports
	// them with positions.
	"bad-guid":                    "code: node GUID format",
	"sriov-vf-mac-multicast-zero": "code: MAC format, unicast, not zero",
	"bad-pci":                     "code: PCI address format",
	"device-name-dash":            "code: RDMA name safety",
	"device-name-traversal":       "code: RDMA name safety",
	"hostname-bad":                "code: hostname format",
	"iface-addr-linklocal":        "code: link-local address",
	"ipoib-addr-bad":              "code: address with prefix length",
	"ipoib-addr-family":           "code: address family",
	"modules-bad":                 "code: module name safety",
	"netdev-newline":              "code: netdev name safety",
	"netdev-nul":                  "code: netdev name safety",
	"netdev-slash":                "code: netdev name safety",
	"netdev-too-long":             "code: netdev name length",
	"rxe-bad-name":                "code: RDMA name safety",
	"services-name-bad":           "code: unit name safety",

	// P_Key values the kernel reserves: in range, refused by meaning.
	"ipoib-pkey-default": "code: 0xffff is the default partition",
	"ipoib-pkey-zero":    "code: 0x8000 is reserved",

	// The fault-safety corpus (issue 8): what the YAML parser refuses ...
	"alias-laughs":       "yaml: excessive aliasing",
	"alias-self":         "yaml: anchor contains itself",
	"bin-ff":             "yaml: control characters",
	"bin-nul-bytes":      "yaml: control characters",
	"dup-key-fw-param":   "yaml: duplicate mapping key",
	"dup-key-host":       "yaml: duplicate mapping key",
	"dup-key-ipoib":      "yaml: duplicate mapping key",
	"dup-key-port":       "yaml: duplicate mapping key",
	"dup-key-roce":       "yaml: duplicate mapping key",
	"dup-key-version":    "yaml: duplicate mapping key",
	"huge-inf-mtu":       "yaml: .inf has no JSON form",
	"huge-nan-tos":       "yaml: .nan has no JSON form",
	"tab-indent-crlf":    "yaml: tab indentation",
	"trunc-flow-map":     "yaml: truncated flow mapping",
	"trunc-flow-seq":     "yaml: truncated flow sequence",
	"trunc-ipoib-map":    "yaml: truncated flow sequence",
	"trunc-mid-key":      "yaml: truncated key",
	"trunc-quote":        "yaml: unclosed double quote",
	"trunc-single-quote": "yaml: unclosed single quote",

	// ... and what only the code checks: name safety, duplicates
	// through aliases, encodings.
	"alias-device-twice":                "code: same device selected twice",
	"alias-modules-laughs":              "code: unit name twice",
	"bin-utf16":                         "code: UTF-16 text, module name safety",
	"bom-error":                         "code: module name safety",
	"cr-only":                           "code: module name safety",
	"trunc-after-key":                   "code: exactly one of pci, name, node_guid, netdev",
	"hostile-device-dotdot":             "code: RDMA name safety",
	"hostile-device-subshell":           "code: RDMA name safety",
	"hostile-hostname-long":             "code: hostname format",
	"hostile-hostname-shell":            "code: hostname format",
	"hostile-ipoib-name-dash":           "code: connection name safety",
	"hostile-lookalike-module":          "code: module name safety",
	"hostile-lookalike-rxe":             "code: RDMA name safety",
	"hostile-lookalike-service":         "code: unit name safety",
	"hostile-module-dotdot":             "code: module name safety",
	"hostile-module-long":               "code: module name safety",
	"hostile-module-nul":                "code: module name safety",
	"hostile-module-semicolon":          "code: module name safety",
	"hostile-module-subshell":           "code: module name safety",
	"hostile-netdev-colon":              "code: netdev name safety",
	"hostile-netdev-dotdot":             "code: netdev name safety",
	"hostile-netdev-long":               "code: netdev name length",
	"hostile-netdev-space":              "code: netdev name safety",
	"hostile-parent-nul":                "code: netdev name safety",
	"hostile-parent-rm":                 "code: netdev name safety",
	"hostile-rxe-long":                  "code: RDMA name safety",
	"hostile-rxe-netdev-dot":            "code: netdev name safety",
	"hostile-rxe-nul":                   "code: RDMA name safety",
	"hostile-rxe-rm":                    "code: RDMA name safety",
	"hostile-service-long":              "code: unit name safety",
	"hostile-service-nul":               "code: unit name safety",
	"hostile-service-rm":                "code: unit name safety",
	"hostile-service-traversal":         "code: unit name safety",
	"probe-two-kinds":                   "code: exactly one probe kind per entry",
	"ipoib-membership-without-pkey":     "code: membership needs a pkey",
	"ipoib-pkey-limited-full-key":       "code: P_Key bit 0x8000 against membership",
	"ipoib-pkey-limited-unacknowledged": "code: P_Key bit 0x8000 against membership",
}

// TestJSONSchemaRejectsBadSpecs runs the bad-spec corpus through the
// schema.
func TestJSONSchemaRejectsBadSpecs(t *testing.T) {
	s := compiledSchema(t)
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bad specs: %v", err)
	}
	seen := map[string]bool{}
	rejected := 0
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			why := notInSchema[name]
			inst, yerr := yamlInstance(data)
			switch {
			case strings.HasPrefix(why, "yaml:"):
				if yerr == nil {
					t.Errorf("listed as not YAML (%s), but it parses; move it", why)
				}
				return
			case yerr != nil:
				t.Fatalf("not YAML (%v); list it in notInSchema as yaml:", yerr)
			}
			verr := s.Validate(inst)
			switch {
			case strings.HasPrefix(why, "code:"):
				if verr != nil {
					t.Errorf("listed as beyond the schema (%s), but the schema rejects it; drop it from notInSchema:\n%v", why, verr)
				}
			case verr == nil:
				t.Errorf("the schema accepts this bad spec")
			default:
				rejected++
			}
		})
	}
	for name := range notInSchema {
		if !seen[name] {
			t.Errorf("notInSchema lists %s, which is not in testdata/bad", name)
		}
	}
	if rejected < 20 {
		t.Errorf("the schema rejects only %d bad specs", rejected)
	}
}

// TestJSONSchemaRequiredMatchesValidate: each key the schema marks
// required is one the loader or Validate reports missing, at that object.
func TestJSONSchemaRequiredMatchesValidate(t *testing.T) {
	cases := map[string]struct{ spec, path string }{
		"Spec.version":         {"devices: []\n", "$.version"},
		"Port.port":            {"version: 1\ndevices: [{name: mlx5_0, ports: [{roce: {mode: v2}}]}]\n", "$.devices[0].ports[0]"},
		"IPoIB.name":           {"version: 1\nipoib: [{parent: ib0}]\n", "$.ipoib[0]"},
		"IPoIB.parent":         {"version: 1\nipoib: [{name: storage}]\n", "$.ipoib[0]"},
		"Rxe.name":             {"version: 1\nrxe: [{netdev: eth0}]\n", "$.rxe[0]"},
		"Rxe.netdev":           {"version: 1\nrxe: [{name: rxe0}]\n", "$.rxe[0]"},
		"Interface.name":       {"version: 1\ninterfaces: [{state: up}]\n", "$.interfaces[0]"},
		"Service.name":         {"version: 1\nservices: [{active: true}]\n", "$.services[0]"},
		"SRIOV.num_vfs":        {"version: 1\ndevices: [{pci: \"0000:81:00.0\", sriov: {drivers_autoprobe: true}}]\n", "$.devices[0].sriov"},
		"VF.vf":                {"version: 1\ndevices: [{pci: \"0000:81:00.0\", sriov: {num_vfs: 2, vfs: [{trust: true}]}}]\n", "$.devices[0].sriov.vfs[0]"},
		"SMPort.device":        {"version: 1\nsubnet_manager: {port: {port: 1}}\n", "$.subnet_manager.port"},
		"SMPort.port":          {"version: 1\nsubnet_manager: {port: {device: mlx5_0}}\n", "$.subnet_manager.port"},
		"Partition.name":       {"version: 1\nsubnet_manager: {partitions: [{pkey: 0x8002}]}\n", "$.subnet_manager.partitions[0]"},
		"Partition.pkey":       {"version: 1\nsubnet_manager: {partitions: [{name: a}]}\n", "$.subnet_manager.partitions[0]"},
		"ACSBridge.pci":        {"version: 1\ndevices: [{pci: \"0000:18:00.0\", acs: {bridges: [{control: 0}]}}]\n", "$.devices[0].acs.bridges[0]"},
		"ACSBridge.control":    {"version: 1\ndevices: [{pci: \"0000:18:00.0\", acs: {bridges: [{pci: \"0000:17:00.0\"}]}}]\n", "$.devices[0].acs.bridges[0]"},
		"PartitionMember.guid": {"version: 1\nsubnet_manager: {partitions: [{name: a, pkey: 0x8002, members: [{membership: full}]}]}\n", "$.subnet_manager.partitions[0].members[0]"},
	}
	for typ, keys := range requiredKeys {
		for _, key := range keys {
			name := typ.Name() + "." + key
			c, ok := cases[name]
			if !ok {
				t.Errorf("requiredKeys has %s but this test has no case for it", name)
				continue
			}
			delete(cases, name)
			_, rep := Parse("t.yaml", []byte(c.spec))
			found := false
			for _, f := range rep {
				if f.Path == c.path && (strings.Contains(f.Message, key+": is required") || strings.Contains(f.Message, "missing")) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: the schema requires %s but rdmaform does not report it missing; findings:\n%v", name, key, rep)
			}
		}
	}
	for name := range cases {
		t.Errorf("case %s is not in requiredKeys", name)
	}
}

// TestPKeyTextPattern: every string the schema lets through as a P_Key is
// one the loader reads as a number.
func TestPKeyTextPattern(t *testing.T) {
	s := compiledSchema(t)
	for _, text := range []string{"0x8002", "0X8002", "32770", "0x1", "8002h", "0x", "-1", "0x18002", " 1"} {
		spec := "version: 1\nipoib: [{name: a, parent: ib0, pkey: \"" + text + "\"}]\n"
		_, rep := Load("t.yaml", []byte(spec))
		loaderOK := len(rep) == 0
		schemaOK := validateYAML(t, s, []byte(spec)) == nil
		if schemaOK && !loaderOK {
			t.Errorf("pkey %q: the schema accepts it, the loader does not:\n%v", text, rep)
		}
	}
}

// TestJSONSchemaCoversEveryKey: every yaml key of every spec type is a
// property of the schema (nothing is silently dropped by the generator).
func TestJSONSchemaCoversEveryKey(t *testing.T) {
	b, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(t reflect.Type, s map[string]any, path string)
	walk = func(rt reflect.Type, s map[string]any, path string) {
		for rt.Kind() == reflect.Pointer || (rt.Kind() == reflect.Slice && rt != paramsType && rt != dscpMapType) {
			rt = rt.Elem()
			if items, ok := s["items"].(map[string]any); ok {
				s = items
			}
		}
		if rt.Kind() != reflect.Struct || rt == pkeyType {
			return
		}
		if alts, ok := s["anyOf"].([]any); ok && rt == partIPoIBType.Elem() {
			s = alts[1].(map[string]any) // true, or this mapping
		}
		props, _ := s["properties"].(map[string]any)
		if s["additionalProperties"] != false {
			t.Errorf("%s: additionalProperties is not false", path)
		}
		for _, fi := range fieldsOf(rt) {
			ps, ok := props[fi.key].(map[string]any)
			if !ok {
				t.Errorf("%s.%s: not in the schema", path, fi.key)
				continue
			}
			walk(rt.Field(fi.index).Type, ps, path+"."+fi.key)
		}
	}
	walk(reflect.TypeOf(Spec{}), doc, "$")
}

// TestJSONSchemaNeedsDocs: the generator refuses a type with a field
// that does not say what it is, and names the field by its path and its
// Go name (nested ones too).
func TestJSONSchemaNeedsDocs(t *testing.T) {
	type inner struct {
		Said  string `yaml:"said" doc:"documented"`
		Quiet int    `yaml:"quiet,omitempty"`
	}
	type outer struct {
		Name   string  `yaml:"name" doc:"a name"`
		Bare   *bool   `yaml:"bare,omitempty"`
		Blank  string  `yaml:"blank,omitempty" doc:" "`
		Inners []inner `yaml:"inners,omitempty" doc:"a list"`
		Hidden string  `yaml:"-"`
	}
	_, err := jsonSchemaOf(reflect.TypeOf(outer{}))
	if err == nil {
		t.Fatal("no error for three fields without a doc tag")
	}
	for _, want := range []string{"3 field(s)", "$.bare (outer.Bare)", "$.blank (outer.Blank)", "$.inners[].quiet (inner.Quiet)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	for _, quiet := range []string{"$.name", "said", "Hidden"} {
		if strings.Contains(err.Error(), quiet) {
			t.Errorf("error %q names %s, which is documented or not a key", err, quiet)
		}
	}
	type documented struct {
		Name string `yaml:"name" doc:"a name"`
	}
	if _, err := jsonSchemaOf(reflect.TypeOf(documented{})); err != nil {
		t.Errorf("a documented type: %v", err)
	}
}

// TestDefaultTags: every default tag is a value its field accepts (in its
// enum, within min and max), and the probes' defaults are the constants
// the probes use.
func TestDefaultTags(t *testing.T) {
	n := 0
	var walk func(rt reflect.Type, path string, seen map[reflect.Type]bool)
	walk = func(rt reflect.Type, path string, seen map[reflect.Type]bool) {
		for rt.Kind() == reflect.Pointer || (rt.Kind() == reflect.Slice && rt != paramsType && rt != dscpMapType) {
			rt = rt.Elem()
		}
		if rt.Kind() != reflect.Struct || rt == pkeyType || seen[rt] {
			return
		}
		seen[rt] = true
		for _, fi := range fieldsOf(rt) {
			f := rt.Field(fi.index)
			p := path + "." + fi.key
			walk(f.Type, p, seen)
			def, ok := f.Tag.Lookup("default")
			if !ok {
				continue
			}
			n++
			if enum := f.Tag.Get("enum"); enum != "" && !contains(strings.Split(enum, ","), def) {
				t.Errorf("%s: default %q is not one of %s", p, def, enum)
			}
			if lo, err := strconv.Atoi(f.Tag.Get("min")); err == nil {
				v, err := strconv.Atoi(def)
				if err != nil || v < lo {
					t.Errorf("%s: default %q is below the minimum %d", p, def, lo)
				}
			}
			if hi, err := strconv.Atoi(f.Tag.Get("max")); err == nil {
				v, err := strconv.Atoi(def)
				if err != nil || v > hi {
					t.Errorf("%s: default %q is above the maximum %d", p, def, hi)
				}
			}
			switch {
			case fi.key == "count" && strings.HasPrefix(p, "$.probes[]."):
				if def != strconv.Itoa(DefaultProbeCount) {
					t.Errorf("%s: default %s, the probes use %d", p, def, DefaultProbeCount)
				}
			case fi.key == "timeout" && strings.HasPrefix(p, "$.probes[]."):
				if def != DefaultProbeTimeout {
					t.Errorf("%s: default %s, the probes use %s", p, def, DefaultProbeTimeout)
				}
			case p == "$.probes[].rdma_cm.port":
				if def != strconv.Itoa(DefaultRdmaCMPort) {
					t.Errorf("%s: default %s, the probes use %d", p, def, DefaultRdmaCMPort)
				}
			}
		}
	}
	walk(reflect.TypeOf(Spec{}), "$", map[reflect.Type]bool{})
	if n < 10 {
		t.Errorf("only %d default tags", n)
	}
}
