package mlxemu

import (
	"strings"
)

// RunMST emulates MFT's `mst start`, `mst stop` and `mst status -v` on the
// emulator's adapters; start and stop change e.MSTStarted. Other commands
// print the script's unknown-argument error and exit 1.
func (e *Emulator) RunMST(args []string) (stdout, stderr []byte, exit int) {
	var b strings.Builder
	switch {
	case len(args) == 1 && args[0] == "start":
		b.WriteString("Starting MST (Mellanox Software Tools) driver set\n")
		b.WriteString("Loading MST PCI module - Success\n")
		b.WriteString("Loading MST PCI configuration module - Success\n")
		b.WriteString("Create devices\n")
		// Only pciconf nodes are created for ConnectX-4 and later, so the
		// PCI (memory access) module is unloaded again.
		b.WriteString("Unloading MST PCI module (unused) - Success\n")
		e.MSTStarted = true
		return []byte(b.String()), nil, 0
	case len(args) == 1 && args[0] == "stop":
		b.WriteString("Stopping MST (Mellanox Software Tools) driver set\n")
		b.WriteString("Unloading MST PCI module - Success\n")
		b.WriteString("Unloading MST PCI configuration module - Success\n")
		e.MSTStarted = false
		return []byte(b.String()), nil, 0
	case len(args) == 2 && args[0] == "status" && args[1] == "-v":
		return RenderMSTStatusVerbose(e.MSTStatus()), nil, 0
	}
	arg := strings.Join(args, " ")
	if len(args) > 1 {
		arg = args[len(args)-1]
	}
	b.WriteString("    -E- Unknown argument \"" + arg + "\"\n")
	return []byte(b.String()), nil, 1
}

// MSTStatus is what `mst status -v` reports for the emulator's adapters.
func (e *Emulator) MSTStatus() MSTStatus {
	s := MSTStatus{PCIConfModuleLoaded: e.MSTStarted}
	domain := false
	for _, a := range e.Adapters {
		if !strings.HasPrefix(fullBDF(a.BDF), "0000:") {
			domain = true
		}
	}
	for i, a := range e.Adapters {
		bdf := fullBDF(a.BDF)
		if !domain {
			bdf = strings.TrimPrefix(bdf, "0000:")
		}
		entry := MSTEntry{DeviceType: a.DeviceType, Rev: "0", BDF: bdf, RDMA: a.RDMAName, Netdevs: a.Netdevs, NUMA: a.NUMA}
		if e.MSTStarted {
			entry.MST = "/dev/mst/" + e.mstName(i)
		}
		s.Devices = append(s.Devices, entry)
	}
	return s
}
