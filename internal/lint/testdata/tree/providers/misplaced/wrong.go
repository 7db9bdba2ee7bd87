// Every Provider method in the wrong file.
package misplaced

type Provider struct{}

func (*Provider) Name() string { return "" }
func (*Provider) Observe()     {}
func (Provider) Plan()         {}
func (*Provider) Make()        {}
func (*Provider) ApplyBatch()  {}
func (*Provider) ParallelKey() {}
func (*Provider) Revert()      {}
func (*Provider) CaptureFrom() {}
func (*Provider) helper()      {}
