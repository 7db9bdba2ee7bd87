// A package under a provider has no Provider layout.
package sub

type Provider struct{}

func (*Provider) Make() {}
