package schema

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

func gpuSpec(items ...string) string {
	var b strings.Builder
	b.WriteString("version: 1\ngpu:\n  driver_params:\n")
	for _, it := range items {
		b.WriteString("    - " + it + "\n")
	}
	return b.String()
}

// TestGPULimits: each limit of gpu.driver_params at the limit and one
// past it: the count, and the value the kernel's int module parameter
// takes (nv-linux.h: module_param(x, int, 0)) at both ends.
func TestGPULimits(t *testing.T) {
	var names []string
	for k := range nvidiaParams {
		names = append(names, k)
	}
	sort.Strings(names)
	many := func(n int) []string {
		var out []string
		for i := 0; i < n; i++ {
			out = append(out, fmt.Sprintf("{name: NVreg_%s, value: 0}", names[i]))
		}
		return out
	}
	one := func(v string) []string { return []string{"{name: NVreg_EnableMSI, value: " + v + "}"} }
	cases := []struct {
		name     string
		at, past []string
		want     string
	}{
		{"parameters", many(MaxGPUDriverParams), many(MaxGPUDriverParams + 1), "g.yaml:4:5: error: $.gpu.driver_params: 17 driver parameters: at most 16"},
		{"value high", one("2147483647"), one("2147483648"), "g.yaml:4:38: error: $.gpu.driver_params[0].value: integer 2147483648 is out of range"},
		{"value low", one("-2147483648"), one("-2147483649"), "g.yaml:4:38: error: $.gpu.driver_params[0].value: integer -2147483649 is out of range"},
		{"value hex", one("0x7fffffff"), one("0x80000000"), "g.yaml:4:38: error: $.gpu.driver_params[0].value: integer 0x80000000 is out of range"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, rep := Parse("g.yaml", []byte(gpuSpec(c.at...))); len(rep) != 0 {
				t.Errorf("at the limit: %v", rep)
			}
			_, rep := Parse("g.yaml", []byte(gpuSpec(c.past...)))
			if len(rep) != 1 || !strings.Contains(rep[0].String(), c.want) {
				t.Errorf("one past: %v, want %q", rep, c.want)
			}
		})
	}
}

// TestGPUNames: a parameter is one of nv-reg.h's integer parameters,
// spelled as there (the and many guides' NVreg_EnablePCIeRelaxedOrderingMode
// is not), with NVreg_; each once; peer_memory one of two; gpu: with
// nothing in it is refused.
func TestGPUNames(t *testing.T) {
	cases := []struct{ spec, want string }{
		{gpuSpec("{name: NVreg_EnablePCIeRelaxedOrderingMode, value: 1}"), "4:14: error: $.gpu.driver_params[0].name: \"NVreg_EnablePCIeRelaxedOrderingMode\" is not a parameter of the nvidia module: NVIDIA's nv-reg.h spells it NVreg_EnablePCIERelaxedOrderingMode"},
		{gpuSpec("{name: GrdmaPciTopoCheckOverride, value: 1}"), "is not a parameter of the nvidia module: NVIDIA's nv-reg.h spells it NVreg_GrdmaPciTopoCheckOverride"},
		{gpuSpec("{name: NVreg_RegistryDwords, value: 1}"), "\"NVreg_RegistryDwords\" is not an integer parameter of the nvidia module"},
		{gpuSpec("{name: NVreg_RmProfilingAdminOnly, value: 1}"), "\"NVreg_RmProfilingAdminOnly\" is not an integer parameter"},
		{gpuSpec("{name: NVreg_EnableMSI, value: 1}", "{name: NVreg_EnableMSI, value: 0}"), "5:14: error: $.gpu.driver_params[1].name: NVreg_EnableMSI is listed twice (first at driver_params[0])"},
		{gpuSpec("{name: NVreg_EnableMSI}"), "4:7: error: $.gpu.driver_params[0]: value: is required"},
		{"version: 1\ngpu:\n  peer_memory: gdrcopy\n", "3:16: error: $.gpu.peer_memory"},
		{"version: 1\ngpu: {}\n", "2:6: error: $.gpu: give peer_memory (dma-buf or nvidia-peermem) or driver_params"},
	}
	for _, c := range cases {
		_, rep := Parse("g.yaml", []byte(c.spec))
		if len(rep) != 1 || !strings.Contains(rep[0].String(), c.want) {
			t.Errorf("%s: %v, want %q", c.spec, rep, c.want)
		}
	}
	for _, ok := range []string{"{name: NVreg_RestrictProfilingToAdminUsers, value: 0}", "{name: NVreg_ResmanDebugLevel, value: -1}", "{name: NVreg_GrdmaPciTopoCheckOverride, value: 1}"} {
		if _, rep := Parse("g.yaml", []byte(gpuSpec(ok))); len(rep) != 0 {
			t.Errorf("%s: %v", ok, rep)
		}
	}
}
