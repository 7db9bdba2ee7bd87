package audit

import "github.com/rdmaform/rdmaform/plan"

var _ = plan.Address{Kind: "x", Key: "y"}
