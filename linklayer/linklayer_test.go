package linklayer

import "testing"

func TestOfMlx4Type(t *testing.T) {
	for in, want := range map[string]LinkLayer{"ib": InfiniBand, "eth": Ethernet, "auto": "", "": "", "IB": ""} {
		if got := OfMlx4Type(in); got != want {
			t.Errorf("OfMlx4Type(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOfLinkType(t *testing.T) {
	for in, want := range map[string]LinkLayer{
		"IB": InfiniBand, "ib": InfiniBand, "1": InfiniBand, "IB(1)": InfiniBand, "0x1": InfiniBand, " ib(1) ": InfiniBand,
		"ETH": Ethernet, "eth": Ethernet, "2": Ethernet, "ETH(2)": Ethernet, "0x2": Ethernet,
		"VPI": "", "3": "", "VPI(3)": "", "IB(2)": Ethernet, "ETH(1)": InfiniBand, "": "", "0": "", "IB(x)": "", "ETHX": "",
	} {
		if got := OfLinkType(in); got != want {
			t.Errorf("OfLinkType(%q) = %q, want %q", in, got, want)
		}
	}
}
