package memlock

import (
	"math"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.TypedCapturer[*Observed] = (*Provider)(nil)

// CaptureFrom implements plan.TypedCapturer: the logins' limit from
// rdmaform's limits.d file, and each unit's from rdmaform's drop-in,
// when they hold one limit the spec can say.
//
// Equivalent to: cat /etc/security/limits.d/90-rdmaform.conf /etc/systemd/system/*.d/rdmaform.conf
func (p *Provider) CaptureFrom(obs *Observed, _ *plan.Request, spec *schema.Spec, _ plan.CaptureOptions) error {
	if obs == nil {
		return nil
	}
	if v, ok := loginsLimit(obs.Limits); ok && spec.Limits == nil {
		if s, ok := specValue(v); ok {
			spec.Limits = &schema.Limits{Memlock: s}
		}
	}
	for _, u := range sortedUnits(obs.Units) {
		v, ok := dropInLimit(obs.Units[u].DropIn)
		if !ok {
			continue
		}
		s, ok := specValue(v)
		if !ok {
			continue
		}
		name := strings.TrimSuffix(u, ".service")
		found := false
		for i := range spec.Services {
			if schema.UnitName(spec.Services[i].Name) == u {
				spec.Services[i].Limits = &schema.ServiceLimits{Memlock: s}
				found = true
			}
		}
		if !found {
			spec.Services = append(spec.Services, schema.Service{Name: name, Limits: &schema.ServiceLimits{Memlock: s}})
		}
	}
	return nil
}

// specValue is a limit as the spec writes it, when it can.
func specValue(v uint64) (string, bool) {
	s := Human(v)
	if _, err := schema.ParseMemlock(s); err != nil {
		return "", false
	}
	return s, true
}

// loginsLimit reads the limit of rdmaform's limits.d file: the value of
// its lines (limits.conf(5): domain type item value), when every memlock
// line has the same one.
func loginsLimit(b []byte) (uint64, bool) {
	var val string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) != 4 || strings.HasPrefix(f[0], "#") || f[2] != "memlock" {
			continue
		}
		if val != "" && f[3] != val {
			return 0, false
		}
		val = f[3]
	}
	switch val {
	case "":
		return 0, false
	case "unlimited", "infinity", "-1":
		return math.MaxUint64, true
	}
	kib, err := strconv.ParseUint(val, 10, 64)
	if err != nil || kib > math.MaxUint64>>10 {
		return 0, false
	}
	return kib << 10, true
}

// dropInLimit reads LimitMEMLOCK= of rdmaform's drop-in, as written
// (bytes or infinity).
func dropInLimit(b []byte) (uint64, bool) {
	for _, l := range strings.Split(string(b), "\n") {
		v, ok := strings.CutPrefix(strings.TrimSpace(l), "LimitMEMLOCK=")
		if !ok {
			continue
		}
		if v == "infinity" {
			return math.MaxUint64, true
		}
		n, err := strconv.ParseUint(v, 10, 64)
		return n, err == nil
	}
	return 0, false
}

func sortedUnits(m map[string]*Unit) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
