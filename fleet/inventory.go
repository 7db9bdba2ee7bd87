// Package fleet plans rollouts across many hosts: it reads an inventory
// (rdmaform's own YAML/JSON or what `ansible-inventory --list` prints),
// learns which hosts have something pending (from the inventory or from
// each host's `rdmaform plan -o json`) and cuts the pending hosts into
// waves that respect a count limit, failure domains and the subnet
// manager hosts of each fabric. Pure: it reads no file and runs nothing.
package fleet

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// RoleSM is the role of a host that runs a subnet manager: two of one
// fabric are never in the same wave.
const RoleSM = "sm"

// Format is where an inventory came from.
type Format int

const (
	// Own is rdmaform's inventory: {hosts: [{name, domain, fabric, roles, pending}]}.
	Own Format = iota
	// Ansible is the JSON `ansible-inventory --list` prints; the host
	// variables rdmaform_domain, rdmaform_fabric, rdmaform_roles and
	// rdmaform_pending.
	Ansible
)

func (f Format) String() string {
	switch f {
	case Own:
		return "rdmaform"
	case Ansible:
		return "ansible-inventory"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// Pending is what a host has waiting: known to need the rollout, known
// not to, or not known (then it is rolled).
type Pending int

const (
	PendingUnknown Pending = iota
	PendingYes
	PendingNo
)

func (p Pending) String() string {
	switch p {
	case PendingUnknown:
		return "unknown"
	case PendingYes:
		return "yes"
	case PendingNo:
		return "no"
	}
	return fmt.Sprintf("Pending(%d)", int(p))
}

// Host is one host of the inventory.
type Host struct {
	Name string
	// Domain is the failure domain (leaf, rail, rack: any name); "" when
	// the inventory gives none.
	Domain string
	// Fabric tells apart the subnet manager hosts of different fabrics;
	// "" is the one fabric of an inventory that names none.
	Fabric string
	// LinkLayer is the hosts' RDMA link layer, LinkIB or LinkEthernet
	// (inventory link_layer, rdmaform_link_layer); "" when the inventory
	// gives none. The fabric test pairs only hosts of one fabric and one
	// link layer.
	LinkLayer string
	Roles     []string
	// Pending and Why: whether something waits on the host and what
	// said so.
	Pending Pending
	Why     string
	// Groups are the inventory groups the host is in (sorted), children
	// groups' hosts counting as their parents' too: a rollout policy's
	// compartments.
	Groups []string
}

// SM tells whether the host runs a subnet manager.
func (h *Host) SM() bool {
	for _, r := range h.Roles {
		if r == RoleSM {
			return true
		}
	}
	return false
}

// Inventory is the hosts of one inventory file, sorted by name.
type Inventory struct {
	Format Format
	Hosts  []Host
}

// Error is a problem in an inventory, or in a host's plan file when
// Plan, at a position when it has one (Line 0: the file as a whole).
type Error struct {
	File      string
	Line, Col int
	Msg       string
	Plan      bool
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// ErrInventory is what every inventory Error is, and ErrPlanFile every
// plan file's (errors.Is).
var (
	ErrInventory = errors.New("bad inventory")
	ErrPlanFile  = errors.New("bad plan file")
)

func (e *Error) Is(target error) bool {
	if e.Plan {
		return target == ErrPlanFile
	}
	return target == ErrInventory
}

// ReadInventory reads an inventory: JSON from ansible-inventory --list
// (it has _meta or all) or rdmaform's own YAML/JSON (it has hosts).
// Every host name is unique; an inventory without hosts is an error.
func ReadInventory(file string, data []byte) (*Inventory, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &Error{File: file, Msg: err.Error()}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, &Error{File: file, Msg: "want a mapping: {hosts: [...]} or the JSON of ansible-inventory --list"}
	}
	root := doc.Content[0]
	inv := &Inventory{}
	var err error
	switch {
	case mapGet(root, "_meta") != nil || mapGet(root, "all") != nil:
		inv.Format = Ansible
		inv.Hosts, err = readAnsible(file, root)
	case mapGet(root, "hosts") != nil:
		inv.Format = Own
		inv.Hosts, err = readOwn(file, root)
	default:
		return nil, &Error{File: file, Line: root.Line, Col: root.Column, Msg: "neither rdmaform's inventory (hosts:) nor ansible-inventory --list output (_meta, all)"}
	}
	if err != nil {
		return nil, err
	}
	if len(inv.Hosts) == 0 {
		return nil, &Error{File: file, Msg: "no hosts"}
	}
	sort.Slice(inv.Hosts, func(i, j int) bool { return NameLess(inv.Hosts[i].Name, inv.Hosts[j].Name) })
	return inv, nil
}

func mapGet(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func at(file string, n *yaml.Node, format string, args ...any) *Error {
	return &Error{File: file, Line: n.Line, Col: n.Column, Msg: fmt.Sprintf(format, args...)}
}

// readOwn reads {hosts: [{name, domain, fabric, roles, pending}]}.
func readOwn(file string, root *yaml.Node) ([]Host, error) {
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i]; k.Value != "hosts" {
			return nil, at(file, k, "unknown key %q (want hosts)", k.Value)
		}
	}
	list := mapGet(root, "hosts")
	if list.Kind != yaml.SequenceNode {
		return nil, at(file, list, "hosts: want a list")
	}
	seen := map[string]*yaml.Node{}
	var hosts []Host
	for i, n := range list.Content {
		path := fmt.Sprintf("hosts[%d]", i)
		if n.Kind != yaml.MappingNode {
			return nil, at(file, n, "%s: want a mapping {name, domain, roles}", path)
		}
		h := Host{}
		var named bool
		for j := 0; j+1 < len(n.Content); j += 2 {
			k, v := n.Content[j], n.Content[j+1]
			var err error
			switch k.Value {
			case "name":
				h.Name, err = scalar(v)
				named = true
			case "domain":
				h.Domain, err = scalar(v)
			case "fabric":
				h.Fabric, err = scalar(v)
			case "roles":
				h.Roles, err = roles(v)
			case "link_layer":
				h.LinkLayer, err = linkLayer(v)
			case "pending":
				h.Pending, err = pendingOf(v)
				h.Why = "inventory: pending: " + v.Value
			case "groups":
				h.Groups, err = roles(v)
				sort.Strings(h.Groups)
			default:
				return nil, at(file, k, "%s: unknown key %q (name, domain, fabric, link_layer, roles, pending, groups)", path, k.Value)
			}
			if err != nil {
				return nil, at(file, v, "%s.%s: %v", path, k.Value, err)
			}
		}
		if !named || h.Name == "" {
			return nil, at(file, n, "%s: no name", path)
		}
		if err := CheckHostName(h.Name); err != nil {
			return nil, at(file, mapGet(n, "name"), "%s.name: %v", path, err)
		}
		if prev, dup := seen[h.Name]; dup {
			return nil, at(file, n, "%s: host %q is already at line %d", path, h.Name, prev.Line)
		}
		seen[h.Name] = n
		hosts = append(hosts, h)
	}
	return hosts, nil
}

// readAnsible reads ansible-inventory --list: the hosts of every group
// and of _meta.hostvars, with their rdmaform_* variables.
func readAnsible(file string, root *yaml.Node) ([]Host, error) {
	names := map[string]bool{}
	vars := map[string]*yaml.Node{}
	members, children := map[string][]string{}, map[string][]string{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Value == "_meta" {
			hv := mapGet(v, "hostvars")
			if hv == nil {
				continue
			}
			if hv.Kind != yaml.MappingNode {
				return nil, at(file, hv, "_meta.hostvars: want a mapping")
			}
			for j := 0; j+1 < len(hv.Content); j += 2 {
				if err := CheckHostName(hv.Content[j].Value); err != nil {
					return nil, at(file, hv.Content[j], "_meta.hostvars: %v", err)
				}
				names[hv.Content[j].Value] = true
				vars[hv.Content[j].Value] = hv.Content[j+1]
			}
			continue
		}
		if v.Kind != yaml.MappingNode {
			return nil, at(file, v, "group %s: want a mapping", k.Value)
		}
		if gv := mapGet(v, "vars"); gv != nil && len(gv.Content) > 0 {
			return nil, at(file, gv, "group %s has vars: this is ansible-inventory --list --export, whose hosts lack their groups' variables; run ansible-inventory --list without --export", k.Value)
		}
		if hs := mapGet(v, "hosts"); hs != nil {
			if hs.Kind != yaml.SequenceNode {
				return nil, at(file, hs, "group %s: hosts: want a list", k.Value)
			}
			for _, h := range hs.Content {
				if h.Kind != yaml.ScalarNode {
					return nil, at(file, h, "group %s: hosts: want host names", k.Value)
				}
				if err := CheckHostName(h.Value); err != nil {
					return nil, at(file, h, "group %s: %v", k.Value, err)
				}
				names[h.Value] = true
				members[k.Value] = append(members[k.Value], h.Value)
			}
		}
		if cs := mapGet(v, "children"); cs != nil && cs.Kind == yaml.SequenceNode {
			for _, c := range cs.Content {
				children[k.Value] = append(children[k.Value], c.Value)
			}
		}
	}
	groupsOf := ansibleGroups(members, children)
	hosts := make([]Host, 0, len(names))
	for name := range names {
		h := Host{Name: name, Groups: groupsOf[name]}
		if hv := vars[name]; hv != nil {
			for _, kv := range []struct {
				key string
				set func(*yaml.Node) error
			}{
				{"rdmaform_domain", func(v *yaml.Node) (err error) { h.Domain, err = scalar(v); return }},
				{"rdmaform_fabric", func(v *yaml.Node) (err error) { h.Fabric, err = scalar(v); return }},
				{"rdmaform_roles", func(v *yaml.Node) (err error) { h.Roles, err = roles(v); return }},
				{"rdmaform_link_layer", func(v *yaml.Node) (err error) { h.LinkLayer, err = linkLayer(v); return }},
				{"rdmaform_pending", func(v *yaml.Node) (err error) {
					h.Pending, err = pendingOf(v)
					h.Why = "inventory: rdmaform_pending=" + v.Value
					return
				}},
			} {
				if v := mapGet(hv, kv.key); v != nil {
					if err := kv.set(v); err != nil {
						return nil, at(file, v, "host %s: %s: %v", name, kv.key, err)
					}
				}
			}
		}
		hosts = append(hosts, h)
	}
	return hosts, nil
}

// MaxHostName and MaxLabel are RFC 1123's limits on a host name: 253
// characters in all, 63 in each dot-separated label.
const (
	MaxHostName = 253
	MaxLabel    = 63
)

// CheckHostName refuses an inventory host name that is not a host name:
// an RFC 1123 name (labels of letters, digits and hyphens, none starting
// or ending with a hyphen, at most MaxLabel characters each and
// MaxHostName in all; an IPv4 address is one), or an IPv6 address
// without a zone, which Ansible inventories also name hosts by. What
// is refused would otherwise reach waves' output and the file names of
// --plans: a newline splits a line, an ESC sequence reaches the
// terminal, a space or a slash is no host.
func CheckHostName(name string) error {
	if a, err := netip.ParseAddr(name); err == nil && a.Is6() && a.Zone() == "" {
		return nil
	}
	bad := func(why string) error {
		return fmt.Errorf("%q is not a host name: %s (an RFC 1123 name or an IP address)", name, why)
	}
	if len(name) > MaxHostName {
		return bad(fmt.Sprintf("%d characters, at most %d", len(name), MaxHostName))
	}
	for _, label := range strings.Split(name, ".") {
		switch {
		case label == "":
			return bad("an empty label (a leading, trailing or doubled dot)")
		case len(label) > MaxLabel:
			return bad(fmt.Sprintf("a label of %d characters, at most %d", len(label), MaxLabel))
		case label[0] == '-' || label[len(label)-1] == '-':
			return bad("a label starts or ends with a hyphen")
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return bad(fmt.Sprintf("%q is not an ASCII letter, digit or hyphen", c))
			}
		}
	}
	return nil
}

