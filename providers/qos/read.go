package qos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/rdmaform/rdmaform/host"
)

// Port is what the kernel says of one netdev's DCB, pause and ECN state.
type Port struct {
	Netdev string
	// NoDCB is why the netdev has no DCB (the driver answered
	// "Operation not supported"); empty when it has.
	NoDCB string `json:",omitempty"`
	// DCBXHost: the host owns DCB (dcb dcbx shows "host"); false means
	// the adapter's firmware runs DCBX with the switch.
	DCBXHost bool
	// App holds the DSCP entries of the APP table: DSCP -> priorities
	// (one on mlx5; a generic table may hold several).
	App map[int][]int
	PFC [8]bool
	// Delay is PFC's delay field; mlx5 reports its cable length there (0
	// when its receive buffers are not host-managed).
	Delay  int
	ETSCap int
	ETS    ETS
	// NoPause is why ethtool cannot read global pause; empty when it can.
	NoPause          string `json:",omitempty"`
	PauseRX, PauseTX bool
	// ECNTree: the MLNX_OFED per-priority ECN tree exists
	// (/sys/class/net/X/ecn/roce_{rp,np}/enable/P).
	ECNTree      bool
	ECNRP, ECNNP [8]bool
	// CNPTree: the OFED tree has the notification point's CNP settings
	// (/sys/class/net/X/ecn/roce_np/cnp_dscp and cnp_802p_prio).
	CNPTree          bool
	CNPDSCP, CNPPrio int
}

// ETS is an ETS table as dcb shows it.
type ETS struct {
	PrioTC [8]int
	TSA    [8]string
	BW     [8]int
}

// Trust is the trust state the APP table implies on mlx5: dscp while any
// DSCP entry exists, pcp otherwise.
func (p *Port) Trust() string {
	if len(p.App) > 0 {
		return "dscp"
	}
	return "pcp"
}

// what a read needs, so a plan runs only the reads its spec asks for:
// the DCBX owner whenever DCB is touched, and each dcb object only when
// the spec sets something in it.
type need struct {
	dcb, pause, ecn, cnp bool
	// pfc, ets and app narrow dcb to the objects that are read; with dcb
	// set and all three false, all are.
	pfc, ets, app bool
}

// dcbObjects are the dcb objects n reads, dcbx always among them.
func (n need) dcbObjects() map[string]bool {
	if !n.dcb {
		return nil
	}
	if !n.pfc && !n.ets && !n.app {
		return map[string]bool{"pfc": true, "ets": true, "app": true, "dcbx": true}
	}
	return map[string]bool{"pfc": n.pfc, "ets": n.ets, "app": n.app, "dcbx": true}
}

// ErrNoDCB marks a netdev whose driver has no DCB support.
var errNoDCB = errors.New("no DCB support")

