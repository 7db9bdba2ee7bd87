package placed

func (*Provider) Plan() {}