// ansibleGroups gives each host its groups: those that list it and,
// through children, their parents (a cycle is followed once).
func ansibleGroups(members, children map[string][]string) map[string][]string {
	out := map[string][]string{}
	for g := range members {
		out[g] = nil
	}
	for g := range children {
		out[g] = nil
	}
	byHost := map[string][]string{}
	for g := range out {
		seen, hosts := map[string]bool{}, map[string]bool{}
		var walk func(string)
		walk = func(x string) {
			if seen[x] {
				return
			}
			seen[x] = true
			for _, h := range members[x] {
				hosts[h] = true
			}
			for _, c := range children[x] {
				walk(c)
			}
		}
		walk(g)
		for h := range hosts {
			byHost[h] = append(byHost[h], g)
		}
	}
	for _, gs := range byHost {
		sort.Strings(gs)
	}
	return byHost
}

// scalar is a string or a number (rack: 7), never a list or a mapping.
func scalar(v *yaml.Node) (string, error) {
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
		return "", errors.New("want a string")
	}
	if v.Tag == "!!bool" {
		return "", fmt.Errorf("want a string, not the boolean %s", v.Value)
	}
	return v.Value, nil
}

// The link layers an inventory may give a host, as sysfs spells a port's
// link_layer.
const (
	LinkIB       = "InfiniBand"
	LinkEthernet = "Ethernet"
)

