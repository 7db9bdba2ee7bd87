package fabrictest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"

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

// MaxBandwidthGbps and MaxLatencyUs bound a result's figures: no link
// moves more than 100 Tb/s, and a round trip of 10 s is no latency.
const (
	MaxBandwidthGbps = 100000
	MaxLatencyUs     = 1e7
)

// ReadResults reads one results file (JSON). It streams the document
// (encoding/json's tokens, not a YAML tree: a 1,000-host schedule's
// results are 499,500 pairs, 40 MB) and gives each error its line and
// column.
func ReadResults(file string, data []byte) ([]Result, error) {
	r := &resultsReader{file: file, data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	r.dec.UseNumber()
	out, err := r.read()
	if err != nil {
		return nil, err
	}
	return out, nil
}

type resultsReader struct {
	file string
	data []byte
	dec  *json.Decoder
	// lines are the offsets where each line starts, made when an
	// error or a result needs a position.
	lines []int
}

// at is the line and column (1-based, in bytes) of offset off.
func (r *resultsReader) at(off int) (int, int) {
	if r.lines == nil {
		r.lines = append(r.lines, 0)
		for i, c := range r.data {
			if c == '\n' {
				r.lines = append(r.lines, i+1)
			}
		}
	}
	l := sort.Search(len(r.lines), func(i int) bool { return r.lines[i] > off }) - 1
	return l + 1, off - r.lines[l] + 1
}

func (r *resultsReader) errAt(off int, format string, args ...any) *Error {
	line, col := r.at(off)
	return &Error{File: r.file, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

// next is the next token and where it starts.
func (r *resultsReader) next() (json.Token, int, error) {
	off := int(r.dec.InputOffset())
	for off < len(r.data) {
		switch r.data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
			continue
		}
		break
	}
	tok, err := r.dec.Token()
	if err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, 0, r.errAt(int(se.Offset), "not JSON: %v", err)
		}
		if errors.Is(err, io.EOF) {
			return nil, 0, &Error{File: r.file, Msg: "not JSON: the document ends too soon"}
		}
		return nil, 0, r.errAt(off, "not JSON: %v", err)
	}
	return tok, off, nil
}

func (r *resultsReader) delim(want json.Delim, what string) (int, error) {
	tok, off, err := r.next()
	if err != nil {
		return 0, err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return 0, r.errAt(off, "%s", what)
	}
	return off, nil
}

func (r *resultsReader) read() ([]Result, error) {
	top, err := r.delim('{', `want {"format_version": 1, "results": [...]}`)
	if err != nil {
		return nil, err
	}
	var out []Result
	versioned, listed := false, false
	for r.dec.More() {
		k, koff, err := r.next()
		if err != nil {
			return nil, err
		}
		switch k {
		case "format_version":
			v, voff, err := r.next()
			if err != nil {
				return nil, err
			}
			if n, ok := v.(json.Number); !ok || n.String() != "1" {
				return nil, r.errAt(voff, "format_version: want 1, not %v", v)
			}
			versioned = true
		case "results":
			if _, err := r.delim('[', "results: want a list"); err != nil {
				return nil, err
			}
			for i := 0; r.dec.More(); i++ {
				res, err := r.result(i)
				if err != nil {
					return nil, err
				}
				out = append(out, res)
			}
			if _, _, err := r.next(); err != nil { // ]
				return nil, err
			}
			listed = true
		default:
			return nil, r.errAt(koff, "unknown key %q (format_version, results)", k)
		}
	}
	if _, _, err := r.next(); err != nil { // }
		return nil, err
	}
	if _, off, err := r.next(); err == nil {
		return nil, r.errAt(off, "more after the document")
	}
	if !versioned {
		return nil, r.errAt(top, "no format_version (want 1)")
	}
	if !listed {
		return nil, r.errAt(top, "results: want a list")
	}
	if out == nil {
		out = []Result{}
	}
	return out, nil
}

