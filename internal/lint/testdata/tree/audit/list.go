package audit

import "github.com/rdmaform/rdmaform/providers/toy"

var _ = toy.Y
