package ansible

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// State is what a run does: apply, plan only, or confirm an apply that
// waits for confirmation.
type State int

// States.
const (
	Applied State = iota // the default
	Planned
	// Confirmed keeps the changes of an apply run with confirm_timeout:
	// rdmaform confirm. It needs no spec.
	Confirmed
	// Facts reads the host's RDMA devices (rdmaform facts) into the
	// Ansible fact rdmaform. It needs no spec and changes nothing.
	Facts
	// Activated makes what the spec staged current by a firmware reset:
	// rdmaform activate --by fw-reset (reset, wait, apply the runtime
	// part again, verify that the plan is empty).
	Activated
)

func (s State) String() string {
	switch s {
	case Applied:
		return "applied"
	case Planned:
		return "planned"
	case Confirmed:
		return "confirmed"
	case Facts:
		return "facts"
	case Activated:
		return "activated"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Args are the module's arguments, after coercion.
type Args struct {
	// Spec is a path on the target; Content is the spec itself. Exactly one.
	Spec    string
	Content string
	State   State
	// ConfirmTimeout is zero when not given (or given as 0). With state
	// applied, the apply runs in the background and reverts its changes
	// unless a run with state confirmed comes within it.
	ConfirmTimeout time.Duration
	// AllowFirmware lets an applied run stage firmware changes (next boot).
	AllowFirmware bool
	// ActivateWait is how long a reset card may take to register again
	// (rdmaform activate --wait); zero: activate's default.
	ActivateWait time.Duration
	Root, Sim    string
	// CheckMode and Diff are Ansible's --check and --diff.
	CheckMode bool
	Diff      bool
}

// params are the module's own arguments; keys starting with "_ansible_"
// are Ansible's and are read (check/diff mode) or ignored.
var params = []string{"spec", "content", "state", "confirm_timeout", "allow_firmware", "activate_wait", "root", "sim"}

// ParseArgs reads the JSON arguments file Ansible writes. Values come
// typed from a playbook (allow_firmware: true, confirm_timeout: 300) and
// as strings from -a k=v (allow_firmware=yes): both are accepted. Every
// problem is reported at once.
func ParseArgs(data []byte) (Args, error) {
	var raw map[string]any
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return Args{}, fmt.Errorf("module arguments are not a JSON object: %w", err)
	}
	var a Args
	var errs []error
	fail := func(key string, err error) { errs = append(errs, fmt.Errorf("%s: %w", key, err)) }
	var unknown []string
	for k, v := range raw {
		var err error
		switch k {
		case "spec":
			a.Spec, err = str(v)
		case "content":
			a.Content, err = content(v)
		case "state":
			var s string
			if s, err = str(v); err == nil {
				switch s {
				case "", "applied":
					a.State = Applied
				case "planned":
					a.State = Planned
				case "confirmed":
					a.State = Confirmed
				case "facts":
					a.State = Facts
				case "activated":
					a.State = Activated
				default:
					err = fmt.Errorf("must be applied, planned, confirmed, facts or activated, not %q", s)
				}
			}
		case "confirm_timeout":
			a.ConfirmTimeout, err = duration(v)
		case "allow_firmware":
			a.AllowFirmware, err = boolean(v)
		case "activate_wait":
			a.ActivateWait, err = duration(v)
		case "root":
			a.Root, err = str(v)
		case "sim":
			a.Sim, err = str(v)
		case "_ansible_check_mode":
			a.CheckMode, err = boolean(v)
		case "_ansible_diff":
			a.Diff, err = boolean(v)
		default:
			if !strings.HasPrefix(k, "_ansible_") {
				unknown = append(unknown, k)
			}
		}
		if err != nil {
			fail(k, err)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		errs = append(errs, fmt.Errorf("unsupported parameters: %s (supported: %s)", strings.Join(unknown, ", "), strings.Join(params, ", ")))
	}
	switch {
	case a.State == Confirmed || a.State == Facts:
		// rdmaform confirm and facts read no spec; one given (arguments
		// shared with the apply task) is not read.
	case a.Spec == "" && a.Content == "":
		errs = append(errs, errors.New("give spec (a path on the target) or content (the spec itself)"))
	case a.Spec != "" && a.Content != "":
		errs = append(errs, errors.New("spec and content are mutually exclusive"))
	}
	if a.Root != "" && a.Sim != "" {
		errs = append(errs, errors.New("root and sim are mutually exclusive"))
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return a, errors.Join(errs...)
}

// str accepts a string; null is "not given".
func str(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	}
	return "", fmt.Errorf("must be a string, not %s", typeName(v))
}

// content accepts the spec as text, or as a mapping (a playbook that
// builds the spec as data, content: "{{ rdma_spec }}"), which is written
// as JSON: JSON is YAML, so the loader reads it with every check.
func content(v any) (string, error) {
	if m, ok := v.(map[string]any); ok {
		b, err := json.Marshal(m)
		return string(b), err
	}
	return str(v)
}

// boolean follows Ansible's boolean(): yes/no, true/false, on/off, y/n,
// t/f, 1/0, in any case, or a JSON boolean or number 0/1.
func boolean(v any) (bool, error) {
	switch x := v.(type) {
	case nil:
		return false, nil
	case bool:
		return x, nil
	case json.Number:
		switch x.String() {
		case "1", "1.0":
			return true, nil
		case "0", "0.0":
			return false, nil
		}
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "yes", "true", "on", "y", "t", "1":
			return true, nil
		case "no", "false", "off", "n", "f", "0", "":
			return false, nil
		}
	}
	return false, fmt.Errorf("must be a boolean (true/false, yes/no, 1/0), not %s", quote(v))
}

// duration accepts a Go duration ("90s", "5m") or a number of seconds.
func duration(v any) (time.Duration, error) {
	var d time.Duration
	switch x := v.(type) {
	case nil:
		return 0, nil
	case json.Number:
		f, err := x.Float64()
		if err != nil || f < 0 || f > math.MaxInt64/float64(time.Second) {
			return 0, fmt.Errorf("%s is not a number of seconds", x)
		}
		d = time.Duration(f * float64(time.Second))
	case string:
		s := strings.TrimSpace(x)
		if s == "" {
			return 0, nil
		}
		if secs, err := strconv.ParseFloat(s, 64); err == nil && secs >= 0 && secs <= math.MaxInt64/float64(time.Second) {
			d = time.Duration(secs * float64(time.Second))
			break
		}
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("%q is not a duration (90s, 5m) or a number of seconds", x)
		}
	default:
		return 0, fmt.Errorf("must be a duration (90s, 5m) or a number of seconds, not %s", typeName(v))
	}
	if d < 0 {
		return 0, fmt.Errorf("must not be negative, not %s", quote(v))
	}
	return d, nil
}

func typeName(v any) string {
	switch v.(type) {
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("%T", v)
}

func quote(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	if n, ok := v.(json.Number); ok {
		return n.String()
	}
	return typeName(v)
}
