package placed

func (*Provider) CaptureFrom() {}
