package mlxfmt

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// ValueKind tells how a firmware value was written.
type ValueKind int

const (
	// KindAbsent is the zero value: the column was not printed (firmware that
	// cannot report Default or Current, or a query without -e).
	KindAbsent ValueKind = iota
	// KindNumber is a bare integer such as 8 or 255.
	KindNumber
	// KindEnum is TEXT(number): IB(1), True(1), _256KB(1), DEVICE_DEFAULT(0).
	KindEnum
	// KindArray is an array summary such as Array[0..15]; it has no number.
	KindArray
	// KindNA is N/A: the firmware did not report the value.
	KindNA
	// KindHex is a 0x-prefixed hexadecimal string (BYTES parameters, or an
	// operator's 0x8); Number reports it only when it fits in 63 bits.
	KindHex
	// KindText is any other single token: a bare enum name an operator wrote
	// (eth, true), or a BYTES/STRING value printed as-is.
	KindText
)

// String names the kind for messages and test output.
func (k ValueKind) String() string {
	switch k {
	case KindAbsent:
		return "absent"
	case KindNumber:
		return "number"
	case KindEnum:
		return "enum"
	case KindArray:
		return "array"
	case KindNA:
		return "N/A"
	case KindHex:
		return "hex"
	case KindText:
		return "text"
	}
	return fmt.Sprintf("ValueKind(%d)", int(k))
}

// Value is one cell of an mlxconfig table, or a value an operator wrote in a
// spec, parsed by ParseValue. The zero Value is KindAbsent.
type Value struct {
	Kind ValueKind
	// Text is the enum name of KindEnum, the token of KindText and KindHex.
	Text string
	// Num is the number of KindNumber and KindEnum, and of KindHex when
	// HasNum reports true.
	Num int64
	// Lo and Hi bound KindArray: Array[Lo..Hi].
	Lo, Hi int64
	// hexFits records that a KindHex value fitted in Num.
	hexFits bool
}

// Number returns the value's number and whether it has one.
func (v Value) Number() (int64, bool) {
	switch v.Kind {
	case KindNumber, KindEnum:
		return v.Num, true
	case KindHex:
		return v.Num, v.hexFits
	}
	return 0, false
}

// String renders the value the way mlxconfig prints it (MlxCfg::printValue):
// a plain number, TEXT(number), Array[a..b], N/A, or the token as-is.
func (v Value) String() string {
	switch v.Kind {
	case KindAbsent:
		return ""
	case KindNumber:
		return strconv.FormatInt(v.Num, 10)
	case KindEnum:
		return v.Text + "(" + strconv.FormatInt(v.Num, 10) + ")"
	case KindArray:
		return "Array[" + strconv.FormatInt(v.Lo, 10) + ".." + strconv.FormatInt(v.Hi, 10) + "]"
	case KindNA:
		return "N/A"
	}
	return v.Text
}

// Display is the value for people: the name of an enum value without its
// number (IB, True, ROCE_ENABLE), otherwise as the tool prints it.
func (v Value) Display() string {
	if v.Kind == KindEnum {
		return v.Text
	}
	return v.String()
}

// Num returns a bare-number value.
func Num(n int64) Value { return Value{Kind: KindNumber, Num: n} }

// Enum returns a TEXT(number) value such as ETH(2). mlxconfig prints a plain
// number when the text is empty or spells the number itself, and so does the
// returned Value.
func Enum(text string, n int64) Value {
	if text == "" || text == strconv.FormatInt(n, 10) {
		return Num(n)
	}
	return Value{Kind: KindEnum, Text: text, Num: n}
}

// NA is the value printed as N/A.
func NA() Value { return Value{Kind: KindNA} }

