// Package subnetmanager manages the subnet manager side of an InfiniBand
// fabric on a host that runs opensm: the partitions opensm programs into
// every port's P_Key table (partitions.conf, which rdmaform writes whole)
// and the opensm.conf keys the spec names (sm_priority, the port's guid,
// an allow-list of options). It plans against the files and against what
// the fabric says: the local port's P_Key table (sysfs, or smpquery where
// sysfs has none) and sminfo (this subnet manager's priority and state).
// Apply writes the files atomically, then has opensm take them: SIGHUP
// (systemd's KillUnit) where opensm re-reads the keys, a restart where
// its option table says it must; it waits for the sweep and, when the
// fabric does not show the new partitions, puts the previous file back.
package subnetmanager

import (
	"bytes"
	"context"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
)

// Provider is the subnet manager provider.
type Provider struct{}

var _ plan.TypedProvider[*Observed, *payload] = (*Provider)(nil)

// New is the provider as plan.Build and apply take it.
func New() plan.Provider { return plan.Adapt[*Observed, *payload](&Provider{}) }

// Name implements plan.Provider.
func (*Provider) Name() string { return "subnet_manager" }

// Kind is the kind of this provider's addresses.
const Kind = "subnet_manager"

// Address is the plan address of one of opensm's files.
func Address(file string) plan.Address { return plan.Addr(Kind, file) }

// Debian's files, as the installed opensm package has them (Debian 12,
// opensm 3.3.23: the compiled-in defaults `opensm -c` dumps; the package
// ships no opensm.conf).
const (
	PartitionsFile = "/etc/opensm/partitions.conf"
	ConfFile       = "/etc/opensm/opensm.conf"
	// PortsFile is Debian's /etc/default/opensm, whose PORTS names the
	// ports opensm.service starts an opensm@GUID.service for.
	PortsFile = "/etc/default/opensm"
	// Binary is how the provider tells opensm is installed.
	Binary = "/usr/sbin/opensm"
)

// Layout is where an installed opensm package keeps its files: the
// directory configure's --with-opensm-conf-sub-dir gives, compiled into
// the binary (the defaults opensm -c dumps), and how the package's units
// choose the port.
type Layout struct {
	Name             string // Debian, RHEL
	Partitions, Conf string
	// Ports is the file whose PORTS line names the ports the package's
	// units start opensm on, each with --guid (Debian); "" where
	// opensm.conf's guid binds opensm to its port (RHEL's opensm.service).
	Ports string
	// Sysconfig is the file the package's launcher sources before it
	// starts opensm (RHEL's /etc/sysconfig/opensm, read by
	// /usr/libexec/opensm-launch): PRIORITY and GUIDS there become
	// opensm's -p and -g, over opensm.conf's sm_priority and guid. ""
	// where no installed launcher reads one.
	Sysconfig string
}

// The layouts rdmaform knows.
var (
	Debian = Layout{Name: "Debian", Partitions: PartitionsFile, Conf: ConfFile, Ports: PortsFile}
	// RHEL (and Fedora): opensm.spec configures
	// --with-opensm-conf-sub-dir=rdma and installs /etc/rdma/opensm.conf
	// and /etc/rdma/partitions.conf; one opensm.service.
	RHEL = Layout{Name: "RHEL", Partitions: "/etc/rdma/partitions.conf", Conf: "/etc/rdma/opensm.conf"}
)

// LayoutOf tells the layout from the opensm binary: the partitions file
// compiled into it. Debian's when it names RHEL's path nowhere.
func LayoutOf(binary []byte) Layout {
	if bytes.Contains(binary, []byte(RHEL.Partitions+"\x00")) {
		return RHEL
	}
	return Debian
}

