package plan

import (
	"github.com/rdmaform/rdmaform/inventory"
)

// Renames are the names a plan's rename stage gives: each map takes a
// name the host has now to the one it has after that stage, for RDMA
// devices and for netdevs.
type Renames struct {
	RDMA   map[string]string
	Netdev map[string]string
}

func (r Renames) empty() bool { return len(r.RDMA) == 0 && len(r.Netdev) == 0 }

// TypedRenamer is the optional interface of a provider whose changes
// rename RDMA devices and netdevs (the names stage): Build asks it, once
// its observation is read and before any other provider's, for the
// renames its plan makes, and every other provider observes and plans
// with the names they give (Request.NetdevNow, Request.RDMANow), so that
// one apply renames and configures under the new names.
type TypedRenamer[O any] interface {
	Renames(req *Request, obs O) Renames
}

func (a *adapter[O, P]) renames(req *Request, observed any) Renames {
	return a.t.(TypedRenamer[O]).Renames(req, Observation[O](observed))
}

func (a *adapter[O, P]) renamer() bool {
	_, ok := a.t.(TypedRenamer[O])
	return ok
}

// renamer is a provider adapter; renamer() tells whether its provider
// renames.
type renamer interface {
	renamer() bool
	renames(req *Request, observed any) Renames
}

// renamesOf tells whether pr renames.
func renamesOf(pr Provider) (renamer, bool) {
	r, ok := pr.(renamer)
	return r, ok && r.renamer()
}

// NetdevNow is the name the host gives now to the netdev this request
// calls name: the old name of a netdev the plan renames, else name.
// Observe reads the host with it.
func (r *Request) NetdevNow(name string) string {
	if old, ok := r.netdevNow[name]; ok {
		return old
	}
	return name
}

// RDMANow is the name the host gives now to the RDMA device this request
// calls name (see NetdevNow).
func (r *Request) RDMANow(name string) string {
	if old, ok := r.rdmaNow[name]; ok {
		return old
	}
	return name
}

// NetdevAfter is the name this request gives to the netdev the host
// calls now: its new name when the plan renames it, else now. Observe
// keys what it reads from the host (a list of links) with it.
func (r *Request) NetdevAfter(now string) string {
	if to, ok := r.renames.Netdev[now]; ok {
		return to
	}
	return now
}

// RDMAAfter is the name this request gives to the RDMA device the host
// calls now (see NetdevAfter).
func (r *Request) RDMAAfter(now string) string {
	if to, ok := r.renames.RDMA[now]; ok {
		return to
	}
	return now
}

// Renamed returns the request the stages after a rename plan with: its
// inventory has the devices and netdevs under their new names (a copy;
// the host's is left as read) and NetdevNow/RDMANow lead back to the
// names Observe finds on the host now. With no renames it is r.
func (r *Request) Renamed(rn Renames) *Request {
	if rn.empty() {
		return r
	}
	v := *r
	v.renames = rn
	v.netdevNow, v.rdmaNow = map[string]string{}, map[string]string{}
	for old, n := range rn.Netdev {
		v.netdevNow[n] = old
	}
	for old, n := range rn.RDMA {
		v.rdmaNow[n] = old
	}
	netdev := func(n string) string {
		if to, ok := rn.Netdev[n]; ok {
			return to
		}
		return n
	}
	inv := &inventory.Inventory{}
	copies := map[*inventory.Device]*inventory.Device{}
	for _, d := range r.Inv.Devices {
		c := *d
		if to, ok := rn.RDMA[d.Name]; ok {
			c.Name = to
		}
		c.Parent = netdev(d.Parent)
		c.Ports = make([]*inventory.Port, len(d.Ports))
		for i, p := range d.Ports {
			pc := *p
			pc.Netdevs = make([]string, len(p.Netdevs))
			for j, n := range p.Netdevs {
				pc.Netdevs[j] = netdev(n)
			}
			c.Ports[i] = &pc
		}
		copies[d] = &c
		inv.Devices = append(inv.Devices, &c)
	}
	v.Inv = inv
	v.Devices = make([]*inventory.Device, len(r.Devices))
	for i, d := range r.Devices {
		if d != nil {
			v.Devices[i] = copies[d]
		}
	}
	return &v
}
