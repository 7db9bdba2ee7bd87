// Nor the providers' root package, from a package under sim/.
package emu

import (
	_ "github.com/rdmaform/rdmaform/plan"
	_ "github.com/rdmaform/rdmaform/providers"
)
