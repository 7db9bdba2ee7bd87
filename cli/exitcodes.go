package cli

import (
	"fmt"
	"strings"
	"syscall"

	"github.com/rdmaform/rdmaform/plan"
)

// ExitCode is one of rdmaform's exit codes and the commands that give it.
type ExitCode struct {
	Code    int
	Meaning string
	// Commands that give it; none: every command.
	Commands []string
}

// ExitCodes are rdmaform's exit codes: plan.ExitCodes, which every
// command gives, then those of a run a signal stopped (SignalError).
// The help text and docs/reference/exit-codes.md are made from them.
func ExitCodes() []ExitCode {
	var out []ExitCode
	for _, e := range plan.ExitCodes {
		out = append(out, ExitCode{Code: e.Code, Meaning: e.Meaning})
	}
	interrupted := []string{"apply", "activate"}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		out = append(out, ExitCode{
			Code:     (&SignalError{Signal: sig}).ExitCode(),
			Meaning:  fmt.Sprintf("interrupted by %s (128 + %d): what was under way ran to its end; the document says interrupted, and the next plan shows what is left", signalName(sig), int(sig)),
			Commands: interrupted,
		})
	}
	return out
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// exitCodesText is the help's list of the exit codes every command
// gives, each meaning wrapped at 72 columns.
func exitCodesText() string {
	var b strings.Builder
	b.WriteString("Exit codes (every command):")
	for _, e := range ExitCodes() {
		if len(e.Commands) > 0 {
			continue
		}
		line := fmt.Sprintf("\n  %d  ", e.Code)
		indent := strings.Repeat(" ", len(line)-1)
		for _, w := range strings.Fields(e.Meaning) {
			if len(line)+1+len(w) > 73 && !strings.HasSuffix(line, " ") {
				b.WriteString(line)
				line = "\n" + indent
			}
			if !strings.HasSuffix(line, " ") {
				line += " "
			}
			line += w
		}
		b.WriteString(line)
	}
	return b.String()
}
