package firmware_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// TestImageNoTool: a host with mstconfig but neither mstflint nor flint
// cannot burn: the plan error at the image's line names the package.
func TestImageNoTool(t *testing.T) {
	s, h := simtest.New(t, "cx6-vpi-ib", 0, func(st *sim.State) { st.Tools = []string{"mstconfig", "modprobe"} })
	image := filepath.Join(s.Dir, "srv/fw.bin")
	if err := os.MkdirAll(filepath.Dir(image), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := sim.WriteImage(image, "MT_0000000222", "20.36.1012"); err != nil {
		t.Fatal(err)
	}
	p := build(t, h, parse(t, "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware: {version: 20.36.1012, image: /srv/fw.bin}\n"))
	if len(p.Errors) != 1 || p.Errors[0].Path != "$.devices[0].firmware.image" ||
		!strings.Contains(p.Errors[0].Message, "burning an image needs mstflint (package mstflint) or flint (NVIDIA MFT), and neither is on PATH") {
		t.Errorf("errors %+v, want one at the image naming package mstflint", p.Errors)
	}
	if len(p.Changes) != 0 {
		t.Errorf("changes %+v, want none", p.Changes)
	}
}
