// Asserting an observation or reading a change's before value by hand.
package toy

type obs struct{ Before string }

func look(observed any) string {
	o := observed.(*obs)
	switch observed.(type) {
	case *obs:
	}
	return o.Before
}
