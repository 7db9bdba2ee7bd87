package smlab

import (
	"os"
	"testing"

	"github.com/rdmaform/rdmaform/internal/testlab/need"
)

// dpkgList is `dpkg -L libumad2sim0` on Debian 12, amd64 (ibsim 0.10-2).
const dpkgList = `/.
/usr
/usr/lib
/usr/lib/x86_64-linux-gnu
/usr/lib/x86_64-linux-gnu/umad2sim
/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
/usr/share
/usr/share/doc
/usr/share/doc/libumad2sim0
/usr/share/doc/libumad2sim0/changelog.Debian.gz
/usr/share/doc/libumad2sim0/copyright
`

// TestPreloadFromThePackage: the library's path comes from the package's
// file list, whatever the architecture's directory, and the lab finds the
// installed one.
func TestPreloadFromThePackage(t *testing.T) {
	if got := PreloadIn(dpkgList); got != "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so" {
		t.Errorf("PreloadIn(dpkg -L): %q", got)
	}
	if got := PreloadIn("/usr/share/doc/libumad2sim0/copyright\n"); got != "" {
		t.Errorf("PreloadIn of a list without the library: %q", got)
	}
	p := Preload()
	if p == "" {
		need.Skip(t, "umad2sim's library is not installed: apt-get install ibsim-utils")
	}
	if _, err := os.Stat(p); err != nil {
		t.Errorf("Preload() = %q: %v", p, err)
	}
}
