package sim

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/rdmaform/rdmaform/host"
)

// simFS is the simulated host's filesystem: plain files under the
// directory, except where the kernel behaves unlike files. configfs
// rdma_cm groups, configfs attributes, mlx4 port types and empty GID
// attribute slots follow the kernel's rules (see reference/formats.md
// §3-4), with the same errnos.
type simFS struct {
	*host.RootFS
	sim *Sim
}

var _ host.FS = (*simFS)(nil)

const cmRoot = "/sys/kernel/config/rdma_cm"

var (
	cmGroupRE = regexp.MustCompile(`^/sys/kernel/config/rdma_cm/([^/]+)$`)
	cmAttrRE  = regexp.MustCompile(`^/sys/kernel/config/rdma_cm/([^/]+)/ports/([0-9]+)/(default_roce_mode|default_roce_tos)$`)
	mlx4RE    = regexp.MustCompile(`^/sys/bus/pci/devices/([^/]+)/mlx4_port([0-9]+)$`)
	gidAttrRE = regexp.MustCompile(`/ports/([0-9]+)/gid_attrs/(types|ndevs)/([0-9]+)$`)
)

func perr(op, name string, errno syscall.Errno) error {
	return &fs.PathError{Op: op, Path: name, Err: errno}
}

func cleanPath(name string) string { return path.Clean(name) }

// Mkdir implements host.FS; in rdma_cm it creates a device group.
func (f *simFS) Mkdir(name string, perm fs.FileMode) error {
	name = cleanPath(name)
	if err := f.sim.inject(faultWrite, name, "mkdir"); err != nil {
		return unlessDropped(err)
	}
	if m := cmGroupRE.FindStringSubmatch(name); m != nil {
		return f.sim.mutateGroups(func(st *State) error {
			if !st.ModuleLoaded("rdma_cm") {
				return perr("mkdir", name, syscall.ENOENT)
			}
			for _, g := range st.CMGroups {
				if g == m[1] {
					return perr("mkdir", name, syscall.EEXIST)
				}
			}
			if st.Device(m[1]) == nil {
				return perr("mkdir", name, syscall.ENODEV)
			}
			st.CMGroups = append(st.CMGroups, m[1])
			return nil
		})
	}
	if strings.HasPrefix(name, cmRoot+"/") {
		return perr("mkdir", name, syscall.EPERM)
	}
	return f.RootFS.Mkdir(name, perm)
}

// Remove implements host.FS; in rdma_cm it removes a device group (the
// values stay in the kernel).
func (f *simFS) Remove(name string) error {
	name = cleanPath(name)
	if m := cmGroupRE.FindStringSubmatch(name); m != nil {
		return f.sim.mutateGroups(func(st *State) error {
			for i, g := range st.CMGroups {
				if g == m[1] {
					st.CMGroups = append(st.CMGroups[:i], st.CMGroups[i+1:]...)
					return nil
				}
			}
			return perr("rmdir", name, syscall.ENOENT)
		})
	}
	if strings.HasPrefix(name, "/sys/") {
		return perr("remove", name, syscall.EPERM)
	}
	return f.RootFS.Remove(name)
}

// ReadFile implements host.FS; empty GID slots' attributes fail with
// EINVAL as they do on a real kernel.
func (f *simFS) ReadFile(name string) ([]byte, error) {
	b, err := f.RootFS.ReadFile(name)
	if err != nil {
		return nil, err
	}
	if m := gidAttrRE.FindStringSubmatch(name); m != nil {
		gidPath := strings.TrimSuffix(name, fmt.Sprintf("gid_attrs/%s/%s", m[2], m[3])) + "gids/" + m[3]
		if g, err := f.RootFS.ReadFile(gidPath); err == nil && strings.TrimSpace(string(g)) == "0000:0000:0000:0000:0000:0000:0000:0000" {
			return nil, perr("read", name, syscall.EINVAL)
		}
	}
	return b, nil
}

// WriteAttr implements host.FS with the kernel's parsing of each attribute.
func (f *simFS) WriteAttr(name string, data []byte) error {
	name = cleanPath(name)
	if err := f.sim.inject(faultWrite, name, "write"); err != nil {
		return unlessDropped(err)
	}
	if m := cmAttrRE.FindStringSubmatch(name); m != nil {
		port, _ := strconv.Atoi(m[2])
		return f.sim.mutate(true, func(st *State) error { return st.writeRdmaCM(name, m[1], port, m[3], string(data)) })
	}
	if m := mlx4RE.FindStringSubmatch(name); m != nil {
		port, _ := strconv.Atoi(m[2])
		return f.sim.mutate(false, func(st *State) error { return st.writeMlx4Port(name, m[1], port, string(data)) })
	}
	if m := numVFsRE.FindStringSubmatch(name); m != nil {
		return f.sim.mutate(false, func(st *State) error { return st.writeNumVFs(name, m[1], string(data)) })
	}
	if m := autoprobeRE.FindStringSubmatch(name); m != nil {
		return f.sim.mutate(false, func(st *State) error { return st.writeAutoprobe(name, m[1], string(data)) })
	}
	if m := ecnRE.FindStringSubmatch(name); m != nil {
		// One file changes: save the state and write just that file.
		if err := f.sim.mutateSaved(func(st *State) error { return st.writeECN(name, m[1], m[2], m[3], string(data)) }); err != nil {
			return err
		}
		return f.RootFS.WriteFile(name, []byte(strings.TrimSpace(string(data))+"\n"), 0o644)
	}
	if m := cnpRE.FindStringSubmatch(name); m != nil {
		return f.sim.mutate(false, func(st *State) error { return st.writeCNP(name, m[1], m[2], string(data)) })
	}
	if m := pciDrvRE.FindStringSubmatch(name); m != nil {
		return f.sim.mutate(false, func(st *State) error { return st.writeBind(name, m[1], m[2], string(data)) })
	}
	if m := sysctlRE.FindStringSubmatch(name); m != nil {
		return f.sim.mutate(false, func(st *State) error { return st.writeSysctl(name, m[1], string(data)) })
	}
	if m := irqAffinityRE.FindStringSubmatch(name); m != nil {
		irq, _ := strconv.Atoi(m[1])
		return f.sim.mutate(false, func(st *State) error { return st.writeIRQAffinity(name, irq, string(data)) })
	}
	if strings.HasPrefix(name, "/sys/") || strings.HasPrefix(name, "/proc/") {
		if _, err := f.RootFS.Stat(name); err != nil {
			return err
		}
		return perr("write", name, syscall.EACCES)
	}
	return f.RootFS.WriteAttr(name, data)
}

