package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// LogCommands returns a runner that runs every command through r and
// logs it to w when it ends: its command line, how long it took and how
// it ended (rdmaform -v). Commands running in parallel log whole lines.
func LogCommands(r Runner, w io.Writer) Runner {
	return &loggingRunner{r: r, w: w}
}

type loggingRunner struct {
	r  Runner
	mu sync.Mutex
	w  io.Writer
}

// Run implements Runner.
func (l *loggingRunner) Run(ctx context.Context, c Cmd) (Result, error) {
	start := time.Now()
	res, err := l.r.Run(ctx, c)
	took := time.Since(start).Round(time.Millisecond)
	end := "exit 0"
	var ee *ExitError
	switch {
	case errors.As(err, &ee) && errors.Is(ee.Err, ErrTimeout):
		end = "timed out"
	case errors.As(err, &ee) && ee.Err != nil:
		end = ee.Err.Error()
	case errors.As(err, &ee):
		end = fmt.Sprintf("exit %d", ee.Code)
	case err != nil:
		end = err.Error()
	}
	l.mu.Lock()
	fmt.Fprintf(l.w, "rdmaform: ran %s (%s, %s)\n", c, took, end)
	l.mu.Unlock()
	return res, err
}

// LookPath implements Looker when the wrapped runner does.
func (l *loggingRunner) LookPath(name string) (string, error) {
	if lk, ok := l.r.(Looker); ok {
		return lk.LookPath(name)
	}
	return "", fmt.Errorf("%s: cannot look up without running", name)
}
