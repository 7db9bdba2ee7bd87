package schema

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// KernelArg is one argument of the kernel command line the spec asks for
// (present) or asks to be absent. It takes effect at the next boot.
type KernelArg struct {
	Arg    string `yaml:"arg" doc:"the argument as on the kernel command line: KEY or KEY=VALUE (iommu=pt, intel_iommu=on, numa_balancing=disable, hugepagesz=1G); with absent: the KEY alone (no KEY=... may stay) or KEY=VALUE (that argument may not stay)"`
	Absent bool   `yaml:"absent,omitempty" doc:"the argument must not be on the command line after the next boot"`
	Raw    bool   `yaml:"raw,omitempty" doc:"a key rdmaform does not know: only the characters safe in the bootloader's files are checked"`
}

// Kernel argument limits: the spec's list, and one argument's bytes (the
// x86 command line is 2048 bytes in all, COMMAND_LINE_SIZE).
const (
	MaxKernelArgs   = 32
	MaxKernelArgLen = 256
)

var (
	kernelKeyRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)
	// kernelValueRE is what a value may hold: nothing a shell (Debian's
	// /etc/default/grub is sourced by sh), grub.cfg's parser or grubby's
	// argument splitting reads as syntax: no quote, space, '$', '`', '\',
	// ';', '#', '&', '|', '<', '>', '(', ')', '*', '?', '[', ']', '{', '}',
	// '~', '!', newline.
	kernelValueRE = regexp.MustCompile(`^[A-Za-z0-9_.,:=@/+%-]*$`)
	hugeSizeRE    = regexp.MustCompile(`^[1-9][0-9]{0,9}[KMGkmg]$`)
)

// kernelKnown are the keys rdmaform checks the values of: the RDMA-relevant
// ones (the IOMMU mode peer-to-peer DMA and GPUDirect need, ACS for the
// GPU path, NUMA balancing, huge pages for registered memory). Each
// returns "" for a good value, or why it is not. The values are those of
// the kernel's Documentation/admin-guide/kernel-parameters.txt.
var kernelKnown = map[string]func(v string, hasValue bool) string{
	"iommu":                oneOf("pt", "nopt", "off", "force", "noforce", "soft", "merge", "nomerge", "strict", "nostrict"),
	"intel_iommu":          listOf("on", "off", "igfx_off", "forcedac", "strict", "sp_off", "sm_on", "sm_off", "tboot_noforce", "nobounce"),
	"amd_iommu":            listOf("fullflush", "off", "force_isolation", "force_enable", "pgtbl_v1", "pgtbl_v2", "irtcachedis", "nohugepages", "v2_pgsizes_only"),
	"iommu.passthrough":    oneOf("0", "1"),
	"iommu.strict":         oneOf("0", "1"),
	"pci":                  pciValue,
	"numa_balancing":       oneOf("enable", "disable"),
	"hugepagesz":           hugeSize,
	"default_hugepagesz":   hugeSize,
	"hugepages":            count,
	"transparent_hugepage": oneOf("always", "madvise", "never"),
}

func needValue(v string, has bool) string {
	if !has || v == "" {
		return "needs a value (KEY=VALUE)"
	}
	return ""
}

func oneOf(vals ...string) func(string, bool) string {
	return func(v string, has bool) string {
		if m := needValue(v, has); m != "" {
			return m
		}
		for _, x := range vals {
			if v == x {
				return ""
			}
		}
		return fmt.Sprintf("%q is not one of %s", v, strings.Join(vals, ", "))
	}
}

func listOf(vals ...string) func(string, bool) string {
	return func(v string, has bool) string {
		if m := needValue(v, has); m != "" {
			return m
		}
		for _, item := range strings.Split(v, ",") {
			if m := oneOf(vals...)(item, true); m != "" {
				return m
			}
		}
		return ""
	}
}

func hugeSize(v string, has bool) string {
	if m := needValue(v, has); m != "" {
		return m
	}
	if !hugeSizeRE.MatchString(v) {
		return fmt.Sprintf("%q is not a page size such as 2M or 1G", v)
	}
	return ""
}

func count(v string, has bool) string {
	if m := needValue(v, has); m != "" {
		return m
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil || (len(v) > 1 && v[0] == '0') {
		return fmt.Sprintf("%q is not a count from 0 to 4294967295", v)
	}
	_ = n
	return ""
}

// pciValue checks pci=: a comma list of options; config_acs= takes
// FLAGS@DEVICE (one device: a second needs ';', which grub.cfg reads as
// the end of a command).
func pciValue(v string, has bool) string {
	if m := needValue(v, has); m != "" {
		return m
	}
	for _, o := range strings.Split(v, ",") {
		if o == "" {
			return "an empty pci= option"
		}
		if acs, ok := strings.CutPrefix(o, "config_acs="); ok {
			flags, dev, found := strings.Cut(acs, "@")
			if !found || flags == "" || strings.Trim(flags, "01x") != "" || len(flags) > 7 || dev == "" {
				return fmt.Sprintf("config_acs=%s is not FLAGS@DEVICE (FLAGS of 0, 1 and x, at most 7, e.g. 111x@0000:3b:00.0)", acs)
			}
		}
	}
	return ""
}

// CheckKernelArg says what is wrong with a kernel argument ("" if
// nothing): its length, its key, and its value (by the key's rule, or
// with raw only the characters that are safe in the bootloader's files).
// It also returns the key.
func CheckKernelArg(a KernelArg) (key, msg string) {
	if a.Arg == "" {
		return "", "arg: is required (KEY or KEY=VALUE)"
	}
	if len(a.Arg) > MaxKernelArgLen {
		return "", fmt.Sprintf("%d bytes: a kernel argument here is at most %d", len(a.Arg), MaxKernelArgLen)
	}
	key, val, has := strings.Cut(a.Arg, "=")
	if !kernelKeyRE.MatchString(key) {
		return "", fmt.Sprintf("%q is not a kernel parameter name (letters, digits, '_', '.', '-')", key)
	}
	if !kernelValueRE.MatchString(val) {
		return key, fmt.Sprintf("the value of %s holds a character that is not safe in /etc/default/grub, grub.cfg or grubby's arguments (quotes, spaces, shell and grub syntax): only letters, digits and _ . , : = @ / + %% -", key)
	}
	if a.Absent && !has {
		return key, ""
	}
	rule, known := kernelKnown[key]
	switch {
	case known && a.Raw:
		return key, fmt.Sprintf("%s is a key rdmaform knows: drop raw: so that its value is checked", key)
	case !known && !a.Raw:
		return key, fmt.Sprintf("rdmaform does not know the kernel parameter %s; mark it raw: true to pass it as it is", key)
	case known:
		if m := rule(val, has); m != "" {
			return key, fmt.Sprintf("%s: %s", key, m)
		}
	}
	return key, ""
}

func (v *validator) kernelArgs() {
	if len(v.spec.KernelArgs) > MaxKernelArgs {
		v.add("$.kernel_args", "%d kernel arguments: at most %d", len(v.spec.KernelArgs), MaxKernelArgs)
		return
	}
	seen := map[string]bool{}
	for i, a := range v.spec.KernelArgs {
		p := Path("kernel_args", i, "arg")
		key, msg := CheckKernelArg(a)
		if msg != "" {
			v.add(p, "%s", msg)
			continue
		}
		if seen[key] {
			v.add(p, "the kernel parameter %s is listed twice", key)
		}
		seen[key] = true
	}
}