// WriteAttrAt implements host.AtWriter: a PCI function's config space
// takes a register write (pcie.go); any other attribute is refused as
// WriteAttr refuses it.
func (f *simFS) WriteAttrAt(name string, data []byte, off int64) error {
	name = cleanPath(name)
	if err := f.sim.inject(faultWrite, name, "write"); err != nil {
		return unlessDropped(err)
	}
	if m := pciConfigRE.FindStringSubmatch(name); m != nil {
		return f.sim.mutate(false, func(st *State) error { return st.writeConfig(name, m[1], data, off) })
	}
	if _, err := f.RootFS.Stat(name); err != nil {
		return err
	}
	return perr("write", name, syscall.EACCES)
}

// WriteFile implements host.FS; only faults make it differ from a file.
func (f *simFS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	if err := f.sim.inject(faultWrite, cleanPath(name), "write"); err != nil {
		return unlessDropped(err)
	}
	return f.RootFS.WriteFile(name, data, perm)
}

// writeRdmaCM stores a configfs rdma_cm attribute as cma_configfs.c does:
// the mode must be exactly "IB/RoCE v1" or "RoCE v2" (one trailing newline
// allowed) and supported by the port; the ToS is a u8 in any base.
func (st *State) writeRdmaCM(name, dev string, port int, attr, data string) error {
	found := false
	for _, g := range st.CMGroups {
		found = found || g == dev
	}
	d := st.Device(dev)
	if !found || d == nil {
		return perr("open", name, syscall.ENOENT)
	}
	p := d.Port(port)
	if p == nil {
		return perr("open", name, syscall.ENOENT)
	}
	key := fmt.Sprintf("%s/%d", dev, port)
	v := st.roce(d, p)
	val := strings.TrimSuffix(data, "\n")
	switch attr {
	case "default_roce_mode":
		if val != "IB/RoCE v1" && val != "RoCE v2" {
			return perr("write", name, syscall.EINVAL)
		}
		// cma_set_default_gid_type: the port must support GIDs of that
		// type (rxe: RoCE v2 only; InfiniBand: IB only).
		if !slices.Contains(gidTypesOf(d, p), val) {
			return perr("write", name, syscall.EINVAL)
		}
		v.Mode = val
	case "default_roce_tos":
		n, err := strconv.ParseUint(val, 0, 64)
		if err != nil {
			return perr("write", name, syscall.EINVAL)
		}
		if n > 255 {
			return perr("write", name, syscall.ERANGE)
		}
		v.Tos = int(n)
	}
	if st.RdmaCM == nil {
		st.RdmaCM = map[string]RoceDefaults{}
	}
	st.RdmaCM[key] = v
	return nil
}

// writeMlx4Port sets an mlx4 port type as mlx4_core does: exactly "ib\n",
// "eth\n" or "auto\n"; port 1 Ethernet with port 2 InfiniBand is refused.
func (st *State) writeMlx4Port(name, pci string, port int, data string) error {
	d := st.DeviceByPCI(pci)
	if d == nil || d.Driver != "mlx4" || d.Port(port) == nil {
		return perr("open", name, syscall.ENOENT)
	}
	p := d.Port(port)
	var ll string
	switch data {
	case "ib\n":
		ll = "InfiniBand"
	case "eth\n":
		ll = "Ethernet"
	case "auto\n":
		ll = p.LinkLayer
		if p.Peer != "" {
			ll = p.Peer
		}
	default:
		return perr("write", name, syscall.EINVAL)
	}
	if other := d.Port(3 - port); other != nil {
		p1, p2 := ll, other.LinkLayer
		if port == 2 {
			p1, p2 = other.LinkLayer, ll
		}
		if p1 == "Ethernet" && p2 == "InfiniBand" {
			return perr("write", name, syscall.EINVAL)
		}
	}
	p.Mlx4Type = strings.TrimSuffix(data, "\n")
	if ll != p.LinkLayer {
		st.reregister(d)
	}
	p.LinkLayer = ll
	st.reconcilePorts()
	return nil
}

// reregister is what mlx4_change_port_types does when a port's type
// changes: it unregisters every mlx4 interface of the card and registers
// them again, so each port's netdev is made anew (the driver's MTU, no
// addresses, P_Key children gone) and the RDMA device's rdma_cm defaults
// are the kernel's initial ones. The configfs groups stay: they name the
// device, and the new one has the same name.
func (st *State) reregister(d *Device) {
	for _, p := range d.Ports {
		for _, n := range []string{p.NetdevEth, p.NetdevIB} {
			if n != "" {
				st.removeNetdev(n)
			}
		}
		delete(st.RdmaCM, fmt.Sprintf("%s/%d", d.Name, p.Num))
	}
}
