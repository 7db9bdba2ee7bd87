package sim

import (
	"fmt"
	"strconv"
	"strings"
)

// QueueState is what `ethtool -g` or `ethtool -l` shows of a netdev: the
// driver's maximum and current value of each field it has, by ethtool's
// netlink attribute name (rx, tx for rings; rx, tx, other, combined for
// channels). A field that is absent prints as "n/a".
type QueueState struct {
	Max map[string]int `yaml:"max"`
	Cur map[string]int `yaml:"cur"`
	// Pow2 rounds a written value up to a power of two, as mlx5 does with
	// ring sizes (mlx5e_ethtool_set_ringparam takes order_base_2 of it).
	Pow2 bool `yaml:"pow2,omitempty"`
}

// mlx5Rings: mlx5e_ethtool_get_ringparam's maximums 1<<13 (rx and tx)
// and the driver's default log sizes of 10 (1024 entries).
func mlx5Rings() *QueueState {
	return &QueueState{Max: map[string]int{"rx": 8192, "tx": 8192}, Cur: map[string]int{"rx": 1024, "tx": 1024}, Pow2: true}
}

// mlx5Channels: mlx5 has combined channels only; a 16-CPU host gets 16,
// all in use.
func mlx5Channels() *QueueState {
	return &QueueState{Max: map[string]int{"combined": 16}, Cur: map[string]int{"combined": 16}}
}

// The labels ethtool 6.1 prints, in its order (netlink/rings.c
// rings_reply_cb, netlink/channels.c channels_reply_cb), as the kernel lab
// showed them for virtio_net: "RX:\t\t256", "RX Mini:\tn/a", ...
var (
	ringLabels = []struct{ label, key string }{{"RX:\t\t", "rx"}, {"RX Mini:\t", "rx_mini"}, {"RX Jumbo:\t", "rx_jumbo"}, {"TX:\t\t", "tx"}}
	chanLabels = []struct{ label, key string }{{"RX:\t\t", "rx"}, {"TX:\t\t", "tx"}, {"Other:\t\t", "other"}, {"Combined:\t", "combined"}}
	// the order of the attributes ethtool -G and -L send
	ringArgs = []string{"rx", "rx-mini", "rx-jumbo", "tx"}
	chanArgs = []string{"rx", "tx", "other", "combined"}
)

// ethtoolNoDevice is what ethtool 6.1 prints for a netdev that does not
// exist (its netlink request names it in the header nest at offset 24).
const ethtoolNoDevice = "netlink error: no device matches name (offset 24)\nnetlink error: No such device\n"

// toolRun is how an emulated tool runs fn on the state: a query (write
// false) only reads it; a change writes it and saves sim.yaml.
func (s *Sim) toolRun(write bool) func(fn func(st *State) error) error {
	if write {
		return s.mutateSaved
	}
	return func(fn func(st *State) error) error {
		var err error
		s.view(func(st *State) { err = fn(st) })
		return err
	}
}

// ethtoolQueues emulates ethtool 6.1's -g, -G, -l and -L against the
// kernel's checks (net/ethtool/rings.c and channels.c): a value above the
// maximum is refused with the kernel's extack message at the offset of
// its attribute, a driver without the operation answers "Operation not
// supported".
func ethtoolQueues(s *Sim, args []string) (string, string, int) {
	flag, dev := args[0], args[1]
	var out, errOut string
	code := 0
	run := s.toolRun(flag == "-G" || flag == "-L")
	err := run(func(st *State) error {
		n := st.Netdev(dev)
		if n == nil {
			errOut, code = ethtoolNoDevice, 1
			return nil
		}
		q, labels, names, header, what := n.Rings, ringLabels, ringArgs, "Ring", "ring size"
		if flag == "-l" || flag == "-L" {
			q, labels, names, header, what = n.Channels, chanLabels, chanArgs, "Channel", "channel count"
		}
		if q == nil {
			errOut, code = "netlink error: Operation not supported\n", 1
			if flag == "-G" {
				code = 81
			}
			return nil
		}
		if flag == "-g" || flag == "-l" {
			out = showQueues(dev, header, q, labels, flag == "-g")
			return nil
		}
		rest := args[2:]
		if len(rest) == 0 || len(rest)%2 != 0 {
			errOut, code = "ethtool: bad command line argument(s)\nFor more information run ethtool -h\n", 1
			return nil
		}
		set := map[string]int{}
		for i := 0; i < len(rest); i += 2 {
			v, err := strconv.ParseUint(rest[i+1], 0, 32)
			if err != nil || indexOf(names, rest[i]) < 0 {
				errOut, code = "ethtool: bad command line argument(s)\nFor more information run ethtool -h\n", 1
				return nil
			}
			set[strings.ReplaceAll(rest[i], "-", "_")] = int(v)
		}
		// The request: nlmsghdr and genlmsghdr (20 bytes), the header nest
		// (4) with the device name attribute, then one 8-byte attribute
		// per value in ethtool's order.
		off := 24 + (4+len(dev)+1+3)/4*4
		for _, name := range names {
			k := strings.ReplaceAll(name, "-", "_")
			v, ok := set[k]
			if !ok {
				continue
			}
			if max, has := q.Max[k]; !has || v > max {
				errOut = fmt.Sprintf("netlink error: requested %s exceeds maximum (offset %d)\nnetlink error: Invalid argument\n", what, off)
				code = 1
				if flag == "-G" {
					code = 81
				}
				return nil
			}
			off += 8
		}
		next := map[string]int{}
		for k, v := range q.Cur {
			next[k] = v
		}
		for k, v := range set {
			if q.Pow2 {
				p := 1
				for p < v {
					p <<= 1
				}
				v = p
			}
			next[k] = v
		}
		if flag == "-L" && next["combined"]+next["rx"] == 0 || flag == "-L" && next["combined"]+next["tx"] == 0 {
			errOut, code = "netlink error: Invalid argument\n", 1
			return nil
		}
		q.Cur = next
		return nil
	})
	if err != nil {
		return "", err.Error() + "\n", 1
	}
	return out, errOut, code
}

// showQueues prints ethtool 6.1's -g or -l answer; -g adds the lines of
// the settings rdmaform leaves alone, as virtio_net showed them.
func showQueues(dev, header string, q *QueueState, labels []struct{ label, key string }, rings bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s parameters for %s:\n", header, dev)
	for _, sect := range []struct {
		title string
		m     map[string]int
	}{{"Pre-set maximums:", q.Max}, {"Current hardware settings:", q.Cur}} {
		b.WriteString(sect.title + "\n")
		for _, l := range labels {
			if v, ok := sect.m[l.key]; ok {
				fmt.Fprintf(&b, "%s%d\n", l.label, v)
			} else {
				fmt.Fprintf(&b, "%sn/a\n", l.label)
			}
		}
	}
	if rings {
		b.WriteString("RX Buf Len:\t\tn/a\nCQE Size:\t\tn/a\nTX Push:\toff\nTCP data split:\tn/a\n")
	}
	return b.String()
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}
