package names

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// plantedFS is a host's file system with some files' content replaced.
type plantedFS struct {
	host.FS
	files map[string]string
}

func (f *plantedFS) ReadFile(name string) ([]byte, error) {
	if b, ok := f.files[name]; ok {
		return []byte(b), nil
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
		h.FS = &plantedFS{FS: h.FS, files: map[string]string{"/sys/class/net/" + dev + "/uevent": "DEVTYPE=" + c.devtype + "\nINTERFACE=" + dev + "\nIFINDEX=2\n"}}
		nd := readNetdev(h, dev)
		if nd.DevType != c.want {
			t.Errorf("DEVTYPE=%q read as %q, want %q", c.devtype, nd.DevType, c.want)
		}
		if r := netdevRule("", nd, "x0").line; strings.Count(r, `"`)%2 != 0 || strings.Contains(r, "RUN") {
			t.Errorf("DEVTYPE=%q: rule %s", c.devtype, r)
		}
	}
}

// TestSysfsValuesOnlyAsTheKernelWritesThem: type, dev_port and address
// go into a udev rule between quotes; a tree under --root is anyone's,
// so only what the kernel writes there is kept (a number; a MAC as %pM
// prints it): a quote, a substitution or text reads as nothing, and the
// rule keeps its defaults (type 1, dev_port 0) with every quote paired.
func TestSysfsValuesOnlyAsTheKernelWritesThem(t *testing.T) {
	const dev = "enp1s0"
	dir := "/sys/class/net/" + dev + "/"
	bad := []string{`0", RUN+="/bin/sh -c x`, "%k", "$kernel", "x", "-1", "1 2", ""}
	for _, file := range []string{"type", "dev_port"} {
		for _, v := range append(bad, "12345678901") {
			_, h := simtest.New(t, "vm-soft", 0, nil)
			h.FS = &plantedFS{FS: h.FS, files: map[string]string{dir + file: v + "\n"}}
			nd := readNetdev(h, dev)
			if got := map[string]string{"type": nd.Type, "dev_port": nd.DevPort}[file]; got != "" {
				t.Errorf("%s %q read as %q", file, v, got)
			}
			r := netdevRule("0000:01:00.0", nd, "x0").line
			if strings.Count(r, `"`) != 12 || !strings.Contains(r, `ATTR{type}=="1", ATTR{dev_port}=="0"`) {
				t.Errorf("%s %q: rule %s", file, v, r)
			}
		}
		for _, v := range []string{"0", "32", "1234567890"} {
			_, h := simtest.New(t, "vm-soft", 0, nil)
			h.FS = &plantedFS{FS: h.FS, files: map[string]string{dir + file: v + "\n"}}
			nd := readNetdev(h, dev)
			if got := map[string]string{"type": nd.Type, "dev_port": nd.DevPort}[file]; got != v {
				t.Errorf("%s %q read as %q", file, v, got)
			}
		}
	}
	for _, c := range []struct{ mac, want string }{
		{"52:54:00:12:34:56", "52:54:00:12:34:56"},
		{"80:00:02:08:fe:80:00:00:00:00:00:00:00:02:c9:03:00:0c:c8:9a", "80:00:02:08:fe:80:00:00:00:00:00:00:00:02:c9:03:00:0c:c8:9a"},
		{`52:54:00:12:34:56", RUN+="x`, ""},
		{"52:54:00:12:34:5G", ""},
		{"52:54:00:12:34:56:", ""},
		{"%k", ""},
	} {
		_, h := simtest.New(t, "vm-soft", 0, nil)
		nd := readNetdev(&host.Host{FS: &plantedFS{FS: h.FS, files: map[string]string{dir + "address": c.mac + "\n"}}, Net: offlineNet{h.Net}}, dev)
		if nd.MAC != c.want {
			t.Errorf("address %q read as %q, want %q", c.mac, nd.MAC, c.want)
		}
	}
}

// offlineNet is a host's netlink that finds no link (a --root tree):
// the MAC comes from sysfs.
type offlineNet struct{ host.Net }

func (offlineNet) LinkByName(name string) (host.Link, error) {
	return host.Link{}, fmt.Errorf("link %s: %w", name, os.ErrNotExist)
}
