package mlxfmt

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

var mstNameRE = regexp.MustCompile(`^(?:/dev/mst/)?mt(\d+)_pci(?:conf|_cr)(\d+)(?:\.(\d+))?$`)

// ParseMSTDeviceName is the inverse of MSTDeviceName; it accepts the bare
// name or the /dev/mst/ path, and *_pci_cr* nodes too.
func ParseMSTDeviceName(name string) (pciDeviceID uint16, index, function int, err error) {
	m := mstNameRE.FindStringSubmatch(name)
	if m == nil {
		return 0, 0, 0, fmt.Errorf("mlxfmt: %q is not an mst device name", name)
	}
	id, err := strconv.ParseUint(m[1], 10, 16)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("mlxfmt: %q: device id: %w", name, err)
	}
	index, err = strconv.Atoi(m[2])
	if err != nil {
		return 0, 0, 0, fmt.Errorf("mlxfmt: %q: index: %w", name, err)
	}
	if m[3] != "" {
		if function, err = strconv.Atoi(m[3]); err != nil {
			return 0, 0, 0, fmt.Errorf("mlxfmt: %q: function: %w", name, err)
		}
	}
	return uint16(id), index, function, nil
}

// MSTEntry is one device row of `mst status -v`.
type MSTEntry struct {
	// DeviceType is e.g. ConnectX6, or NA.
	DeviceType string
	// Rev is the chip revision printed as (rev:N), empty when DeviceType is NA.
	Rev string
	// MST is the /dev/mst node, or "" when the column shows NA (user-level
	// mode, modules not loaded).
	MST string
	// BDF as printed: "3b:00.0", or "0000:3b:00.0" on hosts with a non-zero
	// PCI domain.
	BDF string
	// RDMA is the RDMA device (mlx5_0); empty on eth-only ConnectX-3 ports.
	RDMA string
	// Netdevs without the "net-" prefix, in printed order.
	Netdevs []string
	// NUMA node, -1 when unknown.
	NUMA int
}

// MSTStatus is the output of `mst status -v`.
type MSTStatus struct {
	PCIModuleLoaded     bool // "MST PCI module loaded"
	PCIConfModuleLoaded bool // "MST PCI configuration module loaded"
	Devices             []MSTEntry
	// Skipped lists the lines that could not be read as a device, with why.
	Skipped []string
}

var (
	mstBDFRE  = regexp.MustCompile(`^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$`)
	mstTypeRE = regexp.MustCompile(`^([A-Za-z0-9_-]+)\(rev:([0-9a-fA-F]+)\)$`)
	mstNUMARE = regexp.MustCompile(`^-?\d+$`)
	mstRDMARE = regexp.MustCompile(`^[a-z][a-z0-9_]*\d$`)
)

// ParseMSTStatusVerbose reads `mst status -v`. Tokens of a device row are
// identified by their shape, not their position, because the RDMA column can
// be empty and the widths differ between MFT versions: DEVICE_TYPE(rev:N) or
// NA first, then a /dev/mst/ path or NA, a BDF, an RDMA name, a
// comma-separated list of net-<ifname> ("net-" and the name may be split by
// blanks), and the NUMA number. Columns newer releases append (VFIO, FWCTL,
// STATE) are ignored. A line that does not start a row continues the one
// before (a terminal wrapped it). A row that cannot be read (no PCI
// address: older MFT printed some without) is left out and listed in
// Skipped; it never fails the listing.
func ParseMSTStatusVerbose(out []byte) (MSTStatus, error) {
	var s MSTStatus
	inTable := false
	for i, raw := range strings.Split(string(out), "\n") {
		line := strings.TrimSpace(raw)
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "MST PCI module"):
			s.PCIModuleLoaded = !strings.Contains(line, "not loaded")
			continue
		case strings.HasPrefix(line, "MST PCI configuration module"):
			s.PCIConfModuleLoaded = !strings.Contains(line, "not loaded")
			continue
		case strings.HasPrefix(line, "DEVICE_TYPE"):
			inTable = true
			continue
		}
		if !inTable {
			continue
		}
		if f := strings.Fields(line); !startsRow(f[0]) {
			if n := len(s.Devices); n > 0 {
				addMSTTokens(&s.Devices[n-1], f)
			} else {
				s.Skipped = append(s.Skipped, fmt.Sprintf("line %d: %q: not a device row", i+1, line))
			}
			continue
		}
		e, err := parseMSTRow(line)
		if err != nil {
			s.Skipped = append(s.Skipped, fmt.Sprintf("line %d: %v", i+1, err))
			continue
		}
		s.Devices = append(s.Devices, e)
	}
	if !inTable {
		return s, fmt.Errorf("mlxfmt: mst status: no DEVICE_TYPE table")
	}
	return s, nil
}

// startsRow reports whether a token begins a device row.
func startsRow(t string) bool { return t == "NA" || mstTypeRE.MatchString(t) }

func parseMSTRow(line string) (MSTEntry, error) {
	f := strings.Fields(line)
	var e MSTEntry
	if m := mstTypeRE.FindStringSubmatch(f[0]); m != nil {
		e.DeviceType, e.Rev = m[1], m[2]
	} else {
		e.DeviceType = "NA"
	}
	f = f[1:]
	if len(f) > 0 && (f[0] == "NA" || strings.HasPrefix(f[0], "/dev/mst/")) {
		if f[0] != "NA" {
			e.MST = f[0]
		}
		f = f[1:]
	}
	addMSTTokens(&e, f)
	if e.BDF == "" {
		return e, fmt.Errorf("row %q has no PCI address", line)
	}
	return e, nil
}

// addMSTTokens reads a row's tokens after DEVICE_TYPE and MST (or those of
// a wrapped continuation line) into e.
func addMSTTokens(e *MSTEntry, f []string) {
	haveNUMA := e.NUMA != 0
	for i := 0; i < len(f); i++ {
		t := f[i]
		switch {
		case e.BDF == "" && mstBDFRE.MatchString(t):
			e.BDF = t
		case t == "net-" && i+1 < len(f) && !mstNUMARE.MatchString(f[i+1]):
			// "net-" and the name printed apart.
			i++
			e.Netdevs = append(e.Netdevs, strings.Split(f[i], ",")...)
		case strings.HasPrefix(t, "net-"):
			for _, n := range strings.Split(t, ",") {
				if n = strings.TrimPrefix(n, "net-"); n != "" {
					e.Netdevs = append(e.Netdevs, n)
				}
			}
		case !haveNUMA && e.BDF != "" && mstNUMARE.MatchString(t):
			n, err := strconv.Atoi(t)
			if err == nil {
				e.NUMA, haveNUMA = n, true
			}
		case e.RDMA == "" && e.BDF != "" && !haveNUMA && e.Netdevs == nil && mstRDMARE.MatchString(t):
			e.RDMA = t
		}
	}
}
