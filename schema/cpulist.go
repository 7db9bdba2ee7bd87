package schema

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxCPU is the highest CPU number a CPU list may name: Debian's and
// RHEL's kernels are built with CONFIG_NR_CPUS=8192.
const MaxCPU = 8191

// ParseCPUList reads a CPU list as the kernel's bitmap_parselist takes
// it (0-3,8,10-11): numbers 0 to MaxCPU, ranges low-high with low <=
// high. It returns the CPUs in list order, without repeats.
func ParseCPUList(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("an empty CPU list")
	}
	var out []int
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := cpuNumber(lo)
		if err != nil {
			return nil, err
		}
		b := a
		if isRange {
			if b, err = cpuNumber(hi); err != nil {
				return nil, err
			}
			if b < a {
				return nil, fmt.Errorf("the range %s runs backwards", part)
			}
		}
		for c := a; c <= b; c++ {
			if seen[c] {
				return nil, fmt.Errorf("CPU %d is listed twice", c)
			}
			seen[c] = true
			out = append(out, c)
		}
	}
	return out, nil
}

func cpuNumber(s string) (int, error) {
	if s == "" || len(s) > 5 || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a CPU number", truncate(s))
	}
	n, _ := strconv.Atoi(s)
	if n > MaxCPU {
		return 0, fmt.Errorf("CPU %d is past the last CPU a kernel can have (%d)", n, MaxCPU)
	}
	return n, nil
}
