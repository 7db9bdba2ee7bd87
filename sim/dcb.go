package sim

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// DCBState is a netdev's DCB as mlx5 keeps it (en_dcbnl.c): the DCBX
// owner, the trust state and the hardware DSCP map, the APP table's DSCP
// entries, PFC and the cable length, and ETS. Nil on a netdev whose driver
// has no DCB (veth, virtio): dcb then answers "Operation not supported".
type DCBState struct {
	// Host: DCBX is host-owned (DCB_CAP_DCBX_HOST); false: firmware.
	Host bool `yaml:"host"`
	// Trust is the hardware trust state, pcp or dscp.
	Trust string `yaml:"trust"`
	// DSCP2Prio is the hardware DSCP map (firmware default dscp>>3).
	DSCP2Prio []int `yaml:"dscp2prio,flow"`
	// App holds the APP table's DSCP entries, in the order added.
	App []AppEntry `yaml:"app,omitempty"`
	PFC []bool     `yaml:"pfc,flow"`
	// CableLen is mlx5's cable length (the PFC delay field), default 7.
	CableLen int `yaml:"cable_len"`
	// ETS as the hardware holds it: TSA as set, BW as mlx5 programs it
	// (100 for strict and vendor classes).
	PrioTC []int    `yaml:"prio_tc,flow"`
	TSA    []string `yaml:"tsa,flow"`
	BW     []int    `yaml:"bw,flow"`
	// LinkToggles counts the link flaps PFC changes caused.
	LinkToggles int `yaml:"link_toggles,omitempty"`
}

// AppEntry is one DSCP entry of the APP table.
type AppEntry struct {
	DSCP int `yaml:"dscp"`
	Prio int `yaml:"prio"`
}

// PauseState is a netdev's global pause (ethtool -a); nil when the driver
// has no pause operations.
type PauseState struct {
	RX bool `yaml:"rx"`
	TX bool `yaml:"tx"`
}

// ECNState is MLNX_OFED's per-priority ECN tree of a netdev
// (/sys/class/net/X/ecn/roce_{rp,np}/enable/P); nil with the upstream
// driver, which has none.
type ECNState struct {
	RP []bool `yaml:"rp,flow"`
	NP []bool `yaml:"np,flow"`
	// CNP is the notification point's CNP DSCP and 802.1p priority
	// (roce_np/cnp_dscp, roce_np/cnp_802p_prio); nil renders neither file.
	CNP *CNPState `yaml:"cnp,omitempty"`
}

// CNPState is the DSCP and priority of the CNPs a port sends. MLNX_OFED's
// en_ecn.c shows each with "%d\n" and stores sscanf("%d") into the 6-bit
// cnp_dscp and 3-bit cnp_802p_prio fields of the congestion parameters:
// the firmware keeps the low bits of a larger number.
type CNPState struct {
	DSCP int `yaml:"dscp"`
	Prio int `yaml:"prio"`
}

// mlx5DCB is the state mlx5e_dcbnl_initialize leaves: host DCBX (what
// the driver reports without firmware DCBX), PCP trust with the firmware's
// DSCP map, no PFC, cable length 7 (MLX5E_DEFAULT_CABLE_LEN), and ETS
// from mlx5e_ets_init: vendor classes, priority 0 on class 1 and 1 on 0.
func mlx5DCB() *DCBState {
	d := &DCBState{Host: true, Trust: "pcp", CableLen: 7,
		PFC: make([]bool, 8), PrioTC: []int{1, 0, 2, 3, 4, 5, 6, 7}, TSA: make([]string, 8), BW: make([]int, 8)}
	for i := 0; i < 64; i++ {
		d.DSCP2Prio = append(d.DSCP2Prio, i>>3)
	}
	for i := range d.TSA {
		d.TSA[i], d.BW[i] = "vendor", 100
	}
	return d
}

// mlx5Pause: mlx5 ports start with global pause on in both directions.
func mlx5Pause() *PauseState { return &PauseState{RX: true, TX: true} }

// ofedECN: MLNX_OFED enables ECN on every priority, both points.
func ofedECN() *ECNState {
	e := &ECNState{RP: make([]bool, 8), NP: make([]bool, 8)}
	for i := range e.RP {
		e.RP[i], e.NP[i] = true, true
	}
	// The firmware's defaults, CNP_DSCP_P1 48 and CNP_802P_PRIO_P1 6
	// (mlxconfig -d ... q on a ConnectX-6 Dx).
	e.CNP = &CNPState{DSCP: 48, Prio: 6}
	return e
}

