// Package bootunit makes runtime settings survive a reboot. Much of what
// rdmaform sets lives only in the running kernel (rdma_cm defaults in
// configfs, Soft-RoCE links, mlx4 port types, link MTUs and addresses);
// with `persistence: boot-unit` it installs a systemd unit that runs
// `rdmaform apply --yes --only runtime` at every boot against a copy of
// the spec, so the machine comes back as it was left.
//
// What it writes (all under --root when given):
//
//	/etc/systemd/system/rdmaform.service                        the unit
//	/etc/systemd/system/multi-user.target.wants/rdmaform.service  enablement symlink
//	/etc/rdmaform/boot.yaml                                     copy of the spec
//
// The spec is copied, not referenced, so a later edit of the original
// never changes boot behaviour silently: the copy is refreshed by the next
// apply, and the plan shows it as a change when its bytes differ.
//
// `persistence: none` removes rdmaform's own unit, its enablement and the
// copy (a unit file that rdmaform did not write is left alone, with a
// finding); no persistence key leaves whatever is installed untouched.
package bootunit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/coreos/go-systemd/v22/unit"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// Paths and names of what the provider installs.
const (
	UnitName = "rdmaform.service"
	UnitPath = "/etc/systemd/system/" + UnitName
	// WantsPath is the symlink `systemctl enable` makes for
	// WantedBy=multi-user.target.
	WantsPath = "/etc/systemd/system/multi-user.target.wants/" + UnitName
	SpecPath  = "/etc/rdmaform/boot.yaml"
)

// DefaultBinary is where the unit expects rdmaform: where it is installed.
// A fixed path, not the running executable, so the unit stays byte-stable
// across upgrades, test binaries and --root/--sim runs. The build sets it
// (-ldflags -X): `make install` to $(PREFIX)/sbin/rdmaform, the .deb and
// .rpm to /usr/sbin/rdmaform.
var DefaultBinary = "/usr/local/sbin/rdmaform"

// Marker is the first line of every unit rdmaform writes; only a file
// starting with it is removed by `persistence: none`.
const Marker = "# Written by rdmaform (persistence: boot-unit). rdmaform apply rewrites this file."

// Address is the plan address of the boot unit.
var Address = "boot_unit[" + UnitName + "]"

// Provider is the boot unit provider.
type Provider struct {
	// Binary is the absolute path of rdmaform the unit runs; "" is
	// DefaultBinary.
	Binary string
}

var _ plan.Provider = (*Provider)(nil)

// Name implements plan.Provider.
func (*Provider) Name() string { return "boot_unit" }

func (p *Provider) binary() string {
	if p.Binary != "" {
		return p.Binary
	}
	return DefaultBinary
}

// UnitFile renders the boot unit for a binary path. The same binary gives
// the same bytes.
//
// Ordering: it runs once NetworkManager answers (the plan it makes reads
// NetworkManager's profiles through nmcli) and the RDMA modules and
// hardware are up (systemd-modules-load, rdma-hw.target), and before
// network.target, so what is ordered after the network (remote
// filesystems over RDMA, MPI jobs) and the subnet manager (opensm, whose
// units order themselves before network.target) start on a configured
// fabric. Exit status 3 ("nothing to do now, a reboot is pending") is
// success: staged firmware is not a boot failure.
func UnitFile(binary string) []byte {
	opts := []*unit.UnitOption{
		unit.NewUnitOption("Unit", "Description", "Re-apply runtime RDMA settings (rdmaform)"),
		unit.NewUnitOption("Unit", "Documentation", "https://github.com/rdmaform/rdmaform"),
		unit.NewUnitOption("Unit", "After", "systemd-modules-load.service rdma-hw.target NetworkManager.service"),
		unit.NewUnitOption("Unit", "Before", "network.target remote-fs-pre.target opensm.service"),
		unit.NewUnitOption("Service", "Type", "oneshot"),
		unit.NewUnitOption("Service", "RemainAfterExit", "yes"),
		// First, an apply --confirm-timeout that nobody confirmed before
		// a reboot is rolled back (its journal's copy outlives /run). A
		// failed rollback is in the unit's log, and the runtime settings
		// are still applied ("-": the fabric comes up either way).
		unit.NewUnitOption("Service", "ExecStartPre", "-"+binary+" rollback --after-boot"),
		unit.NewUnitOption("Service", "ExecStart", binary+" apply --yes --only runtime -f "+SpecPath),
		// 3: a firmware value waits for a reboot; 2: changes outside
		// --only runtime are left (a persistent setting drifted: plan
		// and audit report it). Neither fails the boot.
		unit.NewUnitOption("Service", "SuccessExitStatus", "2 3"),
		unit.NewUnitOption("Service", "TimeoutStartSec", "5min"),
		unit.NewUnitOption("Install", "WantedBy", "multi-user.target"),
	}
	b, _ := io.ReadAll(unit.Serialize(opts)) // a bytes.Buffer reader never fails
	return append([]byte(Marker+"\n"), b...)
}