// linkLayer is InfiniBand or Ethernet, in any case (sysfs writes
// InfiniBand and Ethernet; ib and eth are accepted as well).
func linkLayer(v *yaml.Node) (string, error) {
	s, err := scalar(v)
	if err != nil {
		return "", err
	}
	switch strings.ToLower(s) {
	case "infiniband", "ib":
		return LinkIB, nil
	case "ethernet", "eth":
		return LinkEthernet, nil
	}
	return "", fmt.Errorf("want InfiniBand or Ethernet, not %q", s)
}

// roles is a list of names, or one string of names split at commas (an
// INI inventory's rdmaform_roles=sm,login).
func roles(v *yaml.Node) ([]string, error) {
	var out []string
	switch v.Kind {
	case yaml.ScalarNode:
		s, err := scalar(v)
		if err != nil {
			return nil, err
		}
		for _, r := range strings.Split(s, ",") {
			if r = strings.TrimSpace(r); r != "" {
				out = append(out, r)
			}
		}
	case yaml.SequenceNode:
		for _, e := range v.Content {
			s, err := scalar(e)
			if err != nil {
				return nil, fmt.Errorf("roles: %w", err)
			}
			out = append(out, s)
		}
	default:
		return nil, errors.New("want a list of names")
	}
	return out, nil
}

