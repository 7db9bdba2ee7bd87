// A package under a provider may not import another provider either.
package sub

import (
	_ "github.com/rdmaform/rdmaform/providers/other"
	_ "github.com/rdmaform/rdmaform/providers/toy" // its own provider
)

type change struct{ Payload any }

// The rules on providers' code hold in packages under a provider too.
func payload(c change) int { n, _ := c.Payload.(int); return n }
