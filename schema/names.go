package schema

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

// Name limits from the kernel: IFNAMSIZ is 16 (15 characters and NUL),
// IB_DEVICE_NAME_MAX is 64.
const (
	maxNetdevName = 15
	maxRDMAName   = 63
	maxConnName   = 255
	maxUnitName   = 255
	maxModuleName = 55 // MODULE_NAME_LEN 56
)

// unsafeName rejects what no name that becomes a path or an argument may
// hold: empty, ".", "..", "/", NUL, newlines, other control characters,
// and a leading "-" (it would read as an option).
func unsafeName(s string) string {
	switch {
	case s == "":
		return "must not be empty"
	case s == "." || s == "..":
		return fmt.Sprintf("%q is not a valid name", s)
	case strings.HasPrefix(s, "-"):
		return "must not start with '-' (it would read as an option)"
	case strings.ContainsRune(s, '/'):
		return "must not contain '/'"
	case strings.ContainsRune(s, 0):
		return "must not contain NUL"
	case strings.ContainsAny(s, "\n\r"):
		return "must not contain a newline"
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return "must not contain control characters"
		}
	}
	return ""
}

// CheckNetdev checks a network interface name by the kernel's rules
// (dev_valid_name): 1-15 bytes, no '/', ':' or white space, not . or ..
func CheckNetdev(s string) string {
	if m := unsafeName(s); m != "" {
		return m
	}
	if len(s) > maxNetdevName {
		return fmt.Sprintf("%q is longer than the kernel's %d-byte interface name limit", truncate(s), maxNetdevName)
	}
	if strings.ContainsAny(s, ": \t") {
		return fmt.Sprintf("%q is not a valid interface name (no ':' or white space)", s)
	}
	return ""
}

// udevSpecial are the characters a value in a udev rule cannot carry as
// they are (udev(7), "Values" and "String substitutions"; systemd's
// udev_rule_parse_value and udev_event_apply_format): '"' ends the quoted
// value and '\' escapes the quote after it (so a trailing one swallows
// the closing quote); '$' and '%' begin a substitution ($kernel, %k,
// $attr{...}, %E{...}, $$, %%), which udev expands at every boot.
const udevSpecial = `"\$%`

// CheckNetdevName checks a netdev name rdmaform gives (devices[].names
// .netdev, and each name a rail template expands to), which it writes
// into a udev rule's NAME="..." for the boot: the kernel's rules
// (CheckNetdev), and only printable ASCII (0x21-0x7e) other than the
// characters udev reads in a value (udevSpecial). udev would replace a
// byte outside printable ASCII in a netdev's NAME (systemd's
// ifname_valid_char), so the name at boot would not be the spec's.
func CheckNetdevName(s string) string {
	if m := CheckNetdev(s); m != "" {
		return m
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c <= 0x20 || c >= 0x7f:
			return fmt.Sprintf("%q holds the byte 0x%02x: a netdev name rdmaform gives is printable ASCII (udev would change it at boot)", s, c)
		case strings.IndexByte(udevSpecial, c) >= 0:
			return fmt.Sprintf("%q holds %q, which udev reads in a rule's value (quote, escape or substitution): a netdev name rdmaform gives holds none of \" \\ $ %%", s, string(c))
		}
	}
	return ""
}

var rdmaNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// CheckRDMAName checks an RDMA device or link name (mlx5_0, rxe0).
func CheckRDMAName(s string) string {
	if m := unsafeName(s); m != "" {
		return m
	}
	if len(s) > maxRDMAName {
		return fmt.Sprintf("%q is longer than %d bytes", truncate(s), maxRDMAName)
	}
	if !rdmaNameRE.MatchString(s) || strings.Contains(s, "%") {
		return fmt.Sprintf("%q is not a valid RDMA device name (letters, digits, _ . -)", s)
	}
	return ""
}

// CheckConnName checks a NetworkManager connection name.
func CheckConnName(s string) string {
	if m := unsafeName(s); m != "" {
		return m
	}
	if len(s) > maxConnName {
		return fmt.Sprintf("longer than %d bytes", maxConnName)
	}
	return ""
}