// pendingOf reads a boolean the way Ansible does: true/false, yes/no,
// on/off, 1/0, as a boolean or a string (an INI inventory's values are
// strings).
func pendingOf(v *yaml.Node) (Pending, error) {
	if v.Kind == yaml.ScalarNode {
		switch strings.ToLower(v.Value) {
		case "true", "yes", "on", "1", "y", "t":
			return PendingYes, nil
		case "false", "no", "off", "0", "n", "f":
			return PendingNo, nil
		}
	}
	return PendingUnknown, fmt.Errorf("want true or false, not %q", v.Value)
}

// NameLess orders host names as people do: node2 before node10 (runs of
// digits compare as numbers), then byte by byte.
func NameLess(a, b string) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ca, cb := a[i], b[j]
		if isDigit(ca) && isDigit(cb) {
			si, sj := i, j
			for i < len(a) && isDigit(a[i]) {
				i++
			}
			for j < len(b) && isDigit(b[j]) {
				j++
			}
			na := strings.TrimLeft(a[si:i], "0")
			nb := strings.TrimLeft(b[sj:j], "0")
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			continue
		}
		if ca != cb {
			return ca < cb
		}
		i++
		j++
	}
	if len(a)-i != len(b)-j {
		return len(a)-i < len(b)-j
	}
	return a < b
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// ordinal is 1st, 2nd, 3rd, 4th, 11th, 21st.
func ordinal(n int) string {
	s := strconv.Itoa(n)
	switch {
	case n%100 >= 11 && n%100 <= 13:
		return s + "th"
	case n%10 == 1:
		return s + "st"
	case n%10 == 2:
		return s + "nd"
	case n%10 == 3:
		return s + "rd"
	}
	return s + "th"
}
