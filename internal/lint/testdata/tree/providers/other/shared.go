// A provider may import its own packages and the tools' parsers.
package other

import (
	_ "github.com/rdmaform/rdmaform/probe"
	_ "github.com/rdmaform/rdmaform/providers/ipoib/nmcli"
	_ "github.com/rdmaform/rdmaform/providers/other/sub"
)
