package plan

import (
	"strings"
	"testing"
)

type obsA struct{ n int }
type payA struct{ v string }
type payB struct{}

// TestTyped: an observation and a payload come back as the provider's own
// types; nothing read is the zero value, and another provider's payload
// is an error naming the change.
func TestTyped(t *testing.T) {
	if o := Observation[*obsA](&obsA{n: 3}); o == nil || o.n != 3 {
		t.Errorf("Observation = %v", o)
	}
	if o := Observation[*obsA](nil); o != nil {
		t.Errorf("nothing read: %v, want nil", o)
	}
	c := &Change{Address: Addr("x", "1"), Provider: "x", Payload: &payA{v: "a"}}
	if p, err := PayloadOf[*payA](c); err != nil || p.v != "a" {
		t.Errorf("PayloadOf = %v, %v", p, err)
	}
	if _, err := PayloadOf[*payB](c); err == nil || !strings.Contains(err.Error(), "x[1]: its payload is *plan.payA, not the *plan.payB provider \"x\" made") {
		t.Errorf("another provider's payload: %v", err)
	}
	if _, err := PayloadOf[*payA](&Change{Address: Addr("y", "2")}); err == nil || !strings.HasPrefix(err.Error(), "y[2]: ") {
		t.Errorf("no payload: %v", err)
	}
}
