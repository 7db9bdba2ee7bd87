package emu

import _ "github.com/rdmaform/rdmaform/providers/firmware/mlxfmt"