// Observed is what is installed now.
type Observed struct {
	// Unit and Spec are the files' bytes; nil when absent.
	Unit []byte
	Spec []byte
	// Enabled: the multi-user.target.wants symlink points at the unit.
	Enabled bool
	// Link is the symlink's target when it exists ("" otherwise).
	Link string
	// Binary: the program the unit runs is there (a regular file).
	Binary bool
}

// Discover implements plan.Provider: it reads the unit file, the spec copy
// and the enablement symlink. Nothing is read without a persistence key.
//
// Equivalent to: cat /etc/systemd/system/rdmaform.service /etc/rdmaform/boot.yaml;
// readlink /etc/systemd/system/multi-user.target.wants/rdmaform.service
func (p *Provider) Discover(_ context.Context, h *host.Host, req *plan.Request) (any, error) {
	if req.Spec.Persistence == "" {
		return nil, nil
	}
	obs := &Observed{}
	if fi, err := h.FS.Stat(p.binary()); err == nil && fi.Mode().IsRegular() {
		obs.Binary = true
	}
	var err error
	if obs.Unit, err = readOptional(h, UnitPath); err != nil {
		return nil, err
	}
	if obs.Spec, err = readOptional(h, SpecPath); err != nil {
		return nil, err
	}
	link, err := h.FS.Readlink(WantsPath)
	switch {
	case err == nil:
		obs.Link = link
		obs.Enabled = link == UnitPath
	case errors.Is(err, fs.ErrNotExist):
	default:
		return nil, fmt.Errorf("readlink %s: %w", WantsPath, err)
	}
	return obs, nil
}

func readOptional(h *host.Host, name string) ([]byte, error) {
	b, err := h.FS.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return b, nil
}

// payload is what Apply writes or removes.
type payload struct {
	remove bool
	unit   []byte
	spec   []byte
	// link: the wants symlink exists now with another target and must be
	// replaced.
	relink bool
	// before is what was installed when the plan was made, for Revert;
	// restore (a revert) puts exactly that back.
	before, restore *Observed
}

// Diff implements plan.Provider.
func (p *Provider) Diff(req *plan.Request, observed any, _ *plan.Facts) plan.Proposal {
	obs, _ := observed.(*Observed)
	prop := diff(req, obs, p.binary())
	if req.Spec.Persistence != "" {
		prop.Managed = []plan.Managed{{Address: Address, Path: "$.persistence"}}
	}
	return prop
}

// digest names file contents in the plan: short enough to read, long
// enough that two versions never look alike.
func digest(b []byte) string {
	if b == nil {
		return ""
	}
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:6])
}

