package subnetmanager

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rdmaform/rdmaform/schema"
)

// queryTimeout bounds one sminfo or smpquery; proveTimeout bounds the wait
// for opensm's sweep after a SIGHUP or a restart.
const (
	queryTimeout = 10 * time.Second
	proveTimeout = 60 * time.Second
)

// Header opens both files rdmaform writes: they are rdmaform's whole.
const Header = "# Written by rdmaform from the subnet_manager section of its spec.\n# This whole file is rdmaform's: edit the spec, not this file.\n"

// RenderPartitions is partitions.conf for a spec: one entry a partition,
// in spec order, one member a line (opensm reads the port list until the
// ';'). The same spec always gives the same bytes.
func RenderPartitions(sm *schema.SubnetManager) []byte {
	var b bytes.Buffer
	b.WriteString(Header)
	for i := range sm.Partitions {
		pt := &sm.Partitions[i]
		if pt.PKey != nil && pt.PKey.Value&0x8000 != 0 && pt.Name != schema.DefaultPartition {
			fmt.Fprintf(&b, "# %s: P_Key %s given; opensm uses its low 15 bits, membership comes from the members\n", pt.Name, pt.PKey.Text)
		}
		fmt.Fprintf(&b, "%s=0x%04x", pt.Name, pt.PartitionKey())
		if ip := pt.IPoIB; ip != nil {
			b.WriteString(", ipoib")
			if ip.MTU != nil {
				fmt.Fprintf(&b, ", mtu=%d", schema.MTUCodes[*ip.MTU])
			}
			if ip.Rate != nil {
				fmt.Fprintf(&b, ", rate=%d", *ip.Rate)
			}
			if ip.SL != nil {
				fmt.Fprintf(&b, ", sl=%d", *ip.SL)
			}
		}
		if pt.DefaultMembership != "" {
			fmt.Fprintf(&b, ", defmember=%s", pt.DefaultMembership)
		}
		b.WriteString(" :")
		if len(pt.Members) == 0 {
			b.WriteString(" ;\n")
			continue
		}
		for j, m := range pt.Members {
			b.WriteString("\n\t" + memberName(m.GUID))
			if m.Membership != "" {
				b.WriteString("=" + m.Membership)
			}
			if j < len(pt.Members)-1 {
				b.WriteString(",")
			}
		}
		b.WriteString(";\n")
	}
	return b.Bytes()
}

// memberName is a member as partitions.conf spells it: keywords upper
// case, GUIDs lower case.
func memberName(g string) string {
	l := strings.ToLower(g)
	if slices.Contains(schema.SMKeywords, l) {
		return strings.ToUpper(l)
	}
	return l
}

// confKey is one opensm.conf key rdmaform manages, and whether opensm
// takes a change on SIGHUP: can_update in opensm/osm_subnet.c's opt_tbl.
type confKey struct {
	name      string
	updatable bool
}

// confKeys are the keys in the order they are written.
var confKeys = []confKey{
	{"guid", false},
	{"sm_priority", true},
	{"part_enforce", true},
	{"no_partition_enforcement", true},
	{"allow_both_pkeys", false},
	{"routing_engine", false},
	{"qos", true},
	{"sweep_interval", true},
	{"lmc", false},
	{"sminfo_polling_timeout", true},
	{"polling_retry_number", true},
}

// Updatable says whether opensm re-reads a key on SIGHUP.
func Updatable(key string) bool {
	for _, k := range confKeys {
		if k.name == key {
			return k.updatable
		}
	}
	return false
}

// ConfValues are the opensm.conf values of a spec, by key; guid is the
// bound port's GUID.
func ConfValues(sm *schema.SubnetManager, guid string) map[string]string {
	v := map[string]string{}
	if sm.Priority != nil {
		v["sm_priority"] = strconv.Itoa(*sm.Priority)
	}
	if sm.Port != nil && guid != "" {
		v["guid"] = guid
	}
	o := sm.Options
	if o == nil {
		return v
	}
	str := func(k, s string) {
		if s != "" {
			v[k] = s
		}
	}
	boolean := func(k string, b *bool) {
		if b != nil {
			v[k] = strings.ToUpper(strconv.FormatBool(*b))
		}
	}
	num := func(k string, i *int) {
		if i != nil {
			v[k] = strconv.Itoa(*i)
		}
	}
	str("part_enforce", o.PartEnforce)
	boolean("no_partition_enforcement", o.NoPartitionEnforcement)
	boolean("allow_both_pkeys", o.AllowBothPKeys)
	str("routing_engine", strings.ReplaceAll(o.RoutingEngine, " ", ""))
	boolean("qos", o.QoS)
	num("sweep_interval", o.SweepInterval)
	num("lmc", o.LMC)
	num("sminfo_polling_timeout", o.SMInfoPollingTimeout)
	num("polling_retry_number", o.PollingRetryNumber)
	return v
}

