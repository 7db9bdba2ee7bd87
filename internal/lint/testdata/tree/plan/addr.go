// plan itself builds addresses.
package plan

import "github.com/rdmaform/rdmaform/plan"

var _ = plan.Address{Kind: "x", Key: "y"}
