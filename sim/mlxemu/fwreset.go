package mlxemu

// mstfwreset (mstflint) and mlxfwreset (MFT): the firmware reset tool's
// command line and output, as mstflint 4.21's small_utils/mstfwreset.py
// and mlxfwresetlib/cmd_reg_mfrl.py, cmd_reg_mcam.py print them (Debian's
// mstflint 4.21.0+1-1 installs that source as /usr/bin/mstfwreset). This
// writer is the emulator's own: rdmaform's parser
// (providers/firmware/mlxfmt/fwreset.go) shares no code with it, and
// internal/testlab/mstsrc checks testdata/real/mstfwreset against the
// Python format strings.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Reset levels (CmdRegMfrl.reset_levels_db in 4.21): the level, its
// description, and whether reset types apply to it.
var resetLevels = []struct {
	level     int
	desc      string
	withTypes bool
}{
	{0, `Driver, PCI link, network link will remain up ("live-Patch")`, false},
	{3, "Driver restart and PCI reset", true},
	{4, "Warm Reboot", true},
}

// Reset types (CmdRegMfrl.reset_types_db in 4.21); only the full chip
// reset is supported by the emulated adapters.
var resetTypes = []string{
	"Full chip reset",
	"Phy-less reset (keep network port active during reset)",
	"NIC only reset (for SoC devices)",
}

// DefaultResetLevels are the levels a ConnectX adapter's MFRL register
// reports when nothing else is recorded: a driver restart with PCI reset
// (3) and a warm reboot (4). The live patch (0) applies only to firmware
// images that allow it, never to a configuration change.
var DefaultResetLevels = []int{3, 4}

// SupportedResetLevels returns the levels the adapter's MFRL register
// reports (ResetLevels, or DefaultResetLevels when unset).
func (a *Adapter) SupportedResetLevels() []int {
	if a.ResetLevels != nil {
		return a.ResetLevels
	}
	return DefaultResetLevels
}

// ResetCall is one parsed command line of the reset tool.
type ResetCall struct {
	Device string
	// Level is the --level asked for, or -1.
	Level int
	// Command is query, reset or version (-v prints the version and
	// ends there, as argparse's version action does).
	Command    string
	Yes        bool
	SkipDriver bool
}

// resetUsage is argparse's usage line of 4.21, as captured
// (testdata/real/mstfwreset/usage-no-command.stderr), for the tool prog.
func resetUsage(prog string) string {
	pad := strings.Repeat(" ", len("usage: "+prog+" "))
	return "usage: " + prog + " --device DEVICE [--level {0,3,4}] [--type {0,1,2}]\n" +
		pad + "[--sync {0,1}] [--yes] [--skip_driver] [--version] [--help]\n" +
		pad + "{q,query,r,reset,reset_fsm_register}\n"
}

// ParseResetArgs reads the reset tool's arguments as its argparse parser
// does. On a usage error it returns argparse's stderr and exit status 2.
func ParseResetArgs(prog string, args []string) (ResetCall, string, int) {
	c := ResetCall{Level: -1}
	fail := func(msg string) (ResetCall, string, int) {
		return c, resetUsage(prog) + prog + ": error: " + msg + "\n", 2
	}
	haveDev := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, inline := strings.Cut(a, "=")
		if !strings.HasPrefix(a, "--") {
			name, val, inline = a, "", false
		}
		value := func(flag string) (string, bool) {
			if inline {
				return val, true
			}
			if i+1 >= len(args) {
				return "", false
			}
			i++
			return args[i], true
		}
		switch name {
		case "-d", "--device":
			v, ok := value(name)
			if !ok {
				return fail("argument --device/-d: expected one argument")
			}
			c.Device, haveDev = v, true
		case "-l", "--level":
			v, ok := value(name)
			if !ok {
				return fail("argument --level/-l: expected one argument")
			}
			n, err := strconv.Atoi(v)
			if err != nil {
				return fail(fmt.Sprintf("argument --level/-l: invalid int value: '%s'", v))
			}
			if n != 0 && n != 3 && n != 4 {
				return fail(fmt.Sprintf("argument --level/-l: invalid choice: %d (choose from 0, 3, 4)", n))
			}
			c.Level = n
		case "-t", "--type", "--sync":
			if _, ok := value(name); !ok {
				return fail("argument " + name + ": expected one argument")
			}
		case "-v", "--version":
			c.Command = "version"
			return c, "", 0
		case "-y", "--yes":
			c.Yes = true
		case "-s", "--skip_driver":
			c.SkipDriver = true
		default:
			switch {
			case strings.HasPrefix(a, "-"):
				return fail("unrecognized arguments: " + a)
			case c.Command != "":
				return fail("unrecognized arguments: " + a)
			case a == "q" || a == "query":
				c.Command = "query"
			case a == "r" || a == "reset":
				c.Command = "reset"
			default:
				return fail(fmt.Sprintf("argument command: invalid choice: '%s' (choose from 'q', 'query', 'r', 'reset', 'reset_fsm_register')", a))
			}
		}
	}
	var missing []string
	if !haveDev {
		missing = append(missing, "--device/-d")
	}
	if c.Command == "" {
		missing = append(missing, "command")
	}
	if len(missing) > 0 {
		return fail("the following arguments are required: " + strings.Join(missing, ", "))
	}
	return c, "", 0
}

// ResetVersion is -v of mstflint 4.21's mstfwreset (tools_version's
// GetVersionString), as captured (testdata/real/mstfwreset/version).
func ResetVersion(prog string) string {
	return prog + " 1.0.0, mstflint 4.21.0, built on Aug 17 2022, 09:12:52. Git SHA Hash: N/A\n"
}

