package names

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/rdmaform/rdmaform/schema"
)

// The three forms of a line of RulesFile, with each value in the form
// only it can have: a PCI address, a number, a MAC, a DEVTYPE word, and
// the name (checked apart, by the spec's own rules). None of them can
// hold what udev reads in a value ('"', '\', '$', '%': udev(7)), so a
// line is one rule with these keys and no other.
var (
	netPCIRule  = regexp.MustCompile(`^ACTION=="add", SUBSYSTEM=="net", KERNELS=="[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", ATTR\{type\}=="[0-9]{1,5}", ATTR\{dev_port\}=="[0-9]{1,5}", NAME="([^"]*)"$`)
	netMACRule  = regexp.MustCompile(`^ACTION=="add", SUBSYSTEM=="net", (?:DRIVERS=="\?\*", )?ATTR\{address\}=="[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5}", ATTR\{type\}=="1", ENV\{DEVTYPE\}=="[a-z0-9_-]{0,32}", NAME="([^"]*)"$`)
	rdmaPCIRule = regexp.MustCompile(`^ACTION=="add", SUBSYSTEM=="infiniband", KERNELS=="[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", PROGRAM="rdma_rename %k NAME_FIXED ([^"]*)"$`)
)

// checkRules refuses rules that are not RulesFile's own: the header,
// then lines of the three forms, each netdev name safe in a udev rule
// (schema.CheckNetdevName) and each RDMA name a valid one
// (schema.CheckRDMAName, which rdma_rename takes as one argument). It
// is the last look before the file is written, whatever made the rules:
// a name or a value read from the host that would add a key (RUN+=) or
// a substitution ($kernel, %k) udev runs at every boot is refused here
// with the line.
func checkRules(b []byte) error {
	s, ok := strings.CutPrefix(string(b), header)
	if !ok {
		return fmt.Errorf("%s: refusing to write rules that do not begin with rdmaform's header", RulesFile)
	}
	if s == "" {
		return nil
	}
	if !strings.HasSuffix(s, "\n") {
		return fmt.Errorf("%s: refusing to write rules whose last line has no newline", RulesFile)
	}
	for i, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		bad := func(why string) error {
			return fmt.Errorf("%s line %d: refusing to write %q: %s", RulesFile, i+2, l, why)
		}
		var m []string
		check := schema.CheckNetdevName
		for _, re := range []*regexp.Regexp{netPCIRule, netMACRule} {
			if m == nil {
				m = re.FindStringSubmatch(l)
			}
		}
		if m == nil {
			m, check = rdmaPCIRule.FindStringSubmatch(l), schema.CheckRDMAName
		}
		if m == nil {
			return bad("not one of rdmaform's rules (a value holds what udev would read as more than a value)")
		}
		if why := check(m[1]); why != "" {
			return bad(why)
		}
	}
	return nil
}