// dcbTool emulates iproute2 6.1's dcb for the objects rdmaform uses:
// pfc, ets, app and dcbx; show (text or -j), set, replace, flush.
func dcbTool(_ context.Context, s *Sim, args []string, _ []byte) (string, string, int) {
	jsonOut := false
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "-j", "-json", "--json":
			jsonOut = true
		case "-N", "-n", "--Numeric", "-p", "--pretty":
		default:
			return "", fmt.Sprintf("Option \"%s\" is unknown, try \"dcb help\".\n", args[0]), 255
		}
		args = args[1:]
	}
	if len(args) < 4 || args[2] != "dev" {
		return "", "Usage: dcb [ OPTIONS ] OBJECT { COMMAND | help }\n", 255
	}
	object, cmd, dev, rest := args[0], args[1], args[3], args[4:]
	var out, errOut string
	code := 0
	run := s.toolRun(cmd != "show")
	err := run(func(st *State) error {
		n := st.Netdev(dev)
		if n == nil || n.DCB == nil {
			errOut, code = "Attribute read: Operation not supported\n", 1
			if n == nil {
				errOut = "Attribute read: No such device\n"
			}
			if jsonOut {
				out = "\n" // the JSON writer's closing newline, printed on failure too
			}
			return nil
		}
		d := n.DCB
		switch cmd {
		case "show":
			out = dcbShow(d, object, jsonOut)
		case "set", "replace", "flush", "add", "del":
			errOut, code = dcbChange(d, object, cmd, rest)
		default:
			errOut, code = fmt.Sprintf("What is \"%s\"?\n", cmd), 1
		}
		return nil
	})
	if err != nil {
		return "", err.Error() + "\n", 1
	}
	return out, errOut, code
}

// dcbShow prints one object as dcb does: the text form (dcb-pfc(8),
// dcb-ets(8)) or the JSON object of the -j option.
func dcbShow(d *DCBState, object string, jsonOut bool) string {
	var b strings.Builder
	switch object {
	case "pfc":
		if jsonOut {
			fmt.Fprintf(&b, `{"pfc_cap":8,"macsec_bypass":false,"delay":%d,"prio_pfc":[%s]}`+"\n", d.CableLen, joinBools(d.PFC, ",", "true", "false"))
		} else {
			fmt.Fprintf(&b, "pfc-cap 8 macsec-bypass off delay %d \nprio-pfc %s \n", d.CableLen, indexed(len(d.PFC), func(i int) string { return map[bool]string{true: "on", false: "off"}[d.PFC[i]] }))
		}
	case "ets":
		bw := d.BW // as mlx5e_dcbnl_ieee_getets reports it: 100 for strict and vendor classes
		if jsonOut {
			zeros := "0,0,0,0,0,0,0,0"
			fmt.Fprintf(&b, `{"willing":false,"ets_cap":8,"cbs":false,"tc_bw":[%s],"pg_bw":[%s],"tc_tsa":[%s],"prio_tc":[%s],"reco_tc_bw":[%s],"reco_tc_tsa":[%s],"reco_prio_tc":[%s]}`+"\n",
				joinInts(bw), zeros, quoteAll(d.TSA), joinInts(d.PrioTC), zeros, quoteAll([]string{"strict", "strict", "strict", "strict", "strict", "strict", "strict", "strict"}), zeros)
		} else {
			fmt.Fprintf(&b, "willing off ets-cap 8 cbs off \ntc-bw %s \npg-bw %s \ntc-tsa %s \nprio-tc %s \nreco-tc-bw %s \nreco-tc-tsa %s \nreco-prio-tc %s \n",
				indexed(8, func(i int) string { return strconv.Itoa(bw[i]) }), indexed(8, func(int) string { return "0" }),
				indexed(8, func(i int) string { return d.TSA[i] }), indexed(8, func(i int) string { return strconv.Itoa(d.PrioTC[i]) }),
				indexed(8, func(int) string { return "0" }), indexed(8, func(int) string { return "strict" }), indexed(8, func(int) string { return "0" }))
		}
	case "app":
		if jsonOut {
			var e []string
			for _, a := range d.App {
				e = append(e, fmt.Sprintf("[%d,%d]", a.DSCP, a.Prio))
			}
			if len(e) == 0 {
				b.WriteString("{}\n")
			} else {
				fmt.Fprintf(&b, `{"dscp_prio":[%s]}`+"\n", strings.Join(e, ","))
			}
		} else if len(d.App) > 0 {
			b.WriteString("dscp-prio ")
			for _, a := range d.App {
				fmt.Fprintf(&b, "%d:%d ", a.DSCP, a.Prio)
			}
			b.WriteString("\n")
		}
	case "dcbx":
		var flags []string
		if d.Host {
			flags = append(flags, "host")
		}
		flags = append(flags, "cee", "ieee")
		if jsonOut {
			var e []string
			for _, f := range flags {
				e = append(e, fmt.Sprintf("%q:true", f))
			}
			fmt.Fprintf(&b, "{%s}\n", strings.Join(e, ","))
		} else {
			b.WriteString(strings.Join(flags, " ") + " \n")
		}
	}
	return b.String()
}

