package mlxemu

import (
	_ "embed"
	"fmt"
	"strings"
)

// usageText is mstconfig 4.21's help, captured from Debian's mstflint with
// LC_ALL=C; "mstconfig" is replaced by the tool's name when printed. MFT's
// mlxconfig help lists more commands; rdmaform never parses it.
//
//go:embed usage.txt
var usageText string

// Emulator runs the tools over a set of adapters. Run mutates the adapters'
// Next values on a successful set.
type Emulator struct {
	// Layout is the family of the installed tool, used for output printed
	// before any adapter is found (a missing device, usage errors). Zero
	// means: the first adapter's layout, else G5.
	Layout   Layout
	Adapters []*Adapter
	// MSTStarted: `mst start` has created /dev/mst nodes, so mlxconfig
	// accepts /dev/mst/... device names.
	MSTStarted bool
}

// Run emulates `tool args...` (tool is mlxconfig or mstconfig) with stdin,
// against adapters, on a host where `mst start` has run.
func Run(tool string, args []string, adapters []*Adapter, stdin []byte) (stdout, stderr []byte, exit int) {
	e := &Emulator{Adapters: adapters, MSTStarted: true}
	return e.Run(tool, args, stdin)
}

func (e *Emulator) layout() Layout {
	if e.Layout != LayoutUnknown {
		return e.Layout
	}
	if len(e.Adapters) > 0 && e.Adapters[0].Layout != LayoutUnknown {
		return e.Adapters[0].Layout
	}
	return G5
}

// versions is a representative mstflint release of each layout family.
func version(l Layout) string {
	switch l {
	case G1:
		return "4.21.0"
	case G2:
		return "4.24.0"
	case G3:
		return "4.25.0"
	case G4:
		return "4.30.0"
	case G6:
		return "4.36.0"
	}
	return "4.34.0"
}

type invocation struct {
	dev     string
	haveDev bool
	verbose bool
	yes     bool
	cmd     string // "query" or "set"
	params  []string
}

// Run emulates one command line. stdout carries every -E- line, as the real
// tools print them; stderr carries only what mstflint's device layer prints
// while resolving a -d name.
func (e *Emulator) Run(tool string, args []string, stdin []byte) (stdout, stderr []byte, exit int) {
	var out, errOut strings.Builder
	usage := func(msg string) ([]byte, []byte, int) {
		if msg != "" {
			out.WriteString("-E- " + msg + "\n")
		}
		out.WriteString(strings.ReplaceAll(usageText, "mstconfig", tool))
		return []byte(out.String()), nil, exitError
	}
	var inv invocation
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch a {
		case "-d", "--dev":
			if i+1 >= len(args) {
				return usage("missing device name")
			}
			inv.dev, inv.haveDev = args[i+1], true
			i++
		case "-e", "--enable_verbosity":
			inv.verbose = true
		case "-y", "--yes":
			inv.yes = true
		case "-h", "--help":
			_, _, _ = usage("")
			return []byte(out.String()), nil, exitOK
		case "-v", "--version":
			fmt.Fprintf(&out, "%s, mstflint %s, Git SHA Hash: N/A\n", tool, version(e.layout()))
			return []byte(out.String()), nil, exitOK
		default:
			switch {
			case strings.HasPrefix(a, "-"):
				return usage("invalid argument: " + a)
			case inv.cmd != "":
				inv.params = append(inv.params, a)
			case a == "q" || a == "query":
				inv.cmd = "query"
			case a == "s" || a == "set":
				inv.cmd = "set"
			case a == "r" || a == "reset":
				inv.cmd = "reset"
			default:
				return usage("invalid argument: " + a)
			}
		}
	}
	switch inv.cmd {
	case "":
		return usage("No command found. For more information please read the help message:")
	case "set":
		return e.set(tool, inv, stdin, &out, &errOut, usage)
	case "reset":
		return e.reset(tool, inv, stdin, &out, &errOut)
	}
	return e.query(tool, inv, &out, &errOut)
}

