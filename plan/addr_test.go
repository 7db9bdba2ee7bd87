package plan

import "testing"

func TestAddr(t *testing.T) {
	for _, tt := range []struct{ kind, key string }{{"rxe", "rxe0"}, {"firmware", "0000:3b:00.0"}, {"rdma_cm", "mlx5_0/1"}, {"mlx4_port", "0000:81:00.0/2"}} {
		a := Addr(tt.kind, tt.key)
		kind, key, ok := SplitAddr(a)
		if !ok || kind != tt.kind || key != tt.key {
			t.Errorf("SplitAddr(%q) = %q, %q, %v", a, kind, key, ok)
		}
	}
	for _, bad := range []string{"", "rxe0", "[x]", "rxe[rxe0", "rxe]rxe0["} {
		if _, _, ok := SplitAddr(Address(bad)); ok {
			t.Errorf("SplitAddr(%q) ok", bad)
		}
	}
}
