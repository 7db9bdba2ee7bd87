// Tests are free to define methods anywhere.
package misplaced

func (*Provider) Revert2() {}
