package names

import (
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// ueventFS is a host's file system with one netdev's uevent replaced.
type ueventFS struct {
	host.FS
	path   string
	uevent []byte
}

func (f *ueventFS) ReadFile(name string) ([]byte, error) {
	if name == f.path {
		return f.uevent, nil
	}
	return f.FS.ReadFile(name)
}

// TestDevTypeOnlyAWord: the DEVTYPE read from a netdev's uevent goes
// into a udev rule between quotes (ENV{DEVTYPE}=="..."), so only a word
// the kernel could have set is kept: lower-case letters, digits, _ and -,
// 1 to 32 of them. Anything else (a quote that would close the match and
// add keys, udev's substitutions, upper case, 33 characters) reads as no
// DEVTYPE.
func TestDevTypeOnlyAWord(t *testing.T) {
	for _, c := range []struct{ devtype, want string }{
		{"vlan", "vlan"},
		{"bridge", "bridge"},
		{"wlan", "wlan"},
		{"a_b-9", "a_b-9"},
		{strings.Repeat("x", 32), strings.Repeat("x", 32)},
		{strings.Repeat("x", 33), ""},
		{"", ""},
		{`vlan",RUN+="/bin/sh -c x`, ""},
		{`vlan"`, ""},
		{"vlan\\", ""},
		{"%k", ""},
		{"$kernel", ""},
		{"vlan x", ""},
		{"Vlan", ""},
		{"vlan.1", ""},
	} {
		_, h := simtest.New(t, "vm-soft", 0, nil)
		const dev = "enp1s0"
		h.FS = &ueventFS{FS: h.FS, path: "/sys/class/net/" + dev + "/uevent", uevent: []byte("DEVTYPE=" + c.devtype + "\nINTERFACE=" + dev + "\nIFINDEX=2\n")}
		nd := readNetdev(h, dev)
		if nd.DevType != c.want {
			t.Errorf("DEVTYPE=%q read as %q, want %q", c.devtype, nd.DevType, c.want)
		}
		if r := netdevRule("", nd, "x0").line; strings.Count(r, `"`)%2 != 0 || strings.Contains(r, "RUN") {
			t.Errorf("DEVTYPE=%q: rule %s", c.devtype, r)
		}
	}
}