// dcbChange carries out set/replace/flush with mlx5's rules. Errors are
// dcb's: "Attribute write: <strerror>" and exit 1; replace prints its
// failure to remove replaced entries but exits 0, as dcb_cmd_app_replace
// does.
func dcbChange(d *DCBState, object, cmd string, args []string) (string, int) {
	werr := func(e syscall.Errno) (string, int) {
		return fmt.Sprintf("Attribute write: %s\n", capitalize(e.Error())), 1
	}
	switch {
	case object == "pfc" && cmd == "set":
		pfc := append([]bool(nil), d.PFC...)
		cable := d.CableLen
		for i := 0; i < len(args); i++ {
			switch args[i] {
			case "prio-pfc":
				for i+1 < len(args) && strings.Contains(args[i+1], ":") {
					i++
					k, v, _ := strings.Cut(args[i], ":")
					on := v == "on"
					if v != "on" && v != "off" {
						return fmt.Sprintf("Invalid pfc mapping %s\n", args[i]), 1
					}
					if k == "all" {
						for j := range pfc {
							pfc[j] = on
						}
						continue
					}
					p, err := strconv.Atoi(k)
					if err != nil || p < 0 || p > 7 {
						return fmt.Sprintf("Invalid pfc mapping %s\n", args[i]), 1
					}
					pfc[p] = on
				}
			case "delay":
				if i+1 >= len(args) {
					return "Command line is not complete. Try option \"help\"\n", 1
				}
				i++
				v, err := strconv.Atoi(args[i])
				if err != nil || v < 0 || v > 65535 {
					return fmt.Sprintf("Invalid delay `%s', expected an integer 0..65535\n", args[i]), 1
				}
				// mlx5 takes the delay as the cable length only when it
				// is non-zero and below 1000.
				if v != 0 && v < 1000 {
					cable = v
				}
			default:
				return fmt.Sprintf("What is \"%s\"?\n", args[i]), 1
			}
		}
		if !slices.Equal(pfc, d.PFC) {
			d.LinkToggles++
		}
		d.PFC, d.CableLen = pfc, cable
		return "", 0
	case object == "ets" && cmd == "set":
		prioTC := append([]int(nil), d.PrioTC...)
		tsa := append([]string(nil), d.TSA...)
		bw := append([]int(nil), d.BW...)
		for i := 0; i < len(args); i++ {
			key := args[i]
			for i+1 < len(args) && strings.Contains(args[i+1], ":") {
				i++
				k, v, _ := strings.Cut(args[i], ":")
				idx, err := strconv.Atoi(k)
				if err != nil || idx < 0 || idx > 7 {
					return fmt.Sprintf("Invalid %s mapping %s\n", key, args[i]), 1
				}
				switch key {
				case "prio-tc":
					tc, err := strconv.Atoi(v)
					if err != nil || tc < 0 || tc > 7 {
						return fmt.Sprintf("Invalid prio-tc mapping %s\n", args[i]), 1
					}
					prioTC[idx] = tc
				case "tc-tsa":
					if v != "strict" && v != "ets" && v != "cbs" && v != "vendor" {
						return fmt.Sprintf("Invalid tc-tsa mapping %s\n", args[i]), 1
					}
					tsa[idx] = v
				case "tc-bw":
					n, err := strconv.Atoi(v)
					if err != nil || n < 0 || n > 100 {
						return fmt.Sprintf("Invalid tc-bw mapping %s\n", args[i]), 1
					}
					bw[idx] = n
				default:
					return fmt.Sprintf("What is \"%s\"?\n", key), 1
				}
			}
		}
		// mlx5e_dbcnl_validate_ets: the ets classes' bandwidths sum to 100.
		sum, haveETS := 0, false
		for i := range tsa {
			if tsa[i] == "ets" {
				haveETS = true
				sum += bw[i]
			}
		}
		if haveETS && sum != 100 {
			return werr(syscall.EINVAL)
		}
		for i := range tsa {
			if tsa[i] != "ets" {
				bw[i] = 100 // mlx5e_build_tc_tx_bw: MLX5E_MAX_BW_ALLOC
			}
		}
		d.PrioTC, d.TSA, d.BW = prioTC, tsa, bw
		return "", 0
	case object == "app" && (cmd == "replace" || cmd == "add"):
		if len(args) == 0 || args[0] != "dscp-prio" {
			return "", 0 // mlx5 refuses other selectors; rdmaform writes none
		}
		var tab []AppEntry
		for _, a := range args[1:] {
			k, v, ok := strings.Cut(a, ":")
			dscp, err1 := strconv.Atoi(k)
			prio, err2 := strconv.Atoi(v)
			if !ok || err1 != nil || err2 != nil || dscp < 0 || dscp > 63 || prio < 0 || prio > 7 {
				return fmt.Sprintf("Invalid dscp-prio mapping %s\n", a), 1
			}
			tab = append(tab, AppEntry{DSCP: dscp, Prio: prio})
		}
		orig := append([]AppEntry(nil), d.App...)
		for _, e := range tab {
			if hasEntry(orig, e) {
				continue
			}
			d.setApp(e)
		}
		if cmd == "add" {
			return "", 0
		}
		// Remove the entries the new ones replace: mlx5's own setapp has
		// dropped them already, so its delapp answers ENOENT and dcb says
		// so, but exits 0.
		for _, o := range orig {
			replaced := false
			for _, e := range tab {
				if e.DSCP == o.DSCP && e.Prio != o.Prio {
					replaced = true
				}
			}
			if !replaced {
				continue
			}
			if errno := d.delApp(o); errno != 0 {
				msg, _ := werr(errno)
				return msg + "Could not remove replaced APP entries\n", 0
			}
		}
		return "", 0
	case object == "app" && cmd == "flush":
		for _, o := range append([]AppEntry(nil), d.App...) {
			if errno := d.delApp(o); errno != 0 {
				return werr(errno)
			}
		}
		return "", 0
	case object == "dcbx" && cmd == "set":
		if len(args) == 0 {
			// dcb prints its help and changes nothing: it has no way to
			// ask for mode 0 (firmware DCBX).
			return "Usage: dcb dcbx set dev STRING\n           [ host | lld-managed ]\n           [ cee | ieee ] [ static ]\n\n", 0
		}
		host := false
		for _, a := range args {
			switch a {
			case "host":
				host = true
			case "cee", "ieee", "static":
			case "lld-managed":
				return werr(syscall.EINVAL)
			default:
				return fmt.Sprintf("What is \"%s\"?\n", a), 1
			}
		}
		if !host {
			return werr(syscall.EINVAL)
		}
		d.Host = true
		return "", 0
	}
	return fmt.Sprintf("What is \"%s\"?\n", cmd), 1
}

