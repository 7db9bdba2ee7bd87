package ethtool

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/host"
)

// Params is one `ethtool -g` or `ethtool -l` answer: the driver's maximum
// and current value of each field, by the spec's name ("rx", "tx",
// "combined", "other"). A field the driver does not have ("n/a") is
// absent from both.
type Params struct {
	Max map[string]int
	Cur map[string]int
}

// fields are the lines of each answer rdmaform reads, by the tool's
// label; the other lines (RX Mini, RX Jumbo, RX Buf Len, CQE Size, TX
// Push, TCP data split) are the driver's and left alone.
var fields = map[string]string{"RX": "rx", "TX": "tx", "Combined": "combined", "Other": "other"}

// Parse reads `ethtool -g NAME` or `ethtool -l NAME` (ethtool 5.6 and
// later, netlink/rings.c and netlink/channels.c): a header "Ring
// parameters for NAME:" or "Channel parameters for NAME:", then "Pre-set
// maximums:" and "Current hardware settings:", each followed by
// "Label:\tvalue" lines where the value is a number or "n/a".
func Parse(out []byte, header string) (*Params, error) {
	p := &Params{Max: map[string]int{}, Cur: map[string]int{}}
	var sect map[string]int
	sawHeader, sawCur := false, false
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t")
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, header+" parameters for ") && strings.HasSuffix(line, ":"):
			sawHeader = true
			continue
		case line == "Pre-set maximums:":
			sect = p.Max
			continue
		case line == "Current hardware settings:":
			sect, sawCur = p.Cur, true
			continue
		}
		label, value, ok := strings.Cut(line, ":")
		if !ok || sect == nil {
			return nil, fmt.Errorf("unexpected line %q", line)
		}
		key, known := fields[label]
		value = strings.TrimSpace(value)
		if !known || value == "n/a" {
			continue
		}
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%s: %q is not a count", label, value)
		}
		sect[key] = n
	}
	if !sawHeader {
		return nil, fmt.Errorf("no %q header", header+" parameters for NAME:")
	}
	if !sawCur {
		return nil, fmt.Errorf("no \"Current hardware settings:\" section")
	}
	for k := range p.Cur {
		if _, ok := p.Max[k]; !ok {
			return nil, fmt.Errorf("%s has a current value but no maximum", k)
		}
	}
	return p, nil
}

// read runs the reads one netdev needs, at once.
//
// Equivalent to: ethtool -g NAME; ethtool -l NAME
func read(ctx context.Context, h *host.Host, netdev string, rings, channels bool) (*Iface, error) {
	ifc := &Iface{}
	type job struct {
		flag, header string
		out          **Params
		no           *string
	}
	var jobs []job
	if rings {
		jobs = append(jobs, job{"-g", "Ring", &ifc.Rings, &ifc.NoRings})
	}
	if channels {
		jobs = append(jobs, job{"-l", "Channel", &ifc.Channels, &ifc.NoChannels})
	}
	errs := make([]error, len(jobs))
	done := make(chan int, len(jobs))
	for i, j := range jobs {
		go func() {
			defer func() { done <- i }()
			res, err := h.Run(ctx, "ethtool", j.flag, netdev)
			if err != nil {
				if why := notSupported(err); why != "" {
					*j.no = why
					return
				}
				errs[i] = err
				return
			}
			p, err := Parse(res.Stdout, j.header)
			if err != nil {
				errs[i] = fmt.Errorf("ethtool %s %s: %w", j.flag, netdev, err)
				return
			}
			*j.out = p
		}()
	}
	for range jobs {
		<-done
	}
	for _, err := range errs {
		if errors.Is(err, host.ErrNotFound) {
			return nil, notInstalled{err}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return ifc, nil
}

// notInstalled is a read whose ethtool is missing; it matches
// host.ErrNotFound.
type notInstalled struct{ err error }

func (e notInstalled) Error() string {
	return "ethtool is not installed (Debian/Ubuntu: apt install ethtool; RHEL: dnf install ethtool)"
}

func (e notInstalled) Unwrap() error { return e.err }

// notSupported returns the tool's words when the driver lacks the
// operation ("netlink error: Operation not supported"), "" otherwise.
func notSupported(err error) string {
	var ee *host.ExitError
	if !errors.As(err, &ee) || ee.Code <= 0 {
		return ""
	}
	if msg := strings.TrimSpace(string(ee.Stderr)); strings.Contains(msg, "Operation not supported") {
		return msg
	}
	return ""
}
