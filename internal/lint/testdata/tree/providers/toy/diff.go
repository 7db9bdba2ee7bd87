// Files other than capture.go may read.
package toy

import (
	"context"

	"github.com/rdmaform/rdmaform/host"
)

var (
	_ context.Context
	_ *host.Host
)