func (e *Emulator) query(tool string, inv invocation, out, errOut *strings.Builder) ([]byte, []byte, int) {
	if !inv.haveDev {
		if len(e.Adapters) == 0 {
			out.WriteString("-E- Failed to get devices.\n")
			return []byte(out.String()), nil, exitError
		}
		exit := exitOK
		for i, a := range e.Adapters {
			r := e.report(a, a.BDF, inv.verbose)
			r.Index = i + 1
			b, code := e.queryOne(a, r, inv.params)
			out.Write(b)
			if code != exitOK {
				exit = code
			}
		}
		return []byte(out.String()), nil, exit
	}
	a := e.resolve(tool, inv.dev, errOut)
	if a == nil {
		b, code := RenderQuery(e.layout(), Report{Err: OpenDeviceError()})
		return b, []byte(errOut.String()), code
	}
	b, code := e.queryOne(a, e.report(a, inv.dev, inv.verbose), inv.params)
	return b, nil, code
}

func (e *Emulator) queryOne(a *Adapter, r Report, names []string) ([]byte, int) {
	ps := a.Params
	if len(names) > 0 {
		ps = nil
		for _, n := range names {
			p := a.Param(n)
			if p == nil {
				r.Err = UnknownParamError(a.Layout, n)
				return RenderQuery(a.Layout, r)
			}
			ps = append(ps, *p)
		}
	}
	for _, p := range ps {
		r.Rows = append(r.Rows, row(p))
	}
	return RenderQuery(a.Layout, r)
}

func row(p Param) Row {
	return Row{Name: p.Name, Default: p.Value(p.Default), Current: p.Value(p.Current), NextBoot: p.Value(p.Next), ReadOnly: p.ReadOnly}
}

func (e *Emulator) report(a *Adapter, dev string, verbose bool) Report {
	return Report{
		Device:    DeviceInfo{Type: a.DeviceType, Name: orNA(a.Name), Description: orNA(a.Description), Device: dev},
		Verbose:   verbose,
		NoDefault: a.NoDefault,
		NoCurrent: a.NoCurrent,
	}
}

func orNA(s string) string {
	if s == "" {
		return "N/A"
	}
	return s
}

// reset emulates `r`/`reset` on one device: ask, then set every Next Boot
// value back to its default. The device is opened only after the answer.
func (e *Emulator) reset(tool string, inv invocation, stdin []byte, out, errOut *strings.Builder) ([]byte, []byte, int) {
	if !inv.haveDev {
		out.WriteString("-E- Failed to get devices.\n")
		return []byte(out.String()), nil, exitError
	}
	out.WriteString("\n Reset configuration for device " + inv.dev + "? (y/n) [n] : ")
	if inv.yes {
		out.WriteString("y\n")
	} else if !answeredYes(stdin) {
		out.WriteString(AbortedError().Line())
		return []byte(out.String()), nil, exitAborted
	}
	out.WriteString("Applying... ")
	a := e.resolve(tool, inv.dev, errOut)
	if a == nil {
		out.WriteString("Failed!\n" + OpenDeviceError().Line())
		return []byte(out.String()), []byte(errOut.String()), exitError
	}
	for i := range a.Params {
		a.Params[i].Next = a.Params[i].Default
	}
	out.WriteString("Done!\n-I- Please reboot machine to load new configurations.\n")
	return []byte(out.String()), nil, exitOK
}

// answeredYes reads the prompt's answer: the first line of stdin, y or yes
// in any case.
func answeredYes(stdin []byte) bool {
	line, _, _ := strings.Cut(string(stdin), "\n")
	return strings.EqualFold(line, "y") || strings.EqualFold(line, "yes")
}

type setting struct {
	name, value string
}