// RHEL's (and Fedora's) opensm package runs opensm through a launcher
// (opensm.service: Type=forking, ExecStart=/usr/libexec/opensm-launch)
// that sources /etc/sysconfig/opensm: PRIORITY=N adds "-p N", and GUIDS
// starts one "opensm -g GUID" a GUID, instead of a plain "opensm"
// (opensm.launch and opensm.sysconfig of Fedora's package, as Azure
// Linux imported them from Fedora 32: microsoft/azurelinux
// SPECS/opensm/). Command-line options win over opensm.conf (the
// package's sysconfig says so of PRIORITY).
const (
	Launcher      = "/usr/libexec/opensm-launch"
	SysconfigFile = "/etc/sysconfig/opensm"
)

// SysconfigOf is the file an installed launcher sources, "" when it
// sources none (the launcher's text names it: ". /etc/sysconfig/opensm").
func SysconfigOf(launcher []byte) string {
	if bytes.Contains(launcher, []byte(". "+SysconfigFile)) {
		return SysconfigFile
	}
	return ""
}

// Addresses of the files.
var (
	PartitionsAddr = Address("partitions.conf")
	ConfAddr       = Address("opensm.conf")
	PortsAddr      = Address("ports")
	LauncherAddr   = Address("launcher") // RHEL's /etc/sysconfig/opensm; sorts (and applies) before the files
)

// Observed is what the host says of its subnet manager.
type Observed struct {
	// Installed: the opensm binary is there.
	Installed bool
	// Layout is where the installed package keeps its files.
	Layout Layout
	// Partitions, Conf, Ports and Sysconfig are the files as they are,
	// nil when missing (Ports: Debian's only; Sysconfig: where the
	// launcher reads one).
	Partitions, Conf, Ports, Sysconfig []byte
	// Port is the local InfiniBand port opensm binds to (the spec's, or
	// the first active InfiniBand port), nil without one.
	Port *LocalPort
	// Fabric is what the fabric says through that port; nil when it could
	// not be asked (no port, tools missing: FabricErr says why).
	Fabric    *Fabric
	FabricErr error
	// Stopped: the service manager runs none of opensm's units for the
	// port (opensm@GUID.service, opensm.service) and no subnet manager
	// answers on it; false where no service manager can tell.
	Stopped bool
	// StartUnit is the unit that starts it: the package's opensm.service
	// (Debian's starts an opensm@GUID.service a port PORTS names), else
	// the port's opensm@GUID.service; "" when neither is installed.
	StartUnit string
}

// LocalPort is the port opensm binds to.
type LocalPort struct {
	Device string
	Port   int
	GUID   string // 0x0002c903000a1b2c
	// SysfsPKeys is the port's P_Key table from sysfs, nil where sysfs
	// has none.
	SysfsPKeys []int

	active bool
}

// Fabric is what the subnet manager of this port says.
type Fabric struct {
	// PKeys is the local port's P_Key table (sysfs, else smpquery).
	PKeys []int
	// Master is the fabric's master subnet manager (sminfo).
	Master SMInfo
	// Local is this host's own subnet manager (sminfo -D 0), zero when
	// none answers.
	Local SMInfo
}

