package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmaform/rdmaform/internal/words"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/sim"
)

// simFaultCmd stores a fault in a simulated host's sim.yaml, for tests of
// failure handling: the next matching operation fails, hangs, or kills
// the rdmaform process running against the host.
func (a *app) simFaultCmd() *cobra.Command {
	var f sim.Fault
	var message string
	var clear bool
	var delay time.Duration
	cmd := &cobra.Command{
		Use:   "fault DIR (--tool T|--write PATH|--netlink OP|--systemd CALL|--nm CALL|--reset ANSWER [--delay D]|--slow FACTOR) [--match M] [--exit N|--errno E|--hang|--kill|--drop] [--message M] [--times N]",
		Short: "Make an operation of a simulated host fail, hang, not stick or kill rdmaform",
		Long: `Store a fault in the simulated host's sim.yaml. It breaks the first
matching operation of every later command (or the next N with --times):

  --tool T       a run of the emulated tool T (mlxconfig, mstconfig, nmcli,
                 modprobe, mst) whose arguments contain --match: it exits
                 with --exit and prints --message on stderr, or --hang
                 until the command's timeout
  --write PATH   a write (sysfs/configfs attribute, file, configfs mkdir)
                 to a path containing PATH; --match write|mkdir
  --netlink OP   a netlink operation (` + fmt.Sprint(sim.NetlinkOps) + ` or *)
                 on the netdev or link --match names
  --systemd CALL a service manager call (` + fmt.Sprint(sim.SystemdOps) + ` or *)
                 on the unit --match names
  --nm CALL      a NetworkManager D-Bus call (` + fmt.Sprint(sim.NMOps) + ` or *)
                 on the connection --match names: it fails with the D-Bus
                 error --dbus-error and --message, or --hang
  --reset ANSWER the emulated mstfwreset/mlxfwreset on the card whose PCI
                 function --match names: power-cycle (no reset level: only
                 a power cycle loads the firmware), vfs (the reset is
                 refused while the card has VFs), no-return (the reset
                 succeeds and loads the firmware, but the driver fails to
                 probe the card again, as after a failed mlx5_core probe:
                 its RDMA devices, netdevs and VFs stay absent until a
                 sim reboot) or late with --delay D (the same, until the
                 driver's probe succeeds D after the reset: a slow card)
  --slow FACTOR  the emulated perftest clients (ib_write_bw, ib_read_bw,
                 ib_send_bw, ib_write_lat) measure FACTOR (above 0, below
                 1) of the bandwidth the port's rate gives, and the
                 latency divided by FACTOR; with --match ADDR only runs to
                 the peer address ADDR. Simulated hosts do not see each
                 other: a slow host X among many is X with --slow F, and
                 --slow F --match X's address on each of the others

Writes, netlink and systemd fail with --errno (EIO by default) and
--message. --kill instead SIGKILLs the rdmaform process when the operation
is reached, before it is carried out. --drop makes it succeed without
effect (the tool exits 0, the write or netlink call returns no error, the
value stays): a setting that does not stick, which only a read-back
finds. --clear removes every fault.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := sim.Open(args[0])
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			if clear {
				n, err := s.ClearFaults()
				if err != nil {
					return &exitError{code: plan.ExitError, err: err}
				}
				fmt.Fprintf(a.env.Stdout, "cleared %d %s of %s\n", n, words.Plural(n, "fault", "faults"), args[0])
				return nil
			}
			if message != "" {
				f.Stderr = message + "\n"
			}
			f.Delay = sim.Duration(delay)
			if f.Tool != "" && f.Exit == 0 && !f.Hang && !f.Kill && !f.Drop {
				f.Exit = 1
			}
			if err := s.AddFault(f); err != nil {
				return &exitError{code: plan.ExitError, err: fmt.Errorf("sim fault: %w", err)}
			}
			fmt.Fprintf(a.env.Stdout, "added a fault to %s\n", args[0])
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Tool, "tool", "", "break runs of emulated `TOOL`")
	fl.StringVar(&f.Write, "write", "", "break writes to paths containing `PATH`")
	fl.StringVar(&f.Netlink, "netlink", "", "break the netlink operation `OP`")
	fl.StringVar(&f.Systemd, "systemd", "", "break the service manager call `CALL`")
	fl.StringVar(&f.NM, "nm", "", "break the NetworkManager D-Bus call `CALL`")
	fl.StringVar(&f.DBusError, "dbus-error", "", "D-Bus error `NAME` of a broken NetworkManager call (default org.freedesktop.NetworkManager.Failed)")
	fl.StringVar(&f.Reset, "reset", "", "answer firmware resets with `ANSWER` (power-cycle, vfs, no-return or late)")
	fl.DurationVar(&delay, "delay", 0, "how long after a late reset the card registers again (`D`, above 0)")
	fl.StringVar(&f.Match, "match", "", "only operations matching `M` (tool arguments, write|mkdir, netdev or link, unit)")
	fl.IntVar(&f.Exit, "exit", 0, "exit code of the broken tool run (default 1)")
	fl.StringVar(&f.Errno, "errno", "", "errno of a broken write, netlink or systemd operation (default EIO)")
	fl.StringVar(&message, "message", "", "the tool's stderr, or the kernel's or manager's message")
	fl.BoolVar(&f.Hang, "hang", false, "the tool hangs until the command's timeout")
	fl.BoolVar(&f.Kill, "kill", false, "SIGKILL the rdmaform process when the operation is reached")
	fl.BoolVar(&f.Drop, "drop", false, "the operation succeeds without effect (a setting that does not stick)")
	fl.IntVar(&f.Times, "times", 0, "fire this many times, then disappear (0: always)")
	fl.Float64Var(&f.Slow, "slow", 0, "emulated perftest runs measure `FACTOR` (0-1) of the bandwidth, the latency divided by it; --match: only runs to that peer address")
	fl.BoolVar(&clear, "clear", false, "remove every fault")
	return cmd
}
