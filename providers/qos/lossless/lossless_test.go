package lossless

import (
	"strings"
	"testing"
)

func ip(v int) *int { return &v }

func on(ps ...int) *[8]bool {
	var b [8]bool
	for _, p := range ps {
		b[p] = true
	}
	return &b
}

// defaultMap is mlx5's DSCP map (dscp >> 3) with overrides.
func defaultMap(over map[int]int) *[64]int {
	var m [64]int
	for d := range m {
		m[d] = d >> 3
	}
	for d, p := range over {
		m[d] = p
	}
	return &m
}

// vendorETS is mlx5e_ets_init's table: vendor (strict) classes,
// priority 0 on class 1 and 1 on 0.
func vendorETS() *ETS {
	e := &ETS{PrioTC: [8]int{1, 0, 2, 3, 4, 5, 6, 7}}
	for i := range e.TSA {
		e.TSA[i], e.BW[i] = "vendor", 100
	}
	return e
}

// good is examples/lossless-roce.yaml on the cx6dx-ofed host: ToS 106,
// trust dscp, {26: 3, 48: 6}, PFC and ECN on 3, mlx5's default ETS, the
// factory CNPs 48/6.
func good() Facts {
	return Facts{ToS: ip(106), ToSFrom: "the spec", Trust: "dscp", Map: defaultMap(map[int]int{26: 3, 48: 6}), Named: []int{26, 48},
		PFC: on(3), ECN: on(3), ETS: vendorETS(), CNPDSCP: ip(48), CNPPrio: ip(6)}
}

// TestChainHolds: the lossless example's chain holds, every link known
// and OK, and the summary words the whole path.
func TestChainHolds(t *testing.T) {
	r := Check(good())
	if l, ok := r.First(); ok {
		t.Fatalf("broken at %s: %s", l.Name, l.Text)
	}
	want := []string{LinkToS, LinkPFC, LinkECN, LinkETS, LinkCNP, LinkCNPDSCP}
	var got []string
	for _, l := range r.Links {
		if l.Severity != OK {
			t.Errorf("%s is %s: %s", l.Name, l.Severity, l.Text)
		}
		got = append(got, l.Name)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("links %v, want %v", got, want)
	}
	const s = "rdma_cm ToS 106 (the spec) → DSCP 26 → priority 3 (dscp map) → PFC on → ECN on → traffic class 3 (vendor); CNPs carry DSCP 48 → priority 6"
	if r.Summary() != s {
		t.Errorf("summary\n%s\nwant\n%s", r.Summary(), s)
	}
}

// TestChainFirstBreak: one case per link; each names that link first,
// as an error, in words that follow the chain up to it.
func TestChainFirstBreak(t *testing.T) {
	for _, c := range []struct {
		name   string
		mod    func(f *Facts)
		link   string
		sev    Severity
		phrase string
	}{
		{"ToS carries DSCP 6, not the mapped 26", func(f *Facts) { f.ToS = ip(26) }, LinkToS, Error,
			"rdma_cm ToS 26 (the spec) → DSCP 6 → priority 0, but the dscp_map puts DSCP 26 on lossless priority 3: the ToS is DSCP << 2 (| 2 for ECN), so DSCP 26 is ToS 104 (106 with ECN)"},
		{"ToS with the CE codepoint", func(f *Facts) { f.ToS = ip(107) }, LinkToS, Error, "ECN field 3 (CE"},
		{"DSCP mapped off the PFC priority", func(f *Facts) { f.Map = defaultMap(map[int]int{26: 2, 48: 6}) }, LinkDSCPMap, Error,
			"rdma_cm ToS 106 (the spec) → DSCP 26 → priority 2 (dscp map), but PFC is on priority 3"},
		{"PFC off", func(f *Facts) { f.PFC = on() }, LinkPFC, Error,
			"rdma_cm ToS 106 (the spec) → DSCP 26 → priority 3 (dscp map) → PFC is off on priority 3"},
		{"ECN off", func(f *Facts) { f.ECN = on(4) }, LinkECN, Error,
			"→ priority 3 (dscp map) → PFC on, but ECN (DCQCN) is off on priority 3"},
		{"no ETS share", func(f *Facts) {
			f.ETS = &ETS{PrioTC: [8]int{0, 0, 0, 1, 0, 0, 2, 0}, TSA: [8]string{"ets", "ets", "strict", "ets", "ets", "ets", "ets", "ets"}, BW: [8]int{100}}
		}, LinkETS, Error, "→ PFC on → ECN on → traffic class 1 has no ETS share (tsa ets, 0% bandwidth)"},
		{"CNP on a lossy priority", func(f *Facts) {
			f.ETS = &ETS{PrioTC: [8]int{0, 0, 0, 1, 0, 0, 0, 0}, TSA: [8]string{"ets", "ets", "ets", "ets", "ets", "ets", "ets", "ets"}, BW: [8]int{50, 50}}
		}, LinkCNP, Error, "CNPs go out on priority 6, which is neither in pfc (3) nor on a strict ETS class"},
		{"CNP DSCP on a lossy priority", func(f *Facts) { f.CNPDSCP = ip(8) }, LinkCNPDSCP, Warning,
			"CNPs carry DSCP 8 → priority 1 (this port's dscp map), which is neither in pfc (3) nor on a strict class"},
		{"trust pcp", func(f *Facts) { f.Trust = "pcp" }, LinkDSCPMap, Warning, "but the port trusts pcp: RoCE's priority is then its VLAN PCP"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := good()
			c.mod(&f)
			if c.name == "CNP DSCP on a lossy priority" {
				f.ETS = &ETS{PrioTC: [8]int{0, 0, 0, 1, 0, 0, 2, 0}, TSA: [8]string{"ets", "ets", "strict", "ets", "ets", "ets", "ets", "ets"}, BW: [8]int{50, 50}}
			}
			r := Check(f)
			l, ok := r.First()
			if !ok {
				t.Fatalf("no break; links %+v", r.Links)
			}
			if l.Name != c.link || l.Severity != c.sev {
				t.Errorf("first break %s (%s), want %s (%s): %s", l.Name, l.Severity, c.link, c.sev, l.Text)
			}
			if !strings.Contains(l.Text, c.phrase) {
				t.Errorf("text %q\nlacks %q", l.Text, c.phrase)
			}
			if _, err := r.FirstError(); err != (c.sev == Error) {
				t.Errorf("FirstError found=%v for a %s", err, c.sev)
			}
		})
	}
}

