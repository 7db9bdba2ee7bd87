package mlxfmt

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
)

// FlintQuery is what `mstflint -i IMAGE q` (an image file) or
// `mstflint -d DEV q` (an adapter's flash) prints, MFT's `flint` alike:
// "Key:" padded to 23 columns, then the value (flint/subcommands.cpp,
// QuerySubCommand). On a device whose flash holds another firmware than
// the one running, "FW Version" is the flash's and "FW Version(Running)"
// the running one's.
type FlintQuery struct {
	ImageType      string `json:"image_type"`
	FWVersion      string `json:"fw_version"`
	RunningVersion string `json:"running_version,omitempty"`
	ProductVersion string `json:"product_version,omitempty"`
	PSID           string `json:"psid"`
}

// ErrNotFlintQuery is output that holds no FW Version or no PSID line.
var ErrNotFlintQuery = errors.New("not a firmware query: no FW Version or PSID line")

// ParseFlintQuery reads a query's output. An -E- line is returned as the
// tool's error (*ToolError).
func ParseFlintQuery(out []byte) (FlintQuery, error) {
	var q FlintQuery
	if te := ParseError(out); te != nil {
		return q, te
	}
	for _, line := range strings.Split(string(out), "\n") {
		if line == "" || line[0] == ' ' || line[0] == '\t' {
			continue // a continuation (Rom Info's second type)
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		switch strings.TrimSpace(key) {
		case "Image type":
			q.ImageType = val
		case "FW Version":
			q.FWVersion = val
		case "FW Version(Running)":
			q.RunningVersion = val
		case "Product Version":
			q.ProductVersion = val
		case "PSID":
			q.PSID = val
		}
	}
	if q.FWVersion == "" || q.PSID == "" {
		return q, ErrNotFlintQuery
	}
	return q, nil
}

// burnProgressRE is a percentage line of a burn: flint/subcommands.cpp
// (Mellanox/mstflint tag v4.21.0-1) CbCommon prints "\r%s%3d%%" with the
// stage ending in " - " (burnCbFs3Func: "Burning FW image without
// signatures - "), and advProgressFunc "\r%s - %3d%%".
var burnProgressRE = regexp.MustCompile(`^(\S.*?)\s+-\s+(\d{1,3})%$`)

// BurnProgress reads one line of a burn's output (split at \r and \n):
// the stage and how far it is, in percent; ok is false for any other line.
func BurnProgress(line string) (stage string, percent int, ok bool) {
	m := burnProgressRE.FindStringSubmatch(strings.TrimSpace(line))
	if m == nil {
		return "", 0, false
	}
	n, err := strconv.Atoi(m[2])
	if err != nil || n > 100 {
		return "", 0, false
	}
	return m[1], n, true
}
