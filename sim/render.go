package sim

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// gidTableLen is the simulated GID table size per port (real adapters
// have 128 to 256 slots; every slot has its files, empty or not).
const gidTableLen = 16

// pkeyTableLen is the simulated P_Key table size per IB port.
const pkeyTableLen = 16

// tree is a rendering of the simulated tree: what each path should be.
// sync then makes the directory so.
type tree struct {
	root string
	want map[string]node // by slash path, "/sys/..."
}

// node is one path of a rendering: a directory, a file's content or a
// symlink's target.
type node struct {
	kind byte // 'd', 'f', 'l'
	data string
}

func newTree(root string) *tree { return &tree{root: root, want: map[string]node{}} }

func (t *tree) path(p string) string { return filepath.Join(t.root, filepath.FromSlash(p)) }

func (t *tree) put(p string, n node) {
	t.want[p] = n
	for d := path.Dir(p); d != "/" && d != "."; d = path.Dir(d) {
		if _, ok := t.want[d]; ok {
			break
		}
		t.want[d] = node{kind: 'd'}
	}
}

func (t *tree) file(p, content string) { t.put(p, node{kind: 'f', data: content}) }

func (t *tree) dir(p string) { t.put(p, node{kind: 'd'}) }

// link makes p a symlink to target (relative, as sysfs has them).
func (t *tree) link(p, target string) { t.put(p, node{kind: 'l', data: target}) }

// sync makes everything under the scopes (slash paths) what the rendering
// says, the way a kernel changes sysfs: each file or symlink that differs
// is replaced whole by a rename, what the rendering lacks is removed, and
// nothing else is touched. A process reading the tree meanwhile (a plan
// beside an apply) sees each file whole, old or new, never an empty or
// missing one that stays.
func (t *tree) sync(scopes ...string) error { return t.syncSince(nil, scopes...) }

