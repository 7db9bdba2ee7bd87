package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rdmaform/rdmaform/fabrictest"
	"github.com/rdmaform/rdmaform/fleet"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
	"github.com/rdmaform/rdmaform/session"
)

// One output convention for every command that reports: -o/--output
// FORMAT picks the format (text or json, plus yaml for show, junit and
// prometheus for audit); files are written with their own flag (audit
// --report-file). With -o json everything on stdout is one JSON document,
// errors included (errorDoc), and the exit codes are those of text.

// FormatVersion is the version of every JSON document the commands print
// (plan and audit keep their own constant at the same value). It changes
// only when a field changes meaning or disappears; new fields keep it.
const FormatVersion = plan.FormatVersion

// formatsAnnotation lists, on a command, the formats its -o accepts.
const formatsAnnotation = "rdmaform.output-formats"

// outputFlag gives cmd the -o/--output FORMAT flag, default def.
func (a *app) outputFlag(cmd *cobra.Command, def string, formats ...string) {
	cmd.Flags().StringP("output", "o", def, "output `FORMAT`: "+strings.Join(formats, ", "))
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[formatsAnnotation] = strings.Join(formats, ",")
	// Shell completion offers the formats, and no file names.
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
}

// checkOutput refuses a format the command does not have. It runs before
// every command (the root's PersistentPreRunE).
func (a *app) checkOutput(cmd *cobra.Command) error {
	list, ok := cmd.Annotations[formatsAnnotation]
	if !ok {
		return nil
	}
	if a.output == "" {
		a.output, _ = cmd.Flags().GetString("output")
	}
	formats := strings.Split(list, ",")
	if contains(formats, a.output) {
		return nil
	}
	out := a.output
	a.output = "text" // the error itself is text: the format is not known
	hint := ""
	if strings.ContainsAny(out, "/.") {
		hint = "; -o names a format now: write a report to a file with --report-file FILE"
	}
	return &exitError{code: plan.ExitError, err: fmt.Errorf("unknown output format %q (%s)%s", out, strings.Join(formats, ", "), hint)}
}

// outputOf is the -o FORMAT of a command whose flags may not have parsed
// (an unknown flag, a bad value): its own -o flag when cobra parsed it,
// else the -o found in args by a parse that skips every other flag; ""
// when the command has no -o.
func outputOf(cmd *cobra.Command, args []string) string {
	if cmd == nil || cmd.Annotations[formatsAnnotation] == "" {
		return ""
	}
	f := cmd.Flags().Lookup("output")
	if f == nil {
		return ""
	}
	if f.Changed {
		return f.Value.String()
	}
	fs := pflag.NewFlagSet(cmd.Name(), pflag.ContinueOnError)
	fs.ParseErrorsWhitelist.UnknownFlags = true
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	out := fs.StringP("output", "o", f.DefValue, "")
	// Other flags that take values may hide a -o as their value; a
	// failed parse still leaves what it read before the failure.
	_ = fs.Parse(args)
	return *out
}

// jsonOut tells whether the command prints JSON.
func (a *app) jsonOut() bool { return a.output == "json" }

// color tells whether text on stdout may carry ANSI colours: only on a
// terminal, and never with NO_COLOR set (to anything but ""), --no-color
// or TERM=dumb.
func (a *app) color() bool {
	if !a.env.StdoutTTY || a.noColorFlag {
		return false
	}
	for _, kv := range a.env.Environ {
		if strings.HasPrefix(kv, "NO_COLOR=") && kv != "NO_COLOR=" {
			return false
		}
		if kv == "TERM=dumb" {
			return false
		}
	}
	return true
}

// writeJSON prints one JSON document on stdout, indented, with a newline.
func (a *app) writeJSON(v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	a.wroteDoc = true
	_, err = a.env.Stdout.Write(append(b, '\n'))
	return err
}

// findingsError is a spec (or waiver file) with positioned findings.
type findingsError = session.FindingsError

// errorDoc is what -o json prints when a command fails before it has a
// document of its own: {"format_version": 1, "errors": [...]}.
type errorDoc struct {
	FormatVersion int         `json:"format_version"`
	Errors        []jsonError `json:"errors"`
}

// jsonError is one error: {"path", "source": {"file", "line", "col"},
// "message"}, path and source when the error has them (schema.Finding's
// JSON, the one error shape of every document).
type jsonError = session.JSONError

// findingErrors is a report as a document's errors, never null.
func findingErrors(rep schema.Report) []jsonError {
	return append(make([]jsonError, 0, len(rep)), rep...)
}

// errorsOf is err as a document's errors: every finding of a spec or
// another file with findings, an inventory's error at its position, or
// the message alone.
func errorsOf(err error) []jsonError {
	var fe *findingsError
	var ie *fleet.Error
	var re *fabrictest.Error
	switch {
	case errors.As(err, &fe):
		return findingErrors(fe.Report)
	case errors.As(err, &ie):
		return []jsonError{{Pos: schema.Pos{File: ie.File, Line: ie.Line, Col: ie.Col}, Message: ie.Msg}}
	case errors.As(err, &re):
		return []jsonError{{Pos: schema.Pos{File: re.File, Line: re.Line, Col: re.Col}, Message: re.Msg}}
	}
	return []jsonError{{Message: err.Error()}}
}

// reportError prints a command's error: as JSON on stdout with -o json
// (unless the command already printed its document there), else on
// stderr as text.
func (a *app) reportError(w io.Writer, err error) {
	var fe *findingsError
	if a.jsonOut() && !a.wroteDoc {
		doc := errorDoc{FormatVersion: FormatVersion, Errors: errorsOf(err)}
		b, _ := json.MarshalIndent(doc, "", "  ") // plain strings and ints always encode
		_, _ = a.env.Stdout.Write(append(b, '\n'))
		return
	}
	if errors.As(err, &fe) {
		for _, f := range fe.Report {
			fmt.Fprintln(w, f.String())
		}
	}
	fmt.Fprintf(w, "rdmaform: %v\n", err)
}

// msgs is where a command's remarks go: stdout in text, stderr with
// -o json (stdout holds only the document).
func (a *app) msgs() io.Writer {
	if a.jsonOut() {
		return a.env.Stderr
	}
	return a.env.Stdout
}
