package sim

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"github.com/rdmaform/rdmaform/host"
)

// OpenSMState is the simulated host's opensm package and what its subnet
// manager did at its last sweep. The model is the simulator's own reading
// of opensm (its manual and source, ../shared/reference/sm-lab.md), never
// rdmaform's: at start, restart and SIGHUP it reads the package's
// partitions file and opensm.conf and programs its own port's P_Key table
// (the port's pkeys) and its priority; sminfo reports it as the master.
// TestSimMatchesFabric holds it to the real opensm on the lab's fabric.
type OpenSMState struct {
	// Layout is the package's: debian (/etc/opensm, /etc/default/opensm's
	// PORTS, opensm@GUID.service) or rhel (/etc/rdma, opensm.service).
	Layout string `yaml:"layout"`
	// Priority is the running subnet manager's sm_priority.
	Priority int `yaml:"priority,omitempty"`
	// Sweeps counts the sweeps (sminfo's activity count).
	Sweeps int `yaml:"sweeps,omitempty"`
	// GUIDs are the ports it runs on (one a Debian instance), as at its
	// last start or sweep.
	GUIDs []string `yaml:"guids,omitempty"`
	// Launch is RHEL's opensm-launch's command line at opensm.service's
	// last start: -p PRIORITY and one opensm -g GUID a GUID of GUIDS in
	// /etc/sysconfig/opensm, which win over opensm.conf.
	Launch *OpenSMLaunch `yaml:"launch,omitempty"`
	// NoLauncher: an opensm built with RHEL's paths whose opensm.service
	// runs it directly, without the package's launcher and sysconfig.
	NoLauncher bool `yaml:"no_launcher,omitempty"`
}

// OpenSMLaunch is what RHEL's launcher gave opensm on its command line.
type OpenSMLaunch struct {
	Priority *int     `yaml:"priority,omitempty"`
	GUIDs    []string `yaml:"guids,omitempty"`
}

// opensmBinary is the package's binary; the stand-in holds the partitions
// file path compiled into the real one (configure's
// --with-opensm-conf-sub-dir: Debian's opensm, RHEL's rdma).
const opensmBinary = "/usr/sbin/opensm"

func (o *OpenSMState) dir() string {
	if o.Layout == "rhel" {
		return "/etc/rdma"
	}
	return "/etc/opensm"
}

// renderOpenSM puts the stand-in binary in the tree. The package's files
// are written inside the tree, a symlink on the way followed only inside
// it (host.RootFS), as a package manager's --root would.
func (st *State) renderOpenSM(root string) error {
	if st.OpenSM == nil {
		return nil
	}
	tree, err := host.NewRootFS(root)
	if err != nil {
		return err
	}
	body := "#!/bin/sh\n# stands for opensm on the simulated host\nexit 0\n\x00partition_config_file " + st.OpenSM.dir() + "/partitions.conf\x00" + st.OpenSM.dir() + "/opensm.conf\x00"
	if err := tree.WriteFile(opensmBinary, []byte(body), 0o755); err != nil {
		return err
	}
	if st.OpenSM.Layout == "rhel" {
		if st.OpenSM.NoLauncher {
			return nil
		}
		return renderRHELLaunch(tree)
	}
	const d = "/etc/default/opensm"
	if _, err := tree.Lstat(d); err == nil {
		return nil
	}
	return tree.WriteFile(d, []byte(debianDefaults), 0o644)
}

// debianDefaults is /etc/default/opensm as Debian 12's opensm 3.3.23
// installs it.
const debianDefaults = `# Lists gid the ports to start opensm on.
# ibstat -p will list the gids on the system.
# You can also specify ALL or NONE
# ALL: Start opensm on all ports
# NONE: Do no start opensm

#PORTS="0x0002c9030002fce9 0x0002c9030002fb06"

PORTS=ALL




`

