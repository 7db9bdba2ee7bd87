package words

import "testing"

func TestPlural(t *testing.T) {
	for n, want := range map[int]string{0: "changes", 1: "change", 2: "changes"} {
		if got := Plural(n, "change", "changes"); got != want {
			t.Errorf("Plural(%d) = %q, want %q", n, got, want)
		}
	}
}
