package other

import (
	"github.com/rdmaform/rdmaform/providers/firmware/mlxfmt"
	"github.com/rdmaform/rdmaform/providers/toy"
)

var _ = mlxfmt.X
var _ = toy.Y
