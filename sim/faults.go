package sim

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// What a fault can break, besides tools (Fault.Tool):
//
//   - Write: a write under the simulated tree whose path contains the
//     string: a sysfs or configfs attribute (WriteAttr), a file
//     (WriteFile), a configfs group (Mkdir). Match, if set, is the
//     operation: write or mkdir.
//   - Netlink: one netlink operation (NetlinkOps, or * for all), on the
//     netdev or link Match names (any, if empty).
//   - Systemd: one service manager call (SystemdOps, or *), on the unit
//     Match names (any, if empty).
//   - NM: one NetworkManager D-Bus call (NMOps, or *), on the connection
//     Match names (any, if empty); it fails with the D-Bus error DBusError
//     (org.freedesktop.NetworkManager.Failed when empty) and Stderr as
//     NetworkManager's message, or hangs.
//   - Reset: the emulated mstfwreset/mlxfwreset's answer for the card
//     whose PCI function Match names (any, if empty): power-cycle (the
//     MFRL register reports no reset level), vfs (the reset is refused
//     while the card has VFs) or no-return (the reset succeeds but the
//     driver does not probe the card again: no RDMA device, no netdevs
//     until a reboot) or late (the same until Delay has passed); see
//     fwreset.go.
//   - Slow: the emulated perftest clients (ib_write_bw, ib_read_bw,
//     ib_send_bw, ib_write_lat) measure Slow (0 < Slow < 1) of the
//     bandwidth the port's rate gives, and the latency divided by Slow:
//     a slow host or link. Match, if set, is the peer address the run
//     goes to, exactly (the last operand): simulated hosts do not see
//     each other, so a slow host X among many is X with a slow fault,
//     and a slow fault matching X's address on each of the others.
//
// Each fails with Errno (EIO when empty) and Stderr as the kernel's or the
// manager's message, or, with Kill, SIGKILLs the process running against
// the simulated host just before the operation: what a crash, an OOM kill
// or a lost power supply does to rdmaform between two changes. Times
// counts down in sim.yaml before the kill, so a Times: 1 kill fires once.
//
// Drop instead makes the operation succeed without effect: the tool exits
// 0 having changed nothing, the write or the netlink call returns no
// error and the value stays what it was. That is a setting that does not
// stick (a driver that accepts a value and keeps its own, firmware that
// owns DCB): only reading the value back finds it.

// NetlinkOps are the netlink operations a fault can fail.
var NetlinkOps = []string{"LinkSetUp", "LinkSetDown", "LinkSetMTU", "LinkSetName", "LinkSetVF", "AddrAdd", "AddrDel", "RdmaLinkAdd", "RdmaLinkDel", "RdmaDevSetName", "RdmaSetNetnsMode"}

// SystemdOps are the service manager calls a fault can fail.
var SystemdOps = []string{"StartUnit", "StopUnit", "EnableUnitFiles", "DisableUnitFiles", "Reload"}

type faultKind int

const (
	faultTool faultKind = iota
	faultWrite
	faultNetlink
	faultSystemd
	faultNM
	faultReset
	faultSlow
)

func (k faultKind) String() string {
	switch k {
	case faultTool:
		return "tool"
	case faultWrite:
		return "write"
	case faultNetlink:
		return "netlink"
	case faultSystemd:
		return "systemd"
	case faultNM:
		return "nm"
	case faultReset:
		return "reset"
	case faultSlow:
		return "slow"
	}
	return fmt.Sprintf("faultKind(%d)", int(k))
}

// kind is what a fault breaks; Validate has checked exactly one is set.
func (f *Fault) kind() faultKind {
	switch {
	case f.Write != "":
		return faultWrite
	case f.Netlink != "":
		return faultNetlink
	case f.Systemd != "":
		return faultSystemd
	case f.NM != "":
		return faultNM
	case f.Reset != "":
		return faultReset
	case f.Slow != 0:
		return faultSlow
	}
	return faultTool
}

