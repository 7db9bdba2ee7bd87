package netns

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
)

// rootLinks lists the links of the test process's own namespace, to prove
// the lab never adds or removes any.
func rootLinks(t *testing.T) []string {
	t.Helper()
	ls, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range ls {
		out = append(out, l.Attrs().Name)
	}
	return out
}

func TestLabIsPrivateAndRemoved(t *testing.T) {
	before := rootLinks(t)
	var name string
	t.Run("lab", func(t *testing.T) {
		l := New(t)
		name = l.Name
		out := l.IP(t, "-o", "link", "show")
		for _, want := range []string{Veth0 + "@" + Veth1, Veth1 + "@" + Veth0, "lo:"} {
			if !strings.Contains(out, want) {
				t.Errorf("ip -n %s -o link show lacks %q:\n%s", l.Name, want, out)
			}
		}
		if _, err := l.Host.Net.LinkByName(Veth0); err != nil {
			t.Errorf("LinkByName(%s) in the lab: %v", Veth0, err)
		}
		if _, err := netlink.LinkByName(Veth0); err == nil {
			t.Errorf("%s is visible in the test's own namespace", Veth0)
		}
	})
	if name == "" {
		t.Skip("lab not created")
	}
	if _, err := os.Stat(filepath.Join("/var/run/netns", name)); !os.IsNotExist(err) {
		t.Errorf("namespace %s still exists after the test (stat: %v)", name, err)
	}
	after := rootLinks(t)
	if strings.Join(before, ",") != strings.Join(after, ",") {
		t.Errorf("root namespace links changed: before %v, after %v", before, after)
	}
}
