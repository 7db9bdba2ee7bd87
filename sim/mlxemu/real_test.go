package mlxemu

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/internal/testlab/need"
)

// TestRealMstconfig runs Debian's mstconfig (mstflint 4.21, layout G1) on
// devices that do not exist and checks the emulator prints the same stdout,
// stderr and exit code.
func TestRealMstconfig(t *testing.T) {
	bin := need.Tool(t, "mstconfig", "apt-get install mstflint")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	real := func(args ...string) (stdout, stderr []byte, exit int) {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(), "LC_ALL=C")
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			exit = ee.ExitCode()
		case err != nil:
			t.Fatalf("mstconfig %v: %v", args, err)
		}
		return o.Bytes(), e.Bytes(), exit
	}
	out, _, _ := real("-v")
	if !bytes.HasPrefix(out, []byte("mstconfig, mstflint 4.21.")) {
		if os.Getenv("RDMAFORM_REQUIRE_LAB") == "1" {
			t.Fatalf("this comparison is for mstflint 4.21 (layout G1, Debian 12), found %q, and RDMAFORM_REQUIRE_LAB=1", out)
		}
		t.Skipf("this comparison is for mstflint 4.21 (layout G1), found %q", out)
	}
	cases := [][]string{
		{"-v"},
		{"-d", "0000:00:00.0", "q"},
		{"-d", "0000:00:00.0", "q", "LINK_TYPE_P1"},
		{"-d", "0000:00:00.0", "-e", "q"},
		{"-d", "00:00.0", "query", "-e"},
		{"-d", "0000:00:00.0", "-y", "set", "LINK_TYPE_P1=2"},
		{"-d", "/dev/mst/mt4123_pciconf0", "q"},
		{"-d", "0000:00:00.0", "set", "LINK_TYPE_P1"},
		{"-d", "0000:00:00.0", "set", "A=1", "A=2"},
		{"-d", "0000:00:00.0", "set", "A=1=2"},
		{"-d", "0000:00:00.0", "set"},
		{"-d", "0000:00:00.0"},
		{"-d", "0000:00:00.0", "frob"},
		{"-d"},
		{"-h"},
		{"q"},
		{"-d", "0000:00:00.0", "r"},
		{"-d", "0000:00:00.0", "-y", "reset"},
	}
	if _, err := os.Stat("/sys/class/infiniband/mlx5_9"); errors.Is(err, os.ErrNotExist) {
		cases = append(cases, []string{"-d", "mlx5_9", "q"})
	}
	for _, args := range cases {
		t.Run(fmtArgs(args), func(t *testing.T) {
			wantOut, wantErr, wantExit := real(args...)
			e := &Emulator{Layout: G1}
			gotOut, gotErr, gotExit := e.Run("mstconfig", args, nil)
			if diff := cmp.Diff(string(wantOut), string(gotOut)); diff != "" {
				t.Errorf("stdout (-real +emulator):\n%s", diff)
			}
			if diff := cmp.Diff(string(wantErr), string(gotErr)); diff != "" {
				t.Errorf("stderr (-real +emulator):\n%s", diff)
			}
			if gotExit != wantExit {
				t.Errorf("exit: real %d, emulator %d", wantExit, gotExit)
			}
		})
	}
}

func fmtArgs(args []string) string {
	var b bytes.Buffer
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(a)
	}
	return b.String()
}
