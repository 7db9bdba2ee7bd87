package linklayer

import "testing"

func TestOfMlx4Type(t *testing.T) {
	for in, want := range map[string]string{"ib": InfiniBand, "eth": Ethernet, "auto": "", "": "", "IB": ""} {
		if got := OfMlx4Type(in); got != want {
			t.Errorf("OfMlx4Type(%q) = %q, want %q", in, got, want)
		}
	}
}
