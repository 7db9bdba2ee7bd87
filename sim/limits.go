package sim

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/coreos/go-systemd/v22/unit"

	"github.com/rdmaform/rdmaform/host"
)

// The simulated manager's resource limits of units: what LimitMEMLOCK=
// says in a unit's drop-ins under /etc/systemd/system/UNIT.d/*.conf, as
// loaded at the last daemon-reload or boot (a drop-in written since is
// not seen until then, as on a real manager).

// DefaultMemlock is a unit's locked-memory limit when nothing sets it:
// systemd's DefaultLimitMEMLOCK, 8 MiB since v253 (and the kernel's
// default since Linux 5.16).
const DefaultMemlock = 8 << 20

var _ host.UnitLimiter = (*simSystemd)(nil)

// Memlock implements host.UnitLimiter: the limits the manager loaded.
func (m *simSystemd) Memlock(ctx context.Context, name string) (soft, hard uint64, err error) {
	if err := m.sim.inject(faultSystemd, "Memlock", name); err != nil {
		return 0, 0, unlessDropped(err)
	}
	if err := checkUnitName(name); err != nil {
		return 0, 0, err
	}
	v := ""
	m.sim.view(func(s *State) {
		if s.Systemd != nil {
			if u := s.Systemd.unit(name); u != nil {
				v = u.Memlock
			}
		}
	})
	if v == "" {
		return DefaultMemlock, DefaultMemlock, nil
	}
	return parseLimitValue(v)
}

// loadLimits is daemon-reload's part for limits: every unit's
// LimitMEMLOCK= from its drop-ins, read again. Callers hold the lock.
func (s *Sim) loadLimits(st *State) error {
	sd := st.units()
	for _, u := range sd.Units {
		u.Memlock = ""
	}
	dirs, err := filepath.Glob(filepath.Join(s.Dir, UnitDir, "*.d"))
	if err != nil {
		return err
	}
	for _, d := range dirs {
		name := strings.TrimSuffix(filepath.Base(d), ".d")
		files, _ := filepath.Glob(filepath.Join(d, "*.conf"))
		sort.Strings(files) // drop-ins apply in name order, a later one winning
		val := ""
		for _, f := range files {
			v, err := limitIn(f)
			if err != nil {
				return err
			}
			if v != "" {
				val = v
			}
		}
		if val == "" {
			continue
		}
		if _, _, err := parseLimitValue(val); err != nil {
			// systemd logs the bad setting and ignores it.
			continue
		}
		sd.ensure(name).Memlock = val
	}
	return nil
}

// limitIn is the last LimitMEMLOCK= of a drop-in's [Service] section.
func limitIn(file string) (string, error) {
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	opts, err := unit.Deserialize(f)
	if err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	v := ""
	for _, o := range opts {
		if o.Section == "Service" && o.Name == "LimitMEMLOCK" {
			v = strings.TrimSpace(o.Value)
		}
	}
	return v, nil
}

// parseLimitValue reads a LimitMEMLOCK= value as systemd.exec(5) gives
// it: "infinity", or bytes with an optional K, M, G, T, P or E suffix
// (base 1024); "soft:hard" sets them apart, one value sets both.
func parseLimitValue(v string) (soft, hard uint64, err error) {
	one := func(s string) (uint64, error) {
		if s == "infinity" {
			return math.MaxUint64, nil
		}
		shift := uint(0)
		if i := strings.IndexAny(s, "KMGTPE"); i >= 0 && i == len(s)-1 {
			shift = 10 * uint(strings.IndexByte("KMGTPE", s[i])+1)
			s = s[:i]
		}
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil || (shift > 0 && n > math.MaxUint64>>shift) {
			return 0, fmt.Errorf("invalid LimitMEMLOCK value %q", v)
		}
		return n << shift, nil
	}
	a, b, pair := strings.Cut(v, ":")
	if soft, err = one(a); err != nil {
		return 0, 0, err
	}
	if !pair {
		return soft, soft, nil
	}
	if hard, err = one(b); err != nil {
		return 0, 0, err
	}
	if soft > hard {
		return 0, 0, fmt.Errorf("LimitMEMLOCK %q: soft above hard", v)
	}
	return soft, hard, nil
}
