// Package providers lists rdmaform's providers in stage order. Adding a
// provider is one package and one line here.
package providers

import (
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/acs"
	"github.com/rdmaform/rdmaform/providers/bootunit"
	"github.com/rdmaform/rdmaform/providers/ethtool"
	"github.com/rdmaform/rdmaform/providers/firmware"
	"github.com/rdmaform/rdmaform/providers/gpudriver"
	"github.com/rdmaform/rdmaform/providers/ipoib"
	"github.com/rdmaform/rdmaform/providers/irqaffinity"
	"github.com/rdmaform/rdmaform/providers/kcmdline"
	"github.com/rdmaform/rdmaform/providers/memlock"
	"github.com/rdmaform/rdmaform/providers/mlx4port"
	"github.com/rdmaform/rdmaform/providers/modules"
	"github.com/rdmaform/rdmaform/providers/names"
	"github.com/rdmaform/rdmaform/providers/netdev"
	"github.com/rdmaform/rdmaform/providers/pcie"
	"github.com/rdmaform/rdmaform/providers/qos"
	"github.com/rdmaform/rdmaform/providers/rails"
	"github.com/rdmaform/rdmaform/providers/rdmacm"
	"github.com/rdmaform/rdmaform/providers/rdmanetns"
	"github.com/rdmaform/rdmaform/providers/rxe"
	"github.com/rdmaform/rdmaform/providers/services"
	"github.com/rdmaform/rdmaform/providers/sriov"
	"github.com/rdmaform/rdmaform/providers/subnetmanager"
	"github.com/rdmaform/rdmaform/providers/sysctl"
)

// All returns every provider, in the order their changes apply.
func All() []plan.Provider {
	return []plan.Provider{
		firmware.New(),
		kcmdline.New(),
		rdmanetns.New(),
		gpudriver.NewWith(&GPUPath{}),
		modules.New(),
		names.New(),
		sriov.New(),
		pcie.New(),
		acs.New(),
		irqaffinity.New(),
		mlx4port.New(),
		rxe.New(),
		netdev.New(),
		sysctl.New(),
		ethtool.New(),
		qos.New(),
		rdmacm.New(),
		ipoib.New(),
		rails.New(),
		subnetmanager.New(),
		services.New(),
		memlock.New(),
		bootunit.New(),
	}
}
