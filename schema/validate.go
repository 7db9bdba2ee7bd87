package schema

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/linklayer"
)

// Parse loads and validates a spec: the one call commands use. The report
// holds every finding, each with its position, in file order.
func Parse(file string, data []byte) (*Spec, Report) {
	spec, rep := Load(file, data)
	if len(rep) == 0 || !hasFatal(rep) {
		// A value that could not be decoded is reported once, by the loader;
		// the zero value left in its place would only add noise.
		bad := map[string]bool{}
		for _, f := range rep {
			bad[f.Path] = true
		}
		for _, f := range Validate(spec) {
			if !bad[f.Path] {
				rep = append(rep, f)
			}
		}
	}
	rep = dedupFindings(rep)
	rep.Sort()
	if len(rep) > MaxFindings {
		more := len(rep) - MaxFindings
		rep = append(rep[:MaxFindings], Finding{Path: "$", Pos: rep[MaxFindings].Pos, Message: fmt.Sprintf("%d more findings not shown", more)})
	}
	return spec, rep
}

// MaxFindings bounds the findings reported for one spec: past a hundred,
// more lines help nobody fix the file.
const MaxFindings = 100

// hasFatal is true when the document could not be read as a spec at all;
// validating the empty result would only add noise.
func hasFatal(r Report) bool {
	for _, f := range r {
		if f.Path == "$" || f.Path == "$.version" {
			return true
		}
	}
	return false
}

func dedupFindings(r Report) Report {
	seen := map[string]bool{}
	out := r[:0]
	for _, f := range r {
		k := f.Path + "\x00" + f.Message
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, f)
	}
	return out
}

type validator struct {
	spec *Spec
	rep  Report
	// vfIDs are the GUIDs and MACs given to VFs so far, across every
	// device of the spec, with the path of the VF entry that has each.
	vfIDs map[string]string
}

func (v *validator) add(path, format string, args ...any) {
	v.rep = append(v.rep, Finding{Path: path, Pos: v.spec.Src.Lookup(path), Message: fmt.Sprintf(format, args...)})
}

func (v *validator) check(path, msg string) {
	if msg != "" {
		v.add(path, "%s", msg)
	}
}

// Validate checks a loaded spec against every rule that does not need the
// host, and returns every finding with its position.
func Validate(spec *Spec) Report {
	v := &validator{spec: spec, vfIDs: map[string]string{}}
	v.tags(reflect.ValueOf(spec).Elem(), "$")
	v.host()
	v.devices()
	if v.spec.Rdma != nil && v.spec.Rdma.NetnsMode == "" {
		v.add("$.rdma", "give netns_mode: shared or exclusive")
	}
	v.ipoib()
	v.rxe()
	v.interfaces()
	v.modules()
	v.kernelArgs()
	v.gpu()
	v.services()
	v.hostSettings()
	v.rails()
	v.probes()
	v.subnetManager()
	v.ownership()
	return v.rep
}

