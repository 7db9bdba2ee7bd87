package mlxfmt

import (
	"bufio"
	"bytes"
	"strings"
)

// What mlxconfig/mstconfig prints after a set that succeeded, on the line
// after "Applying... Done!": how the new configuration can be loaded.
// mlxconfig/mlxcfg_generic_commander.cpp, GenericCommander::
// loadConfigurationGetStr (Mellanox/mstflint tag v4.21.0-1, as at HEAD):
// on a ConnectX-4 or later adapter (dm_is_5th_gen_hca) it writes the MFRL
// register's warm boot reset trigger; when the firmware refuses that
// write, only a power cycle loads what was set. Printed by
// mlxcfg_ui.cpp's setDevCfgWithParams as "-I- %s\n".
const (
	SetRebootNotice     = "Please reboot machine to load new configurations."
	SetPowerCycleNotice = "Please power cycle machine to load new configurations."
)

// SetNeedsPowerCycle tells whether a set's output says that only a power
// cycle loads the new configuration (its -I- line is SetPowerCycleNotice).
func SetNeedsPowerCycle(out []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "-I-")) == SetPowerCycleNotice {
			return true
		}
	}
	return false
}
