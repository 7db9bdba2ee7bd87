package fleet

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/rdmaform/rdmaform/internal/words"
)

// planDoc is the part of `rdmaform plan -o json` (docs/reference/json.md) that
// tells whether a host waits for something.
type planDoc struct {
	FormatVersion      *int              `json:"format_version"`
	Changes            []json.RawMessage `json:"changes"`
	Pending            []json.RawMessage `json:"pending"`
	Deferred           []json.RawMessage `json:"deferred"`
	ActivationFailures []json.RawMessage `json:"activation_failures"`
	Errors             []struct {
		Message string `json:"message"`
	} `json:"errors"`
	Summary *json.RawMessage `json:"summary"`
}

// PlanPending reads one host's `rdmaform plan -o json` and says whether
// the host waits for the rollout: changes to make, values staged for
// the next boot (pending), or parts of the spec that can only be
// planned after one (deferred). A plan with errors or activation
// failures is not pending but needs a person: skip says why. The file
// names the plan in messages.
func PlanPending(file string, data []byte) (p Pending, why string, err error) {
	var d planDoc
	if err := json.Unmarshal(data, &d); err != nil {
		return PendingUnknown, "", &Error{File: file, Plan: true, Msg: "not the JSON of rdmaform plan -o json: " + err.Error()}
	}
	if d.FormatVersion == nil || *d.FormatVersion != 1 {
		return PendingUnknown, "", &Error{File: file, Plan: true, Msg: "not the JSON of rdmaform plan -o json (format_version 1)"}
	}
	switch {
	case len(d.Errors) > 0:
		msgs := make([]string, 0, len(d.Errors))
		for _, e := range d.Errors {
			msgs = append(msgs, e.Message)
		}
		return PendingNo, fmt.Sprintf("%s: the plan has %d %s, fix %s first: %s", file, len(d.Errors), words.Plural(len(d.Errors), "error", "errors"), words.Plural(len(d.Errors), "it", "them"), strings.Join(msgs, "; ")), nil
	case d.Summary == nil:
		return PendingUnknown, "", &Error{File: file, Plan: true, Msg: "not the JSON of rdmaform plan -o json (no summary)"}
	case len(d.ActivationFailures) > 0:
		return PendingNo, fmt.Sprintf("%s: %d %s did not take at the last activation: see rdmaform status on the host", file, len(d.ActivationFailures), words.Plural(len(d.ActivationFailures), "value", "values")), nil
	}
	var parts []string
	for _, c := range []struct {
		n          int
		one, other string
	}{
		{len(d.Changes), "change", "changes"},
		{len(d.Pending), "value staged for the next boot", "values staged for the next boot"},
		{len(d.Deferred), "part planned after a reboot", "parts planned after a reboot"},
	} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, words.Plural(c.n, c.one, c.other)))
		}
	}
	if len(parts) == 0 {
		return PendingNo, file + ": nothing to change, nothing pending", nil
	}
	return PendingYes, file + ": " + strings.Join(parts, ", "), nil
}
