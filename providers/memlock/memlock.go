// Package memlock manages the locked-memory limit RDMA needs: memory
// registration (ibv_reg_mr) pins pages and fails under a small
// RLIMIT_MEMLOCK. Two places give processes their limit:
//
//   - logins, through pam_limits: spec limits.memlock, in
//     /etc/security/limits.d/90-rdmaform.conf, a file of rdmaform's own
//     (limits.conf(5): soft and hard, for the * domain and for root, which
//   - does not cover); it applies to sessions opened after it;
//   - systemd units, whose processes inherit the unit's LimitMEMLOCK
//     (slurmd, and through it every job step): spec
//     services[].limits.memlock, in the drop-in
//     /etc/systemd/system/UNIT.d/rdmaform.conf. Apply reloads the manager,
//     reads the unit's LimitMEMLOCK and LimitMEMLOCKSoft back over D-Bus,
//     and restarts the unit when it runs, so that its processes have the
//     limit.
//
// On an offline tree (--root, no service manager) the files are compared
// and written, and nothing is loaded or restarted.
package memlock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// Files rdmaform owns.
const (
	// LimitsFile is the pam_limits file of logins.
	LimitsFile = "/etc/security/limits.d/90-rdmaform.conf"
	// UnitDir holds the units' drop-in directories.
	UnitDir = "/etc/systemd/system"
	// DropIn is the name of rdmaform's drop-in in a unit's UNIT.d.
	DropIn = "rdmaform.conf"
)

// DropInPath is rdmaform's drop-in of a unit (with its suffix).
func DropInPath(unit string) string { return path.Join(UnitDir, unit+".d", DropIn) }

// Provider is the locked-memory provider.
type Provider struct{}

var _ plan.TypedProvider[*Observed, *payload] = (*Provider)(nil)

// New is the provider as plan.Build and apply take it.
func New() plan.Provider { return plan.Adapt[*Observed, *payload](&Provider{}) }

// Name implements plan.Provider.
func (*Provider) Name() string { return "memlock" }

// Kind is the kind of this provider's addresses.
const Kind = "memlock"

// Logins is the address of the logins' limit: memlock[logins].
var Logins = plan.Addr(Kind, "logins")

// Address is the plan address of a unit's limit: memlock[slurmd.service].
func Address(unit string) plan.Address { return plan.Addr(Kind, unit) }

// Observed is what the host has.
type Observed struct {
	// Limits is LimitsFile's content; nil when it does not exist.
	Limits []byte
	// NoSystemd: the host has no service manager.
	NoSystemd bool
	// Offline: an offline tree (--root) with no service manager: the
	// drop-ins are compared and written, nothing is loaded or restarted
	// (an image a later boot loads them from).
	Offline bool `json:",omitempty"`
	// Units are the units of the spec (for show, those with rdmaform's
	// drop-in), by name with suffix.
	Units map[string]*Unit
}

// Unit is one unit's drop-in and what the manager loaded.
type Unit struct {
	State host.UnitState
	// DropIn is rdmaform's drop-in's content; nil when absent.
	DropIn []byte
	// Soft and Hard are LimitMEMLOCKSoft and LimitMEMLOCK (bytes,
	// math.MaxUint64 for infinity).
	Soft, Hard uint64
	// Process is the limits the unit's main process runs with (soft and
	// hard, from /proc/PID/limits); nil when it runs none or the host's
	// files show no /proc.
	Process *[2]uint64 `json:",omitempty"`
}