var unitRE = regexp.MustCompile(`^[A-Za-z0-9:_.@\\-]+$`)

// CheckUnitName checks a systemd unit name.
func CheckUnitName(s string) string {
	if m := unsafeName(s); m != "" {
		return m
	}
	if len(s) > maxUnitName || !unitRE.MatchString(s) {
		return fmt.Sprintf("%q is not a valid systemd unit name", truncate(s))
	}
	return ""
}

var moduleRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// CheckModuleName checks a kernel module name.
func CheckModuleName(s string) string {
	if m := unsafeName(s); m != "" {
		return m
	}
	if len(s) > maxModuleName || !moduleRE.MatchString(s) {
		return fmt.Sprintf("%q is not a valid kernel module name", truncate(s))
	}
	return ""
}

var pciRE = regexp.MustCompile(`^(?:([0-9a-fA-F]{4}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$`)

// NormalizePCI returns the full lower-case PCI address (0000:81:00.0) or
// "" when s is not one.
func NormalizePCI(s string) string {
	m := pciRE.FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	dom := m[1]
	if dom == "" {
		dom = "0000"
	}
	return strings.ToLower(fmt.Sprintf("%s:%s:%s.%s", dom, m[2], m[3], m[4]))
}

var guidRE = regexp.MustCompile(`^[0-9a-fA-F]{4}(:[0-9a-fA-F]{4}){3}$`)

// NormalizeGUID returns a node GUID in sysfs form (0002:c903:000c:c89a),
// accepting also 0x0002c903000cc89a and 0002c903000cc89a; "" if invalid.
func NormalizeGUID(s string) string {
	if guidRE.MatchString(s) {
		return strings.ToLower(s)
	}
	h := strings.TrimPrefix(strings.ToLower(s), "0x")
	if len(h) != 16 || strings.Trim(h, "0123456789abcdef") != "" {
		return ""
	}
	return h[0:4] + ":" + h[4:8] + ":" + h[8:12] + ":" + h[12:16]
}

// ChildName is the name the kernel and NetworkManager give a P_Key child
// interface: the parent, a dot, and the P_Key as configured in 4
// lower-case hex digits (ib0.8002 for a full member, ib0.0002 for a
// limited one).
func ChildName(parent string, pkey int) string {
	return fmt.Sprintf("%s.%04x", parent, pkey)
}

// FullMember returns the P_Key with the full-membership bit (0x8000) set:
// a key written as 0x0002 is the limited-membership form of 0x8002. A
// limited member talks only to full members of the partition.
func FullMember(pkey int) int { return pkey | 0x8000 }

// ParsePrefix parses an address with prefix length (192.0.2.1/24).
func ParsePrefix(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return p, nil
}

// RailPlaceholder is what a rail template's names hold, once each.
const RailPlaceholder = "{rail}"

// Rail is a rail template's name for rail n.
func Rail(template string, n int) string {
	return strings.ReplaceAll(template, RailPlaceholder, strconv.Itoa(n))
}

// CheckRailTemplate checks a rail template (a name of a device with
// match): it holds {rail}, once, and no other brace; with {rail} as first
// (the smallest rail number) it is a valid name by check. It returns the
// finding's message, "" when the template is good.
func CheckRailTemplate(s string, first int, check func(string) string) string {
	switch n := strings.Count(s, RailPlaceholder); {
	case n == 0:
		return fmt.Sprintf("%q has no %s: every function the match selects needs a name of its own (e.g. rail%s)", truncate(s), RailPlaceholder, RailPlaceholder)
	case n > 1:
		return fmt.Sprintf("%q holds %s %d times: once", truncate(s), RailPlaceholder, n)
	}
	if rest := strings.Replace(s, RailPlaceholder, "", 1); strings.ContainsAny(rest, "{}") {
		return fmt.Sprintf("%q holds a placeholder other than %s, the only one", truncate(s), RailPlaceholder)
	}
	return check(Rail(s, first))
}
