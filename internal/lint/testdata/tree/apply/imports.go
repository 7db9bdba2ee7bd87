// Every forbidden import but os/exec (plan/bad.go).
package apply

import (
	_ "github.com/Mellanox/rdmamap"
	_ "github.com/coreos/go-systemd/v22/dbus"
	_ "github.com/godbus/dbus/v5"
	_ "github.com/vishvananda/netlink"
	_ "github.com/vishvananda/netns"
	_ "syscall/exec"
)
