// Package portstate names the states of an RDMA port as the kernel spells
// them in /sys/class/infiniband/DEV/ports/N/state and phys_state ("4:
// ACTIVE", "5: LinkUp": the number, then the name), and as a spec's expect
// block writes them (the name). Every package says these words through
// this one, so the spelling cannot drift.
package portstate

import (
	"slices"
	"strings"
)

// State is a port's logical state, the name part of sysfs state.
type State string

// The logical states (the kernel's ib_port_state names).
const (
	NOP         State = "NOP"
	Down        State = "DOWN"
	Init        State = "INIT"
	Armed       State = "ARMED"
	Active      State = "ACTIVE"
	ActiveDefer State = "ACTIVE_DEFER"
)

// States lists every logical state, in the kernel's order.
var States = []State{NOP, Down, Init, Armed, Active, ActiveDefer}

// Phys is a port's physical state, the name part of sysfs phys_state.
type Phys string

// The physical states (the kernel's phys_state names).
const (
	Sleep             Phys = "Sleep"
	Polling           Phys = "Polling"
	Disabled          Phys = "Disabled"
	Training          Phys = "PortConfigurationTraining"
	LinkUp            Phys = "LinkUp"
	LinkErrorRecovery Phys = "LinkErrorRecovery"
	PhyTest           Phys = "Phy Test"
)

// PhysStates lists every physical state, in the kernel's order.
var PhysStates = []Phys{Sleep, Polling, Disabled, Training, LinkUp, LinkErrorRecovery, PhyTest}

// OfSysfs is the logical state of a sysfs state value ("4: ACTIVE").
func OfSysfs(s string) State { return State(name(s)) }

// PhysOfSysfs is the physical state of a sysfs phys_state value ("5: LinkUp").
func PhysOfSysfs(s string) Phys { return Phys(name(s)) }

// Known reports whether s is one of States.
func (s State) Known() bool { return slices.Contains(States, s) }

// Known reports whether p is one of PhysStates.
func (p Phys) Known() bool { return slices.Contains(PhysStates, p) }

// name strips the number of "4: ACTIVE" / "5: LinkUp".
func name(s string) string {
	if _, after, ok := strings.Cut(s, ": "); ok {
		return strings.TrimSpace(after)
	}
	return strings.TrimSpace(s)
}
