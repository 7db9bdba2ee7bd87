// Every Provider method in its own file: NAME.go.
package placed

type Provider struct{}

func (*Provider) Name() string { return "placed" }
func (*Provider) Observe()     {}

type helper struct{}

// Methods of another type are free.
func (*helper) Make()  {}
func (helper) Revert() {}
