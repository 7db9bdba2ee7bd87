// A provider's test may assert and read attributes.
package toy

func peekTest(observed any, c change) string {
	_ = c.Payload.(*attr)
	return observed.(*attr).After
}