// readPort reads one netdev: the dcb objects, ethtool's pause and the ECN
// tree, each read a separate command run in parallel under sem.
//
// Equivalent to: dcb -j pfc show dev X; dcb -j ets show dev X; dcb -j app show dev X;
// dcb -j dcbx show dev X; ethtool -a X; cat /sys/class/net/X/ecn/roce_{rp,np}/enable/{0..7}
func readPort(ctx context.Context, h *host.Host, netdev string, n need, sem chan struct{}) (*Port, error) {
	p := &Port{Netdev: netdev}
	var jobs []func() error
	var mu sync.Mutex
	dcb := func(object string, parse func([]byte) error) func() error {
		return func() error {
			res, err := h.Run(ctx, "dcb", "-j", object, "show", "dev", netdev)
			if err != nil {
				if why := notSupported(err); why != "" {
					mu.Lock()
					p.NoDCB = why
					mu.Unlock()
					return nil
				}
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			if err := parse(res.Stdout); err != nil {
				return fmt.Errorf("dcb -j %s show dev %s: %w", object, netdev, err)
			}
			return nil
		}
	}
	objs := n.dcbObjects()
	if objs["pfc"] {
		jobs = append(jobs, dcb("pfc", func(b []byte) error {
			v, err := ParsePFC(b)
			p.PFC, p.Delay = v.PFC, v.Delay
			return err
		}))
	}
	if objs["ets"] {
		jobs = append(jobs, dcb("ets", func(b []byte) error {
			v, err := ParseETS(b)
			p.ETS, p.ETSCap = v.ETS, v.Cap
			return err
		}))
	}
	if objs["app"] {
		jobs = append(jobs, dcb("app", func(b []byte) error {
			v, err := ParseApp(b)
			p.App = v
			return err
		}))
	}
	if objs["dcbx"] {
		jobs = append(jobs, dcb("dcbx", func(b []byte) error {
			v, err := ParseDCBX(b)
			p.DCBXHost = v["host"]
			return err
		}))
	}
	if n.pause {
		jobs = append(jobs, func() error {
			res, err := h.Run(ctx, "ethtool", "-a", netdev)
			if err != nil {
				if why := notSupported(err); why != "" {
					mu.Lock()
					p.NoPause = why
					mu.Unlock()
					return nil
				}
				return err
			}
			rx, tx, err := ParsePause(res.Stdout)
			if err != nil {
				return fmt.Errorf("ethtool -a %s: %w", netdev, err)
			}
			mu.Lock()
			p.PauseRX, p.PauseTX = rx, tx
			mu.Unlock()
			return nil
		})
	}
	if n.ecn {
		jobs = append(jobs, func() error {
			tree, rp, np, err := readECN(h, netdev)
			mu.Lock()
			p.ECNTree, p.ECNRP, p.ECNNP = tree, rp, np
			mu.Unlock()
			return err
		})
	}
	if n.cnp {
		jobs = append(jobs, func() error {
			tree, dscp, prio, err := readCNP(h, netdev)
			mu.Lock()
			p.CNPTree, p.CNPDSCP, p.CNPPrio = tree, dscp, prio
			mu.Unlock()
			return err
		})
	}
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = j()
		}()
	}
	wg.Wait()
	var missing []string
	for _, err := range errs {
		var ee *host.ExitError
		if errors.As(err, &ee) && errors.Is(err, host.ErrNotFound) && len(ee.Cmd.Args) > 0 && !slices.Contains(missing, ee.Cmd.Args[0]) {
			missing = append(missing, ee.Cmd.Args[0])
		}
	}
	if len(missing) > 0 {
		return nil, missingTools(missing)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

// missingTools is the error of a read whose tools are not installed; it
// matches host.ErrNotFound.
type missingTools []string

func (m missingTools) Error() string {
	verb := "is"
	if len(m) > 1 {
		verb = "are"
	}
	return fmt.Sprintf("%s %s not installed (Debian/Ubuntu: apt install iproute2 ethtool; RHEL: dnf install iproute ethtool)", strings.Join(m, " and "), verb)
}

func (m missingTools) Is(target error) bool { return target == host.ErrNotFound }

// notSupported returns the tool's own words when a command failed because
// the netdev's driver lacks the operation ("Attribute read: Operation not
// supported" from dcb, "netlink error: Operation not supported" from
// ethtool), and "" for any other failure.
func notSupported(err error) string {
	var ee *host.ExitError
	if !errors.As(err, &ee) || ee.Code <= 0 {
		return ""
	}
	msg := strings.TrimSpace(string(ee.Stderr))
	if strings.Contains(msg, "Operation not supported") {
		return msg
	}
	return ""
}

// ECNDir is the MLNX_OFED per-priority ECN tree of a netdev.
func ECNDir(netdev string) string { return "/sys/class/net/" + netdev + "/ecn" }

// readECN reads the reaction- and notification-point enables of the eight
// priorities; tree is false when the driver has no such tree.
func readECN(h *host.Host, netdev string) (tree bool, rp, np [8]bool, err error) {
	base := ECNDir(netdev)
	if !host.Exists(h.FS, path.Join(base, "roce_rp", "enable")) {
		return false, rp, np, nil
	}
	for _, side := range []struct {
		dir string
		v   *[8]bool
	}{{"roce_rp", &rp}, {"roce_np", &np}} {
		for prio := 0; prio < 8; prio++ {
			name := path.Join(base, side.dir, "enable", strconv.Itoa(prio))
			s, err := host.ReadAttr(h.FS, name)
			if errors.Is(err, fs.ErrNotExist) {
				return false, rp, np, fmt.Errorf("%s is missing while %s/roce_rp/enable exists", name, base)
			}
			if err != nil {
				return false, rp, np, err
			}
			switch strings.TrimSpace(s) {
			case "0":
			case "1":
				side.v[prio] = true
			default:
				return false, rp, np, fmt.Errorf("%s: %q is neither 0 nor 1", name, s)
			}
		}
	}
	return true, rp, np, nil
}

// CNPFiles are the notification point's CNP settings in the OFED tree,
// DSCP then 802.1p priority. MLNX_OFED's mlx5 (en_ecn.c,
// mlx5e_show_cnp_dscp and mlx5e_show_cnp_802p_prio) shows each as "%d\n"
// and stores what sscanf("%d") reads into the 6-bit cnp_dscp and 3-bit
// cnp_802p_prio fields of the port's congestion parameters (MLX5_SET
// keeps the low bits of a larger number).
func CNPFiles(netdev string) [2]string {
	d := path.Join(ECNDir(netdev), "roce_np")
	return [2]string{path.Join(d, "cnp_dscp"), path.Join(d, "cnp_802p_prio")}
}

// readCNP reads a netdev's CNP DSCP and priority; tree is false when the
// driver has no such files (the upstream driver).
//
// Equivalent to: cat /sys/class/net/X/ecn/roce_np/cnp_dscp /sys/class/net/X/ecn/roce_np/cnp_802p_prio
func readCNP(h *host.Host, netdev string) (tree bool, dscp, prio int, err error) {
	files := CNPFiles(netdev)
	if !host.Exists(h.FS, files[0]) {
		return false, 0, 0, nil
	}
	var v [2]int
	for i, name := range files {
		s, err := host.ReadAttr(h.FS, name)
		if errors.Is(err, fs.ErrNotExist) {
			return false, 0, 0, fmt.Errorf("%s is missing while %s exists", name, files[0])
		}
		if err != nil {
			return false, 0, 0, err
		}
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return false, 0, 0, fmt.Errorf("%s: %q is not a number", name, s)
		}
		v[i] = n
	}
	return true, v[0], v[1], nil
}