func hasEntry(tab []AppEntry, e AppEntry) bool {
	for _, x := range tab {
		if x == e {
			return true
		}
	}
	return false
}

// setApp is mlx5e_dcbnl_ieee_setapp: the first DSCP entry switches the
// port to DSCP trust; the old entry of the DSCP goes.
func (d *DCBState) setApp(e AppEntry) {
	if len(d.App) == 0 {
		d.Trust = "dscp"
	}
	old := AppEntry{DSCP: e.DSCP, Prio: d.DSCP2Prio[e.DSCP]}
	d.DSCP2Prio[e.DSCP] = e.Prio
	var keep []AppEntry
	for _, x := range d.App {
		if x != old {
			keep = append(keep, x)
		}
	}
	d.App = append(keep, e)
}

// delApp is mlx5e_dcbnl_ieee_delapp: the entry must match the hardware
// map (ENOENT otherwise); the DSCP's priority goes back to 0, and the
// last entry's removal returns the port to PCP trust.
func (d *DCBState) delApp(e AppEntry) syscall.Errno {
	if len(d.App) == 0 || d.DSCP2Prio[e.DSCP] != e.Prio || !hasEntry(d.App, e) {
		return syscall.ENOENT
	}
	var keep []AppEntry
	for _, x := range d.App {
		if x != e {
			keep = append(keep, x)
		}
	}
	d.App = keep
	d.DSCP2Prio[e.DSCP] = 0
	if len(d.App) == 0 {
		d.Trust = "pcp"
	}
	return 0
}

