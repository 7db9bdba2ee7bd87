package subnetmanager

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/host"
)

// SMInfo is one line of sminfo: which subnet manager, at which priority,
// in which state.
type SMInfo struct {
	LID      int
	GUID     string // as sminfo prints it: 0x100001
	Priority int
	State    string // SMINFO_MASTER, SMINFO_STANDBY, SMINFO_DISCOVERING, SMINFO_NOTACTIVE
}

// sminfoRE reads sminfo's one line (infiniband-diags 44.0, real output in
// testdata/sminfo-*.txt):
// "sminfo: sm lid 1 sm guid 0x200000, activity count 126 priority 0 state 3 SMINFO_MASTER"
var sminfoRE = regexp.MustCompile(`^sminfo: sm lid (\d+) sm guid (0x[0-9a-fA-F]+), activity count \d+ priority (\d+) state \d+ (SMINFO_[A-Z]+)\s*$`)

// ParseSMInfo reads sminfo's output.
func ParseSMInfo(out string) (SMInfo, error) {
	for _, l := range strings.Split(out, "\n") {
		m := sminfoRE.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		lid, _ := strconv.Atoi(m[1])
		prio, _ := strconv.Atoi(m[3])
		return SMInfo{LID: lid, GUID: strings.ToLower(m[2]), Priority: prio, State: m[4]}, nil
	}
	return SMInfo{}, fmt.Errorf("sminfo printed no subnet manager line: %q", strings.TrimSpace(out))
}

// ParsePKeys reads smpquery pkeys' table (real output in
// testdata/smpquery-pkeys-*.txt): rows "   0: 0xffff 0x0002 ...", then
// "N pkeys capacity for this port". Empty slots are left out; sorted.
func ParsePKeys(out string) ([]int, error) {
	var keys []int
	seen := map[int]bool{}
	rows := 0
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		idx, rest, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		if _, err := strconv.Atoi(idx); err != nil {
			continue
		}
		rows++
		for _, f := range strings.Fields(rest) {
			v, err := strconv.ParseInt(f, 0, 32)
			if err != nil || v < 0 || v > 0xffff {
				return nil, fmt.Errorf("smpquery pkeys: %q is not a P_Key", f)
			}
			if v&0x7fff == 0 || seen[int(v)] {
				continue
			}
			seen[int(v)] = true
			keys = append(keys, int(v))
		}
	}
	if rows == 0 {
		return nil, fmt.Errorf("smpquery pkeys printed no table: %q", strings.TrimSpace(out))
	}
	sort.Ints(keys)
	return keys, nil
}

// ReadFabric asks the fabric, through the local port, for the port's
// P_Key table (sysfs when it has one) and for the master and the local
// subnet manager.
//
// Equivalent to: sminfo -C DEV -P N; sminfo -C DEV -P N -D 0;
// smpquery -C DEV -P N -D pkeys 0
func ReadFabric(ctx context.Context, h *host.Host, lp *LocalPort) (*Fabric, error) {
	via := []string{"-C", lp.Device, "-P", strconv.Itoa(lp.Port)}
	f := &Fabric{PKeys: lp.SysfsPKeys}
	res, err := h.Runner.Run(ctx, host.Cmd{Args: append([]string{"sminfo"}, via...), Timeout: queryTimeout})
	if err != nil {
		return nil, fmt.Errorf("asking the fabric who its subnet manager is: %w", err)
	}
	if f.Master, err = ParseSMInfo(string(res.Stdout)); err != nil {
		return nil, err
	}
	res, err = h.Runner.Run(ctx, host.Cmd{Args: append(append([]string{"sminfo"}, via...), "-D", "0"), Timeout: queryTimeout})
	if err != nil {
		return nil, fmt.Errorf("asking this host's subnet manager for its state: %w", err)
	}
	if f.Local, err = ParseSMInfo(string(res.Stdout)); err != nil {
		return nil, err
	}
	if f.PKeys == nil {
		res, err := h.Runner.Run(ctx, host.Cmd{Args: append(append([]string{"smpquery"}, via...), "-D", "pkeys", "0"), Timeout: queryTimeout})
		if err != nil {
			return nil, fmt.Errorf("reading the P_Key table of %s port %d: %w", lp.Device, lp.Port, err)
		}
		if f.PKeys, err = ParsePKeys(string(res.Stdout)); err != nil {
			return nil, err
		}
	}
	return f, nil
}