// tags applies the enum/min/max struct tags; the JSON Schema is generated
// from the same tags, so the editor and rdmaform agree.
func (v *validator) tags(val reflect.Value, path string) {
	switch val.Kind() {
	case reflect.Pointer:
		if !val.IsNil() {
			v.tags(val.Elem(), path)
		}
	case reflect.Slice:
		if val.Type() == paramsType || val.Type() == dscpMapType {
			return
		}
		for i := 0; i < val.Len(); i++ {
			v.tags(val.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Struct:
		t := val.Type()
		for _, fi := range fieldsOf(t) {
			f := t.Field(fi.index)
			fv := val.Field(fi.index)
			child := path + "." + fi.key
			if enum := f.Tag.Get("enum"); enum != "" && fv.Kind() == reflect.String && fv.String() != "" {
				allowed := strings.Split(enum, ",")
				if !contains(allowed, fv.String()) {
					v.add(child, "must be %s, not %q", orList(allowed), truncate(fv.String()))
				}
			}
			if iv, ok := intOf(fv); ok || (fv.Kind() == reflect.Int && v.spec.Src.Has(child)) {
				if !ok {
					iv = int(fv.Int())
				}
				if lo, err := strconv.Atoi(f.Tag.Get("min")); err == nil && iv < lo {
					v.add(child, "%d is below the minimum %d", iv, lo)
				}
				if hi, err := strconv.Atoi(f.Tag.Get("max")); err == nil && iv > hi {
					v.add(child, "%d is above the maximum %d", iv, hi)
				}
			}
			v.tags(fv, child)
		}
	}
}

func intOf(v reflect.Value) (int, bool) {
	if v.Kind() == reflect.Pointer && !v.IsNil() && v.Elem().Kind() == reflect.Int {
		return int(v.Elem().Int()), true
	}
	return 0, false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func orList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = x
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

func (v *validator) host() {
	if v.spec.Host == nil || v.spec.Host.Hostname == "" {
		return
	}
	h := v.spec.Host.Hostname
	if len(h) > 64 || !hostnameRE.MatchString(h) {
		v.add("$.host.hostname", "%q is not a valid hostname", truncate(h))
	}
}

var hostnameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,62})?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62})?)*$`)

var paramNameRE = regexp.MustCompile(`^[A-Z][A-Z0-9_]*(\[[0-9]+(\.\.[0-9]+)?\])?$`)
var paramValueRE = regexp.MustCompile(`^[A-Za-z0-9_.()x-]+$`)

// MaxImagePath is the longest firmware image path a spec may give (the
// kernel's PATH_MAX less its NUL).
const MaxImagePath = 4095

// CheckImagePath checks a firmware image path as a spec gives it: an
// absolute, clean path (no "." or ".." parts, no doubled or trailing
// slash) of at most MaxImagePath bytes, without control characters. It
// returns why it is not, or "". Whether the file is there and a regular
// file is the plan's to check, on the host.
func CheckImagePath(s string) string {
	switch {
	case s == "":
		return "image is empty: give the firmware image file's absolute path"
	case len(s) > MaxImagePath:
		return fmt.Sprintf("image path is %d bytes long; at most %d", len(s), MaxImagePath)
	case strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return fmt.Sprintf("image path %q holds a control character", truncate(s))
	case !strings.HasPrefix(s, "/"):
		return fmt.Sprintf("image path %q is not absolute (begin it with /)", truncate(s))
	case path.Clean(s) != s || s == "/":
		return fmt.Sprintf("image path %q is not a clean path to a file (no ., .., doubled or trailing /)", truncate(s))
	}
	return ""
}

// MaxFirmwareVersionPart is the largest number of a firmware version
// component (16 bits, as the adapters' firmware version fields).
const MaxFirmwareVersionPart = 65535

// ParseFirmwareVersion reads a spec's firmware version: from lo to hi
// dot-separated decimal numbers, each 0..MaxFirmwareVersionPart.
func ParseFirmwareVersion(s string, lo, hi int) ([]int, error) {
	want := fmt.Sprintf("%d to %d", lo, hi)
	example := "28.39"
	if lo == hi {
		want = fmt.Sprintf("exactly %d", lo)
		example = "28.39.1002"
	}
	parts := strings.Split(s, ".")
	bad := func() error {
		return fmt.Errorf("%q is not a firmware version: %s dot-separated decimal numbers (e.g. %s)", truncate(s), want, example)
	}
	if len(parts) < lo || len(parts) > hi {
		return nil, bad()
	}
	out := make([]int, len(parts))
	for i, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return nil, bad()
		}
		if n, err := strconv.Atoi(p); err != nil || n > MaxFirmwareVersionPart {
			return nil, fmt.Errorf("%q is not a firmware version: %s is above %d", truncate(s), truncate(p), MaxFirmwareVersionPart)
		}
		if len(p) > 5 {
			return nil, bad() // leading zeros past five digits
		}
		out[i], _ = strconv.Atoi(p)
	}
	return out, nil
}

// The patterns of devices[].match (the JSON Schema's, from the Match
// struct tags: TestMatchPatterns).
var (
	matchPartNumberRE = regexp.MustCompile(`^[!-~]([ -~]{0,62}[!-~])?$`)
	matchPSIDRE       = regexp.MustCompile(`^[!-~]{1,16}$`)
	matchModelRE      = regexp.MustCompile(`^[!-~]{1,32}$`)
)

// match checks a devices[].match: at least one value, each in its form.
// An empty match selects every adapter: only for a device whose
// firmware has a catalog (each adapter then takes its entry).
func (v *validator) match(m *Match, catalog bool, p string) {
	if m.PartNumber == "" && m.PSID == "" && m.Model == "" && !catalog {
		v.add(p, "give part_number, psid or model (an empty match, every adapter, is for a device whose firmware has a catalog)")
	}
	for _, f := range []struct {
		key, val, what string
		re             *regexp.Regexp
	}{
		{"part_number", m.PartNumber, "a part number (1-64 printable ASCII characters, no space at either end)", matchPartNumberRE},
		{"psid", m.PSID, "a PSID (1-16 printable ASCII characters, no spaces)", matchPSIDRE},
		{"model", m.Model, "a model, the kernel's hca_type (1-32 printable ASCII characters, no spaces)", matchModelRE},
	} {
		if (f.val != "" || v.spec.Src.Has(p+"."+f.key)) && !f.re.MatchString(f.val) {
			v.add(p+"."+f.key, "%q is not %s", truncate(f.val), f.what)
		}
	}
}

func (v *validator) devices() {
	seen := map[string]string{}
	names := map[string]string{}
	for i := range v.spec.Devices {
		d := &v.spec.Devices[i]
		p := fmt.Sprintf("$.devices[%d]", i)
		n := 0
		for _, s := range []string{d.PCI, d.Name, d.NodeGUID, d.Netdev} {
			if s != "" {
				n++
			}
		}
		switch {
		case d.Match != nil:
			if n > 0 {
				v.add(p+".match", "a device with match selects every adapter that matches; it may not also name pci, name, node_guid or netdev")
			}
			v.match(d.Match, d.Firmware != nil && d.Firmware.Catalog != nil, p+".match")
		case d.Optional:
			v.add(p+".optional", "optional is for a device selected by match")
		}
		switch {
		case d.Match != nil:
		case n == 0:
			v.add(p, "select the device by exactly one of pci, name, node_guid or netdev, or by match")
		case n > 1:
			v.add(p, "select the device by exactly one of pci, name, node_guid or netdev, not %d", n)
		}
		if d.PCI != "" {
			if norm := NormalizePCI(d.PCI); norm == "" {
				v.add(p+".pci", "%q is not a PCI address (DDDD:BB:DD.F, e.g. 0000:81:00.0)%s", truncate(d.PCI), base60Hint(d.PCI))
			} else {
				d.PCI = norm
			}
		}
		if d.Name != "" {
			v.check(p+".name", CheckRDMAName(d.Name))
		}
		if d.NodeGUID != "" {
			if g := NormalizeGUID(d.NodeGUID); g == "" {
				v.add(p+".node_guid", "%q is not a node GUID (xxxx:xxxx:xxxx:xxxx)", truncate(d.NodeGUID))
			} else {
				d.NodeGUID = g
			}
		}
		if d.Netdev != "" {
			v.check(p+".netdev", CheckNetdev(d.Netdev))
		}
		if kind, val := d.Selector(); kind != "" && n == 1 {
			key := kind + "=" + val
			if prev, dup := seen[key]; dup {
				v.add(p+"."+kind, "device %s %s is already selected by %s", kind, val, prev)
			}
			seen[key] = p
		}
		if d.Names != nil {
			v.names(d, p, names)
		}
		if d.Firmware != nil {
			v.firmware(d.Firmware, p+".firmware")
		}
		if d.SRIOV != nil {
			v.sriov(d.SRIOV, p+".sriov")
		}
		if d.PCIe != nil {
			switch {
			case d.PCIe.MaxReadRequest == nil:
				v.add(p+".pcie", "give max_read_request")
			case !slices.Contains(MaxReadRequestSizes, *d.PCIe.MaxReadRequest):
				v.add(p+".pcie.max_read_request", "%d is not a Max Read Request Size: 128, 256, 512, 1024, 2048 or 4096 bytes (a power of two)", *d.PCIe.MaxReadRequest)
			}
		}
		if d.ACS != nil {
			v.acs(d.ACS, p+".acs")
		}
		if d.IRQAffinity != nil {
			v.irqAffinity(d.IRQAffinity, p+".irq_affinity")
		}
		ports := map[int]bool{}
		for j := range d.Ports {
			pt := &d.Ports[j]
			pp := fmt.Sprintf("%s.ports[%d]", p, j)
			if !v.spec.Src.Has(pp + ".port") {
				v.add(pp, "port: is required (1, 2, ...)")
			}
			if ports[pt.Port] && pt.Port != 0 {
				v.add(pp+".port", "port %d is listed twice", pt.Port)
			}
			ports[pt.Port] = true
			if pt.Roce != nil {
				if pt.Roce.Mode == "" && pt.Roce.Tos == nil && pt.Roce.DSCP == nil {
					v.add(pp+".roce", "give mode, tos or dscp")
				}
				v.roceDSCP(pt.Roce, pp+".roce")
				if pt.LinkLayer == linklayer.InfiniBand {
					v.add(pp+".roce", "RoCE settings need an Ethernet port, but link_layer is InfiniBand")
				}
			}
			if pt.QoS != nil {
				v.qos(pt.QoS, pp+".qos")
				if pt.LinkLayer == linklayer.InfiniBand {
					v.add(pp+".qos", "qos is Ethernet DCB (PFC, ETS, DSCP trust); an InfiniBand port has none (link_layer is InfiniBand)")
				}
			}
			if pt.Type != "" && pt.LinkLayer != "" && pt.Type != "auto" {
				want := linklayer.OfMlx4Type(pt.Type)
				if want != pt.LinkLayer {
					v.add(pp+".link_layer", "type %s gives link layer %s, not %s", pt.Type, want, pt.LinkLayer)
				}
			}
		}
	}
}

// names checks a device's names: valid, wanted by no other entry, and on
// a device selected by what a rename keeps (pci, node_guid, or match
// with a rail template, whose expanded names the plan checks again).
func (v *validator) names(d *Device, p string, seen map[string]string) {
	n := d.Names
	p += ".names"
	if n.RDMA == "" && n.Netdev == "" {
		v.add(p, "give rdma, netdev or both")
	}
	first := 0
	if n.FirstRail != nil {
		first = *n.FirstRail
		if d.Match == nil {
			v.add(p+".first_rail", "first_rail numbers the functions a match selects: it goes with match")
		}
	}
	if kind, _ := d.Selector(); kind == "name" || kind == "netdev" {
		v.add(p, "a device that is renamed must be selected by pci or node_guid, which a rename keeps; not by %s", kind)
	}
	for _, x := range []struct{ key, name, what string }{{"rdma", n.RDMA, "RDMA device"}, {"netdev", n.Netdev, "netdev"}} {
		if x.name == "" {
			continue
		}
		check := CheckRDMAName
		if x.key == "netdev" {
			// Written into a udev rule for the boot: safe there too.
			check = CheckNetdevName
		}
		if d.Match != nil {
			// A rail template: its names are checked again, expanded, when
			// the plan knows the functions the match selects.
			if m := CheckRailTemplate(x.name, first, check); m != "" {
				v.add(p+"."+x.key, "%s", m)
			}
			continue
		} else if strings.Contains(x.name, RailPlaceholder) {
			v.add(p+"."+x.key, "%s is for a rail template, the names of a device with match; a device selected by pci or node_guid is given its name", RailPlaceholder)
			continue
		} else if m := check(x.name); m != "" {
			v.add(p+"."+x.key, "%s", m)
			continue
		}
		k := x.key + "=" + x.name
		if prev, dup := seen[k]; dup {
			v.add(p+"."+x.key, "%s name %s is already asked for by %s", x.what, x.name, prev)
		}
		seen[k] = p + "." + x.key
	}
}

// roceDSCP turns the readable dscp/ecn form into the ToS byte rdma_cm
// takes: DSCP in the upper six bits, ECT(0) in the lowest two.
func (v *validator) roceDSCP(r *Roce, p string) {
	if r.ECN != nil && r.DSCP == nil {
		v.add(p+".ecn", "ecn goes with dscp (tos = dscp<<2 | 2); with tos, write the ECN bits into tos")
	}
	if r.DSCP == nil {
		return
	}
	if r.Tos != nil && v.spec.Src.Has(p+".tos") {
		v.add(p+".dscp", "give tos or dscp, not both (dscp %d gives tos %d)", *r.DSCP, RoceTos(*r.DSCP, r.ECN != nil && *r.ECN))
		return
	}
	if *r.DSCP < 0 || *r.DSCP > 63 {
		return // the min/max tags report it
	}
	tos := RoceTos(*r.DSCP, r.ECN != nil && *r.ECN)
	r.Tos = &tos
}

// qos checks a port's DCB settings: priorities 0-7, each once; an ETS
// table the kernel takes (eight entries each, ets bandwidths summing to
// 100, strict classes at 0); a DSCP map only with DSCP trust.
func (v *validator) qos(q *QoS, p string) {
	if q.Trust == "" && q.DSCPMap == nil && q.PFC == nil && q.CableLength == nil && q.Pause == nil && q.ETS == nil && q.ECN == nil && q.DCBX == "" && q.CNP == nil {
		v.add(p, "give at least one of trust, dscp_map, pfc, cable_length, pause, ets, ecn, cnp or dcbx")
	}
	if q.CNP != nil && q.CNP.DSCP == nil && q.CNP.Priority == nil {
		v.add(p+".cnp", "give dscp, priority or both")
	}
	if q.DSCPMap != nil && q.Trust != "dscp" {
		v.add(p+".dscp_map", "dscp_map needs trust: dscp (with pcp trust the DSCP is not looked at)")
	}
	v.prioList(q.PFC, p+".pfc")
	v.prioList(q.ECN, p+".ecn")
	if q.ETS != nil {
		v.ets(q.ETS, p+".ets")
	}
}

// prioList checks a list of priorities: 0-7, each once.
func (v *validator) prioList(l *[]int, p string) {
	if l == nil {
		return
	}
	seen := map[int]bool{}
	for i, pr := range *l {
		switch {
		case pr < 0 || pr > 7:
			v.add(fmt.Sprintf("%s[%d]", p, i), "priority %d is out of range 0-7", pr)
		case seen[pr]:
			v.add(fmt.Sprintf("%s[%d]", p, i), "priority %d is listed twice", pr)
		}
		seen[pr] = true
	}
}

// ets checks an ETS table as the kernel's DCB code and mlx5 do.
func (v *validator) ets(e *ETS, p string) {
	for _, k := range []struct {
		name string
		n    int
	}{{"prio_tc", len(e.PrioTC)}, {"tsa", len(e.TSA)}, {"bw", len(e.BW)}} {
		if !v.spec.Src.Has(p + "." + k.name) {
			v.add(p, "%s: is required (ets gives prio_tc, tsa and bw together)", k.name)
		} else if k.n != 8 {
			v.add(p+"."+k.name, "needs eight entries (one per priority or traffic class 0-7), not %d", k.n)
		}
	}
	for i, tc := range e.PrioTC {
		if tc < 0 || tc > 7 {
			v.add(fmt.Sprintf("%s.prio_tc[%d]", p, i), "traffic class %d is out of range 0-7", tc)
		}
	}
	sum, haveETS := 0, false
	for i, t := range e.TSA {
		bw := 0
		if i < len(e.BW) {
			bw = e.BW[i]
		}
		switch t {
		case "ets":
			haveETS = true
			sum += bw
		case "strict":
			if bw != 0 {
				v.add(fmt.Sprintf("%s.bw[%d]", p, i), "traffic class %d is strict, so its bandwidth is 0, not %d", i, bw)
			}
		default:
			v.add(fmt.Sprintf("%s.tsa[%d]", p, i), "must be ets or strict, not %q", truncate(t))
		}
	}
	for i, bw := range e.BW {
		if bw < 0 || bw > 100 {
			v.add(fmt.Sprintf("%s.bw[%d]", p, i), "bandwidth %d is out of range 0-100", bw)
		}
	}
	if haveETS && sum != 100 && len(e.BW) == 8 && len(e.TSA) == 8 {
		v.add(p+".bw", "the ets traffic classes' bandwidths sum to %d, not 100", sum)
	}
}

// RoceTos is the ToS byte of a DSCP and an ECN-capable flag: 26 with ECN
// is 106 (AF31 + ECT(0)), without ECN 104.
func RoceTos(dscp int, ecn bool) int {
	t := dscp << 2
	if ecn {
		t |= 2
	}
	return t
}

// sriov checks a physical function's VF settings against its own count.
func (v *validator) sriov(s *SRIOV, p string) {
	if !v.spec.Src.Has(p + ".num_vfs") {
		v.add(p, "num_vfs: is required (0 disables SR-IOV)")
	}
	seen := map[int]string{}
	for i := range s.VFs {
		vf := &s.VFs[i]
		vp := fmt.Sprintf("%s.vfs[%d]", p, i)
		if !v.spec.Src.Has(vp + ".vf") {
			v.add(vp, "vf: is required (the VF number, from 0)")
			continue
		}
		if prev, dup := seen[vf.VF]; dup {
			v.add(vp+".vf", "VF %d is already listed at %s", vf.VF, prev)
		}
		seen[vf.VF] = vp
		if s.NumVFs != nil && vf.VF >= *s.NumVFs && vf.VF >= 0 {
			v.add(vp+".vf", "VF %d does not exist with num_vfs: %d (VFs are numbered 0 to %d)", vf.VF, *s.NumVFs, *s.NumVFs-1)
		}
		if vf.NodeGUID == "" && vf.PortGUID == "" && vf.MAC == "" && vf.Trust == nil && vf.Spoofchk == nil && vf.State == "" {
			v.add(vp, "give at least one of node_guid, port_guid, mac, trust, spoofchk or state")
		}
		for _, g := range []struct{ key, val string }{{"node_guid", vf.NodeGUID}, {"port_guid", vf.PortGUID}} {
			if g.val == "" {
				continue
			}
			if n := NormalizeVFGUID(g.val); n == "" {
				v.add(vp+"."+g.key, "%q is not a GUID of 8 colon-separated hex bytes (02:00:00:00:00:00:00:01)", truncate(g.val))
			} else if n == "00:00:00:00:00:00:00:00" {
				v.add(vp+"."+g.key, "the zero GUID is what an unset VF has; give a unique one")
			} else {
				if g.key == "node_guid" {
					vf.NodeGUID = n
				} else {
					vf.PortGUID = n
				}
				v.uniqueVFID(vp, g.key, "GUID", n)
			}
		}
		if vf.MAC != "" {
			a, err := net.ParseMAC(vf.MAC)
			switch {
			case err != nil || len(a) != 6:
				v.add(vp+".mac", "%q is not a MAC address (02:00:00:00:00:01)", truncate(vf.MAC))
			case a[0]&1 == 1:
				v.add(vp+".mac", "%s is a multicast address; a VF needs a unicast MAC", vf.MAC)
			case a.String() == "00:00:00:00:00:00":
				v.add(vp+".mac", "the zero MAC is what an unset VF has; give a unique one")
			default:
				vf.MAC = a.String()
				v.uniqueVFID(vp, "mac", "MAC", vf.MAC)
			}
		}
	}
}

// uniqueVFID refuses a GUID or MAC another VF of the spec has already
// (on any device): two VFs with one address collide on the fabric or the
// switch. A VF's node and port GUID may be equal (an HCA's often are).
func (v *validator) uniqueVFID(vp, key, kind, val string) {
	id := kind + " " + val
	prev, dup := v.vfIDs[id]
	switch {
	case !dup:
		v.vfIDs[id] = vp
	case prev != vp:
		v.add(vp+"."+key, "%s %s is already given to the VF at %s; every VF needs a %s of its own", kind, val, prev, kind)
	}
}

// NormalizeVFGUID returns a VF GUID as ip link prints it (8 lower-case
// colon-separated bytes), or "" when s is not one.
func NormalizeVFGUID(s string) string {
	a, err := net.ParseMAC(s)
	if err != nil || len(a) != 8 || strings.Count(s, ":") != 7 {
		return ""
	}
	return a.String()
}

func (v *validator) firmware(fw *Firmware, p string) {
	hasExact, hasMin := v.spec.Src.Has(p+".version"), v.spec.Src.Has(p+".min_version")
	if len(fw.Params) == 0 && !v.spec.Src.Has(p+".params") && !hasExact && !hasMin && fw.Catalog == nil {
		v.add(p, "give params (e.g. LINK_TYPE_P1: ETH), version, min_version or catalog")
	}
	if fw.Catalog != nil {
		for _, k := range []string{"version", "min_version", "image"} {
			if v.spec.Src.Has(p + "." + k) {
				v.add(p+"."+k, "%s and catalog: the catalog's entry gives each adapter its version and image; give one or the other", k)
			}
		}
		v.catalog(fw.Catalog, p+".catalog")
	}
	if hasExact && hasMin {
		v.add(p+".min_version", "give version or min_version, not both")
	}
	if hasExact {
		if _, err := ParseFirmwareVersion(fw.Version, 3, 3); err != nil {
			v.add(p+".version", "%v", err)
		}
	}
	if hasMin {
		if _, err := ParseFirmwareVersion(fw.MinVersion, 1, 3); err != nil {
			v.add(p+".min_version", "%v", err)
		}
	}
	if v.spec.Src.Has(p + ".image") {
		if msg := CheckImagePath(fw.Image); msg != "" {
			v.add(p+".image", "%s", msg)
		}
		if !hasExact {
			v.add(p+".image", "an image needs version: the version it holds, which rdmaform checks before it burns")
		}
	}
	for _, prm := range fw.Params {
		pp := p + ".params." + prm.Name
		if !paramNameRE.MatchString(prm.Name) {
			v.add(pp, "%q is not an mlxconfig parameter name (upper case, e.g. LINK_TYPE_P1)", truncate(prm.Name))
		}
		if !paramValueRE.MatchString(prm.Value) || len(prm.Value) > 64 {
			v.add(pp, "%q is not a firmware parameter value (a name such as ETH or a number)", truncate(prm.Value))
		}
	}
}

// catalog checks a firmware catalog: its entries (at most
// MaxCatalogEntries, one per PSID or part number and PSID), each with a
// version, an image path or https URL, a sha256 and an activation.
func (v *validator) catalog(c *Catalog, p string) {
	if !v.spec.Src.Has(p + ".entries") {
		v.add(p, "entries: is required (one per card model: psid, version, image, sha256, activation)")
	}
	if len(c.Entries) > MaxCatalogEntries {
		v.add(p+".entries", "%d entries; at most %d", len(c.Entries), MaxCatalogEntries)
	}
	if v.spec.Src.Has(p + ".ca_file") {
		if msg := CheckImagePath(c.CAFile); msg != "" {
			v.add(p+".ca_file", "ca_file: %s", strings.Replace(msg, "image", "CA file", 1))
		}
	}
	seen := map[string]string{}
	for i, e := range c.Entries {
		ep := fmt.Sprintf("%s.entries[%d]", p, i)
		for _, k := range []struct{ key, val string }{{"psid", e.PSID}, {"version", e.Version}, {"image", e.Image}, {"sha256", e.SHA256}, {"activation", e.Activation}} {
			if !v.spec.Src.Has(ep + "." + k.key) {
				v.add(ep, "%s: is required", k.key)
			}
		}
		if e.PSID != "" && !matchPSIDRE.MatchString(e.PSID) {
			v.add(ep+".psid", "%q is not a PSID (1-16 printable ASCII characters, no spaces)", truncate(e.PSID))
		}
		if e.PartNumber != "" && !matchPartNumberRE.MatchString(e.PartNumber) {
			v.add(ep+".part_number", "%q is not a part number (1-64 printable ASCII characters, no space at either end)", truncate(e.PartNumber))
		}
		if v.spec.Src.Has(ep + ".version") {
			if _, err := ParseFirmwareVersion(e.Version, 3, 3); err != nil {
				v.add(ep+".version", "%v", err)
			}
		}
		if v.spec.Src.Has(ep+".sha256") && !sha256RE.MatchString(e.SHA256) {
			v.add(ep+".sha256", "%q is not a SHA-256 digest (64 lower-case hex digits, as sha256sum prints it)", truncate(e.SHA256))
		}
		if v.spec.Src.Has(ep + ".image") {
			if msg := CheckImageSource(e.Image); msg != "" {
				v.add(ep+".image", "%s", msg)
			}
		}
		key := e.PSID + " " + e.PartNumber
		if prev, dup := seen[key]; dup {
			what := "PSID " + e.PSID
			if e.PartNumber != "" {
				what = "part number " + e.PartNumber + " with PSID " + e.PSID
			}
			v.add(ep, "%s already has the entry %s: one entry per card model", what, prev)
		}
		seen[key] = ep
	}
}

var sha256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// CheckImageSource checks a catalog image: an absolute path
// (CheckImagePath) or an https URL of at most MaxCatalogURL bytes with a
// host, without credentials, query or fragment. It returns why it is
// not, or "".
func CheckImageSource(s string) string {
	if !strings.Contains(s, "://") {
		return CheckImagePath(s)
	}
	if len(s) > MaxCatalogURL {
		return fmt.Sprintf("image URL is %d bytes long; at most %d", len(s), MaxCatalogURL)
	}
	if strings.IndexFunc(s, func(r rune) bool { return r <= 0x20 || r == 0x7f }) >= 0 {
		return fmt.Sprintf("image URL %q holds a space or a control character", truncate(s))
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Sprintf("image URL %q: %v", truncate(s), err)
	case u.Scheme != "https":
		return fmt.Sprintf("image URL %q: the scheme is %s; rdmaform downloads images over https only (or give a path on the host)", truncate(s), u.Scheme)
	case u.Host == "" || u.Hostname() == "":
		return fmt.Sprintf("image URL %q has no host", truncate(s))
	case u.User != nil:
		return fmt.Sprintf("image URL %q holds credentials: a spec is no place for them; serve the images without, to the hosts' addresses", truncate(s))
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(s, "#"):
		return fmt.Sprintf("image URL %q has a query or a fragment: name the image file alone", truncate(s))
	case u.Path == "" || strings.HasSuffix(u.Path, "/"):
		return fmt.Sprintf("image URL %q names no file", truncate(s))
	}
	return ""
}

func (v *validator) ipoib() {
	names := map[string]string{}
	for i := range v.spec.IPoIB {
		c := &v.spec.IPoIB[i]
		p := fmt.Sprintf("$.ipoib[%d]", i)
		v.uniqueName(p, "name", c.Name, "the connection name", "connection", CheckConnName, names)
		if !v.spec.Src.Has(p + ".parent") {
			v.add(p, "parent: is required (the IPoIB netdev, e.g. ib0)")
		} else {
			v.check(p+".parent", CheckNetdev(c.Parent))
		}
		if c.PKey != nil {
			switch full := FullMember(c.PKey.Value); {
			case c.PKey.Value == 0 || c.PKey.Value == 0x8000:
				v.add(p+".pkey", "P_Key %s is invalid (0x0000 and 0x8000 are reserved)", c.PKey.Text)
			case full == 0xffff:
				v.add(p+".pkey", "P_Key %s is the default partition; leave pkey out to use %s itself", c.PKey.Text, c.Parent)
			case c.PKey.Value < 0x8000 && c.Membership == "":
				// A limited member is what the key says, but rarely what
				// was meant: the spec says so, or writes the full key.
				v.add(p+".pkey", "P_Key %s has the full-membership bit (0x8000) clear: it makes this host a limited member of partition 0x%04x, which talks only to full members. Write pkey: 0x%04x for a full member, or add membership: limited to configure a limited one",
					c.PKey.Text, full, full)
			case c.PKey.Value >= 0x8000 && c.Membership == "limited":
				v.add(p+".pkey", "membership: limited, but P_Key %s has the full-membership bit (0x8000) set: write pkey: 0x%04x for a limited member", c.PKey.Text, c.PKey.Value&^0x8000)
			case c.Parent != "" && CheckNetdev(ChildName(c.Parent, c.Key())) != "":
				v.add(p+".pkey", "the child interface name %s is longer than 15 bytes; use a shorter parent name", ChildName(c.Parent, c.Key()))
			}
		} else if c.Membership != "" {
			v.add(p+".membership", "membership applies to a P_Key child (pkey:); on %s itself the subnet manager decides it", c.Parent)
		}
		if c.MTU != nil && c.Mode != "connected" && *c.MTU > 4092 {
			v.add(p+".mtu", "datagram MTU %d is above 4092 (the 4K IB MTU - 4); use mode: connected for larger MTUs", *c.MTU)
		}
		v.ipconf(c.IPv4, p+".ipv4", 4)
		v.ipconf(c.IPv6, p+".ipv6", 6)
	}
}

func (v *validator) ipconf(ic *IPConf, p string, family int) {
	if ic == nil {
		return
	}
	seen := map[netip.Prefix]bool{}
	for j, a := range ic.Addresses {
		ap := fmt.Sprintf("%s.addresses[%d]", p, j)
		pre, err := netip.ParsePrefix(a)
		if err != nil {
			v.add(ap, "%q is not an address with prefix length (e.g. %s)", truncate(a), map[int]string{4: "192.0.2.1/24", 6: "2001:db8::1/64"}[family])
			continue
		}
		if (family == 4) != pre.Addr().Is4() {
			v.add(ap, "%s is not an IPv%d address", a, family)
		}
		if seen[pre] {
			v.add(ap, "%s is listed twice", a)
		}
		seen[pre] = true
	}
	if ic.Gateway != "" {
		if a, err := netip.ParseAddr(ic.Gateway); err != nil || (family == 4) != a.Is4() {
			v.add(p+".gateway", "%q is not an IPv%d address", truncate(ic.Gateway), family)
		} else if len(ic.Addresses) == 0 {
			v.add(p+".gateway", "a gateway needs addresses")
		}
	}
	for j, d := range ic.DNS {
		if _, err := netip.ParseAddr(d); err != nil {
			v.add(fmt.Sprintf("%s.dns[%d]", p, j), "%q is not an IP address", truncate(d))
		}
	}
}

func (v *validator) rxe() {
	names := map[string]string{}
	netdevs := map[string]string{}
	for i, r := range v.spec.Rxe {
		p := fmt.Sprintf("$.rxe[%d]", i)
		v.uniqueName(p, "name", r.Name, "e.g. rxe0", "rxe link", CheckRDMAName, names)
		if !v.spec.Src.Has(p + ".netdev") {
			// Removing a link needs only its name.
			if r.State != "absent" {
				v.add(p, "netdev: is required (the Ethernet netdev)")
			}
		} else if m := CheckNetdev(r.Netdev); m != "" {
			v.add(p+".netdev", "%s", m)
		} else if prev, dup := netdevs[r.Netdev]; dup && r.State != "absent" {
			v.add(p+".netdev", "netdev %s already carries the rxe link of %s (one rxe link per netdev)", r.Netdev, prev)
		} else if r.State != "absent" {
			netdevs[r.Netdev] = p
		}
	}
}

func (v *validator) interfaces() {
	for i := range v.spec.Interfaces {
		it := &v.spec.Interfaces[i]
		p := fmt.Sprintf("$.interfaces[%d]", i)
		if !v.spec.Src.Has(p + ".name") {
			v.add(p, "name: is required")
		} else {
			v.check(p+".name", CheckNetdev(it.Name))
		}
		seen := map[netip.Prefix]bool{}
		for j, a := range it.Addresses {
			ap := fmt.Sprintf("%s.addresses[%d]", p, j)
			pre, err := netip.ParsePrefix(a)
			if err != nil {
				v.add(ap, "%q is not an address with prefix length (e.g. 192.168.21.1/24)", truncate(a))
				continue
			}
			if pre.Addr().IsLinkLocalUnicast() {
				v.add(ap, "%s is link-local; the kernel owns link-local addresses", a)
			}
			if seen[pre] {
				v.add(ap, "%s is listed twice", a)
			}
			seen[pre] = true
		}
	}
}

func (v *validator) modules() {
	seen := map[string]bool{}
	for i, m := range v.spec.Modules {
		p := fmt.Sprintf("$.modules[%d]", i)
		if msg := CheckModuleName(m); msg != "" {
			v.add(p, "%s", msg)
			continue
		}
		norm := strings.ReplaceAll(m, "-", "_")
		if seen[norm] {
			v.add(p, "module %s is listed twice", m)
		}
		seen[norm] = true
	}
}

func (v *validator) services() {
	seen := map[string]bool{}
	for i, s := range v.spec.Services {
		p := fmt.Sprintf("$.services[%d]", i)
		if !v.spec.Src.Has(p + ".name") {
			v.add(p, "name: is required (e.g. opensm)")
			continue
		}
		if msg := CheckUnitName(s.Name); msg != "" {
			v.add(p+".name", "%s", msg)
			continue
		}
		if s.Enabled == nil && s.Active == nil && s.Limits == nil {
			v.add(p, "give at least one of enabled, active, limits")
		}
		u := UnitName(s.Name)
		if seen[u] {
			v.add(p+".name", "unit %s is listed twice", u)
		}
		seen[u] = true
	}
}

// uniqueName checks a required name of a list entry at path: present,
// valid by check, and not used by an earlier entry (seen maps names to the
// path that defined them).
func (v *validator) uniqueName(path, key, name, hint, what string, check func(string) string, seen map[string]string) {
	switch {
	case !v.spec.Src.Has(path + "." + key):
		v.add(path, "%s: is required (%s)", key, hint)
	case check(name) != "":
		v.add(path+"."+key, "%s", check(name))
	case seen[name] != "":
		v.add(path+"."+key, "%s %q is already defined at %s", what, name, seen[name])
	default:
		seen[name] = path
	}
}

// UnitName adds ".service" to a unit name without a type suffix.
func UnitName(s string) string {
	for _, suf := range []string{".service", ".socket", ".target", ".timer", ".path", ".mount"} {
		if strings.HasSuffix(s, suf) {
			return s
		}
	}
	return s + ".service"
}

// ownership enforces that one netdev is configured by one section.
func (v *validator) ownership() {
	owner := map[string]string{}
	claim := func(netdev, path, what string) {
		if netdev == "" || CheckNetdev(netdev) != "" {
			return
		}
		if prev, ok := owner[netdev]; ok {
			v.add(path, "netdev %s is already configured by %s; one netdev is owned by one section", netdev, prev)
			return
		}
		owner[netdev] = what
	}
	for i := range v.spec.IPoIB {
		c := &v.spec.IPoIB[i]
		if c.State == "absent" {
			continue
		}
		claim(c.Interface(), fmt.Sprintf("$.ipoib[%d].parent", i), fmt.Sprintf("ipoib[%d] (%s)", i, c.Name))
	}
	for i, it := range v.spec.Interfaces {
		claim(it.Name, fmt.Sprintf("$.interfaces[%d].name", i), fmt.Sprintf("interfaces[%d]", i))
	}
}

// base60RE is a number as YAML 1.1 makes of an unquoted PCI address whose
// parts are decimal digits with the last two below 60.
var base60RE = regexp.MustCompile(`^([0-9]{1,12})\.([0-7])$`)

// base60Hint names the cause of a PCI address that arrived as a number:
// YAML 1.1 (PyYAML, so Ansible's playbooks and vars) reads an unquoted
// 0000:10:00.0 as the base-60 number 0*3600 + 10*60 + 0.0 = 600.0, which
// a content: mapping then passes on. "" when s is no such number.
func base60Hint(s string) string {
	m := base60RE.FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	n, err := strconv.ParseUint(m[1], 10, 64)
	if err != nil {
		return ""
	}
	addr := fmt.Sprintf("%04d:%02d:%02d.%s", n/3600, n/60%60, n%60, m[2])
	if NormalizePCI(addr) == "" {
		return ""
	}
	return fmt.Sprintf("; YAML 1.1, which Ansible reads playbooks and variables with, makes the unquoted address %s the base-60 number %s: quote it (pci: \"%s\")", addr, s, addr)
}

// irqAffinity checks a device's irq_affinity block: local or a CPU list
// the kernel would parse, every CPU at most MaxCPU.
func (v *validator) irqAffinity(a *IRQAffinity, p string) {
	switch {
	case a.CPUs == "":
		v.add(p, "cpus: is required (local, or a CPU list such as 0-7,16-23)")
	case a.CPUs == IRQAffinityLocal:
	default:
		if _, err := ParseCPUList(a.CPUs); err != nil {
			v.add(p+".cpus", "%s (give local, or a CPU list such as 0-7,16-23)", err)
		}
	}
}

// acs checks a device's acs block: something to do, the bridges' count,
// addresses, values and duplicates.
func (v *validator) acs(a *ACS, p string) {
	if (a.PeerToPeer == nil || !*a.PeerToPeer) && len(a.Bridges) == 0 {
		v.add(p, "give peer_to_peer: true or bridges")
	}
	if len(a.Bridges) > MaxACSBridges {
		v.add(p+".bridges", "%d bridges: at most %d", len(a.Bridges), MaxACSBridges)
	}
	seen := map[string]string{}
	for i, b := range a.Bridges {
		bp := fmt.Sprintf("%s.bridges[%d]", p, i)
		pci := NormalizePCI(b.PCI)
		switch {
		case b.PCI == "":
			v.add(bp, "pci: is required (the bridge's PCI address)")
		case pci == "":
			v.add(bp+".pci", "%q is not a PCI address (0000:17:00.0)", truncate(b.PCI))
		case seen[pci] != "":
			v.add(bp+".pci", "bridge %s is already given at %s", pci, seen[pci])
		default:
			seen[pci] = bp
		}
		if b.Control == nil && !v.spec.Src.Has(bp+".control") {
			v.add(bp, "control: is required (the ACS Control value, 0 to 0xffff)")
		}
	}
}
