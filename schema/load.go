package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// MaxSpecSize bounds what Load reads; a spec is a few kilobytes, a fleet
// class with hundreds of connections well under a megabyte.
const MaxSpecSize = 4 << 20

// maxNodes bounds the YAML nodes visited, so aliases cannot blow a small
// file up into a huge document (a variable only so that a test can try
// its boundary on a small spec).
var maxNodes = 1 << 20

// Pos is a position in a spec file.
type Pos struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Col  int    `json:"col"`
}

func (p Pos) String() string {
	if p.Line == 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Sources maps logical paths to file positions.
type Sources struct {
	File string
	// Data is the bytes the spec was loaded from (the boot unit copies them).
	Data []byte
	pos  map[string]Pos
}

func newSources(file string) *Sources { return &Sources{File: file, pos: map[string]Pos{}} }

func (s *Sources) set(path string, n *yaml.Node) {
	if n != nil && n.Line > 0 {
		s.pos[path] = Pos{File: s.File, Line: n.Line, Col: n.Column}
	}
}

// Lookup returns the position of path, or of its nearest ancestor that has
// one (a missing key is reported where its parent mapping starts).
func (s *Sources) Lookup(path string) Pos {
	if s == nil {
		return Pos{}
	}
	for p := path; p != ""; p = parentPath(p) {
		if pos, ok := s.pos[p]; ok {
			return pos
		}
	}
	return Pos{File: s.File, Line: 1, Col: 1}
}

// Has reports whether the spec gave a value at exactly path.
func (s *Sources) Has(path string) bool {
	if s == nil {
		return false
	}
	_, ok := s.pos[path]
	return ok
}

// WithAliases returns a copy of s in which each logical path to (a key
// of aliases) has the positions of the path from (its value) and of
// everything under it: the devices a match entry expands to are found at
// the entry's lines.
func (s *Sources) WithAliases(aliases map[string]string) *Sources {
	if s == nil {
		return nil
	}
	c := &Sources{File: s.File, Data: s.Data, pos: make(map[string]Pos, len(s.pos))}
	for k, p := range s.pos {
		c.pos[k] = p
	}
	for to, from := range aliases {
		for k, p := range s.pos {
			if rest, ok := strings.CutPrefix(k, from); ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
				c.pos[to+rest] = p
			}
		}
	}
	return c
}

func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i <= 0 {
		if p == "$" {
			return ""
		}
		return "$"
	}
	return p[:i]
}

// Finding is one problem in a spec, at a logical path and a position.
// It is also the one shape of an error in every JSON document
// (docs/json.md, the schema's #/$defs/error): {"path", "source":
// {"file", "line", "col"}, "message"}, path and source left out when the
// error has none (an error that is no finding is a Finding with only a
// message).
type Finding struct {
	Path    string `json:"path"`
	Pos     Pos    `json:"source"`
	Message string `json:"message"`
	// Unreadable marks a finding that says part of the host could not be
	// read (a tool that failed or is missing, a service manager that did
	// not answer) rather than that the host differs from the spec: an
	// audit reports it as an error, never as drift.
	Unreadable bool `json:"-"`
	// Cause marks the finding that explains the others (a spec that
	// expands past maxNodes): Parse reports it first.
	Cause bool `json:"-"`
	// Warning marks a finding that is no error (lint: two subnet managers
	// of one fabric at the highest priority, which opensm resolves by
	// GUID): reported, but the specs stand.
	Warning bool `json:"-"`
}

// MarshalJSON writes the error shape: path and source only when there
// are any (a source with a file and no line is about the whole file).
func (f Finding) MarshalJSON() ([]byte, error) {
	var src *Pos
	if f.Pos != (Pos{}) {
		src = &f.Pos
	}
	return json.Marshal(struct {
		Path    string `json:"path,omitempty"`
		Source  *Pos   `json:"source,omitempty"`
		Message string `json:"message"`
	}{f.Path, src, f.Message})
}

// String renders a finding as FILE:LINE:COL: error: PATH: message
// (warning: for a warning).
func (f Finding) String() string {
	level := "error"
	if f.Warning {
		level = "warning"
	}
	return fmt.Sprintf("%s: %s: %s: %s", f.Pos, level, f.Path, f.Message)
}

// Report is every finding of a load or validation, in file order.
type Report []Finding

// Error joins the findings one per line.
func (r Report) Error() string {
	lines := make([]string, len(r))
	for i, f := range r {
		lines[i] = f.String()
	}
	return strings.Join(lines, "\n")
}

