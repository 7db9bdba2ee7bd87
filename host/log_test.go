package host

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
)

type fakeRunner struct {
	err error
}

func (f fakeRunner) Run(context.Context, Cmd) (Result, error) {
	return Result{Stdout: []byte("out")}, f.err
}

func TestLogCommands(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"success", nil, `^rdmaform: ran mlxconfig -d 0000:3b:00.0 q "LINK TYPE" \([0-9.]+m?s, exit 0\)\n$`},
		{"exit code", &ExitError{Code: 3}, `\([0-9.]+m?s, exit 3\)\n$`},
		{"timeout", &ExitError{Code: -1, Err: ErrTimeout}, `\([0-9.]+m?s, timed out\)\n$`},
		{"not found", &ExitError{Code: -1, Err: ErrNotFound}, `\([0-9.]+m?s, command not found\)\n$`},
		{"other", errors.New("boom"), `\([0-9.]+m?s, boom\)\n$`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			r := LogCommands(fakeRunner{err: tt.err}, &b)
			res, err := r.Run(context.Background(), Cmd{Args: []string{"mlxconfig", "-d", "0000:3b:00.0", "q", "LINK TYPE"}})
			if err != tt.err || string(res.Stdout) != "out" {
				t.Errorf("Run returned %q, %v; want the wrapped runner's result", res.Stdout, err)
			}
			if !regexp.MustCompile(tt.want).MatchString(b.String()) {
				t.Errorf("logged %q, want %s", b.String(), tt.want)
			}
			if strings.Count(b.String(), "\n") != 1 {
				t.Errorf("logged %d lines, want 1", strings.Count(b.String(), "\n"))
			}
		})
	}
}
