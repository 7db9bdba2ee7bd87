package placed

func (*Provider) Make()        {}
func (*Provider) ApplyBatch()  {}
func (*Provider) ParallelKey() {}