// Sort orders findings by position, then path.
func (r Report) Sort() {
	sort.SliceStable(r, func(i, j int) bool {
		if r[i].Cause != r[j].Cause {
			return r[i].Cause
		}
		a, b := r[i].Pos, r[j].Pos
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Col != b.Col {
			return a.Col < b.Col
		}
		return r[i].Path < r[j].Path
	})
}

type decoder struct {
	src    *Sources
	report Report
	nodes  int
}

func (d *decoder) errorf(path string, n *yaml.Node, format string, args ...any) {
	pos := Pos{File: d.src.File, Line: 1, Col: 1}
	if n != nil && n.Line > 0 {
		pos = Pos{File: d.src.File, Line: n.Line, Col: n.Column}
	}
	d.report = append(d.report, Finding{Path: path, Pos: pos, Message: fmt.Sprintf(format, args...)})
}

var yamlLineRE = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

// Load parses a spec, reporting every structural finding (syntax, unknown
// keys, wrong types, duplicates) with its position. It never panics,
// whatever the bytes. Validate adds the semantic findings.
func Load(file string, data []byte) (*Spec, Report) {
	d := &decoder{src: newSources(file)}
	d.src.Data = data
	spec := &Spec{Src: d.src}
	if len(data) > MaxSpecSize {
		d.errorf("$", nil, "spec is %d bytes, larger than the %d bytes rdmaform reads", len(data), MaxSpecSize)
		return spec, d.report
	}
	if bytes.IndexByte(data, 0) >= 0 {
		line := bytes.Count(data[:bytes.IndexByte(data, 0)], []byte("\n")) + 1
		d.report = append(d.report, Finding{Path: "$", Pos: Pos{File: file, Line: line, Col: 1}, Message: "spec contains a NUL byte; it must be UTF-8 text"})
		return spec, d.report
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := decodeSafe(dec, &doc); err != nil {
		if errors.Is(err, io.EOF) {
			d.errorf("$", nil, "spec is empty")
			return spec, d.report
		}
		d.syntaxError(err)
		return spec, d.report
	}
	var extra yaml.Node
	if err := decodeSafe(dec, &extra); err == nil {
		d.errorf("$", &extra, "only one YAML document is allowed in a spec")
	} else if !errors.Is(err, io.EOF) {
		d.syntaxError(err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		d.errorf("$", root, "a spec is a mapping that starts with version: 1")
		return spec, d.report
	}
	// Version first: a spec of another version is not read further, its keys
	// would only produce noise.
	if vn := mappingValue(root, "version"); vn == nil {
		d.errorf("$.version", root, "missing; a spec starts with version: %d", Version)
	} else if vn.Kind != yaml.ScalarNode {
		d.errorf("$.version", vn, "must be the number %d, not %s", Version, kindName(vn))
		return spec, d.report
	} else if v, err := strconv.Atoi(vn.Value); err != nil || v != Version {
		d.errorf("$.version", vn, "unsupported spec version %q; this rdmaform reads version %d", truncate(vn.Value), Version)
		return spec, d.report
	}
	d.decode(root, reflect.ValueOf(spec).Elem(), "$")
	return spec, d.report
}

// decodeSafe turns a panic inside the YAML library into an error: a spec
// must never crash rdmaform.
func decodeSafe(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: cannot parse: %v", r)
		}
	}()
	return dec.Decode(n)
}

func (d *decoder) syntaxError(err error) {
	msg := err.Error()
	line, col := 1, 1
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		if m[1] != "" {
			line, _ = strconv.Atoi(m[1])
			if c := yamlColumn(d.src.Data, line, msg); c > 0 {
				col = c
			}
		}
		msg = m[2]
	}
	d.report = append(d.report, Finding{Path: "$", Pos: Pos{File: d.src.File, Line: line, Col: col}, Message: "invalid YAML: " + msg})
}

// yamlColumn finds the column of a syntax error yaml.v3 reports with a
// line only (its messages never carry the column its parser knows): the
// first column c of that line such that the spec cut right after c fails
// with the very same message, i.e. the character at which yaml.v3 finds
// the problem (a tab that cannot start a token, the quote of a string
// that never ends, the second ':' of "a: b: c"). 0 when no cut within the
// line gives that error (yaml.v3 reported the line where a construct
// began, an unclosed flow collection), or the line starts past the first
// 256 KiB or is longer than 512 bytes (it would take too many parses).
func yamlColumn(data []byte, line int, msg string) int {
	start := 0
	for i := 1; i < line; i++ {
		nl := bytes.IndexByte(data[start:], '\n')
		if nl < 0 {
			return 0
		}
		start += nl + 1
	}
	end := bytes.IndexByte(data[start:], '\n')
	if end < 0 {
		end = len(data) - start
	}
	if start > 256<<10 || end > 512 {
		return 0
	}
	for k := 1; k <= end; k++ {
		if yamlError(data[:start+k]) == msg {
			return k
		}
	}
	return 0
}

