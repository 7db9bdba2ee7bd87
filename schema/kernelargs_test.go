package schema

import (
	"fmt"
	"strings"
	"testing"
)

func kargsSpec(items ...string) string {
	var b strings.Builder
	b.WriteString("version: 1\nkernel_args:\n")
	for _, it := range items {
		b.WriteString("  - " + it + "\n")
	}
	return b.String()
}

// TestKernelArgLimits: each limit of kernel_args at the limit and one
// past it, the finding at the entry's arg (line 3, column 11: "  - {arg: ").
func TestKernelArgLimits(t *testing.T) {
	raw := func(n int) string { return "{arg: x=" + strings.Repeat("v", n-2) + ", raw: true}" }
	many := func(n int) []string {
		var out []string
		for i := 0; i < n; i++ {
			out = append(out, fmt.Sprintf("{arg: k%d=1, raw: true}", i))
		}
		return out
	}
	cases := []struct {
		name     string
		at, past []string
		want     string // the finding one past
	}{
		{"argument bytes", []string{raw(MaxKernelArgLen)}, []string{raw(MaxKernelArgLen + 1)}, "3:11: error: $.kernel_args[0].arg: 257 bytes: a kernel argument here is at most 256"},
		{"arguments", many(MaxKernelArgs), many(MaxKernelArgs + 1), "3:3: error: $.kernel_args: 33 kernel arguments: at most 32"},
		{"hugepages", []string{"{arg: hugepages=4294967295}"}, []string{"{arg: hugepages=4294967296}"}, `hugepages: "4294967296" is not a count from 0 to 4294967295`},
		{"hugepagesz digits", []string{"{arg: hugepagesz=1234567890K}"}, []string{"{arg: hugepagesz=12345678901K}"}, `is not a page size such as 2M or 1G`},
		{"config_acs flags", []string{"{arg: pci=config_acs=1111111@0000:3b:00.0}"}, []string{"{arg: pci=config_acs=11111111@0000:3b:00.0}"}, "is not FLAGS@DEVICE"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, rep := Parse("k.yaml", []byte(kargsSpec(c.at...))); len(rep) != 0 {
				t.Errorf("at the limit: %v", rep)
			}
			_, rep := Parse("k.yaml", []byte(kargsSpec(c.past...)))
			if len(rep) != 1 || !strings.Contains(rep[0].String(), c.want) {
				t.Errorf("one past: %v, want %q", rep, c.want)
			}
		})
	}
}

// TestKernelArgValues: values are checked per key; a key rdmaform does not
// know needs raw; raw values still may hold nothing a shell or grub.cfg
// reads as syntax.
func TestKernelArgValues(t *testing.T) {
	good := []string{
		"{arg: iommu=pt}", "{arg: intel_iommu=on}", `{arg: "intel_iommu=on,sm_on"}`, "{arg: amd_iommu=force_isolation}",
		"{arg: iommu.passthrough=1}", "{arg: pci=config_acs=111x@0000:3b:00.0}", "{arg: numa_balancing=disable}",
		"{arg: hugepagesz=1G}", "{arg: hugepages=0}", "{arg: default_hugepagesz=2M}",
		"{arg: amd_iommu, absent: true}", "{arg: iommu.passthrough=0, absent: true}", "{arg: mlx5_core.prof_sel=2, raw: true}",
		"{arg: quiet, raw: true}", "{arg: transparent_hugepage=never}",
	}
	for _, g := range good {
		if _, rep := Parse("k.yaml", []byte(kargsSpec(g))); len(rep) != 0 {
			t.Errorf("%s: %v", g, rep)
		}
	}
	bad := map[string]string{
		"{arg: iommu=on}":                 `iommu: "on" is not one of pt`,
		`{arg: "intel_iommu=on,bogus"}`:   `"bogus" is not one of on`,
		"{arg: iommu.passthrough=2}":      `"2" is not one of 0, 1`,
		"{arg: numa_balancing}":           "numa_balancing: needs a value",
		"{arg: hugepages=01}":             "is not a count",
		"{arg: pci=config_acs=111x}":      "is not FLAGS@DEVICE",
		`{arg: "pci=noaer,,"}`:            "an empty pci= option",
		"{arg: foo=1}":                    "rdmaform does not know the kernel parameter foo; mark it raw: true",
		"{arg: iommu=pt, raw: true}":      "iommu is a key rdmaform knows",
		`{arg: "x=a\"b", raw: true}`:      "not safe in /etc/default/grub",
		`{arg: "x=$(reboot)", raw: true}`: "not safe",
		`{arg: "x=a;reboot", raw: true}`:  "not safe",
		`{arg: "x=a b", raw: true}`:       "not safe",
		`{arg: "x=a\nb", raw: true}`:      "not safe",
		"{arg: \"x=`id`\", raw: true}":    "not safe",
		`{arg: "x=a#b", raw: true}`:       "not safe",
		`{arg: "x=a'b", raw: true}`:       "not safe",
		`{arg: "x=a\\b", raw: true}`:      "not safe",
		"{arg: \"$X=1\", raw: true}":      "is not a kernel parameter name",
		"{arg: \"\"}":                     "arg: is required",
	}
	for spec, want := range bad {
		_, rep := Parse("k.yaml", []byte(kargsSpec(spec)))
		if len(rep) != 1 || !strings.Contains(rep[0].String(), want) || !strings.Contains(rep[0].String(), "k.yaml:3:") {
			t.Errorf("%s: %v, want one finding at line 3 with %q", spec, rep, want)
		}
	}
	_, rep := Parse("k.yaml", []byte(kargsSpec("{arg: iommu=pt}", "{arg: iommu=nopt}")))
	if len(rep) != 1 || !strings.Contains(rep[0].String(), "k.yaml:4:") || !strings.Contains(rep[0].String(), "iommu is listed twice") {
		t.Errorf("a key twice: %v", rep)
	}
}
