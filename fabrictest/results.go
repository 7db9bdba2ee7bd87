package fabrictest

import (
	"fmt"
	"math"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/rdmaform/rdmaform/fleet"
)

// Result is one pair's measurement, as the engines write it:
//
//	{"format_version": 1, "results": [
//	  {"hosts": ["node01", "node02"], "bandwidth_gbps": 392.4, "latency_us": 1.93},
//	  {"hosts": ["node03", "node04"], "error": "ib_write_bw: Couldn't connect to node04:18515"}]}
//
// Bandwidth in Gb/s (one direction), latency in microseconds; a pair
// that could not be measured has an error instead of the figures.
type Result struct {
	Hosts         Pair
	BandwidthGbps float64
	LatencyUs     float64
	Err           string
	// File, Line and Col are where the result is (its hosts).
	File      string
	Line, Col int
}

// Error is a problem in a results file or with a result against the
// inventory, at its position (Line 0: the file as a whole).
type Error struct {
	File      string
	Line, Col int
	Msg       string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	}
	return e.File + ": " + e.Msg
}

func errAt(file string, n *yaml.Node, format string, args ...any) *Error {
	return &Error{File: file, Line: n.Line, Col: n.Column, Msg: fmt.Sprintf(format, args...)}
}

// MaxBandwidthGbps and MaxLatencyUs bound a result's figures: no link
// moves more than 100 Tb/s, and a round trip of 10 s is no latency.
const (
	MaxBandwidthGbps = 100000
	MaxLatencyUs     = 1e7
)

// ReadResults reads one results file (JSON, or the same in YAML).
func ReadResults(file string, data []byte) ([]Result, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &Error{File: file, Msg: err.Error()}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, &Error{File: file, Msg: `want {"format_version": 1, "results": [...]}`}
	}
	root := doc.Content[0]
	var list *yaml.Node
	versioned := false
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "format_version":
			if v.Kind != yaml.ScalarNode || v.Value != "1" {
				return nil, errAt(file, v, "format_version: want 1, not %s", v.Value)
			}
			versioned = true
		case "results":
			list = v
		default:
			return nil, errAt(file, k, "unknown key %q (format_version, results)", k.Value)
		}
	}
	if !versioned {
		return nil, errAt(file, root, "no format_version (want 1)")
	}
	if list == nil || list.Kind != yaml.SequenceNode {
		return nil, errAt(file, root, "results: want a list")
	}
	out := make([]Result, 0, len(list.Content))
	for i, n := range list.Content {
		path := fmt.Sprintf("results[%d]", i)
		if n.Kind != yaml.MappingNode {
			return nil, errAt(file, n, "%s: want a mapping {hosts, bandwidth_gbps, latency_us} or {hosts, error}", path)
		}
		r := Result{File: file, Line: n.Line, Col: n.Column}
		var hosts, bw, lat, e *yaml.Node
		for j := 0; j+1 < len(n.Content); j += 2 {
			k, v := n.Content[j], n.Content[j+1]
			switch k.Value {
			case "hosts":
				hosts = v
			case "bandwidth_gbps":
				bw = v
			case "latency_us":
				lat = v
			case "error":
				e = v
			default:
				return nil, errAt(file, k, "%s: unknown key %q (hosts, bandwidth_gbps, latency_us, error)", path, k.Value)
			}
		}
		if hosts == nil {
			return nil, errAt(file, n, "%s: no hosts", path)
		}
		if hosts.Kind != yaml.SequenceNode || len(hosts.Content) != 2 {
			return nil, errAt(file, hosts, "%s.hosts: want two host names", path)
		}
		for k, h := range hosts.Content {
			if h.Kind != yaml.ScalarNode || h.Tag == "!!null" {
				return nil, errAt(file, h, "%s.hosts[%d]: want a host name", path, k)
			}
			if err := fleet.CheckHostName(h.Value); err != nil {
				return nil, errAt(file, h, "%s.hosts[%d]: %v", path, k, err)
			}
			r.Hosts[k] = h.Value
		}
		if r.Hosts[0] == r.Hosts[1] {
			return nil, errAt(file, hosts, "%s.hosts: %s with itself is no pair", path, r.Hosts[0])
		}
		r.Line, r.Col = hosts.Line, hosts.Column
		if e != nil {
			if e.Kind != yaml.ScalarNode || e.Tag != "!!str" || e.Value == "" {
				return nil, errAt(file, e, "%s.error: want the message of the run that failed", path)
			}
			if bw != nil || lat != nil {
				return nil, errAt(file, e, "%s: an error and figures: a failed pair has no figures", path)
			}
			r.Err = e.Value
			out = append(out, r)
			continue
		}
		var err error
		if r.BandwidthGbps, err = figure(file, path, "bandwidth_gbps", n, bw, MaxBandwidthGbps); err != nil {
			return nil, err
		}
		if r.LatencyUs, err = figure(file, path, "latency_us", n, lat, MaxLatencyUs); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// figure is a number above 0 and at most max.
func figure(file, path, key string, parent, v *yaml.Node, max float64) (float64, error) {
	if v == nil {
		return 0, errAt(file, parent, "%s: no %s (or error, for a pair that could not be measured)", path, key)
	}
	if v.Kind != yaml.ScalarNode || (v.Tag != "!!int" && v.Tag != "!!float") {
		return 0, errAt(file, v, "%s.%s: want a number", path, key)
	}
	f, err := strconv.ParseFloat(v.Value, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, errAt(file, v, "%s.%s: want a number, not %s", path, key, v.Value)
	}
	if f <= 0 || f > max {
		return 0, errAt(file, v, "%s.%s: %s is out of range (above 0, at most %g)", path, key, v.Value, max)
	}
	return f, nil
}