// yamlError is the first error yaml.v3 gives for data, "" for none.
func yamlError(data []byte) string {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		if err := decodeSafe(dec, &n); err != nil {
			if errors.Is(err, io.EOF) {
				return ""
			}
			return err.Error()
		}
	}
}

func mappingValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

var (
	paramsType  = reflect.TypeOf(Params(nil))
	pkeyType    = reflect.TypeOf(PKey{})
	dscpMapType = reflect.TypeOf(DSCPMap(nil))
	// partIPoIBType is a partition's ipoib: true, false or a mapping.
	partIPoIBType = reflect.TypeOf(&PartitionIPoIB{})
)

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	switch n.Tag {
	case "!!null":
		return "null"
	case "!!bool":
		return "a boolean"
	case "!!int":
		return "an integer"
	case "!!float":
		return "a number"
	}
	return "a string"
}

func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	d.nodes++
	if d.nodes > maxNodes {
		if d.nodes == maxNodes+1 {
			// Every finding the expansion made so far follows from it, and
			// the spec is not read further: the cause goes first, and its
			// path "$" keeps Validate from checking a half-read spec.
			d.errorf("$", n, "spec expands to more than %d values (aliases?); it is not read further, and the findings after this one may follow from it", maxNodes)
			d.report[len(d.report)-1].Cause = true
		}
		return
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			d.errorf(path, n, "unknown alias")
			return
		}
		d.src.set(path, n)
		d.decode(n.Alias, v, path)
		return
	}
	d.src.set(path, n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" && v.Kind() != reflect.Slice {
		return // not given
	}
	if v.Type() == partIPoIBType && n.Kind == yaml.ScalarNode {
		var on bool
		if err := n.Decode(&on); err != nil || n.Tag != "!!bool" {
			d.errorf(path, n, "must be true, false or {rate, mtu, sl}")
			return
		}
		if on {
			v.Set(reflect.New(partIPoIBType.Elem()))
		}
		return
	}
	switch v.Type() {
	case paramsType:
		d.decodeParams(n, v, path)
		return
	case pkeyType:
		d.decodePKey(n, v, path)
		return
	case dscpMapType:
		d.decodeDSCPMap(n, v, path)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		e := reflect.New(v.Type().Elem())
		d.decode(n, e.Elem(), path)
		v.Set(e)
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Slice:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return
		}
		if n.Kind != yaml.SequenceNode {
			d.errorf(path, n, "must be a list, not %s", kindName(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			d.decode(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		v.Set(s)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.errorf(path, n, "must be a string, not %s", kindName(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Int:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!float" && strings.Trim(n.Value, "0123456789+-_") == "" {
			d.errorf(path, n, "integer %s is out of range", truncate(n.Value))
			return
		}
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			d.errorf(path, n, "must be an integer, not %s", kindName(n))
			return
		}
		i, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64)
		if err != nil || i > 1<<31-1 || i < -(1<<31) {
			d.errorf(path, n, "integer %s is out of range", truncate(n.Value))
			return
		}
		v.SetInt(i)
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			d.errorf(path, n, "must be true or false, not %s", kindName(n))
			return
		}
		var b bool
		if err := n.Decode(&b); err != nil {
			d.errorf(path, n, "must be true or false")
			return
		}
		v.SetBool(b)
	default:
		d.errorf(path, n, "cannot decode into %s", v.Type())
	}
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// fieldInfo describes a spec field: its key and Go field index.
type fieldInfo struct {
	key   string
	index int
}

func fieldsOf(t reflect.Type) []fieldInfo {
	var out []fieldInfo
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || name == "" || !f.IsExported() {
			continue
		}
		out = append(out, fieldInfo{key: name, index: i})
	}
	return out
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.errorf(path, n, "must be a mapping, not %s", kindName(n))
		return
	}
	fields := fieldsOf(v.Type())
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.errorf(path, k, "keys must be plain strings, not %s", kindName(k))
			continue
		}
		key := k.Value
		child := path + "." + key
		if prev, dup := seen[key]; dup {
			d.errorf(child, k, "duplicate key %q (first at line %d)", key, prev.Line)
			continue
		}
		seen[key] = k
		var fi *fieldInfo
		for j := range fields {
			if fields[j].key == key {
				fi = &fields[j]
				break
			}
		}
		if fi == nil {
			d.errorf(child, k, "unknown key %q%s", truncate(key), suggest(key, fields))
			continue
		}
		d.decode(val, v.Field(fi.index), child)
	}
}