// syncSince is sync knowing the rendering the tree was written from last
// (prev; nil: unknown, so every path is compared with the disk).
func (t *tree) syncSince(prev map[string]node, scopes ...string) error {
	paths := make([]string, 0, len(t.want))
	for p := range t.want {
		paths = append(paths, p)
	}
	sort.Strings(paths) // parents first
	in := scopeSet(scopes)
	var made string // a new directory made whole, with all below it
	for _, p := range paths {
		if !in(p) || made != "" && strings.HasPrefix(p, made+"/") {
			continue
		}
		n := t.want[p]
		if old, ok := prev[p]; ok && old == n {
			continue
		}
		if n.kind == 'd' {
			if _, err := os.Lstat(t.path(p)); errors.Is(err, fs.ErrNotExist) {
				if err := t.makeDir(p, paths); err != nil {
					return err
				}
				made = p
				continue
			}
		}
		if err := t.make(p, n); err != nil {
			return err
		}
	}
	if prev != nil {
		var gone []string
		for p := range prev {
			if _, ok := t.want[p]; !ok && in(p) {
				gone = append(gone, p)
			}
		}
		sort.Strings(gone) // parents first: a removed directory takes its children
		removed := ""
		for _, p := range gone {
			if removed != "" && strings.HasPrefix(p, removed+"/") {
				continue
			}
			if err := t.remove(t.path(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			removed = p
		}
		return nil
	}
	for _, sc := range scopes {
		err := filepath.WalkDir(t.path(sc), func(full string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(t.root, full)
			p := "/" + filepath.ToSlash(rel)
			if _, ok := t.want[p]; ok {
				return nil
			}
			if err := t.remove(full); err != nil {
				return err
			}
			if !d.IsDir() {
				return nil
			}
			if full == t.path(sc) {
				return filepath.SkipAll
			}
			return filepath.SkipDir
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// makeDir makes the new directory p with everything the rendering has
// below it beside the tree, and renames it in: it appears whole, as a
// configfs group does on mkdir.
func (t *tree) makeDir(p string, paths []string) error {
	tmp, err := os.MkdirTemp(t.root, ".render-*")
	if err != nil {
		return err
	}
	sub := &tree{root: tmp, want: map[string]node{}}
	for _, q := range paths {
		if rest, ok := strings.CutPrefix(q, p+"/"); ok {
			sub.want["/"+rest] = t.want[q]
		}
	}
	for _, q := range slices.Sorted(maps.Keys(sub.want)) {
		if err = sub.make(q, sub.want[q]); err != nil {
			break
		}
	}
	if err == nil {
		err = os.Chmod(tmp, 0o755)
	}
	if err == nil {
		err = os.Rename(tmp, t.path(p))
	}
	if err != nil {
		os.RemoveAll(tmp)
	}
	return err
}

// remove takes a path out of the tree at once (a rename beside it) and
// then deletes it.
func (t *tree) remove(full string) error {
	tmp, err := os.MkdirTemp(t.root, ".render-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	return os.Rename(full, filepath.Join(tmp, "gone"))
}

// make makes one path what n says, replacing it only if it differs.
func (t *tree) make(p string, n node) error {
	full := t.path(p)
	fi, err := os.Lstat(full)
	exists := err == nil
	switch n.kind {
	case 'd':
		if exists && fi.IsDir() {
			return nil
		}
	case 'f':
		if exists && fi.Mode().IsRegular() {
			if b, err := os.ReadFile(full); err == nil && string(b) == n.data {
				return nil
			}
		}
	case 'l':
		if exists && fi.Mode()&fs.ModeSymlink != 0 {
			if l, err := os.Readlink(full); err == nil && l == n.data {
				return nil
			}
		}
	}
	if exists && (fi.IsDir() || n.kind == 'd') {
		if err := t.remove(full); err != nil {
			return err
		}
	}
	if n.kind == 'd' {
		return os.Mkdir(full, 0o755)
	}
	// The new file or link is made beside the tree (at the top of the
	// simulated host's directory, where no reader looks) and renamed in.
	tmp, err := os.CreateTemp(t.root, ".render-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	if n.kind == 'f' {
		_, err = tmp.WriteString(n.data)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Chmod(name, 0o644)
		}
	} else {
		tmp.Close()
		if err = os.Remove(name); err == nil {
			err = os.Symlink(n.data, name)
		}
	}
	if err == nil {
		err = os.Rename(name, full)
	}
	if err != nil {
		os.Remove(name)
	}
	return err
}

// rel returns the relative symlink target from the directory of link to
// target, both sysfs paths.
func rel(link, target string) string {
	r, _ := filepath.Rel(filepath.Dir(link), target)
	return filepath.ToSlash(r)
}

func pciDir(pci string) string { return "/sys/devices/pci0000:00/" + pci }

// devDir is the sysfs directory of an RDMA device.
func (s *State) devDir(d *Device) string {
	if d.PCI == "" {
		return "/sys/devices/virtual/infiniband/" + d.Name
	}
	return s.pciDir(d.PCI) + "/infiniband/" + d.Name
}

// netdevDir is the sysfs directory of a netdev.
func (s *State) netdevDir(n *Netdev) string {
	if isChild(n) {
		// ipoib registers a P_Key child with no parent device (only
		// ipoib_parent_init calls SET_NETDEV_DEV): a virtual netdev.
		return "/sys/devices/virtual/net/" + n.Name
	}
	if n.PCI != "" {
		return s.pciDir(n.PCI) + "/net/" + n.Name
	}
	if n.Device != "" {
		if d := s.Device(n.Device); d != nil && d.PCI != "" {
			return s.pciDir(d.PCI) + "/net/" + n.Name
		}
	}
	return "/sys/devices/virtual/net/" + n.Name
}

// renderAll rewrites the whole simulated tree from the state.
// InstalledBinaries are where the simulated host has rdmaform installed:
// make install's default and the packages' path.
var InstalledBinaries = []string{"/usr/local/sbin/rdmaform", "/usr/sbin/rdmaform"}

func (s *State) renderAll(root string) error {
	_, err := s.renderAllTree(root)
	return err
}

// renderAllTree is renderAll, returning the rendering it wrote.
func (s *State) renderAllTree(root string) (map[string]node, error) {
	t := s.render(root)
	if err := t.sync("/sys", "/proc"); err != nil {
		return nil, err
	}
	if err := s.renderOpenSM(root); err != nil {
		return nil, err
	}
	if err := s.renderNetns(root); err != nil {
		return nil, err
	}
	if err := s.renderRdmaRename(root); err != nil {
		return nil, err
	}
	// rdmaform itself is installed, as on a managed host: the boot unit
	// runs it (persistence). Where make install and where the packages
	// put it, so binaries of either kind find theirs.
	for _, bin := range InstalledBinaries {
		if _, err := os.Lstat(filepath.Join(root, bin)); errors.Is(err, os.ErrNotExist) {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(root, bin)), 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(root, bin), []byte("#!/bin/sh\n# stands for rdmaform on the simulated host\nexit 0\n"), 0o644); err != nil {
				return nil, err
			}
		}
	}
	return t.want, nil
}

// render is the whole tree the state shows, in memory.
func (s *State) render(root string) *tree {
	t := newTree(root)
	t.dir("/sys/class/infiniband")
	t.dir("/sys/class/net")
	t.dir("/sys/bus/pci/devices")
	if s.configfsDir() {
		t.dir("/sys/kernel/config")
	}
	s.renderHierarchy(t)
	for _, d := range s.Devices {
		s.renderDevice(t, d)
	}
	for _, d := range s.Unprobed {
		s.renderPCIFunction(t, d)
		s.renderSRIOV(t, d)
	}
	for _, n := range s.Netdevs {
		s.renderNetdev(t, n)
	}
	s.renderProc(t)
	s.renderNVIDIA(t)
	s.renderCM(t)
	return t
}

// renderScoped rewrites only the parts of the tree under scopes: what one
// change touched (a card's reset), at a fraction of renderAll's file work.
// prev, when known, is the rendering the tree was last written from: a
// path rendered the same as then is not looked at, and what it had in
// the scopes that the rendering lacks is removed (no walk of the tree).
// It returns prev with the scopes' part replaced by this rendering.
func (s *State) renderScoped(root string, scopes []string, prev map[string]node) (map[string]node, error) {
	t := s.render(root)
	if err := t.syncSince(prev, scopes...); err != nil {
		return nil, err
	}
	if prev == nil {
		return nil, nil
	}
	in := scopeSet(scopes)
	out := make(map[string]node, len(t.want))
	for p, n := range prev {
		if !in(p) {
			out[p] = n
		}
	}
	for p, n := range t.want {
		if in(p) {
			out[p] = n
		}
	}
	return out, nil
}

// scopeSet tells whether a slash path is one of the scopes or below one,
// in the path's depth (a reset's render has hundreds of scopes and the
// tree tens of thousands of paths).
func scopeSet(scopes []string) func(p string) bool {
	set := make(map[string]bool, len(scopes))
	for _, sc := range scopes {
		set[sc] = true
	}
	return func(p string) bool {
		for {
			if set[p] {
				return true
			}
			parent := path.Dir(p)
			if parent == p || parent == "." {
				return false
			}
			p = parent
		}
	}
}

func (s *State) renderDevice(t *tree, d *Device) {
	dir := s.devDir(d)
	t.link("/sys/class/infiniband/"+d.Name, rel("/sys/class/infiniband/"+d.Name, dir))
	if d.PCI != "" {
		pd := s.pciDir(d.PCI)
		s.renderPCIFunction(t, d)
		t.link(dir+"/device", "../../../"+d.PCI)
		if d.Driver == "mlx4" {
			for _, p := range d.Ports {
				t.file(fmt.Sprintf("%s/mlx4_port%d", pd, p.Num), mlx4PortText(p)+"\n")
			}
		}
	}
	t.file(dir+"/node_type", "1: CA\n")
	t.file(dir+"/node_guid", d.NodeGUID+"\n")
	t.file(dir+"/sys_image_guid", d.NodeGUID+"\n")
	if d.Driver == "rxe" {
		// rdma_rxe's own node description and an empty firmware version
		// (6.1 kernel; ibv_devinfo shows 0.0.0).
		t.file(dir+"/node_desc", "rxe\n")
		t.file(dir+"/parent", d.Parent+"\n")
		t.file(dir+"/fw_ver", "\n")
	} else {
		t.file(dir+"/node_desc", fmt.Sprintf("%s %s\n", s.Hostname, d.Name))
		t.file(dir+"/fw_ver", d.FWVer+"\n")
		if id, err := strconv.ParseInt(d.PCIID, 0, 32); err == nil {
			t.file(dir+"/hca_type", fmt.Sprintf("MT%d\n", id))
		}
		t.file(dir+"/board_id", d.BoardID+"\n")
		t.file(dir+"/hw_rev", "0\n")
	}
	for _, p := range d.Ports {
		s.renderPort(t, d, p, fmt.Sprintf("%s/ports/%d", dir, p.Num))
	}
	if d.PCI != "" {
		s.renderSRIOV(t, d)
	}
}

// renderPCIFunction writes what the PCI core shows of an adapter
// function, with or without a driver bound.
func (s *State) renderPCIFunction(t *tree, d *Device) {
	pd := s.pciDir(d.PCI)
	t.file(pd+"/vendor", "0x15b3\n")
	t.file(pd+"/device", d.PCIID+"\n")
	t.file(pd+"/numa_node", fmt.Sprintf("%d\n", d.NUMANode))
	t.file(pd+"/local_cpulist", nodeCPUList(d.NUMANode)+"\n")
	t.file(pd+"/config", string(configSpace(d)))
	t.link("/sys/bus/pci/devices/"+d.PCI, rel("/sys/bus/pci/devices/"+d.PCI, pd))
	if d.PartNumber != "" {
		t.file(pd+"/vpd", string(renderVPD(d.Product, d.PartNumber, d.Serial)))
	}
}

var stateNum = map[string]int{"NOP": 0, "DOWN": 1, "INIT": 2, "ARMED": 3, "ACTIVE": 4, "ACTIVE_DEFER": 5}
var physNum = map[string]int{"Sleep": 1, "Polling": 2, "Disabled": 3, "PortConfigurationTraining": 4, "LinkUp": 5, "LinkErrorRecovery": 6, "Phy Test": 7}

func mlx4PortText(p *Port) string {
	cur := map[string]string{"InfiniBand": "ib", "Ethernet": "eth"}[p.LinkLayer]
	if p.Mlx4Type == "auto" {
		return "auto (" + cur + ")"
	}
	return cur
}

func (s *State) renderPort(t *tree, d *Device, p *Port, dir string) {
	t.file(dir+"/state", fmt.Sprintf("%d: %s\n", stateNum[p.State], p.State))
	t.file(dir+"/phys_state", fmt.Sprintf("%d: %s\n", physNum[p.PhysState], p.PhysState))
	t.file(dir+"/link_layer", p.LinkLayer+"\n")
	t.file(dir+"/rate", p.Rate+"\n")
	t.file(dir+"/lid", fmt.Sprintf("0x%x\n", p.LID))
	t.file(dir+"/sm_lid", fmt.Sprintf("0x%x\n", p.SMLID))
	t.file(dir+"/lid_mask_count", "0\n")
	t.file(dir+"/sm_sl", "0\n")
	capMask := "0xa651e848"
	if p.LinkLayer == "Ethernet" {
		capMask = "0x00010000"
	}
	t.file(dir+"/cap_mask", capMask+"\n")
	gids := s.gidTable(d, p)
	for i := 0; i < gidTableLen; i++ {
		g := gid{}
		if i < len(gids) {
			g = gids[i]
		}
		t.file(fmt.Sprintf("%s/gids/%d", dir, i), g.text()+"\n")
		t.file(fmt.Sprintf("%s/gid_attrs/types/%d", dir, i), g.typ+"\n")
		t.file(fmt.Sprintf("%s/gid_attrs/ndevs/%d", dir, i), g.ndev+"\n")
	}
	if p.LinkLayer == "InfiniBand" {
		for i := 0; i < pkeyTableLen; i++ {
			k := 0
			if i < len(p.PKeys) {
				k = p.PKeys[i]
			}
			t.file(fmt.Sprintf("%s/pkeys/%d", dir, i), fmt.Sprintf("0x%04x\n", k))
		}
	}
}

type gid struct {
	addr [16]byte
	typ  string
	ndev string
}

func (g gid) zero() bool { return g.addr == [16]byte{} }

func (g gid) text() string {
	var parts []string
	for i := 0; i < 16; i += 2 {
		parts = append(parts, fmt.Sprintf("%02x%02x", g.addr[i], g.addr[i+1]))
	}
	return strings.Join(parts, ":")
}

func guidBytes(guid string) []byte {
	h := strings.ReplaceAll(guid, ":", "")
	out := make([]byte, 8)
	for i := 0; i < 8 && 2*i+2 <= len(h); i++ {
		v, _ := strconv.ParseUint(h[2*i:2*i+2], 16, 8)
		out[i] = byte(v)
	}
	return out
}

// gidTable is the port's GID table: the link-local GID from the port GUID
// on InfiniBand; on Ethernet, link-local v1/v2 then one v1/v2 pair per IPv4
// address of the port's netdev (the order show_gids prints on real hosts),
// then of each vlan on it.
func (s *State) gidTable(d *Device, p *Port) []gid {
	var out []gid
	ll := gid{}
	ll.addr[0], ll.addr[1] = 0xfe, 0x80
	copy(ll.addr[8:], guidBytes(d.NodeGUID))
	if p.LinkLayer == "InfiniBand" {
		ll.typ = "IB/RoCE v1"
		return append(out, ll)
	}
	nd := s.portNetdev(d, p)
	if nd == nil {
		return nil
	}
	types := gidTypesOf(d, p)
	for _, typ := range types {
		g := ll
		g.typ, g.ndev = typ, nd.Name
		out = append(out, g)
	}
	uppers := []*Netdev{nd}
	for _, n := range s.Netdevs {
		if n.Kind == "vlan" && n.Lower == nd.Name {
			uppers = append(uppers, n)
		}
	}
	for _, u := range uppers {
		for _, a := range append(append([]string{}, u.Addrs...), u.DynAddrs...) {
			pre, err := netip.ParsePrefix(a)
			if err != nil || !pre.Addr().Is4() {
				continue
			}
			v4 := pre.Addr().As4()
			for _, typ := range types {
				g := gid{typ: typ, ndev: u.Name}
				g.addr[10], g.addr[11] = 0xff, 0xff
				copy(g.addr[12:], v4[:])
				out = append(out, g)
			}
		}
	}
	if len(out) > gidTableLen {
		out = out[:gidTableLen]
	}
	return out
}

// gidTypesOf is the GID types a port's device makes (the kernel's
// roce_gid_type_mask_support): rdma_rxe encapsulates in UDP only, so RoCE
// v2; a hardware RoCE port both; an InfiniBand port IB GIDs, which
// gid_attrs/types names "IB/RoCE v1".
func gidTypesOf(d *Device, p *Port) []string {
	switch {
	case p.LinkLayer != "Ethernet":
		return []string{"IB/RoCE v1"}
	case d.Driver == "rxe":
		return []string{"RoCE v2"}
	case d.Driver == "mlx4" && d.PCIID == "0x1003":
		// A ConnectX-3 that is not a Pro: mlx4_ib gives its ports RoCE v1
		// GIDs only (RoCE v2 needs the firmware's ROCE_V1_V2 capability,
		// which the ConnectX-3 Pro, 0x1007, has; drivers/infiniband/hw/
		// mlx4/main.c, mlx4_port_immutable).
		return []string{"IB/RoCE v1"}
	}
	return []string{"IB/RoCE v1", "RoCE v2"}
}

// portNetdev is the netdev on a port now (rxe: its parent).
func (s *State) portNetdev(d *Device, p *Port) *Netdev {
	if d.Driver == "rxe" {
		return s.Netdev(d.Parent)
	}
	for _, n := range s.Netdevs {
		if n.Device == d.Name && n.Port == p.Num && (n.PKey == 0 || n.PKey == 0xffff) {
			return n
		}
	}
	return nil
}

func (s *State) renderNetdev(t *tree, n *Netdev) {
	dir := s.netdevDir(n)
	t.link("/sys/class/net/"+n.Name, rel("/sys/class/net/"+n.Name, dir))
	oper := "down"
	if n.Up {
		oper = "up"
	}
	t.file(dir+"/operstate", oper+"\n")
	t.file(dir+"/mtu", fmt.Sprintf("%d\n", n.MTU))
	t.file(dir+"/address", n.MAC+"\n")
	uevent := "INTERFACE=" + n.Name + "\n"
	if dt := devType(n); dt != "" {
		uevent = "DEVTYPE=" + dt + "\n" + uevent // as a bridge's reads: DEVTYPE first
	}
	t.file(dir+"/uevent", uevent)
	carrier := "0"
	if n.Up {
		carrier = "1"
	}
	t.file(dir+"/carrier", carrier+"\n")
	switch {
	case isChild(n):
		// A P_Key child: no device link, and ipoib sets dev_port and
		// dev_id only on the parent (ipoib_parent_init).
		t.file(dir+"/dev_port", "0\n")
		t.file(dir+"/dev_id", "0x0\n")
	case n.Device != "":
		if d := s.Device(n.Device); d != nil && d.PCI != "" {
			t.link(dir+"/device", "../../../"+d.PCI)
		}
		t.file(dir+"/dev_port", fmt.Sprintf("%d\n", n.Port-1))
		t.file(dir+"/dev_id", fmt.Sprintf("0x%x\n", n.Port-1))
	}
	if n.ECN != nil {
		s.renderECN(t, dir, n.ECN)
	}
	if n.Kind == "ipoib" {
		t.file(dir+"/type", "32\n")
		t.file(dir+"/mode", n.Mode+"\n")
		t.file(dir+"/pkey", fmt.Sprintf("0x%04x\n", n.PKey))
	} else {
		t.file(dir+"/type", "1\n")
	}
}

func (s *State) renderProc(t *tree) {
	t.file("/proc/sys/kernel/hostname", s.Hostname+"\n")
	t.file("/proc/sys/kernel/random/boot_id", s.BootID()+"\n")
	t.file("/proc/cmdline", s.cmdline()+"\n")
	var b strings.Builder
	mods := append([]string{}, s.Modules...)
	sort.Strings(mods)
	for _, m := range mods {
		fmt.Fprintf(&b, "%s 16384 0 - Live 0x0000000000000000\n", m)
	}
	t.file("/proc/modules", b.String())
	s.renderSysctl(t)
	// /sys/module/ib_core/holders: the loaded modules that use the RDMA
	// core, as symlinks to their /sys/module directories.
	if s.ModuleLoaded("ib_core") {
		t.dir("/sys/module/ib_core/holders")
		for _, m := range mods {
			if slices.Contains(IBCoreUsers, m) {
				t.dir("/sys/module/" + m)
				t.link("/sys/module/ib_core/holders/"+m, "../../"+m)
			}
		}
	}
	for _, p := range s.Processes {
		t.file(fmt.Sprintf("/proc/%d/comm", p.PID), p.Comm+"\n")
	}
	if c := s.opensmComm(); c != "" {
		t.file(fmt.Sprintf("/proc/%d/comm", smMainPID), c+"\n")
	}
	s.renderUsers(t)
}

// renderConfigfs renders /sys/kernel/config/rdma_cm: present while the
// rdma_cm module is loaded, with the device groups that were mkdir'ed.
func (s *State) renderConfigfs(root string) error {
	t := newTree(root)
	s.renderCM(t)
	return t.sync(cmRoot)
}

// renderCM renders rdma_cm's part of configfs into t.
func (s *State) renderCM(t *tree) {
	if !s.ModuleLoaded("rdma_cm") || !s.configfsMounted() {
		return
	}
	t.dir("/sys/kernel/config/rdma_cm")
	for _, g := range s.CMGroups {
		d := s.Device(g)
		if d == nil {
			continue
		}
		for _, p := range d.Ports {
			v := s.roce(d, p)
			dir := fmt.Sprintf("/sys/kernel/config/rdma_cm/%s/ports/%d", d.Name, p.Num)
			t.file(dir+"/default_roce_mode", v.Mode+"\n")
			t.file(dir+"/default_roce_tos", fmt.Sprintf("%d\n", v.Tos))
		}
	}
}

// roce returns the kernel's current rdma_cm defaults of a port.
func (s *State) roce(d *Device, p *Port) RoceDefaults {
	if v, ok := s.RdmaCM[fmt.Sprintf("%s/%d", d.Name, p.Num)]; ok {
		return v
	}
	return initialRoce(d, p)
}

// rdmaRenamePath is where Debian's rdma-core installs its udev helper.
const rdmaRenamePath = "/usr/lib/udev/rdma_rename"

// renderRdmaRename installs, or takes away, rdma-core's udev helper: a
// stand-in the sim's udev reads the rules of (sim/names.go), never run.
func (s *State) renderRdmaRename(root string) error {
	p := filepath.Join(root, rdmaRenamePath)
	if !s.RdmaRename {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	if _, err := os.Lstat(p); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte("#!/bin/sh\n# stands for rdma-core's rdma_rename on the simulated host\nexit 0\n"), 0o755)
}