// ethtoolTool emulates ethtool 6.1's -a and -A, and -g, -G, -l, -L
// (ethtool.go).
func ethtoolTool(ctx context.Context, s *Sim, args []string, stdin []byte) (string, string, int) {
	if len(args) >= 2 && (args[0] == "-g" || args[0] == "-G" || args[0] == "-l" || args[0] == "-L") {
		return ethtoolQueues(s, args)
	}
	if len(args) == 2 && args[0] == "-S" {
		return ethtoolStats(s, args[1])
	}
	if len(args) < 2 || (args[0] != "-a" && args[0] != "-A") {
		return "", "ethtool: bad command line argument(s)\nFor more information run ethtool -h\n", 1
	}
	dev := args[1]
	var out, errOut string
	code := 0
	run := s.toolRun(args[0] != "-a")
	err := run(func(st *State) error {
		n := st.Netdev(dev)
		if n == nil {
			errOut, code = ethtoolNoDevice, 1
			return nil
		}
		if n.Pause == nil {
			errOut, code = "netlink error: Operation not supported\n", 1
			if args[0] == "-A" {
				code = 76
			}
			return nil
		}
		if args[0] == "-a" {
			out = fmt.Sprintf("Pause parameters for %s:\nAutonegotiate:\toff\nRX:\t\t%s\nTX:\t\t%s\n\n", dev, onOffText(n.Pause.RX), onOffText(n.Pause.TX))
			return nil
		}
		rest := args[2:]
		for i := 0; i+1 < len(rest); i += 2 {
			v := rest[i+1]
			if v != "on" && v != "off" {
				errOut, code = fmt.Sprintf("ethtool: bad command line argument(s)\n"), 1
				return nil
			}
			switch rest[i] {
			case "rx":
				n.Pause.RX = v == "on"
			case "tx":
				n.Pause.TX = v == "on"
			case "autoneg":
				if v == "on" {
					errOut, code = "netlink error: Operation not supported\n", 76
					return nil
				}
			default:
				errOut, code = "ethtool: bad command line argument(s)\n", 1
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return "", err.Error() + "\n", 1
	}
	return out, errOut, code
}

var ecnRE = regexp.MustCompile(`^/sys/class/net/([^/]+)/ecn/(roce_rp|roce_np)/enable/([0-7])$`)

// writeECN stores an OFED ECN enable: 0 or 1.
func (st *State) writeECN(name, dev, side, prio, data string) error {
	n := st.Netdev(dev)
	if n == nil || n.ECN == nil {
		return perr("open", name, syscall.ENOENT)
	}
	v := strings.TrimSpace(data)
	if v != "0" && v != "1" {
		return perr("write", name, syscall.EINVAL)
	}
	p, _ := strconv.Atoi(prio)
	if side == "roce_rp" {
		n.ECN.RP[p] = v == "1"
	} else {
		n.ECN.NP[p] = v == "1"
	}
	return nil
}

var cnpRE = regexp.MustCompile(`^/sys/class/net/([^/]+)/ecn/roce_np/(cnp_dscp|cnp_802p_prio)$`)

// writeCNP stores a CNP setting as en_ecn.c does: the leading decimal
// number, its low 6 (DSCP) or 3 (priority) bits. Text that is not a
// number is refused with EINVAL (the driver leaves its variable unset).
func (st *State) writeCNP(name, dev, attr, data string) error {
	n := st.Netdev(dev)
	if n == nil || n.ECN == nil || n.ECN.CNP == nil {
		return perr("open", name, syscall.ENOENT)
	}
	var v int
	if _, err := fmt.Sscanf(strings.TrimSpace(data), "%d", &v); err != nil {
		return perr("write", name, syscall.EINVAL)
	}
	if attr == "cnp_dscp" {
		n.ECN.CNP.DSCP = v & 0x3f
	} else {
		n.ECN.CNP.Prio = v & 0x7
	}
	return nil
}

func (s *State) renderECN(t *tree, dir string, e *ECNState) {
	if e.CNP != nil {
		t.file(dir+"/ecn/roce_np/cnp_dscp", fmt.Sprintf("%d\n", e.CNP.DSCP))
		t.file(dir+"/ecn/roce_np/cnp_802p_prio", fmt.Sprintf("%d\n", e.CNP.Prio))
	}
	for _, side := range []struct {
		name string
		v    []bool
	}{{"roce_rp", e.RP}, {"roce_np", e.NP}} {
		for p, on := range side.v {
			t.file(fmt.Sprintf("%s/ecn/%s/enable/%d", dir, side.name, p), map[bool]string{true: "1\n", false: "0\n"}[on])
		}
	}
}

func onOffText(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func joinBools(v []bool, sep, t, f string) string {
	s := make([]string, len(v))
	for i, b := range v {
		s[i] = f
		if b {
			s[i] = t
		}
	}
	return strings.Join(s, sep)
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func quoteAll(v []string) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Quote(x)
	}
	return strings.Join(s, ",")
}

func indexed(n int, f func(int) string) string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprintf("%d:%s", i, f(i))
	}
	return strings.Join(s, " ")
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
