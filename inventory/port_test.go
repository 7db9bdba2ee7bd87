package inventory

import "testing"

func TestSubnetManagerPresent(t *testing.T) {
	tests := []struct {
		name string
		port *Port
		want bool
	}{
		{"active IB port with an SM", &Port{LinkLayer: "InfiniBand", State: "ACTIVE", SMLID: 1}, true},
		{"IB port waiting for an SM", &Port{LinkLayer: "InfiniBand", State: "INIT", SMLID: 0}, false},
		{"IB port, SM gone, LID kept", &Port{LinkLayer: "InfiniBand", State: "INIT", SMLID: 1}, false},
		{"active IB port with sm_lid 0", &Port{LinkLayer: "InfiniBand", State: "ACTIVE", SMLID: 0}, false},
		{"Ethernet port", &Port{LinkLayer: "Ethernet", State: "ACTIVE"}, false},
		{"no port", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.port.SubnetManagerPresent(); got != tt.want {
				t.Errorf("SubnetManagerPresent(%+v) = %v, want %v", tt.port, got, tt.want)
			}
		})
	}
}