// PFCShow is what `dcb -j pfc show` says.
type PFCShow struct {
	Cap   int
	PFC   [8]bool
	Delay int
}

// ParsePFC reads `dcb -j pfc show dev X`:
// {"pfc_cap":8,"macsec_bypass":false,"delay":7,"prio_pfc":[false,...]}.
func ParsePFC(b []byte) (PFCShow, error) {
	var v struct {
		Cap   *int    `json:"pfc_cap"`
		Delay *int    `json:"delay"`
		Prio  *[]bool `json:"prio_pfc"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return PFCShow{}, fmt.Errorf("not dcb's JSON: %w", err)
	}
	if v.Prio == nil || len(*v.Prio) != 8 || v.Delay == nil {
		return PFCShow{}, fmt.Errorf("no prio_pfc of eight priorities and delay in %s", clip(b))
	}
	out := PFCShow{Delay: *v.Delay}
	if v.Cap != nil {
		out.Cap = *v.Cap
	}
	copy(out.PFC[:], *v.Prio)
	return out, nil
}

// ETSShow is what `dcb -j ets show` says.
type ETSShow struct {
	Cap     int
	Willing bool
	ETS     ETS
}

// ParseETS reads `dcb -j ets show dev X`: willing, ets_cap, cbs, and
// arrays of eight: tc_bw, pg_bw, tc_tsa (strict, ets, cbs, vendor),
// prio_tc, reco_*.
func ParseETS(b []byte) (ETSShow, error) {
	var v struct {
		Willing bool      `json:"willing"`
		Cap     int       `json:"ets_cap"`
		BW      *[]int    `json:"tc_bw"`
		TSA     *[]string `json:"tc_tsa"`
		PrioTC  *[]int    `json:"prio_tc"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return ETSShow{}, fmt.Errorf("not dcb's JSON: %w", err)
	}
	if v.BW == nil || v.TSA == nil || v.PrioTC == nil || len(*v.BW) != 8 || len(*v.TSA) != 8 || len(*v.PrioTC) != 8 {
		return ETSShow{}, fmt.Errorf("no tc_bw, tc_tsa and prio_tc of eight entries in %s", clip(b))
	}
	out := ETSShow{Cap: v.Cap, Willing: v.Willing}
	copy(out.ETS.BW[:], *v.BW)
	copy(out.ETS.TSA[:], *v.TSA)
	copy(out.ETS.PrioTC[:], *v.PrioTC)
	return out, nil
}