// ResetError is how the tool ends on an exception: main's
// print("-E- %s." % str(e)) and exit status 1.
func ResetError(msg string) string { return "-E- " + msg + ".\n" }

// ResetSignalExit is how the tool ends on SIGINT or SIGTERM outside the
// steps where it ignores them (mstflint's small_utils/mstfwreset.py,
// commit b9d9e84: sigHndl resets the FSM register, so no reset happens,
// prints this and exits with status 1; ignore_signals covers the PCI
// reset and the mst restart).
func ResetSignalExit(sig int) string { return fmt.Sprintf("\nSignal %d received, Exiting...\n", sig) }

// ResetOpenError is isDevSupp's failure on a device it cannot open, as
// captured (testdata/real/mstfwreset/open-device-query): the message of
// mtcr's exception ends in a newline, so the '.' is a line of its own.
func ResetOpenError(dev string) string {
	return ResetError("Failed to Identify Device: " + dev + ", mopen: No such file or directory\n")
}

// ErrNoResetLevel is CmdNotSupported's message when the MFRL register
// reports no level at all.
const ErrNoResetLevel = "There is no supported reset-level"

// ErrVirtualMachine is reset_flow_host's refusal to reset when lscpu
// prints "Hypervisor vendor" (mstflint 4.21's mstfwreset.py; captured as
// testdata/real/mstfwreset/open-device-reset on a KVM guest).
const ErrVirtualMachine = "The tool is not supported on virtual machines"

// ErrVFs is MlnxDriverLinux's refusal when sriov_numvfs does not go to 0.
const ErrVFs = "Reset virtual functions failed! Please reset virtual functions manually and resume operation"

// LevelNotSupported is main's refusal of a --level the device does not
// support.
func LevelNotSupported(level int) string {
	return fmt.Sprintf("Reset-level '%d' is not supported in the current state of this device", level)
}

// cell is "{0}: {1:<62}-{2:<14}{3}\n".
func cell(n int, desc, support, def string) string {
	return fmt.Sprintf("%d: %-62s-%-14s%s\n", n, desc, support, def)
}

// RenderResetQuery is `mstfwreset -d DEV query` for an adapter whose MFRL
// register reports levels (none: "There is no supported reset-level").
// driverSync tells whether MCAM reports reset synchronisation by the
// driver. It returns stdout and the exit status.
func RenderResetQuery(levels []int, driverSync bool) (string, int) {
	var b strings.Builder
	b.WriteString("\n") // main's print("") before the command
	if len(levels) == 0 {
		b.WriteString(ResetError(ErrNoResetLevel))
		return b.String(), 1
	}
	def := -1
	for _, l := range resetLevels {
		if slices.Contains(levels, l.level) {
			def = l.level
			break
		}
	}
	b.WriteString("Reset-levels:\n")
	var typed []string
	for _, l := range resetLevels {
		sup, d := "Not Supported", ""
		if slices.Contains(levels, l.level) {
			sup = "Supported"
		}
		if l.level == def {
			d = "(default)"
		}
		b.WriteString(cell(l.level, l.desc, sup, d))
		if l.withTypes {
			typed = append(typed, strconv.Itoa(l.level))
		}
	}
	b.WriteString("\nReset-types (relevant only for reset-levels " + strings.Join(typed, ",") + "):\n")
	for i, t := range resetTypes {
		sup, d := "Not Supported", ""
		if i == 0 {
			sup, d = "Supported", "(default)"
		}
		b.WriteString(cell(i, t, sup, d))
	}
	b.WriteString("\n") // print() of query_text, which ends in a newline
	b.WriteString("Reset-sync (relevant only for reset-level 3):\n")
	b.WriteString(cell(0, "Tool is the owner", "Supported", "(default)"))
	sync := "Not supported"
	if driverSync {
		sync = "Supported"
	}
	b.WriteString(cell(1, "Driver is the owner", sync, ""))
	b.WriteString("\n")
	return b.String(), 0
}

// ResetLevelDescription is the level's description, or "".
func ResetLevelDescription(level int) string {
	for _, l := range resetLevels {
		if l.level == level {
			return l.desc
		}
	}
	return ""
}

// RenderResetStart is what `reset` prints before it acts: the level
// ("Minimal" when none was asked for) and AskUser's question, which
// --yes answers on the same line.
func RenderResetStart(dev string, level int, requested, yes bool) string {
	word := "Minimal"
	if requested {
		word = "Requested"
	}
	s := fmt.Sprintf("\n%s reset level for device, %s:\n\n%d: %s\nContinue with reset?[y/N] ", word, dev, level, ResetLevelDescription(level))
	if yes {
		s += "y\n"
	}
	return s
}

// step is printAndFlush("-I- %-40s-" % (name)) and then "Done".
func step(name string) string { return fmt.Sprintf("-I- %-40s-Done\n", name) }

// RenderResetSteps are the steps of a level 3 reset with the driver
// loaded (resetFlow, mstflint: no mst restart) and the final line.
func RenderResetSteps() string {
	return step("Sending Reset Command To Fw") + step("Stopping Driver") + step("Resetting PCI") +
		step("Starting Driver") + "-I- FW was loaded successfully.\n"
}

// RenderWarmRebootSteps are the steps of a level 4 reset: the driver is
// stopped and the machine rebooted.
func RenderWarmRebootSteps() string {
	return step("Sending Reset Command To Fw") + step("Stopping Driver") + step("Sending reboot command to machine")
}