// matches reports whether the fault breaks this operation. name is the
// tool, path, netlink operation or systemd call; detail is the tool's
// argument line, the write operation, or the netdev/link/unit names.
func (f *Fault) matches(k faultKind, name, detail string) bool {
	if f.kind() != k {
		return false
	}
	switch k {
	case faultTool:
		return f.Tool == name && (f.Match == "" || strings.Contains(detail, f.Match))
	case faultWrite:
		return strings.Contains(name, f.Write) && (f.Match == "" || f.Match == detail)
	case faultNetlink:
		return (f.Netlink == "*" || f.Netlink == name) && (f.Match == "" || slices.Contains(strings.Fields(detail), f.Match))
	case faultSystemd:
		return (f.Systemd == "*" || f.Systemd == name) && (f.Match == "" || f.Match == detail)
	case faultNM:
		return (f.NM == "*" || f.NM == name) && (f.Match == "" || f.Match == detail)
	case faultReset:
		return f.Reset == name && (f.Match == "" || slotOf(f.Match) == slotOf(detail))
	case faultSlow:
		return f.Match == "" || f.Match == detail
	}
	return false
}

// Validate checks a fault before it is stored.
func (f *Fault) Validate() error {
	n := 0
	for _, s := range []string{f.Tool, f.Write, f.Netlink, f.Systemd, f.NM, f.Reset} {
		if s != "" {
			n++
		}
	}
	if f.Slow != 0 {
		n++
	}
	if n != 1 {
		return fmt.Errorf("a fault breaks exactly one of: a tool, a write, a netlink operation, a systemd call, a NetworkManager call, a firmware reset, the bandwidth (slow)")
	}
	if f.Slow != 0 {
		if !(f.Slow > 0 && f.Slow < 1) {
			return fmt.Errorf("slow is the share of the bandwidth the runs measure: above 0 and below 1, not %g", f.Slow)
		}
		if f.Errno != "" || f.Exit != 0 || f.Stdout != "" || f.Stderr != "" || f.Hang || f.Drop || f.Kill {
			return fmt.Errorf("a slow fault slows the runs and nothing else: no errno, exit code, message, hang, drop or kill")
		}
		if _, err := netip.ParseAddr(f.Match); f.Match != "" && err != nil {
			return fmt.Errorf("a slow fault matches the peer's IP address, not %q", f.Match)
		}
	}
	if f.NM != "" && f.NM != "*" && !slices.Contains(NMOps, f.NM) {
		return fmt.Errorf("unknown NetworkManager call %q (known: %s, *)", f.NM, strings.Join(NMOps, ", "))
	}
	if f.DBusError != "" && f.NM == "" {
		return fmt.Errorf("a D-Bus error name is for a NetworkManager call")
	}
	if (f.Reset == ResetLate) != (f.Delay > 0) {
		return fmt.Errorf("a late reset fault, and only it, has a delay (above 0): how long the card takes to register again")
	}
	if f.Reset != "" {
		if !slices.Contains(ResetFaults, f.Reset) {
			return fmt.Errorf("unknown reset fault %q (known: %s)", f.Reset, resetFaultHelp())
		}
		if f.Errno != "" || f.Exit != 0 || f.Stdout != "" || f.Stderr != "" || f.Hang || f.Drop || f.Kill {
			return fmt.Errorf("a reset fault answers as the reset tool does: no errno, exit code, message, hang, drop or kill")
		}
	}
	if f.Netlink != "" && f.Netlink != "*" && !slices.Contains(NetlinkOps, f.Netlink) {
		return fmt.Errorf("unknown netlink operation %q (known: %s, *)", f.Netlink, strings.Join(NetlinkOps, ", "))
	}
	if f.Systemd != "" && f.Systemd != "*" && !slices.Contains(SystemdOps, f.Systemd) {
		return fmt.Errorf("unknown systemd call %q (known: %s, *)", f.Systemd, strings.Join(SystemdOps, ", "))
	}
	if f.Write != "" && f.Match != "" && f.Match != "write" && f.Match != "mkdir" {
		return fmt.Errorf("a write fault matches the operation write or mkdir, not %q", f.Match)
	}
	if f.Errno != "" {
		if f.Tool != "" {
			return fmt.Errorf("a tool fault exits with a code; errno %s is for writes, netlink and systemd", f.Errno)
		}
		if _, err := errnoOf(f.Errno); err != nil {
			return err
		}
	}
	if f.Drop && (f.Kill || f.Hang || f.Errno != "" || f.Exit != 0 || f.Stdout != "" || f.Stderr != "") {
		return fmt.Errorf("a dropped operation succeeds without effect: no errno, exit code, message, hang or kill")
	}
	if f.Hang && f.Tool == "" && f.NM == "" {
		return fmt.Errorf("only a tool or a NetworkManager call can hang")
	}
	if f.Times < 0 {
		return fmt.Errorf("times must be 0 (always) or more")
	}
	return nil
}

