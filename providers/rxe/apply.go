package rxe

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// Make implements plan.TypedProvider.
//
// Equivalent to: rdma link delete NAME (absent, or bound elsewhere), then
// rdma link add NAME type rxe netdev NETDEV
func (p *Provider) Make(_ context.Context, h *host.Host, c *plan.Change, pl *payload) error {
	if err := evict(h, pl); err != nil {
		return err
	}
	if pl.netdev == "" || pl.deleteFirst {
		if err := del(h, pl.name); err != nil {
			return err
		}
		if pl.netdev == "" {
			return nil
		}
	}
	return add(h, pl.name, pl.netdev)
}

// evict deletes the links pl.evict names that are still bound to
// pl.netdev; one that an earlier change of this plan already deleted, or
// deleted and created elsewhere, is left alone.
func evict(h *host.Host, pl *payload) error {
	if len(pl.evict) == 0 {
		return nil
	}
	links, err := h.Net.RdmaLinkList()
	if err != nil {
		return fmt.Errorf("freeing netdev %s for %s: %w", pl.netdev, pl.name, err)
	}
	for _, l := range links {
		for _, other := range pl.evict {
			if l.Name == other && l.Netdev == pl.netdev {
				if err := del(h, other); err != nil {
					return fmt.Errorf("freeing netdev %s for %s: %w", pl.netdev, pl.name, err)
				}
			}
		}
	}
	return nil
}

// del deletes an rxe link. A link that no longer exists is not an error:
// another change of this plan (an eviction) removed it.
//
// Equivalent to: rdma link delete NAME
func del(h *host.Host, name string) error {
	err := h.Net.RdmaLinkDel(name)
	if err == nil || errors.Is(err, syscall.ENODEV) {
		return nil
	}
	return fmt.Errorf("rdma link delete %s: %w", name, err)
}

// add creates an rxe link, naming what each of the kernel's refusals
// means.
//
// Equivalent to: rdma link add NAME type rxe netdev NETDEV
func add(h *host.Host, name, nd string) error {
	err := h.Net.RdmaLinkAdd(name, nd)
	if err == nil {
		return nil
	}
	cmd := fmt.Sprintf("rdma link add %s type rxe netdev %s", name, nd)
	switch {
	case errors.Is(err, host.ErrNoRDMA):
		return fmt.Errorf("%s: %w", cmd, err)
	case errors.Is(err, syscall.ENODEV):
		return fmt.Errorf("%s: no Ethernet netdev %s (ENODEV): %w", cmd, nd, err)
	case errors.Is(err, syscall.EEXIST):
		return fmt.Errorf("%s: %s already carries a Soft-RoCE link (EEXIST): %w", cmd, nd, err)
	case errors.Is(err, syscall.ENFILE):
		return fmt.Errorf("%s: another RDMA device is called %s (ENFILE): %w", cmd, name, err)
	case errors.Is(err, syscall.EINVAL):
		return fmt.Errorf("%s: the kernel refused it (EINVAL): the rdma_rxe module is missing or cannot load (install the kernel's rdma_rxe, e.g. linux-modules-extra, and run modprobe rdma_rxe): %w", cmd, err)
	case errors.Is(err, syscall.EPERM):
		return fmt.Errorf("%s: the kernel refused it (EPERM; rxe cannot run on a VLAN netdev, or rdmaform lacks CAP_NET_ADMIN): %w", cmd, err)
	}
	return fmt.Errorf("%s: %w", cmd, err)
}
