// Another package's Address, and plan.Address in a test, are not plan's.
package audit

import "github.com/rdmaform/rdmaform/inventory"

var _ = inventory.Address{Name: "x"}