// RenderConf is opensm.conf: the header, then "key value" lines in
// confKeys order. Keys the spec does not name are left to opensm's
// defaults.
func RenderConf(values map[string]string) []byte {
	var b bytes.Buffer
	b.WriteString(Header)
	for _, k := range confKeys {
		if s, ok := values[k.name]; ok {
			fmt.Fprintf(&b, "%s %s\n", k.name, s)
		}
	}
	return b.Bytes()
}

// ParseConf reads opensm.conf's "key value" lines; '#' starts a comment
// (opensm's osm_subn_parse_conf_file does the same).
func ParseConf(b []byte) map[string]string {
	v := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if i := strings.IndexByte(l, '#'); i >= 0 {
			l = l[:i]
		}
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		v[f[0]] = strings.Join(f[1:], " ")
	}
	return v
}

// ExpectedPKeys is the P_Key table the subnet manager programs into its
// own port for a spec: each partition the port is a member of, with the
// full-member bit where its membership is full (both: both keys). The
// default partition is one of them when the spec has it (seen in the
// lab: Default=0x7fff : ALL=limited makes opensm's own port a limited
// member, 0x7fff); without it opensm adds its own, where its port is a
// full member (Default=0x7fff : ALL=limited, SELF=full). Where several
// members name the port (its GUID, ALL, ALL_CAS, SELF), the last one
// decides, as opensm reads them: seen in the lab, "GUID=full,
// ALL_CAS=limited" makes the port a limited member and
// "ALL_CAS=limited, GUID=full" a full one.
func ExpectedPKeys(sm *schema.SubnetManager, guid string) []int {
	keys := []int{schema.DefaultPartitionPKey | 0x8000}
	for i := range sm.Partitions {
		if sm.Partitions[i].PartitionKey() == schema.DefaultPartitionPKey {
			keys = nil
		}
	}
	for i := range sm.Partitions {
		pt := &sm.Partitions[i]
		k := pt.PartitionKey()
		ms := ""
		for _, m := range pt.Members {
			g := strings.ToLower(m.GUID)
			switch g {
			case "all", "all_cas", "self":
			default:
				if g != guid {
					continue
				}
			}
			ms = m.Membership
			if ms == "" {
				ms = pt.DefaultMembership
			}
			if ms == "" {
				ms = "limited"
			}
		}
		if ms == "full" || ms == "both" {
			keys = append(keys, k|0x8000)
		}
		if ms == "limited" || ms == "both" {
			keys = append(keys, k)
		}
	}
	sort.Ints(keys)
	return slices.Compact(keys)
}

// formatPKeys writes a table as people read it: 0x8002 0xffff.
func formatPKeys(keys []int) string {
	s := make([]string, len(keys))
	for i, k := range keys {
		s[i] = fmt.Sprintf("0x%04x", k)
	}
	return strings.Join(s, " ")
}

// PortsOf is the PORTS value of Debian's /etc/default/opensm (a shell
// variable file: PORTS=ALL, PORTS="0x... 0x...", PORTS=NONE), the last
// assignment, quotes dropped; "" when none.
func PortsOf(b []byte) string { return ShellVar(b, "PORTS") }

// RenderPorts is /etc/default/opensm with PORTS set to one port GUID: the
// package's comments and other lines kept, every PORTS assignment
// replaced by one, added at the end when there was none.
func RenderPorts(b []byte, guid string) []byte { return SetShellVar(b, "PORTS", guid) }

// ShellVar is the value of a variable in a file of shell assignments
// (/etc/default/opensm, /etc/sysconfig/opensm): the last assignment at
// the start of a line, quotes dropped; "" when none.
func ShellVar(b []byte, name string) string {
	v := ""
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if after, ok := strings.CutPrefix(l, name+"="); ok {
			v = strings.Trim(after, `"'`)
		}
	}
	return v
}

// SetShellVar is such a file with the variable set to value: comments
// and other lines kept, every assignment replaced by one (where the
// first was), added at the end when there was none.
func SetShellVar(b []byte, name, value string) []byte {
	line := name + "=" + value
	var out []string
	set := false
	lines := strings.Split(string(b), "\n")
	if len(b) == 0 {
		lines = nil
	}
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), name+"=") {
			if !set {
				out = append(out, line)
				set = true
			}
			continue
		}
		out = append(out, l)
	}
	if !set {
		if n := len(out); n > 0 && out[n-1] == "" {
			out = out[:n-1]
		}
		out = append(out, line, "")
	}
	return []byte(strings.Join(out, "\n"))
}