func (e *Emulator) set(tool string, inv invocation, stdin []byte, out, errOut *strings.Builder,
	usage func(string) ([]byte, []byte, int)) ([]byte, []byte, int) {
	// The command line is checked before the device is opened.
	var settings []setting
	seen := map[string]bool{}
	for _, arg := range inv.params {
		parts := strings.Split(arg, "=")
		if len(parts) != 2 {
			return usage("Invalid Configuration argument " + parts[0])
		}
		if seen[parts[0]] {
			return usage("Duplicate parameter, " + parts[0] + ".")
		}
		seen[parts[0]] = true
		settings = append(settings, setting{parts[0], parts[1]})
	}
	if len(settings) == 0 {
		return usage("missing configuration arguments. For more information please run " + tool + " -h|--help.")
	}
	if !inv.haveDev {
		return usage("missing device name")
	}
	a := e.resolve(tool, inv.dev, errOut)
	if a == nil {
		b, code := RenderSet(e.layout(), Report{Err: OpenDeviceError()}, AnswerNo)
		return b, []byte(errOut.String()), code
	}
	r := e.report(a, inv.dev, inv.verbose)
	answer := AnswerYesFlag
	if !inv.yes {
		answer = AnswerNo
		if answeredYes(stdin) {
			answer = AnswerYes
		}
	}
	targets := make([]*Param, len(settings))
	values := make([]int64, len(settings))
	for i, s := range settings {
		p := a.Param(s.name)
		switch {
		case p == nil:
			r.Err = UnknownParamError(a.Layout, s.name)
		case p.ReadOnly:
			r.Err = ReadOnlyError(p.TLV)
		default:
			v, ok := p.Parse(s.value)
			if !ok {
				r.Err = UnknownValueError(s.value)
			}
			targets[i], values[i] = p, v
		}
		if r.Err != nil {
			b, code := RenderSet(a.Layout, r, answer)
			return b, nil, code
		}
		rw := row(*p)
		rw.New = p.Value(values[i])
		r.Rows = append(r.Rows, rw)
	}
	for i, p := range targets {
		if p.Max > 0 && values[i] > p.Max {
			r.ApplyErr = TooLargeError(p.Name, p.Max)
			break
		}
	}
	// mstconfig writes MFRL's warm boot trigger on a ConnectX-4 or later
	// adapter (not a ConnectX-3) after the set.
	r.PowerCycle = a.WarmBootRefused && !strings.HasPrefix(a.DeviceType, "ConnectX3")
	b, code := RenderSet(a.Layout, r, answer)
	if code == exitOK {
		for i, p := range targets {
			p.Next = values[i]
		}
	}
	return b, nil, code
}

// resolve finds the adapter -d names: a BDF with or without domain, an RDMA
// device name, or (mlxconfig with mst started) a /dev/mst node. On failure it
// writes what mstflint's device layer prints to stderr and returns nil.
func (e *Emulator) resolve(tool, dev string, errOut *strings.Builder) *Adapter {
	isMST := strings.HasPrefix(dev, "/dev/mst/")
	for i, a := range e.Adapters {
		switch {
		case isMST:
			if tool == "mlxconfig" && e.MSTStarted && "/dev/mst/"+e.mstName(i) == dev {
				return a
			}
		case sameBDF(a.BDF, dev):
			return a
		case a.RDMAName != "" && a.RDMAName == dev:
			return a
		}
	}
	if tool != "mstconfig" {
		return nil
	}
	switch {
	case isBDF(dev):
	case strings.HasPrefix(dev, "mlx"):
		errOut.WriteString("read link: No such file or directory\n")
		errOut.WriteString("Unable to read link /sys/class/infiniband/" + dev + "/device\n")
	default:
		errOut.WriteString("Unable to parse device name " + dev + "\n")
	}
	return nil
}

// mstName is the /dev/mst node of adapter i: cards are counted per PCI
// device id in adapter order, functions of one card share the count.
func (e *Emulator) mstName(i int) string {
	a := e.Adapters[i]
	slot, fn := splitFunction(a.BDF)
	index := 0
	seen := map[string]bool{}
	for _, b := range e.Adapters[:i] {
		s, _ := splitFunction(b.BDF)
		if b.PCIDeviceID == a.PCIDeviceID && s != slot && !seen[s] {
			seen[s] = true
			index++
		}
	}
	return MSTDeviceName(a.PCIDeviceID, index, fn)
}

func splitFunction(bdf string) (slot string, fn int) {
	bdf = fullBDF(bdf)
	i := strings.LastIndexByte(bdf, '.')
	if i < 0 {
		return bdf, 0
	}
	fmt.Sscanf(bdf[i+1:], "%d", &fn)
	return bdf[:i], fn
}

func fullBDF(s string) string {
	s = strings.ToLower(s)
	if strings.Count(s, ":") == 1 {
		return "0000:" + s
	}
	return s
}

func sameBDF(a, b string) bool { return isBDF(b) && fullBDF(a) == fullBDF(b) }

func isBDF(s string) bool {
	var d, bus, dev, fn int
	if strings.Count(s, ":") == 1 {
		n, _ := fmt.Sscanf(s, "%x:%x.%x", &bus, &dev, &fn)
		return n == 3
	}
	n, _ := fmt.Sscanf(s, "%x:%x:%x.%x", &d, &bus, &dev, &fn)
	return n == 4
}
