package audit

import "github.com/rdmaform/rdmaform/plan"

var (
	a    = plan.Address{Kind: "x", Key: "y"}
	none = plan.Address{}
)