// Observe implements plan.TypedProvider: LimitsFile, and for each unit the
// spec gives a limit, its drop-in, its state and its limits over D-Bus.
// Nothing is written.
//
// Equivalent to: cat /etc/security/limits.d/90-rdmaform.conf;
// systemctl show -p LoadState,ActiveState,LimitMEMLOCKSoft,LimitMEMLOCK UNIT
func (p *Provider) Observe(ctx context.Context, h *host.Host, req *plan.Request) (*Observed, error) {
	units := unitsOf(req.Spec)
	if req.Spec.Limits == nil && len(units) == 0 && !req.Full {
		return nil, nil
	}
	obs := &Observed{Units: map[string]*Unit{}}
	var err error
	if obs.Limits, err = readOptional(h, LimitsFile); err != nil {
		return nil, err
	}
	if req.Full {
		entries, err := h.FS.ReadDir(UnitDir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("reading %s: %w", UnitDir, err)
		}
		for _, e := range entries {
			u := strings.TrimSuffix(e.Name(), ".d")
			if e.IsDir() && u != e.Name() && schema.CheckUnitName(u) == "" && host.Exists(h.FS, DropInPath(u)) {
				units = append(units, u)
			}
		}
	}
	if len(units) == 0 {
		return obs, nil
	}
	if h.Systemd == nil && h.Offline() {
		obs.Offline = true
		for _, u := range units {
			o := &Unit{}
			if o.DropIn, err = readOptional(h, DropInPath(u)); err != nil {
				return nil, err
			}
			obs.Units[u] = o
		}
		return obs, nil
	}
	if h.Systemd == nil {
		obs.NoSystemd = true
		return obs, nil
	}
	lim, ok := h.Systemd.(host.UnitLimiter)
	if !ok {
		return nil, errors.New("this service manager cannot report units' limits")
	}
	for _, u := range units {
		if obs.Units[u] != nil {
			continue
		}
		o := &Unit{}
		if o.DropIn, err = readOptional(h, DropInPath(u)); err != nil {
			return nil, err
		}
		if o.State, err = h.Systemd.Unit(ctx, u); err != nil {
			return nil, fmt.Errorf("unit %s: %w", u, err)
		}
		if o.State.LoadState == "loaded" {
			if o.Soft, o.Hard, err = lim.Memlock(ctx, u); err != nil {
				return nil, err
			}
		}
		if r, ok := h.Systemd.(host.UnitSignaller); ok && o.State.Active() {
			if o.Process, err = mainProcess(ctx, h, r, u); err != nil {
				return nil, err
			}
		}
		obs.Units[u] = o
	}
	return obs, nil
}

// unitsOf lists the units the spec gives a limit, valid names only.
func unitsOf(spec *schema.Spec) []string {
	var out []string
	for _, s := range spec.Services {
		if s.Limits != nil && schema.CheckUnitName(s.Name) == "" {
			out = append(out, schema.UnitName(s.Name))
		}
	}
	return out
}

func readOptional(h *host.Host, name string) ([]byte, error) {
	b, err := h.FS.ReadFile(name)
	switch {
	case err == nil:
		return b, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	}
	return nil, fmt.Errorf("reading %s: %w", name, err)
}

// renderLimits is LimitsFile for a limit in bytes.
func renderLimits(bytes uint64) []byte {
	v := "unlimited"
	if bytes != math.MaxUint64 {
		v = strconv.FormatUint(bytes>>10, 10) // limits.conf(5): memlock in KiB
	}
	var b strings.Builder
	b.WriteString("# Managed by rdmaform: the locked-memory limit of logins (pam_limits), for RDMA memory registration.\n")
	b.WriteString("# The spec's limits: section is the source; edits here are overwritten.\n")
	b.WriteString("# The * domain does not cover root (limits.conf(5)), hence root's own lines.\n")
	for _, d := range []string{"*", "root"} {
		for _, t := range []string{"soft", "hard"} {
			fmt.Fprintf(&b, "%s\t%s\tmemlock\t%s\n", d, t, v)
		}
	}
	return []byte(b.String())
}

// renderDropIn is a unit's drop-in for a limit in bytes (systemd.exec(5):
// LimitMEMLOCK= sets soft and hard, in bytes or infinity).
func renderDropIn(bytes uint64) []byte {
	v := "infinity"
	if bytes != math.MaxUint64 {
		v = strconv.FormatUint(bytes, 10)
	}
	return []byte("# Managed by rdmaform: the spec's services[].limits; edits here are overwritten.\n[Service]\nLimitMEMLOCK=" + v + "\n")
}

// Human is a limit as the spec writes it: unlimited, or the largest of
// T, G, M, K that divides it, or bytes.
func Human(bytes uint64) string {
	if bytes == math.MaxUint64 {
		return schema.Unlimited
	}
	for _, u := range []struct {
		s     string
		shift uint
	}{{"T", 40}, {"G", 30}, {"M", 20}, {"K", 10}} {
		if bytes != 0 && bytes%(1<<u.shift) == 0 {
			return strconv.FormatUint(bytes>>u.shift, 10) + u.s
		}
	}
	return strconv.FormatUint(bytes, 10)
}

// payload is what Make does: write (or remove, content nil) a file, and
// for a unit reload, check the limit and restart.
type payload struct {
	file    string
	content []byte
	// before is the file's content before; nil when it did not exist.
	before []byte
	// unit is "" for the logins' file.
	unit string
	// want is the limit the unit must report after the reload; 0 skips
	// the check (a revert).
	want    uint64
	restart bool
	// offline: the file only (an offline tree).
	offline bool
}
