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
	"context"
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

// Kind is the kind of the boot unit's address.
const Kind = "boot_unit"

// Address is the plan address of the boot unit.
var Address = plan.Addr(Kind, UnitName)

// Provider is the boot unit provider.
type Provider struct {
	// Binary is the absolute path of rdmaform the unit runs; "" is
	// DefaultBinary.
	Binary string
}

var _ plan.TypedProvider[*Observed, *payload] = (*Provider)(nil)

// New is the provider as plan.Build and apply take it.
func New() plan.Provider { return plan.Adapt[*Observed, *payload](&Provider{}) }

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

// Observe implements plan.TypedProvider: it reads the unit file, the spec copy
// and the enablement symlink. Nothing is read without a persistence key.
//
// Equivalent to: cat /etc/systemd/system/rdmaform.service /etc/rdmaform/boot.yaml;
// readlink /etc/systemd/system/multi-user.target.wants/rdmaform.service
func (p *Provider) Observe(_ context.Context, h *host.Host, req *plan.Request) (*Observed, error) {
	if req.Spec.Persistence == "" {
		return nil, nil
	}
	obs := &Observed{}
	if fi, err := h.FS.Stat(p.binary()); err == nil && fi.Mode().IsRegular() {
		obs.Binary = true
	}
	var err error
	if obs.Unit, err = host.ReadOptional(h.FS, UnitPath); err != nil {
		return nil, err
	}
	if obs.Spec, err = host.ReadOptional(h.FS, SpecPath); err != nil {
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