// errnoOf maps EIO, EBUSY, ... to the errno.
func errnoOf(name string) (syscall.Errno, error) {
	if name == "" {
		return syscall.EIO, nil
	}
	for e := syscall.Errno(1); e < 256; e++ {
		if unix.ErrnoName(e) == name {
			return e, nil
		}
	}
	return 0, fmt.Errorf("unknown errno %q (EIO, EBUSY, EINVAL, EPERM, ...)", name)
}

// AddFault stores a fault in sim.yaml; faults fire in the order added.
func (s *Sim) AddFault(f Fault) error {
	if err := f.Validate(); err != nil {
		return err
	}
	s.lock()
	defer s.unlock()
	s.state.Faults = append(s.state.Faults, f)
	return s.save()
}

// ClearFaults removes every fault and returns how many there were.
func (s *Sim) ClearFaults() (int, error) {
	s.lock()
	defer s.unlock()
	n := len(s.state.Faults)
	s.state.Faults = nil
	return n, s.save()
}

// takeLocked returns a copy of the first fault that breaks this operation,
// counting it down (and saving sim.yaml when it has a count). A kill fault
// kills the process here, after the save. Callers hold s.mu.
func (s *Sim) takeLocked(k faultKind, name, detail string) *Fault {
	st := s.state
	for i := range st.Faults {
		f := &st.Faults[i]
		if !f.matches(k, name, detail) {
			continue
		}
		cp := *f
		if f.Times > 0 {
			f.Times--
			if f.Times == 0 {
				st.Faults = append(st.Faults[:i], st.Faults[i+1:]...)
			}
			_ = s.save()
		}
		if cp.Kill {
			killSelf()
		}
		return &cp
	}
	return nil
}

// killSelf is SIGKILL to the process running against the simulated host:
// no deferred function, no lock release by the program, no flush. The
// kernel still closes its files (and so releases its flock).
func killSelf() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is delivered asynchronously; never go on
}

// errDropped is what inject returns for a fault that drops the operation;
// callers return unlessDropped(err), so the operation succeeds without
// effect.
var errDropped = errors.New("dropped by a fault")

// unlessDropped is nil for an operation a fault dropped, else err.
func unlessDropped(err error) error {
	if errors.Is(err, errDropped) {
		return nil
	}
	return err
}

// inject returns the injected error for an operation (errDropped for a
// dropped one), or nil.
func (s *Sim) inject(k faultKind, name, detail string) error {
	s.lock()
	f := s.takeLocked(k, name, detail)
	s.unlock()
	if f == nil {
		return nil
	}
	if f.Drop {
		return errDropped
	}
	errno, _ := errnoOf(f.Errno)
	var err error = errno
	if f.Stderr != "" {
		err = &faultError{msg: strings.TrimSpace(f.Stderr), errno: errno}
	}
	switch k {
	case faultWrite:
		return &fs.PathError{Op: detail, Path: name, Err: err}
	case faultNetlink:
		return fmt.Errorf("netlink %s %s: %w", name, detail, err)
	}
	return fmt.Errorf("%s %s: %w", name, detail, err)
}

// faultError is an injected errno with a message of its own.
type faultError struct {
	msg   string
	errno syscall.Errno
}

func (e *faultError) Error() string { return e.msg + " (" + unix.ErrnoName(e.errno) + ")" }
func (e *faultError) Unwrap() error { return e.errno }
