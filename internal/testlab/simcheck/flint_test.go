package simcheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/need"
	"github.com/rdmaform/rdmaform/providers/firmware/mlxfmt"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// flintFiles makes the image files of the real captures (see
// testdata/real/PROVENANCE.md, mstflint/) under dir: a directory, an
// empty file, 6 bytes, 4096 zero bytes, and a simulated image.
func flintFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{
		"image-missing":     filepath.Join(dir, "nonexistent/fw.bin"),
		"image-directory":   dir,
		"image-empty":       filepath.Join(dir, "empty.bin"),
		"image-not-aligned": filepath.Join(dir, "text.txt"),
		"image-zeros":       filepath.Join(dir, "zero.bin"),
	}
	for name, data := range map[string][]byte{"empty.bin": nil, "text.txt": []byte("hello\n"), "zero.bin": make([]byte, 4096)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// run runs argv through a runner and returns stdout and the exit code.
func runFlint(t *testing.T, r host.Runner, argv ...string) (string, int) {
	t.Helper()
	res, err := r.Run(context.Background(), host.Cmd{Args: argv})
	var ee *host.ExitError
	switch {
	case err == nil:
		return string(res.Stdout), 0
	case errors.As(err, &ee) && ee.Code >= 0:
		return string(ee.Stdout), ee.Code
	}
	t.Fatalf("%v: %v", argv, err)
	return "", 0
}

// TestEmulatedFlintMatchesReal: the simulator's mstflint prints what the
// real one printed (testdata/real/mstflint, its path replaced by this
// test's) for each image it cannot use, with the same exit status; its
// queries parse as the real ones do (the same fields, in the same
// layout: each key padded to 23 columns).
func TestEmulatedFlintMatchesReal(t *testing.T) {
	s, _ := simtest.New(t, "cx6-vpi-ib", 0, func(st *sim.State) { st.Tools = append(st.Tools, "mstflint") })
	dir := t.TempDir()
	files := flintFiles(t, dir)
	realDir := "../../../testdata/real/mstflint"
	for name, path := range files {
		t.Run(name, func(t *testing.T) {
			realOut, err := os.ReadFile(filepath.Join(realDir, name+".stdout"))
			if err != nil {
				t.Fatal(err)
			}
			var argv []string
			b, _ := os.ReadFile(filepath.Join(realDir, name+".cmd"))
			if err := json.Unmarshal(b, &argv); err != nil {
				t.Fatal(err)
			}
			want := strings.ReplaceAll(string(realOut), argv[2], path)
			got, code := runFlint(t, simRunner{s}, "mstflint", "-i", path, "q")
			if got != want || code != 1 {
				t.Errorf("emulated (exit %d):\n%q\nreal (exit 1):\n%q", code, got, want)
			}
		})
	}
	image := filepath.Join(dir, "fw.bin")
	if err := sim.WriteImage(image, "MT_0000000228", "20.36.1012"); err != nil {
		t.Fatal(err)
	}
	// A card whose flash holds a burned image it does not run yet.
	burned, _ := simtest.New(t, "cx6-vpi-ib", 0, func(st *sim.State) {
		st.Tools = append(st.Tools, "mstflint")
		st.Devices[0].FlashFW = "20.36.1012"
	})
	for _, c := range []struct {
		real string
		s    *sim.Sim
		argv []string
		want mlxfmt.FlintQuery
	}{
		{"ipa-image-query", s, []string{"mstflint", "-i", image, "q"}, mlxfmt.FlintQuery{ImageType: "FS4", FWVersion: "20.36.1012", ProductVersion: "20.36.1012", PSID: "MT_0000000228"}},
		{"ipa-device-query-running", burned, []string{"mstflint", "-d", "0000:3b:00.0", "q"}, mlxfmt.FlintQuery{ImageType: "FS4", FWVersion: "20.36.1012", RunningVersion: "20.35.1012", ProductVersion: "20.36.1012", PSID: "MT_0000000222"}},
	} {
		t.Run(c.real, func(t *testing.T) {
			out, code := runFlint(t, simRunner{c.s}, c.argv...)
			got, err := mlxfmt.ParseFlintQuery([]byte(out))
			if err != nil || code != 0 {
				t.Fatalf("emulated query (exit %d): %v\n%s", code, err, out)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("parsed (-want +got):\n%s", diff)
			}
			realOut, err := os.ReadFile(filepath.Join(realDir, c.real+".stdout"))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(keysOf(string(realOut)), keysOf(out)); diff != "" {
				t.Errorf("keys and the columns of their values (-real +emulated):\n%s", diff)
			}
		})
	}
}

// keysOf lists each line's key with the column its value starts at, and
// the continuation lines' columns.
func keysOf(out string) []string {
	var keys []string
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if strings.HasPrefix(line, " ") {
			keys = append(keys, fmt.Sprintf("(continued)@%d", len(line)-len(strings.TrimLeft(line, " "))))
			continue
		}
		k, v, _ := strings.Cut(line, ":")
		keys = append(keys, fmt.Sprintf("%s@%d", k, len(k)+1+len(v)-len(strings.TrimLeft(v, " "))))
	}
	return keys
}

// TestRealFlintMatchesEmulated runs Debian's mstflint on the same files:
// the emulator's answers are what the real tool prints today.
func TestRealFlintMatchesEmulated(t *testing.T) {
	need.Tool(t, "mstflint", "mstflint")
	s, _ := simtest.New(t, "cx6-vpi-ib", 0, func(st *sim.State) { st.Tools = append(st.Tools, "mstflint") })
	files := flintFiles(t, t.TempDir())
	for name, path := range files {
		t.Run(name, func(t *testing.T) {
			want, wantCode := runFlint(t, &host.ExecRunner{}, "mstflint", "-i", path, "q")
			got, code := runFlint(t, simRunner{s}, "mstflint", "-i", path, "q")
			if got != want || code != wantCode {
				t.Errorf("emulated (exit %d):\n%q\nreal (exit %d):\n%q", code, got, wantCode, want)
			}
		})
	}
}

// simRunner runs the simulated host's tools.
type simRunner struct{ s *sim.Sim }

func (r simRunner) Run(ctx context.Context, c host.Cmd) (host.Result, error) {
	return r.s.RunTool(ctx, c.Args)
}
