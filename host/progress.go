package host

import (
	"context"
	"io"
	"strings"
	"sync"
)

// LineWriter splits what a command prints into lines as it prints them
// and hands each to a function: a line ends at \n or at \r (mstflint
// redraws its burn percentage with \r), is trimmed of spaces, and an
// empty one is left out. Flush hands on what is left after the last end.
type LineWriter struct {
	mu  sync.Mutex
	fn  func(line string)
	buf []byte
}

// NewLineWriter returns a LineWriter calling fn with each line.
func NewLineWriter(fn func(line string)) *LineWriter { return &LineWriter{fn: fn} }

// Write implements io.Writer.
func (w *LineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range p {
		if b == '\n' || b == '\r' {
			w.emit()
			continue
		}
		w.buf = append(w.buf, b)
	}
	return len(p), nil
}

// Flush hands on the last line when it had no end.
func (w *LineWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.emit()
}

func (w *LineWriter) emit() {
	s := strings.TrimSpace(string(w.buf))
	w.buf = w.buf[:0]
	if s != "" {
		w.fn(s)
	}
}

type progressKey struct{}

// WithProgress returns ctx carrying w, where a change in progress may
// report how far it is (apply's progress lines: "ADDRESS: text...").
func WithProgress(ctx context.Context, w io.Writer) context.Context {
	return context.WithValue(ctx, progressKey{}, w)
}

// ProgressOf returns the progress writer ctx carries, or nil.
func ProgressOf(ctx context.Context) io.Writer {
	w, _ := ctx.Value(progressKey{}).(io.Writer)
	return w
}