// Observe implements plan.TypedProvider.
//
// Equivalent to: cat /etc/opensm/partitions.conf /etc/opensm/opensm.conf
// /etc/default/opensm (RHEL: /etc/rdma/..., /etc/sysconfig/opensm); sminfo -C DEV -P N; sminfo -C DEV -P N -D 0; smpquery -C DEV -P N -D pkeys 0
func (p *Provider) Observe(ctx context.Context, h *host.Host, req *plan.Request) (*Observed, error) {
	sm := req.Spec.SubnetManager
	if sm == nil && !req.Full {
		return nil, nil
	}
	obs := &Observed{Layout: Debian}
	if bin, err := h.FS.ReadFile(Binary); err == nil {
		obs.Installed = true
		obs.Layout = LayoutOf(bin)
		if l, err := h.FS.ReadFile(Launcher); err == nil {
			obs.Layout.Sysconfig = SysconfigOf(l)
		}
	}
	var err error
	if obs.Partitions, err = host.ReadOptional(h.FS, obs.Layout.Partitions); err != nil {
		return nil, err
	}
	if obs.Conf, err = host.ReadOptional(h.FS, obs.Layout.Conf); err != nil {
		return nil, err
	}
	if obs.Layout.Ports != "" {
		if obs.Ports, err = host.ReadOptional(h.FS, obs.Layout.Ports); err != nil {
			return nil, err
		}
	}
	if obs.Layout.Sysconfig != "" {
		if obs.Sysconfig, err = host.ReadOptional(h.FS, obs.Layout.Sysconfig); err != nil {
			return nil, err
		}
	}
	obs.Port = localPort(h, req)
	if obs.Port == nil || !obs.Installed || req.Full {
		// show captures the files; the fabric is plan's and audit's.
		return obs, nil
	}
	now := *obs.Port // a device the names stage renames is asked under its name now
	now.Device = req.RDMANow(now.Device)
	obs.Fabric, obs.FabricErr = ReadFabric(ctx, h, &now)
	if obs.FabricErr != nil && h.Systemd != nil {
		running, _, err := runningUnits(ctx, h, &now)
		obs.Stopped = err == nil && len(running) == 0
		if obs.Stopped {
			obs.StartUnit = startable(ctx, h, &now)
		}
	}
	return obs, nil
}

// localPort is the InfiniBand port opensm binds to: the spec's, else the
// first InfiniBand port (the first ACTIVE one if any), as opensm picks.
func localPort(h *host.Host, req *plan.Request) *LocalPort {
	var pick *LocalPort
	for _, d := range req.Inv.Devices {
		for _, pt := range d.Ports {
			if pt.LinkLayer != linklayer.InfiniBand {
				continue
			}
			lp := &LocalPort{Device: d.Name, Port: pt.Num, GUID: pt.GUID}
			if sm := req.Spec.SubnetManager; sm != nil && sm.Port != nil {
				if sm.Port.Device == d.Name && sm.Port.Port == pt.Num {
					pick = lp
				}
				continue
			}
			if pick == nil || (pt.State == "ACTIVE" && !pick.active) {
				pick = lp
				pick.active = pt.State == "ACTIVE"
			}
		}
	}
	if pick != nil {
		pick.SysfsPKeys, _ = readSysfsPKeys(h, &LocalPort{Device: req.RDMANow(pick.Device), Port: pick.Port})
	}
	return pick
}

// readSysfsPKeys is the port's P_Key table from sysfs; nil where sysfs
// has none (the lab's simulated ports: ask the fabric instead).
func readSysfsPKeys(h *host.Host, lp *LocalPort) ([]int, error) {
	keys, err := inventory.ReadPKeys(h.FS, lp.Device, lp.Port)
	if err != nil || len(keys) == 0 {
		return nil, err
	}
	return keys, nil
}

// payload is what Make does to one file.
type payload struct {
	file string // the layout's partitions, opensm.conf or PORTS file
	// partitions: file is the partitions file (opensm's log may refuse it).
	partitions bool
	// ports: file is Debian's PORTS file; opensm.service is restarted to
	// start the instance of the spec's port.
	ports    bool
	content  []byte // the new file
	previous []byte // the file it replaces, nil when there was none
	// restart: a key changed that opensm reads only when it starts
	// (Reason says which); else SIGHUP.
	restart bool
	// signal: the file is as wanted but opensm has not taken it yet.
	signalOnly bool
	// launched: opensm.service runs opensm under the package's launcher
	// (RHEL's opensm-launch, a shell loop a SIGHUP would end): restart.
	launched bool
	port     *LocalPort
	// expect is what the fabric must show once opensm took the file.
	expect expectation
	// start: opensm does not run, and the plan starts it once the file
	// is written (startUnit), then proves the fabric shows the spec.
	start bool
	unit  string // the unit start starts
	// stop: the revert of a change that started opensm stops that unit
	// again once the file is back.
	stop bool
}

// expectation is what the local port and its subnet manager show once
// opensm runs the spec.
type expectation struct {
	pkeys    []int // the local port's table, membership bit included
	priority *int  // this subnet manager's priority
}