// suggest names the closest known key, for typos such as roce_mod.
func suggest(key string, fields []fieldInfo) string {
	// Compare the key as written and without a leading "section_" (roce_mod
	// is a typo of mode inside roce:).
	forms := []string{strings.ToLower(key)}
	if _, rest, ok := strings.Cut(forms[0], "_"); ok && rest != "" {
		forms = append(forms, rest)
	}
	best, bestD := "", 3
	for _, f := range fields {
		for _, k := range forms {
			if dist := levenshtein(k, f.key); dist < bestD {
				best, bestD = f.key, dist
			}
		}
	}
	known := make([]string, len(fields))
	for i, f := range fields {
		known[i] = f.key
	}
	if best != "" {
		return fmt.Sprintf("; did you mean %q?", best)
	}
	return "; known keys: " + strings.Join(known, ", ")
}

func levenshtein(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func (d *decoder) decodeParams(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.errorf(path, n, "must be a mapping of PARAMETER: value, not %s", kindName(n))
		return
	}
	var ps Params
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if val.Kind == yaml.AliasNode && val.Alias != nil {
			val = val.Alias
		}
		child := path + "." + k.Value
		if k.Kind != yaml.ScalarNode {
			d.errorf(path, k, "parameter names must be plain strings")
			continue
		}
		if line, dup := seen[strings.ToUpper(k.Value)]; dup {
			d.errorf(child, k, "duplicate parameter %q (first at line %d)", k.Value, line)
			continue
		}
		seen[strings.ToUpper(k.Value)] = k.Line
		d.src.set(child, val)
		if val.Kind != yaml.ScalarNode || val.Tag == "!!null" {
			d.errorf(child, val, "must be a value (IB, ETH, true, 8, ...), not %s", kindName(val))
			continue
		}
		ps = append(ps, Param{Name: k.Value, Value: val.Value})
	}
	v.Set(reflect.ValueOf(ps))
}

// decodeDSCPMap reads {DSCP: PRIO}: integer keys 0-63, each once, and
// integer priorities 0-7, kept in spec order.
func (d *decoder) decodeDSCPMap(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.errorf(path, n, "must be a mapping of DSCP: priority (e.g. {26: 3}), not %s", kindName(n))
		return
	}
	m := DSCPMap{}
	seen := map[int]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if val.Kind == yaml.AliasNode && val.Alias != nil {
			val = val.Alias
		}
		child := path + "." + k.Value
		dscp, err := strconv.Atoi(k.Value)
		if k.Kind != yaml.ScalarNode || k.Tag != "!!int" || err != nil {
			d.errorf(path, k, "DSCP %q is not a number 0-63", truncate(k.Value))
			continue
		}
		if dscp < 0 || dscp > 63 {
			d.errorf(child, k, "DSCP %d is out of range 0-63", dscp)
			continue
		}
		if line, dup := seen[dscp]; dup {
			d.errorf(child, k, "DSCP %d is mapped twice (first at line %d)", dscp, line)
			continue
		}
		seen[dscp] = k.Line
		d.src.set(child, val)
		prio, err := strconv.Atoi(val.Value)
		if val.Kind != yaml.ScalarNode || val.Tag != "!!int" || err != nil {
			d.errorf(child, val, "priority must be a number 0-7, not %s", kindName(val))
			continue
		}
		if prio < 0 || prio > 7 {
			d.errorf(child, val, "priority %d is out of range 0-7", prio)
			continue
		}
		m = append(m, DSCPPrio{DSCP: dscp, Prio: prio})
	}
	v.Set(reflect.ValueOf(m))
}

func (d *decoder) decodePKey(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!str") {
		d.errorf(path, n, "must be a P_Key such as 0x8002 or 32770, not %s", kindName(n))
		return
	}
	i, err := strconv.ParseInt(strings.TrimSpace(n.Value), 0, 64)
	if err != nil {
		d.errorf(path, n, "P_Key %q is not a number (write 0x8002 or 32770)", truncate(n.Value))
		return
	}
	if i < 0 || i > 0xffff {
		d.errorf(path, n, "P_Key %s is out of range 0x0001-0xffff", truncate(n.Value))
		return
	}
	v.Set(reflect.ValueOf(PKey{Value: int(i), Text: n.Value}))
}