// ParseApp reads the DSCP entries of `dcb -j app show dev X`:
// "dscp_prio":[[26,3],[48,6]]. Each entry is an array whose first two
// elements are the DSCP and the priority (later iproute2 versions may
// print more elements; they are ignored). Other selectors are ignored.
func ParseApp(b []byte) (map[int][]int, error) {
	var v struct {
		DSCP []json.RawMessage `json:"dscp_prio"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("not dcb's JSON: %w", err)
	}
	out := map[int][]int{}
	for _, raw := range v.DSCP {
		var entry []any
		if err := json.Unmarshal(raw, &entry); err != nil {
			return nil, fmt.Errorf("dscp_prio entry %s is not an array", raw)
		}
		nums := []int{}
		for _, e := range entry {
			if f, ok := e.(float64); ok {
				nums = append(nums, int(f))
			}
		}
		if len(nums) < 2 || nums[0] < 0 || nums[0] > 63 || nums[1] < 0 || nums[1] > 7 {
			return nil, fmt.Errorf("dscp_prio entry %s is not [DSCP 0-63, priority 0-7]", raw)
		}
		out[nums[0]] = append(out[nums[0]], nums[1])
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// ParseDCBX reads `dcb -j dcbx show dev X`: one true member per flag set
// (host, lld_managed, cee, ieee, static).
func ParseDCBX(b []byte) (map[string]bool, error) {
	v := map[string]bool{}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("not dcb's JSON: %w", err)
	}
	return v, nil
}

// ParsePause reads `ethtool -a X`: the "RX:" and "TX:" lines. The
// "Autonegotiate:" line is left alone (mlx5 keeps pause autonegotiation
// off; a tool that set it would re-apply forever), and so are the
// "RX negotiated:" lines a link with autonegotiation adds.
func ParsePause(b []byte) (rx, tx bool, err error) {
	var haveRX, haveTX bool
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var dst *bool
		switch strings.TrimSpace(k) {
		case "RX":
			dst, haveRX = &rx, true
		case "TX":
			dst, haveTX = &tx, true
		default:
			continue
		}
		switch strings.TrimSpace(v) {
		case "on":
			*dst = true
		case "off":
		default:
			return false, false, fmt.Errorf("%q is neither on nor off", strings.TrimSpace(line))
		}
	}
	if !haveRX || !haveTX {
		return false, false, fmt.Errorf("no RX: and TX: lines in %s", clip(b))
	}
	return rx, tx, nil
}

func clip(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return fmt.Sprintf("%q", s)
}