func diff(req *plan.Request, obs *Observed, binary string) plan.Proposal {
	var prop plan.Proposal
	if obs == nil {
		return prop
	}
	src := req.Pos("$.persistence")
	switch req.Spec.Persistence {
	case "boot-unit":
		if !obs.Binary {
			prop.Errors = append(prop.Errors, req.Finding("$.persistence", "the boot unit would run %s, which does not exist on this host: install rdmaform there (the package or make install) or set persistence: none", binary))
			return prop
		}
		want := UnitFile(binary)
		spec := req.Spec.Src.Data
		if spec == nil {
			prop.Errors = append(prop.Errors, req.Finding("$.persistence", "the spec's bytes are not known, so there is nothing to copy to %s", SpecPath))
			return prop
		}
		var attrs []plan.Attr
		if !bytes.Equal(obs.Unit, want) {
			attrs = append(attrs, plan.Attr{Name: "unit_file", Before: digest(obs.Unit), After: digest(want)})
		}
		if !bytes.Equal(obs.Spec, spec) {
			attrs = append(attrs, plan.Attr{Name: "boot_spec", Before: digest(obs.Spec), After: digest(spec)})
		}
		if !obs.Enabled {
			attrs = append(attrs, plan.Attr{Name: "enabled", Before: "false", After: "true"})
		}
		if len(attrs) == 0 {
			return prop
		}
		action := plan.Update
		if obs.Unit == nil {
			action = plan.Create
		}
		prop.Changes = append(prop.Changes, &plan.Change{Address: Address, Action: action, Activation: plan.Now,
			Source: src, Attributes: attrs,
			Payload: &payload{unit: want, spec: spec, relink: obs.Link != "" && !obs.Enabled, before: obs}})
	case "none":
		if obs.Unit != nil && !bytes.HasPrefix(obs.Unit, []byte(Marker+"\n")) {
			prop.Errors = append(prop.Errors, req.Finding("$.persistence", "%s was not written by rdmaform (no %q first line); persistence: none leaves it alone: remove it by hand if it is rdmaform's", UnitPath, "# Written by rdmaform"))
			return prop
		}
		var attrs []plan.Attr
		if obs.Unit != nil {
			attrs = append(attrs, plan.Attr{Name: "unit_file", Before: digest(obs.Unit)})
		}
		if obs.Spec != nil {
			attrs = append(attrs, plan.Attr{Name: "boot_spec", Before: digest(obs.Spec)})
		}
		if obs.Link != "" {
			attrs = append(attrs, plan.Attr{Name: "enabled", Before: "true", After: "false"})
		}
		if len(attrs) == 0 {
			return prop
		}
		prop.Changes = append(prop.Changes, &plan.Change{Address: Address, Action: plan.Delete, Activation: plan.Now,
			Source: src, Attributes: attrs, Payload: &payload{remove: true, before: obs}})
	}
	return prop
}

// Apply implements plan.Provider.
//
// Install, equivalent to: install -m 0644 SPEC /etc/rdmaform/boot.yaml;
// install -m 0644 rdmaform.service /etc/systemd/system/; systemctl daemon-reload;
// systemctl enable rdmaform.service (without systemd: the symlink alone).
//
// Remove, equivalent to: systemctl disable rdmaform.service;
// rm /etc/systemd/system/rdmaform.service /etc/rdmaform/boot.yaml; systemctl daemon-reload
func (p *Provider) Apply(ctx context.Context, h *host.Host, c *plan.Change) error {
	pl, ok := c.Payload.(*payload)
	if !ok {
		return fmt.Errorf("%s: no boot unit payload", c.Address)
	}
	if pl.restore != nil {
		return restore(ctx, h, pl.restore)
	}
	if pl.remove {
		return remove(ctx, h)
	}
	// The spec first: the unit never points at a missing or stale copy.
	if err := h.FS.WriteFile(SpecPath, pl.spec, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", SpecPath, err)
	}
	if err := h.FS.WriteFile(UnitPath, pl.unit, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", UnitPath, err)
	}
	if pl.relink {
		if err := h.FS.Remove(WantsPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing the stale %s: %w", WantsPath, err)
		}
	}
	if h.Systemd != nil {
		if err := h.Systemd.Reload(ctx); err != nil {
			return err
		}
		if err := h.Systemd.Enable(ctx, UnitName); err != nil {
			return err
		}
	} else if _, err := h.FS.Lstat(WantsPath); errors.Is(err, fs.ErrNotExist) {
		if err := h.FS.Symlink(UnitPath, WantsPath); err != nil {
			return fmt.Errorf("enabling %s (symlink %s): %w", UnitName, WantsPath, err)
		}
	}
	link, err := h.FS.Readlink(WantsPath)
	if err != nil || link != UnitPath {
		return fmt.Errorf("%s is not enabled after apply: %s does not point at %s", UnitName, WantsPath, UnitPath)
	}
	return nil
}

func remove(ctx context.Context, h *host.Host) error {
	if h.Systemd != nil {
		if err := h.Systemd.Disable(ctx, UnitName); err != nil {
			// A unit file already gone is not loaded: the link alone goes below.
			if host.Exists(h.FS, UnitPath) {
				return err
			}
		}
	}
	for _, f := range []string{WantsPath, UnitPath, SpecPath} {
		if err := h.FS.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", f, err)
		}
	}
	if h.Systemd != nil {
		return h.Systemd.Reload(ctx)
	}
	return nil
}
