package irqaffinity

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/host"
)

// Why a finding and not a file of rdmaform's own: irqbalance 1.9.2
// (Debian 12's; irqbalance.c parse_command_line, classify.c) takes its
// bans only from its command line (--banirq=IRQ, --banmod=MODULE,
// --policyscript=PATH) and the IRQBALANCE_* environment, which its
// systemd unit reads from one file, /etc/default/irqbalance
// (EnvironmentFile=, ExecStart=/usr/sbin/irqbalance --foreground
// $IRQBALANCE_ARGS): that file is the operator's, and a drop-in's
// Environment= loses to it (systemd.exec: EnvironmentFile= settings
// override Environment=). IRQ numbers also change at boot and at a
// driver's probe, so --banirq written once goes stale; --banmod of the
// driver does not, but bans every function of that driver. And irqbalance
// reads its options only when it starts. Which ban fits is the
// operator's choice: the plan names the options and the file.

// Daemon is a running irqbalance and the bans of its command line.
type Daemon struct {
	PID int
	// BanIRQs and BanMods are its --banirq and --banmod values.
	BanIRQs []int    `json:",omitempty"`
	BanMods []string `json:",omitempty"`
	// PolicyScript is its --policyscript, whose answers rdmaform cannot
	// know.
	PolicyScript string `json:",omitempty"`
}

// findIRQBalance finds running irqbalance processes by /proc/PID/comm
// and reads their command lines. A process that ends while it is read
// is skipped.
func findIRQBalance(h *host.Host) ([]Daemon, error) {
	ents, err := h.FS.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("looking for irqbalance: %w", err)
	}
	var out []Daemon
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		comm, err := h.FS.ReadFile("/proc/" + e.Name() + "/comm")
		if err != nil || strings.TrimSpace(string(comm)) != "irqbalance" {
			continue
		}
		cmd, err := h.FS.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(bytes.TrimRight(cmd, "\x00")), "\x00")
		d := parseArgs(args)
		d.PID = pid
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out, nil
}

// longOpts are irqbalance 1.9.2's long options (irqbalance.c lopts) and
// whether each takes an argument; shortArg its short options that take
// one (the optstring "odfjVi:p:s:c:l:m:t:e:").
var longOpts = map[string]bool{
	"oneshot": false, "debug": false, "foreground": false, "powerthresh": true, "banirq": true,
	"deepestcache": true, "policyscript": true, "pid": true, "journal": false, "banmod": true,
	"interval": true, "version": false, "migrateval": true,
}

const shortArg = "ipsclmte"

var shortLong = map[byte]string{'i': "banirq", 'l': "policyscript", 'm': "banmod"}

// parseArgs reads an irqbalance command line (argv[0] first) as
// getopt_long does: --name=value or --name value, a unique prefix of a
// long name, clustered short options (-fi 40, -i40), "--" ending the
// options; words that are no options are skipped (getopt permutes them).
func parseArgs(argv []string) Daemon {
	var d Daemon
	set := func(name, val string) {
		switch name {
		case "banirq":
			// strtoull, as irqbalance reads it: the leading digits.
			n := 0
			i := 0
			for i < len(val) && val[i] >= '0' && val[i] <= '9' && n < 1<<24 {
				n = n*10 + int(val[i]-'0')
				i++
			}
			if i > 0 {
				d.BanIRQs = append(d.BanIRQs, n)
			}
		case "banmod":
			d.BanMods = append(d.BanMods, val)
		case "policyscript":
			d.PolicyScript = val
		}
	}
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--":
			return d
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			full := ""
			for l := range longOpts {
				if l == name {
					full = l
					break
				}
				if strings.HasPrefix(l, name) {
					if full != "" {
						full = "?" // ambiguous: getopt refuses it
					} else {
						full = l
					}
				}
			}
			if full == "" || full == "?" || !longOpts[full] {
				continue
			}
			if !hasVal && i+1 < len(argv) {
				i++
				val = argv[i]
			}
			set(full, val)
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for j := 1; j < len(a); j++ {
				c := a[j]
				if !strings.ContainsRune(shortArg, rune(c)) {
					continue
				}
				val := a[j+1:]
				if val == "" && i+1 < len(argv) {
					i++
					val = argv[i]
				}
				set(shortLong[c], val)
				break
			}
		}
	}
	return d
}

// moves are the IRQs of irqs that d would balance: neither banned by
// number nor by a module name that is part of the driver's (classify.c
// check_for_module_ban: strstr(driver, banned)).
func (d Daemon) moves(irqs []int, driver string) []int {
	for _, m := range d.BanMods {
		if driver != "" && strings.Contains(driver, m) {
			return nil
		}
	}
	var out []int
	for _, irq := range irqs {
		banned := false
		for _, b := range d.BanIRQs {
			if b == irq {
				banned = true
			}
		}
		if !banned {
			out = append(out, irq)
		}
	}
	return out
}
