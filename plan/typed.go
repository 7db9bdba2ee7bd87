package plan

import "fmt"

// Observation is what a provider's Discover returned, as the provider's
// own type: the one place an observation is asserted, so a provider's Diff
// starts from its type. It is the zero value when Discover had nothing.
func Observation[O any](observed any) O {
	o, _ := observed.(O)
	return o
}

// PayloadOf is a change's payload as the provider's own type: the one
// place a payload is asserted. A change with another provider's payload,
// or none, is an error naming the change.
func PayloadOf[P any](c *Change) (P, error) {
	p, ok := c.Payload.(P)
	if !ok {
		return p, fmt.Errorf("%s: its payload is %T, not the %T provider %q made", c.Address, c.Payload, p, c.Provider)
	}
	return p, nil
}
