package audit

import "github.com/rdmaform/rdmaform/plan"

var a = plan.Address("x[y]")
