package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
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

// liveProgress shows the changes being applied on a terminal: each line
// "ADDRESS: updating..." stays on screen with its elapsed time, redrawn at
// every tick, until its outcome ("ADDRESS: updated after 3s") replaces it.
// Several changes in flight at once (one firmware set per card) are a
// block of such lines, one per change, so every card in flight is named.
// Reading the host (plan, show) puts each external command in flight in
// the block the same way (begin, end), and the block goes when the
// reading is done. Firmware queries and sets and NetworkManager
// activations take seconds; the operator sees which ones run, and for how
// long.
type liveProgress struct {
	mu       sync.Mutex
	w        io.Writer
	now      func() time.Time
	inflight []inflight
	drawn    int // lines of the block on screen; the cursor ends the last
	done     chan struct{}
}

type inflight struct {
	key, text string
	start     time.Time
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

// erase removes the block from the screen: back to its first line, then
// clear to the end of the screen.
func (p *liveProgress) erase() {
	switch {
	case p.drawn == 1:
		fmt.Fprint(p.w, clearLine)
	case p.drawn > 1:
		fmt.Fprintf(p.w, "\r\x1b[%dA\x1b[J", p.drawn-1)
	}
	p.drawn = 0
}

// draw writes the block, each line with its elapsed time once it has one.
func (p *liveProgress) draw() {
	lines := make([]string, 0, len(p.inflight))
	for _, f := range p.inflight {
		l := f.text
		if d := p.now().Sub(f.start).Round(time.Second); d > 0 {
			l += " " + d.String()
		}
		lines = append(lines, l)
	}
	if len(lines) > 0 {
		_, _ = io.WriteString(p.w, strings.Join(lines, "\n"))
	}
	p.drawn = len(lines)
}

func (p *liveProgress) redraw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.inflight) == 0 {
		return
	}
	p.erase()
	p.draw()
}

// begin puts a line in flight under key; end takes it away.
func (p *liveProgress) begin(key, text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.erase()
	p.inflight = append(p.inflight, inflight{key: key, text: text, start: p.now()})
	p.draw()
}

func (p *liveProgress) end(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.erase()
	p.drop(key)
	p.draw()
}

func (p *liveProgress) drop(key string) bool {
	for i, f := range p.inflight {
		if f.key == key {
			p.inflight = append(p.inflight[:i], p.inflight[i+1:]...)
			return true
		}
	}
	return false
}

// Write implements io.Writer; apply writes one line per call: "ADDRESS:
// verb..." puts ADDRESS in flight, a later line of ADDRESS is its outcome.
func (p *liveProgress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.erase()
	s := string(b)
	key, _, _ := strings.Cut(s, ": ")
	if strings.HasSuffix(s, "...\n") && strings.Count(s, "\n") == 1 {
		// A change in flight that says how far it is (a burn's
		// percentage) keeps its start.
		start := p.now()
		for _, f := range p.inflight {
			if f.key == key {
				start = f.start
			}
		}
		p.drop(key)
		p.inflight = append(p.inflight, inflight{key: key, text: strings.TrimSuffix(s, "\n"), start: start})
		p.draw()
		return len(b), nil
	}
	p.drop(key)
	n, err := p.w.Write(b)
	p.draw()
	return n, err
}

// Close ends the redrawing; lines still in flight stay on screen.
func (p *liveProgress) Close() {
	close(p.done)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn > 0 {
		fmt.Fprintln(p.w)
		p.drawn = 0
	}
	p.inflight = nil
}

// Clear ends the redrawing and takes the block off the screen (reading
// is done; what it found follows).
func (p *liveProgress) Clear() {
	close(p.done)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.erase()
	p.inflight = nil
}

// readProgress shows, on a terminal, each external command that reading
// the host runs while it runs (the firmware queries, one per card, take
// seconds): h's runner reports to a live block on stderr. Nothing with -q
// or off a terminal. Call the returned stop before printing the result.
func (a *app) readProgress(h *host.Host) func() {
	if a.quiet || !a.env.StderrTTY || a.envIs("TERM", "dumb") {
		return func() {}
	}
	t := time.NewTicker(time.Second)
	p := newLiveProgress(a.env.Stderr, t.C, time.Now)
	h.Runner = &progressRunner{r: h.Runner, p: p}
	var once sync.Once
	return func() { once.Do(func() { t.Stop(); p.Clear() }) }
}

// progressRunner puts each command it runs in flight on a live progress.
type progressRunner struct {
	r  host.Runner
	p  *liveProgress
	mu sync.Mutex
	n  int
}

// Run implements host.Runner.
func (r *progressRunner) Run(ctx context.Context, c host.Cmd) (host.Result, error) {
	r.mu.Lock()
	r.n++
	key := strconv.Itoa(r.n)
	r.mu.Unlock()
	r.p.begin(key, "reading the host: "+c.String()+"...")
	defer r.p.end(key)
	return r.r.Run(ctx, c)
}

// LookPath implements host.Looker when the wrapped runner does.
func (r *progressRunner) LookPath(name string) (string, error) {
	if lk, ok := r.r.(host.Looker); ok {
		return lk.LookPath(name)
	}
	return "", fmt.Errorf("%s: cannot look up without running", name)
}
