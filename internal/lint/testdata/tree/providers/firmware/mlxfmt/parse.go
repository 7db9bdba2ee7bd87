package mlxfmt

import _ "github.com/rdmaform/rdmaform/sim/mlxemu"
