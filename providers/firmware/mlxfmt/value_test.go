package mlxfmt

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var cmpValue = cmpopts.EquateComparable(Value{})

func TestParseValue(t *testing.T) {
	tests := []struct {
		in   string
		want Value
		str  string
	}{
		{"IB(1)", Value{Kind: KindEnum, Text: "IB", Num: 1}, "IB(1)"},
		{"True(1)", Value{Kind: KindEnum, Text: "True", Num: 1}, "True(1)"},
		{"_256KB(1)", Value{Kind: KindEnum, Text: "_256KB", Num: 1}, "_256KB(1)"},
		{"PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0)", Value{Kind: KindEnum, Text: "PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED", Num: 0}, "PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0)"},
		{"8", Value{Kind: KindNumber, Num: 8}, "8"},
		{" 255 ", Value{Kind: KindNumber, Num: 255}, "255"},
		{"Array[0..15]", Value{Kind: KindArray, Lo: 0, Hi: 15}, "Array[0..15]"},
		{"N/A", Value{Kind: KindNA}, "N/A"},
		{"0x8", Value{Kind: KindHex, Text: "0x8", Num: 8, hexFits: true}, "0x8"},
		{"0x00000000000000000000000000000001", Value{Kind: KindHex, Text: "0x00000000000000000000000000000001", Num: 1, hexFits: true}, "0x00000000000000000000000000000001"},
		{"0xffffffffffffffffff", Value{Kind: KindHex, Text: "0xffffffffffffffffff"}, "0xffffffffffffffffff"},
		{"eth", Value{Kind: KindText, Text: "eth"}, "eth"},
		{"(2)", Value{Kind: KindText, Text: "(2)"}, "(2)"},
		{"", Value{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got := ParseValue(tt.in)
			if diff := cmp.Diff(tt.want, got, cmpValue); diff != "" {
				t.Errorf("ParseValue (-want +got):\n%s", diff)
			}
			if got.String() != tt.str {
				t.Errorf("String() = %q, want %q", got.String(), tt.str)
			}
		})
	}
}

func TestEqual(t *testing.T) {
	eth, ib := Enum("ETH", 2), Enum("IB", 1)
	tr, fa := Enum("True", 1), Enum("False", 0)
	tests := []struct {
		desired  string
		observed Value
		want     bool
	}{
		{"ETH", eth, true},
		{"eth", eth, true},
		{"2", eth, true},
		{"ETH(2)", eth, true},
		{"eth(2)", eth, true},
		{"IB", eth, false},
		{"1", eth, false},
		{"IB(1)", eth, false},
		{"ETH", ib, false},
		{"true", tr, true},
		{"True", tr, true},
		{"TRUE", tr, true},
		{"1", tr, true},
		{"True(1)", tr, true},
		{"false", tr, false},
		{"false", fa, true},
		{"0", fa, true},
		{"true", fa, false},
		{"true", Num(1), true},
		{"8", Num(8), true},
		{"0x8", Num(8), true},
		{"08", Num(8), true},
		{"9", Num(8), false},
		{"eth", Num(2), false},
		{"ROCE_ENABLE", Enum("ROCE_ENABLE", 2), true},
		{"device_default", Enum("DEVICE_DEFAULT", 0), true},
		{"2", Value{}, false},
		{"N/A", NA(), false},
		{"", eth, false},
		{"Array[0..15]", Value{Kind: KindArray, Hi: 15}, true},
	}
	for _, tt := range tests {
		t.Run(tt.desired+"~"+tt.observed.String(), func(t *testing.T) {
			if got := Equal(tt.desired, tt.observed); got != tt.want {
				t.Errorf("Equal(%q, %v) = %v, want %v", tt.desired, tt.observed, got, tt.want)
			}
		})
	}
}

func TestSetArg(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"ETH", "ETH", false},
		{"eth", "eth", false},
		{"ETH(2)", "2", false},
		{"2", "2", false},
		{"0x8", "8", false},
		{"true", "True", false},
		{"FALSE", "False", false},
		{"True(1)", "1", false},
		{"", "", true},
		{"a b", "", true},
		{"a=b", "", true},
		{"N/A", "", true},
		{"Array[0..1]", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := SetArg(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrBadValue) {
				t.Errorf("err %v does not wrap ErrBadValue", err)
			}
			if got != tt.want {
				t.Errorf("SetArg(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