// TestChainUnknown: what is not known is never a break.
func TestChainUnknown(t *testing.T) {
	for name, mod := range map[string]func(f *Facts){
		"no ToS":     func(f *Facts) { f.ToS = nil; f.CNPPrio = nil },
		"no trust":   func(f *Facts) { f.Trust = ""; f.CNPPrio = nil },
		"no PFC":     func(f *Facts) { f.PFC = nil; f.CNPPrio = nil },
		"no ECN":     func(f *Facts) { f.ECN = nil },
		"no ETS":     func(f *Facts) { f.ETS = nil },
		"no map":     func(f *Facts) { f.Map = nil },
		"no CNP":     func(f *Facts) { f.CNPPrio, f.CNPDSCP = nil, nil },
		"no PFC ETS": func(f *Facts) { f.PFC, f.ETS = nil, nil },
	} {
		if l, ok := Check(func() Facts { f := good(); mod(&f); return f }()).First(); ok {
			t.Errorf("%s: broken at %s: %s", name, l.Name, l.Text)
		}
	}
}

// TestStrictBoundary: class numbers at the limit (7) and one past it (8,
// a corrupt table) — 7 strict holds, 8 is no class and breaks.
func TestStrictBoundary(t *testing.T) {
	f := good()
	f.ETS = vendorETS()
	f.ETS.PrioTC[3] = 7
	if l, ok := Check(f).First(); ok {
		t.Errorf("class 7: broken at %s: %s", l.Name, l.Text)
	}
	f.ETS.PrioTC[3] = 8
	if l, ok := Check(f).First(); !ok || l.Name != LinkETS {
		t.Errorf("class 8: %+v %v", l, ok)
	}
}

// TestToSLimits: the ToS at its limit, 255, is DSCP 63 with the CE
// codepoint (a break); 254 is DSCP 63 with ECT(0) and holds on a port
// whose DSCP 63 goes to a PFC priority; ToS 0 is DSCP 0 (priority 0).
func TestToSLimits(t *testing.T) {
	f := good()
	f.Map, f.Named, f.PFC, f.ECN = defaultMap(nil), nil, on(7), on(7)
	for _, c := range []struct {
		tos  int
		link string // "" holds
	}{{254, ""}, {252, ""}, {255, LinkToS}, {0, LinkDSCPMap}} {
		f.ToS = ip(c.tos)
		l, ok := Check(f).First()
		if (c.link == "") == ok || (ok && l.Name != c.link) {
			t.Errorf("ToS %d: broken %v at %s (%s), want %q", c.tos, ok, l.Name, l.Text, c.link)
		}
	}
}

// TestAsks: trust dscp or PFC on one priority asks for a lossless class;
// trust pcp with PFC off (or unset) does not.
func TestAsks(t *testing.T) {
	none, three := []int{}, []int{3}
	for _, c := range []struct {
		trust string
		pfc   *[]int
		want  bool
	}{{"dscp", nil, true}, {"dscp", &none, true}, {"pcp", &three, true}, {"", &three, true}, {"pcp", &none, false}, {"pcp", nil, false}, {"", nil, false}} {
		if got := Asks(c.trust, c.pfc); got != c.want {
			t.Errorf("Asks(%q, %v) = %v", c.trust, c.pfc, got)
		}
	}
}