// ParseValue reads one value token: a table cell (IB(1), 8, Array[0..15],
// N/A, a hex string) or a value from a spec (ETH, eth, 2, 0x8, true). Spaces
// around the token are ignored; an empty string is KindAbsent. It never
// fails: anything unrecognised is KindText.
func ParseValue(s string) Value {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return Value{}
	case s == "N/A":
		return NA()
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return Num(n)
	}
	if lo, hi, ok := parseArray(s); ok {
		return Value{Kind: KindArray, Lo: lo, Hi: hi}
	}
	if strings.HasSuffix(s, ")") {
		if i := strings.LastIndexByte(s, '('); i > 0 {
			if n, err := strconv.ParseInt(s[i+1:len(s)-1], 10, 64); err == nil {
				return Value{Kind: KindEnum, Text: s[:i], Num: n}
			}
		}
	}
	if len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X") && isHex(s[2:]) {
		v := Value{Kind: KindHex, Text: s}
		if b, ok := new(big.Int).SetString(s[2:], 16); ok && b.IsInt64() {
			v.Num, v.hexFits = b.Int64(), true
		}
		return v
	}
	return Value{Kind: KindText, Text: s}
}

func parseArray(s string) (lo, hi int64, ok bool) {
	rest, found := strings.CutPrefix(s, "Array[")
	if !found || !strings.HasSuffix(rest, "]") {
		return 0, 0, false
	}
	a, b, found := strings.Cut(rest[:len(rest)-1], "..")
	if !found {
		return 0, 0, false
	}
	lo, err1 := strconv.ParseInt(a, 10, 64)
	hi, err2 := strconv.ParseInt(b, 10, 64)
	return lo, hi, err1 == nil && err2 == nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return s != ""
}

// boolNumber maps the spec words true/false (any case) to 1/0, the numbers
// of mlxconfig's BOOL enum {False=0, True=1}.
func boolNumber(s string) (int64, bool) {
	switch strings.ToLower(s) {
	case "true":
		return 1, true
	case "false":
		return 0, true
	}
	return 0, false
}

// desiredNumber is the number an operator's value stands for, if any:
// TEXT(n) and plain or 0x numbers give theirs, true/false give 1/0.
func desiredNumber(d Value) (int64, bool) {
	if n, ok := d.Number(); ok {
		return n, true
	}
	if d.Kind == KindText {
		return boolNumber(d.Text)
	}
	return 0, false
}

// Equal reports whether the value an operator wrote in a spec (ETH, eth, 2,
// ETH(2), true, True(1), 1, 0x8) means the observed table value.
//
// When the observed value has a number, the numbers are compared; a bare
// enum name the operator wrote is matched against the observed name without
// regard to case (mlxconfig itself accepts either). true/false stand for
// True(1)/False(0). Otherwise the texts are compared without regard to case.
// Absent and N/A observed values equal nothing.
func Equal(desired string, observed Value) bool {
	d := ParseValue(desired)
	if d.Kind == KindAbsent || observed.Kind == KindAbsent || observed.Kind == KindNA {
		return false
	}
	if on, ok := observed.Number(); ok {
		if dn, ok := d.Number(); ok {
			return dn == on
		}
		if d.Kind == KindText && observed.Kind == KindEnum && strings.EqualFold(d.Text, observed.Text) {
			return true
		}
		if dn, ok := desiredNumber(d); ok {
			return dn == on
		}
		return false
	}
	return strings.EqualFold(d.String(), observed.String())
}

// SetArg renders the value an operator wrote in the form rdmaform passes to
// `mlxconfig set NAME=VALUE`: TEXT(n) and numbers (0x8 too) become the
// decimal number, true/false become True/False, and an enum name is passed
// as written (the tool matches names without regard to case). A value that
// could break the command line (empty, spaces, '=', control characters) is
// an error wrapping ErrBadValue.
func SetArg(desired string) (string, error) {
	d := ParseValue(desired)
	switch d.Kind {
	case KindAbsent:
		return "", fmt.Errorf("%w: empty value", ErrBadValue)
	case KindNumber, KindEnum:
		return strconv.FormatInt(d.Num, 10), nil
	case KindHex:
		if d.hexFits {
			return strconv.FormatInt(d.Num, 10), nil
		}
		return d.Text, nil
	case KindArray, KindNA:
		return "", fmt.Errorf("%w: %q cannot be set", ErrBadValue, desired)
	}
	if n, ok := boolNumber(d.Text); ok {
		if n == 1 {
			return "True", nil
		}
		return "False", nil
	}
	for _, r := range d.Text {
		if r == '=' || r <= ' ' || r == 0x7f {
			return "", fmt.Errorf("%w: %q", ErrBadValue, desired)
		}
	}
	return d.Text, nil
}
