package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmaform/rdmaform/host"
)

// hostFlags gives a command that reads the host -q/--quiet and
// -v/--verbose.
func (a *app) hostFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVarP(&a.quiet, "quiet", "q", false, "print only the result and errors: no progress lines or remarks on stderr")
	cmd.Flags().BoolVarP(&a.verbose, "verbose", "v", false, "log each external command rdmaform runs, with its duration and exit status, to stderr")
	cmd.MarkFlagsMutuallyExclusive("quiet", "verbose")
}

// verboseRunner logs every external command to stderr with -v.
func (a *app) verboseRunner(r host.Runner) host.Runner {
	if !a.verbose {
		return r
	}
	return host.LogCommands(r, a.env.Stderr)
}

// info is where remarks go on stderr (a saved plan's name, an audit's
// summary when the report goes to a file); nowhere with -q.
func (a *app) info() io.Writer {
	if a.quiet {
		return io.Discard
	}
	return a.env.Stderr
}

// progress is where apply's progress lines go: stderr, redrawn live on a
// terminal (the change in progress with its elapsed time), nowhere with
// -q. Call the returned stop when the apply is done.
func (a *app) progress() (io.Writer, func()) {
	if a.quiet {
		return io.Discard, func() {}
	}
	if !a.env.StderrTTY || a.envIs("TERM", "dumb") {
		return a.env.Stderr, func() {}
	}
	t := time.NewTicker(time.Second)
	p := newLiveProgress(a.env.Stderr, t.C, time.Now)
	return p, func() { t.Stop(); p.Close() }
}

func (a *app) envIs(name, value string) bool { return a.getenv(name) == value }

// liveProgress shows the change being applied on a terminal: a line
// "ADDRESS: updating..." stays on screen with its elapsed time, redrawn
// at every tick, until the next line (its outcome) replaces it. Firmware
// queries and NetworkManager activations take seconds; the operator sees
// which one is running and for how long.
type liveProgress struct {
	mu      sync.Mutex
	w       io.Writer
	now     func() time.Time
	pending string // the line in progress, without its newline
	start   time.Time
	done    chan struct{}
}

func newLiveProgress(w io.Writer, tick <-chan time.Time, now func() time.Time) *liveProgress {
	p := &liveProgress{w: w, now: now, done: make(chan struct{})}
	go func() {
		for {
			select {
			case <-p.done:
				return
			case <-tick:
				p.redraw()
			}
		}
	}()
	return p
}

const clearLine = "\r\x1b[K"

func (p *liveProgress) redraw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending == "" {
		return
	}
	fmt.Fprintf(p.w, "%s%s %s", clearLine, p.pending, p.now().Sub(p.start).Round(time.Second))
}

// Write implements io.Writer; apply writes one line per call.
func (p *liveProgress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending != "" {
		fmt.Fprint(p.w, clearLine)
		p.pending = ""
	}
	s := string(b)
	if strings.HasSuffix(s, "...\n") && strings.Count(s, "\n") == 1 {
		p.pending = strings.TrimSuffix(s, "\n")
		p.start = p.now()
		_, err := io.WriteString(p.w, p.pending)
		return len(b), err
	}
	return p.w.Write(b)
}

// Close ends the redrawing; a line still in progress keeps its newline.
func (p *liveProgress) Close() {
	close(p.done)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending != "" {
		fmt.Fprintln(p.w)
		p.pending = ""
	}
}
