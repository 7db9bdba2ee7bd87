package cli

import (
	"fmt"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/providers/gpudriver"
)

// driverParamItem is one entry of the NVIDIA driver parameters' staged
// ledger in status's document.
type driverParamItem struct {
	// Param is the module parameter (NVreg_...), Value the value
	// rdmaform wrote to File.
	Param    string `json:"param"`
	Value    int    `json:"value"`
	File     string `json:"file"`
	StagedAt string `json:"staged_at"`
	BootID   string `json:"staged_boot_id"`
	// Current is the running driver's value (/proc/driver/nvidia/params):
	// a number, "absent" or "not loaded".
	Current string `json:"current"`
	// State: pending (waits for the driver's next load), took (the
	// running driver has it) or failed (a reboot came and the driver
	// loaded without it: an activation failure).
	State       string `json:"state"`
	EarlierBoot bool   `json:"earlier_boot"`

	entry gpudriver.LedgerEntry
}

// checkDriverParams reads the driver parameters' staged ledger and
// checks each entry against the running driver and this boot's ID.
func (st *statusOf) checkDriverParams(h *host.Host) error {
	l, err := gpudriver.ReadLedger(h.FS)
	if err != nil || len(l.Entries) == 0 {
		return err
	}
	d, err := inventory.ReadNVIDIA(h.FS)
	if err != nil {
		return err
	}
	boot, _ := host.ReadAttr(h.FS, gpudriver.BootIDPath)
	st.paramsBootID = boot
	for _, e := range l.Entries {
		state, cur := e.Check(d, boot)
		st.driverParams = append(st.driverParams, driverParamItem{Param: e.Param, Value: e.Value, File: e.File, StagedAt: e.StagedAt.Format(time.RFC3339),
			BootID: e.BootID, Current: cur, State: state, EarlierBoot: boot != "" && e.BootID != boot, entry: e})
	}
	return nil
}

// paramsWait and paramsFailed tell whether a driver parameter waits for
// the driver's next load, or did not take after a reboot.
func (st *statusOf) paramsWait() bool   { return st.paramsIn(gpudriver.StateWaits) }
func (st *statusOf) paramsFailed() bool { return st.paramsIn(gpudriver.StateFailed) }

func (st *statusOf) paramsIn(state string) bool {
	for _, it := range st.driverParams {
		if it.State == state {
			return true
		}
	}
	return false
}

// line is a driver parameter's entry in status's text.
func (it driverParamItem) line(bootID string) string {
	when := "in this boot"
	if it.EarlierBoot {
		when = "in boot " + it.BootID + " (an earlier boot)"
	}
	what := fmt.Sprintf("%s=%d: %s written at %s %s", it.Param, it.Value, it.File, it.StagedAt, when)
	switch it.State {
	case gpudriver.StateFailed:
		return "  ! " + it.entry.DidNotTake(bootID, it.Current)
	case gpudriver.StateTook:
		return "    " + what + ": the running driver has it; the next apply drops the entry"
	}
	if it.Current == "not loaded" {
		return "    " + what + ": the driver is not loaded; waits for its next load (a reboot)"
	}
	return "    " + what + ": the running driver has " + it.Current + "; waits for its next load (a reboot)"
}
