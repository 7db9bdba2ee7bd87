// The test harness is at the boundary.
package testlab

import (
	"os"

	"github.com/vishvananda/netlink"
)

var _ = netlink.LinkList

func lab() { _ = os.MkdirAll("/tmp/lab", 0o755) }
