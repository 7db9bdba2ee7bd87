package placed

func (*Provider) Revert() {}