// renderRHELLaunch puts RHEL's launcher in the tree, and its
// /etc/sysconfig/opensm unless the host has one.
func renderRHELLaunch(tree *host.RootFS) error {
	for p, body := range map[string]string{rhelLauncher: rhelLaunch, rhelSysconfig: rhelSysconfigDefault} {
		if _, err := tree.Lstat(p); err == nil && p == rhelSysconfig {
			continue
		}
		if err := tree.WriteFile(p, []byte(body), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// RHEL's opensm package (Fedora's opensm.launch and opensm.sysconfig, as
// microsoft/azurelinux SPECS/opensm/ imported them from Fedora 32):
// opensm.service runs the launcher, which sources the sysconfig file.
const (
	rhelLauncher  = "/usr/libexec/opensm-launch"
	rhelSysconfig = "/etc/sysconfig/opensm"
)

// rhelLaunch is the package's opensm.launch, whole.
const rhelLaunch = `#!/bin/bash
#
# Launch the necessary OpenSM daemons for systemd
#
# sysconfig: /etc/sysconfig/opensm
# config: /etc/rdma/opensm.conf
#

shopt -s nullglob

prog=/usr/sbin/opensm
[ -f /etc/sysconfig/opensm ] && . /etc/sysconfig/opensm

[ -n "$PRIORITY" ] && prio="-p $PRIORITY"

if [ -z "$GUIDS" ]; then
	CONFIGS=""
	CONFIG_CNT=0
	for conf in /etc/rdma/opensm.conf.[0-9]*; do
		CONFIGS="$CONFIGS $conf"
		let CONFIG_CNT++
	done
else
	GUID_CNT=0
	for guid in $GUIDS; do
		let GUID_CNT++
	done
fi
# Start opensm
if [ -n "$GUIDS" ]; then
	SUBNET_COUNT=0
	for guid in $GUIDS; do
		SUBNET_PREFIX=` + "`" + `printf "0xfe800000000000%02d" $SUBNET_COUNT` + "`" + `
		(while true; do $prog $prio -g $guid --subnet_prefix $SUBNET_PREFIX; sleep 30; done) &
		let SUBNET_COUNT++
	done
elif [ -n "$CONFIGS" ]; then
	for config in $CONFIGS; do
		(while true; do $prog $prio -F $config; sleep 30; done) &
	done
else
	(while true; do $prog $prio; sleep 30; done) &
fi
exit 0
`

// rhelSysconfigDefault is the package's opensm.sysconfig, whole: its
// comments, and GUIDS and PRIORITY commented out.
const rhelSysconfigDefault = `# Problem #1: Multiple IB fabrics needing a subnet manager
#
# In the event that a machine has more than one IB subnet attached,
# and that machine is an opensm server, by default, opensm will
# only attach to one port and will not manage the fabric on the
# other port.  There are two ways to solve this problem:
#
# 1) Start opensm on multiple machines and configure it to manage
#    different fabrics on each machine
# 2) Configure opensm to start multiple instances on a single
#    machine
#
# Both solutions to this problem require non-standard configurations.
# In other words, you would normally have to modify /etc/rdma/opensm.conf
# and once you do that, the file will no longer be updated for new
# options when opensm is upgraded.  In an effort to allow people to
# have more than one subnet managed by opensm without having to modify
# the system default opensm.conf file, we have enabled two methods
# for modifying the default opensm config items needed to enable
# multiple fabric management.
#
# Method #1: Create multiple opensm.conf files in non-standard locations
#   Copy /etc/rdma/opensm.conf to /etc/rdma/opensm.conf.<number>
#     (do this once for each instance you want started)
#   Edit each copy of the opensm.conf file to reflect the necessary changes
#     for a multiple instance startup.  If you need to manage more than
#     one fabric, you will have to change the guid option in each file
#     to specify the guid of the specific port you want opensm attached
#     to.
#
# The advantage to method #1 is that, on the off chance you want to do
# really special custom things on different ports, like have different
# QoS settings depending on which port you are attached to, you have the
# freedom to edit any and all settings for each instance without those
# changes affecting other instances or being lost when opensm upgrades.
#
# Method #2: Specify multiple GUIDS variable entries in this file
#   Uncomment the below GUIDS variable and enter each guid you need to attach
#     to into the list.  If using this method you need to enter each
#     guid into the list as we won't attach to any default ports, only
#     those specified in the list.
#
#GUIDS="0x0002c90300048ca1 0x0002c90300048ca2"
#
# The obvious advantage to method #2 is that it's simple and doesn't
# clutter up your file system, but it is far more limited in what you
# can do.  If you enable method #2, then even if you create the files
# referenced in method #1, they will be ignored.
#
# Problem #2: Activating a backup subnet manager
#
# The default priority of opensm is set so that it wants to be the
# primary subnet manager.  This is great when you are only running
# opensm on one server, but if you want to have a non-primary opensm
# instance for failover, then you have to manually edit the opensm.conf
# file like for problem #1.  This carries with it all the problems
# listed above.  If you wish to enable opensm as a non-primary manager,
# then you can uncomment the PRIORITY variable below and set it to
# some number between 0 and 15, where 15 is the highest priority and
# the primary manager, with 0 being the lowest backup server.  This method
# will work with the GUIDS option above, and also with the multiple
# config files in method #1 above.  However, only a single priority is
# supported here.  If you wanted more than one priority (say this machine
# is the primary on the first fabric, and second on the second fabric,
# while the other opensm server is primary on the second fabric and
# second on the primary), then the only way to do that is to use method #1
# above and individually edit the config files.  If you edit the config
# files to set the priority and then also set the priority here, then
# this setting will override the config files and render that particular
# edit useless.
#
#PRIORITY=15
`

// launchOf is the launcher's command line for a sysconfig file, as bash
// would source it: the last assignment of PRIORITY and GUIDS at a line's
// start, quotes dropped, GUIDS split on blanks.
func launchOf(sysconfig string) *OpenSMLaunch {
	l := &OpenSMLaunch{}
	for _, line := range strings.Split(sysconfig, "\n") {
		line = strings.TrimSpace(line)
		name, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		v = strings.Trim(v, `"'`)
		switch name {
		case "PRIORITY":
			l.Priority = nil
			if n, err := strconv.Atoi(v); err == nil {
				l.Priority = &n
			}
		case "GUIDS":
			l.GUIDs = strings.Fields(v)
		}
	}
	return l
}

// isOpenSMUnit: the package's units, opensm.service and Debian's
// opensm@GUID.service instances.
func isOpenSMUnit(name string) bool {
	return name == "opensm.service" || (strings.HasPrefix(name, "opensm@") && strings.HasSuffix(name, ".service"))
}

// smPort is the port the subnet manager binds to: opensm.conf's guid (a
// running Debian instance's GUID), else the first ACTIVE InfiniBand port.
func (st *State) smPort(guid string) (*Device, *Port) {
	var fd *Device
	var fp *Port
	for _, d := range st.Devices {
		for _, p := range d.Ports {
			if p.LinkLayer != "InfiniBand" {
				continue
			}
			if guid != "" && portGUID(d) == guid {
				return d, p
			}
			if fp == nil && p.State == "ACTIVE" {
				fd, fp = d, p
			}
		}
	}
	if guid != "" {
		return nil, nil
	}
	return fd, fp
}

// portGUID is port 1's GUID as opensm and sminfo print it in full: an
// mlx5 port's GUID is its node GUID (0x0002c903000a1b2c).
func portGUID(d *Device) string {
	return "0x" + strings.ReplaceAll(strings.ToLower(d.NodeGUID), ":", "")
}

// sweep is one sweep of the simulated subnet manager: the files as the
// tree has them now, into the SM port's P_Key table and the priority.
// The caller holds the lock.
func (s *Sim) sweepLocked(st *State) {
	o := st.OpenSM
	if o == nil {
		return
	}
	read := func(p string) string {
		b, _ := s.readTree(p)
		return string(b)
	}
	conf := map[string]string{}
	for _, l := range strings.Split(read(o.dir()+"/opensm.conf"), "\n") {
		l, _, _ = strings.Cut(l, "#")
		if f := strings.Fields(l); len(f) >= 2 {
			conf[f[0]] = f[1]
		}
	}
	var guids []string
	for _, u := range st.units().Units {
		if strings.HasPrefix(u.Name, "opensm@") && u.Active {
			guids = append(guids, strings.TrimSuffix(strings.TrimPrefix(u.Name, "opensm@"), ".service"))
		}
	}
	if len(guids) == 0 {
		guids = []string{conf["guid"]}
	}
	o.Priority, _ = strconv.Atoi(conf["sm_priority"])
	if l := o.Launch; l != nil && o.Layout == "rhel" {
		if l.Priority != nil {
			o.Priority = *l.Priority
		}
		if len(l.GUIDs) > 0 {
			guids = l.GUIDs
		}
	}
	o.Sweeps++
	o.GUIDs = nil
	for _, g := range guids {
		d, p := st.smPort(g)
		if p == nil {
			continue
		}
		o.GUIDs = append(o.GUIDs, portGUID(d))
		p.PKeys = smPKeys(read(o.dir()+"/partitions.conf"), portGUID(d))
	}
}

// smPKeys is the table opensm gives its own port for a partitions file:
// each partition the port is a member of (the file's Default too), in
// file order, with the full-member bit for full, both keys for both; of
// several members that name the port the last decides. A file without a Default entry gets opensm's own
// (ALL=limited, SELF=full). Members: its GUID, ALL, ALL_CAS, SELF.
func smPKeys(file, guid string) []int {
	var body strings.Builder
	for _, l := range strings.Split(file, "\n") {
		l, _, _ = strings.Cut(l, "#")
		body.WriteString(" " + l)
	}
	var keys []int
	if !hasDefault(body.String()) {
		keys = []int{0xffff} // opensm's own Default: ALL=limited, SELF=full
	}
	for _, e := range strings.Split(body.String(), ";") {
		head, members, ok := strings.Cut(e, ":")
		if !ok {
			continue
		}
		flags := strings.Split(head, ",")
		_, key, _ := strings.Cut(flags[0], "=")
		k, err := strconv.ParseInt(strings.TrimSpace(key), 0, 32)
		if err != nil {
			continue
		}
		def := "limited"
		for _, f := range flags[1:] {
			if v, ok := strings.CutPrefix(strings.TrimSpace(f), "defmember="); ok {
				def = v
			}
		}
		how := ""
		for _, m := range strings.Split(members, ",") {
			who, h, _ := strings.Cut(strings.TrimSpace(m), "=")
			if h == "" {
				h = def
			}
			switch strings.ToLower(strings.TrimSpace(who)) {
			case "all", "all_cas", "self", guid:
				how = h // the last one that names the port
			}
		}
		base := int(k) & 0x7fff
		if how == "full" || how == "both" {
			keys = append(keys, base|0x8000)
		}
		if how == "limited" || how == "both" {
			keys = append(keys, base)
		}
	}
	return keys
}

// smSignal is what a signal to an opensm unit does: SIGHUP sweeps.
func (s *Sim) smSignal(st *State, name string, sig syscall.Signal) {
	if isOpenSMUnit(name) && sig == syscall.SIGHUP {
		s.sweepLocked(st)
	}
}

// smStopped: Debian's instances are PartOf opensm.service.
func smStopped(st *State, name string) {
	if name != "opensm.service" || st.OpenSM == nil {
		return
	}
	for _, u := range st.units().Units {
		if strings.HasPrefix(u.Name, "opensm@") {
			u.Active = false
		}
	}
}

// smStarted is what starting an opensm unit does: Debian's opensm.service
// (a oneshot) starts one opensm@GUID.service a port /etc/default/opensm's
// PORTS names (ALL: every InfiniBand port), its instances stopping with
// it; then the subnet manager sweeps.
func (s *Sim) smStarted(st *State, name string) {
	o := st.OpenSM
	if o == nil || !isOpenSMUnit(name) {
		return
	}
	if name == "opensm.service" && o.Layout != "rhel" {
		b, _ := s.readTree("/etc/default/opensm")
		ports := "ALL"
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "PORTS="); ok {
				ports = strings.Trim(v, `"'`)
			}
		}
		var guids []string
		if ports == "ALL" {
			for _, d := range st.Devices {
				for _, p := range d.Ports {
					if p.LinkLayer == "InfiniBand" && p.Num == 1 {
						guids = append(guids, portGUID(d))
					}
				}
			}
		} else if ports != "NONE" {
			guids = strings.Fields(ports)
		}
		sd := st.units()
		for _, u := range sd.Units {
			if strings.HasPrefix(u.Name, "opensm@") {
				u.Active = false
			}
		}
		for _, g := range guids {
			n := "opensm@" + g + ".service"
			if u := sd.unit(n); u != nil {
				u.Active = true
			} else {
				sd.Units = append(sd.Units, &Unit{Name: n, File: "indirect", Active: true})
			}
		}
		sd.sortUnits()
	}
	if name == "opensm.service" && o.Layout == "rhel" && !o.NoLauncher {
		b, _ := s.readTree(rhelSysconfig)
		o.Launch = launchOf(string(b))
	}
	s.sweepLocked(st)
}

// smRunning is the GUID of the subnet manager that runs on a device's
// port (any, for ""), "" when none runs there.
func (st *State) smRunning(dev string) string {
	if st.OpenSM == nil {
		return ""
	}
	running := false
	for _, u := range st.units().Units {
		running = running || (isOpenSMUnit(u.Name) && u.Active && (u.Name != "opensm.service" || st.OpenSM.Layout == "rhel"))
	}
	if !running {
		return ""
	}
	for _, g := range st.OpenSM.GUIDs {
		if d := st.Device(dev); dev == "" || (d != nil && portGUID(d) == g) {
			return g
		}
	}
	return ""
}

// sminfoTool emulates infiniband-diags' sminfo (44.0) as the lab's
// fabric answers it: through -C DEV (default: any port), the master is
// this host's subnet manager on that port's fabric (each port its own
// fabric); -D 0 asks the same. Its line as the real sminfo prints it;
// with no subnet manager there, the lab's real failure (exit 255).
func sminfoTool(_ context.Context, s *Sim, args []string, _ []byte) (string, string, int) {
	dev := ""
	for i, a := range args {
		if a == "-C" && i+1 < len(args) {
			dev = args[i+1]
		}
	}
	var out string
	s.view(func(st *State) {
		g := st.smRunning(dev)
		if g == "" {
			return
		}
		short := "0x" + strings.TrimLeft(strings.TrimPrefix(g, "0x"), "0")
		out = fmt.Sprintf("sminfo: sm lid 1 sm guid %s, activity count %d priority %d state 3 SMINFO_MASTER\n", short, 100+st.OpenSM.Sweeps, st.OpenSM.Priority)
	})
	if out == "" {
		return "sminfo: iberror: failed: query\n", "ibwarn: [4242] mad_rpc: _do_madrpc failed; dport (DR path slid 0; dlid 0; 0)\n", 255
	}
	return out, "", 0
}

// Signal implements host.UnitSignaller: a signal to an active unit's main
// process (SIGHUP makes opensm sweep).
func (m *simSystemd) Signal(ctx context.Context, name string, sig syscall.Signal) error {
	m.record(fmt.Sprintf("KillUnit %s main %d", name, int(sig)))
	if err := m.sim.inject(faultSystemd, "KillUnit", name); err != nil {
		return unlessDropped(err)
	}
	st, err := m.Unit(ctx, name)
	if err != nil {
		return err
	}
	if !st.Active() {
		return fmt.Errorf("kill %s: No main process to kill", name)
	}
	return m.sim.mutate(false, func(s *State) error {
		m.sim.smSignal(s, name, sig)
		return nil
	})
}

// Restart implements host.UnitSignaller.
func (m *simSystemd) Restart(ctx context.Context, name string) error {
	if err := m.job(ctx, name, false); err != nil {
		return err
	}
	return m.Start(ctx, name)
}

// MainPID implements host.UnitSignaller: a fixed PID while the unit runs;
// none for Debian's opensm.service, a oneshot that only starts instances.
func (m *simSystemd) MainPID(ctx context.Context, name string) (int, error) {
	st, err := m.Unit(ctx, name)
	if err != nil || !st.Active() {
		return 0, err
	}
	oneshot := false
	m.sim.view(func(s *State) { oneshot = name == "opensm.service" && s.OpenSM != nil && s.OpenSM.Layout != "rhel" })
	if oneshot {
		return 0, nil
	}
	return smMainPID, nil
}

// smMainPID is the main process of a running opensm unit.
const smMainPID = 4242

// opensmComm is the name of that process: opensm itself for Debian's
// instances; RHEL's opensm.service runs /usr/libexec/opensm-launch, a
// shell loop that runs opensm as its child (its systemctl status: "Main
// PID: 50757 (opensm-launch)").
func (st *State) opensmComm() string {
	switch {
	case st.OpenSM == nil:
		return ""
	case st.OpenSM.Layout == "rhel" && !st.OpenSM.NoLauncher:
		return "opensm-launch"
	}
	return "opensm"
}

var _ host.UnitSignaller = (*simSystemd)(nil)

// hasDefault: the file has the default partition (P_Key 0x7fff).
func hasDefault(body string) bool {
	for _, e := range strings.Split(body, ";") {
		head, _, _ := strings.Cut(e, ":")
		first, _, _ := strings.Cut(head, ",")
		if _, key, ok := strings.Cut(first, "="); ok {
			if k, err := strconv.ParseInt(strings.TrimSpace(key), 0, 32); err == nil && k&0x7fff == 0x7fff {
				return true
			}
		}
	}
	return false
}

// readTree reads a file of the simulated host as its programs (opensm)
// do: inside the tree, a symlink followed only inside it, as under
// --root (host.RootFS).
func (s *Sim) readTree(p string) ([]byte, error) {
	tree, err := host.NewRootFS(s.Dir)
	if err != nil {
		return nil, err
	}
	return tree.ReadFile(p)
}