// result reads {hosts, bandwidth_gbps, latency_us} or {hosts, error}.
func (r *resultsReader) result(i int) (Result, error) {
	path := fmt.Sprintf("results[%d]", i)
	open, err := r.delim('{', path+": want a mapping {hosts, bandwidth_gbps, latency_us} or {hosts, error}")
	if err != nil {
		return Result{}, err
	}
	res := Result{File: r.file}
	hostsAt := -1
	var bw, lat *json.Number
	bwAt, latAt, errAt := 0, 0, -1
	for r.dec.More() {
		k, koff, err := r.next()
		if err != nil {
			return res, err
		}
		switch k {
		case "hosts":
			if hostsAt, err = r.delim('[', path+".hosts: want two host names"); err != nil {
				return res, err
			}
			n := 0
			for ; r.dec.More(); n++ {
				h, hoff, err := r.next()
				if err != nil {
					return res, err
				}
				name, ok := h.(string)
				if !ok {
					return res, r.errAt(hoff, "%s.hosts[%d]: want a host name", path, n)
				}
				if n >= 2 {
					return res, r.errAt(hostsAt, "%s.hosts: want two host names", path)
				}
				if err := fleet.CheckHostName(name); err != nil {
					return res, r.errAt(hoff, "%s.hosts[%d]: %v", path, n, err)
				}
				res.Hosts[n] = name
			}
			if _, _, err := r.next(); err != nil { // ]
				return res, err
			}
			if n != 2 {
				return res, r.errAt(hostsAt, "%s.hosts: want two host names", path)
			}
			if res.Hosts[0] == res.Hosts[1] {
				return res, r.errAt(hostsAt, "%s.hosts: %s with itself is no pair", path, res.Hosts[0])
			}
		case "bandwidth_gbps", "latency_us":
			v, voff, err := r.next()
			if err != nil {
				return res, err
			}
			n, ok := v.(json.Number)
			if !ok {
				return res, r.errAt(voff, "%s.%s: want a number", path, k)
			}
			if k == "bandwidth_gbps" {
				bw, bwAt = &n, voff
			} else {
				lat, latAt = &n, voff
			}
		case "error":
			v, voff, err := r.next()
			if err != nil {
				return res, err
			}
			msg, ok := v.(string)
			if !ok || msg == "" {
				return res, r.errAt(voff, "%s.error: want the message of the run that failed", path)
			}
			res.Err, errAt = msg, voff
		default:
			return res, r.errAt(koff, "%s: unknown key %q (hosts, bandwidth_gbps, latency_us, error)", path, k)
		}
	}
	if _, _, err := r.next(); err != nil { // }
		return res, err
	}
	if hostsAt < 0 {
		return res, r.errAt(open, "%s: no hosts", path)
	}
	res.Line, res.Col = r.at(hostsAt)
	if errAt >= 0 {
		if bw != nil || lat != nil {
			return res, r.errAt(errAt, "%s: an error and figures: a failed pair has no figures", path)
		}
		return res, nil
	}
	var err2 error
	if res.BandwidthGbps, err2 = r.figure(path, "bandwidth_gbps", open, bw, bwAt, MaxBandwidthGbps); err2 != nil {
		return res, err2
	}
	if res.LatencyUs, err2 = r.figure(path, "latency_us", open, lat, latAt, MaxLatencyUs); err2 != nil {
		return res, err2
	}
	return res, nil
}

// figure is a number above 0 and at most max.
func (r *resultsReader) figure(path, key string, parent int, v *json.Number, at int, max float64) (float64, error) {
	if v == nil {
		return 0, r.errAt(parent, "%s: no %s (or error, for a pair that could not be measured)", path, key)
	}
	f, err := strconv.ParseFloat(v.String(), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, r.errAt(at, "%s.%s: want a number, not %s", path, key, v.String())
	}
	if f <= 0 || f > max {
		return 0, r.errAt(at, "%s.%s: %s is out of range (above 0, at most %g)", path, key, v.String(), max)
	}
	return f, nil
}
