package firmware

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/providers/firmware/mlxfmt"
	"github.com/rdmaform/rdmaform/schema"
)

// ParamDBPath is mstflint's parameter database on Debian: every parameter
// mstconfig knows, with its type and enum values.
const ParamDBPath = "/usr/share/mstflint/mlxconfig_dbs/mlxconfig_host.db"

// DBParam is one parameter of the database.
type DBParam struct {
	// Name is mlxconfig_name, without the _Pn port suffix.
	Name string
	// Type is BOOL, ENUM, UNSIGNED, INTEGER, BINARY, BYTES or STRING.
	Type string
	// Enum lists an ENUM's textual_values (IB=0x1,ETH=0x2) in order.
	Enum []mlxfmt.Value
	// PerPort parameters (TLV class 1) are written NAME_P1, NAME_P2.
	PerPort bool
	// TLV is the name of the TLV that holds it (nv_global_pci_conf).
	TLV string
	// Class is the TLV class: 0 global, 1 physical port, 3 per host
	// function, 7 per host, 9 per module.
	Class int
	// Bits is the field width (size 0x0.16 is 16 bits, 0x4.0 is 32).
	Bits int
	// Min and Max bound a number when the database gives them.
	Min, Max *int64
}

// ParamDB is the parameter database, by name.
type ParamDB struct {
	Path   string
	Params map[string]DBParam
}

// LoadParamDB reads the parameter database at path through host.OpenSQLite.
//
// Equivalent to: sqlite3 PATH 'SELECT p.mlxconfig_name, p.type, p.textual_values, p.size, p.min_val, p.max_val, t.class, t.name FROM params p JOIN tlvs t ON t.name = p.tlv_name'
func LoadParamDB(path string) (*ParamDB, error) {
	db, err := host.OpenSQLite(path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.Query(`SELECT p.mlxconfig_name, p.type, IFNULL(p.textual_values, ''), IFNULL(p.size, ''),
		IFNULL(p.min_val, ''), IFNULL(p.max_val, ''), t.class, t.name
		FROM params p JOIN tlvs t ON t.name = p.tlv_name
		WHERE p.mlxconfig_name IS NOT NULL AND p.mlxconfig_name != ''`)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer rows.Close()
	out := &ParamDB{Path: path, Params: map[string]DBParam{}}
	for rows.Next() {
		var name, typ, textual, size, minV, maxV, tlv string
		var class int
		if err := rows.Scan(&name, &typ, &textual, &size, &minV, &maxV, &class, &tlv); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		p := DBParam{Name: name, Type: typ, PerPort: class == 1, Class: class, TLV: tlv, Bits: sizeBits(size), Min: parseInt(minV), Max: parseInt(maxV)}
		if typ == "ENUM" {
			p.Enum = parseTextual(textual)
		}
		out.Params[name] = p
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// sizeBits reads a size such as 0x0.16 (16 bits) or 0x4.0 (4 bytes).
func sizeBits(s string) int {
	by, bi, _ := strings.Cut(s, ".")
	nBy, err1 := strconv.ParseInt(strings.TrimPrefix(by, "0x"), 16, 32)
	nBi, err2 := strconv.Atoi(bi)
	if err1 != nil || err2 != nil {
		return 0
	}
	return int(nBy)*8 + nBi
}

func parseInt(s string) *int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 0, 64)
	if err != nil {
		return nil
	}
	return &n
}

// parseTextual reads textual_values: IB=0x1,ETH=0x2.
func parseTextual(s string) []mlxfmt.Value {
	var out []mlxfmt.Value
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 0, 64)
		if err != nil {
			continue
		}
		out = append(out, mlxfmt.Value{Kind: mlxfmt.KindEnum, Text: k, Num: n})
	}
	return out
}

var portSuffixRE = regexp.MustCompile(`^(.+)_P([1-9][0-9]?)$`)
var indexRE = regexp.MustCompile(`^(.+)\[[0-9]+(\.\.[0-9]+)?\]$`)

// Lookup finds the database entry of a name as written in a spec
// (LINK_TYPE_P1, NUM_OF_VFS, NAME[3]).
func (db *ParamDB) Lookup(name string) (DBParam, bool) {
	if m := indexRE.FindStringSubmatch(name); m != nil {
		name = m[1]
	}
	if p, ok := db.Params[name]; ok && !p.PerPort {
		return p, true
	}
	if m := portSuffixRE.FindStringSubmatch(name); m != nil {
		if p, ok := db.Params[m[1]]; ok && p.PerPort {
			return p, true
		}
	}
	return DBParam{}, false
}

// CheckValue says why a value does not fit a parameter, or "".
func (p DBParam) CheckValue(value string) string {
	v := mlxfmt.ParseValue(value)
	switch p.Type {
	case "BOOL":
		if mlxfmt.Equal(value, mlxfmt.Enum("True", 1)) || mlxfmt.Equal(value, mlxfmt.Enum("False", 0)) {
			return ""
		}
		return "is boolean: true, false, 1 or 0"
	case "ENUM":
		for _, e := range p.Enum {
			if mlxfmt.Equal(value, e) {
				return ""
			}
		}
		names := make([]string, len(p.Enum))
		for i, e := range p.Enum {
			names[i] = fmt.Sprintf("%s(%d)", e.Text, e.Num)
		}
		return "takes " + strings.Join(names, ", ")
	case "UNSIGNED", "INTEGER":
		n, ok := v.Number()
		if !ok {
			return "takes a number"
		}
		lo, hi := int64(0), int64(math.MaxInt64)
		if p.Type == "INTEGER" && p.Bits > 0 && p.Bits < 64 {
			lo, hi = -(int64(1) << (p.Bits - 1)), int64(1)<<(p.Bits-1)-1
		} else if p.Bits > 0 && p.Bits < 63 {
			hi = int64(1)<<p.Bits - 1
		}
		if p.Min != nil {
			lo = *p.Min
		}
		if p.Max != nil {
			hi = *p.Max
		}
		if n < lo || n > hi {
			return fmt.Sprintf("takes %d to %d", lo, hi)
		}
	}
	return ""
}

// Check reports every firmware parameter of a spec the database does not
// know, and every value it does not allow, at the parameter's spec line.
// It is pure: the database was read before.
func (db *ParamDB) Check(spec *schema.Spec) schema.Report {
	var rep schema.Report
	for i, d := range spec.Devices {
		if d.Firmware == nil {
			continue
		}
		for _, prm := range d.Firmware.Params {
			path := schema.Path("devices", i, "firmware", "params", prm.Name)
			f := func(format string, args ...any) {
				rep = append(rep, schema.Finding{Path: path, Pos: spec.Src.Lookup(path), Message: fmt.Sprintf(format, args...)})
			}
			p, ok := db.Lookup(prm.Name)
			if !ok {
				f("unknown firmware parameter %s (not in %s; --no-param-db skips this check)", prm.Name, db.Path)
				continue
			}
			if linkTypeRE.MatchString(prm.Name) && mlxfmt.Equal(prm.Value, mlxfmt.Enum("VPI", 3)) {
				// ConnectX-3's auto-sensing link type: its parameters are
				// not in the database (it lists ConnectX-4 and later), and
				// show captures VPI there.
				continue
			}
			if why := p.CheckValue(prm.Value); why != "" {
				f("%q is not a valid value: %s %s", prm.Value, prm.Name, why)
			}
		}
	}
	rep.Sort()
	return rep
}
