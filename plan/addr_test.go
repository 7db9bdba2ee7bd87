package plan

import (
	"encoding/json"
	"testing"
)

// TestAddr: an address prints KIND[KEY], reads back from that form (also
// through JSON, where it is a string), and orders as its printed form.
func TestAddr(t *testing.T) {
	for _, tt := range []struct{ kind, key, text string }{
		{"rxe", "rxe0", "rxe[rxe0]"},
		{"firmware", "0000:3b:00.0", "firmware[0000:3b:00.0]"},
		{"rdma_cm", "mlx5_0/1", "rdma_cm[mlx5_0/1]"},
		{"mlx4_port", "0000:81:00.0/2", "mlx4_port[0000:81:00.0/2]"},
	} {
		a := Addr(tt.kind, tt.key)
		if a.String() != tt.text || a.Kind != tt.kind || a.Key != tt.key {
			t.Errorf("Addr(%q, %q) = %+v, printed %q, want %q", tt.kind, tt.key, a, a, tt.text)
		}
		if p, err := ParseAddr(tt.text); err != nil || p != a {
			t.Errorf("ParseAddr(%q) = %+v, %v", tt.text, p, err)
		}
		b, err := json.Marshal(map[Address]Address{a: a})
		if err != nil || string(b) != `{"`+tt.text+`":"`+tt.text+`"}` {
			t.Errorf("JSON of %s: %s, %v", a, b, err)
		}
		var back map[Address]Address
		if err := json.Unmarshal(b, &back); err != nil || back[a] != a {
			t.Errorf("JSON %s read back: %v, %v", b, back, err)
		}
	}
	for _, bad := range []string{"", "rxe0", "[x]", "rxe[rxe0", "rxe]rxe0["} {
		if a, err := ParseAddr(bad); err == nil {
			t.Errorf("ParseAddr(%q) = %+v, want an error", bad, a)
		}
	}
	if (Address{}).String() != "" {
		t.Errorf("no address prints %q", Address{})
	}
	if !Addr("qos", "mlx5_0/1").Less(Addr("rdma_cm", "a")) || !Addr("rxe", "a").Less(Addr("rxe", "b")) || Addr("rxe", "b").Less(Addr("rxe", "b")) {
		t.Errorf("Less does not order as the printed forms")
	}
}
