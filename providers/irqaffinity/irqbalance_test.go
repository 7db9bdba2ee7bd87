package irqaffinity

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseArgs: irqbalance 1.9.2's command line read as its getopt_long
// reads it (irqbalance.c: "odfjVi:p:s:c:l:m:t:e:" and lopts): long
// options with = or the next word, unique prefixes (--banm is banmod,
// --ban is ambiguous and bans nothing), clustered short options with the
// value joined or next, options of other letters skipped with their
// values, and nothing after "--".
func TestParseArgs(t *testing.T) {
	for _, c := range []struct {
		args string
		want Daemon
	}{
		{"irqbalance --foreground", Daemon{}},
		{"irqbalance --banirq=40 --banirq 41 -i 42 -i43 -fi44 -fi 45", Daemon{BanIRQs: []int{40, 41, 42, 43, 44, 45}}},
		{"irqbalance --banm=mlx5 -m virtio --banmod mlx4_core", Daemon{BanMods: []string{"mlx5", "virtio", "mlx4_core"}}},
		{"irqbalance --ban=40 --interval 40 -t 41 -p off -e 2", Daemon{}},
		{"irqbalance -l /etc/irqbalance.d --policyscript=/usr/local/bin/pol", Daemon{PolicyScript: "/usr/local/bin/pol"}},
		{"irqbalance --banirq=40x -- --banirq=41", Daemon{BanIRQs: []int{40}}},
		{"irqbalance --banirq=", Daemon{}},
	} {
		got := parseArgs(strings.Fields(c.args))
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.args, diff)
		}
	}
}

// TestMoves: an IRQ is kept off when banned by number, or when a banned
// module name is part of the driver's name (classify.c
// check_for_module_ban: strstr); a function without a driver link is
// banned by number alone.
func TestMoves(t *testing.T) {
	irqs := []int{40, 41, 42}
	for _, c := range []struct {
		d      Daemon
		driver string
		want   []int
	}{
		{Daemon{}, "mlx5_core", irqs},
		{Daemon{BanIRQs: []int{41}}, "mlx5_core", []int{40, 42}},
		{Daemon{BanMods: []string{"mlx5"}}, "mlx5_core", nil},
		{Daemon{BanMods: []string{"mlx5_core"}}, "mlx5_core", nil},
		{Daemon{BanMods: []string{"mlx5_core_x"}}, "mlx5_core", irqs},
		{Daemon{BanMods: []string{"mlx5"}}, "", irqs},
		{Daemon{BanMods: []string{"virtio"}}, "virtio-pci", nil},
	} {
		if got := c.d.moves(irqs, c.driver); !cmp.Equal(got, c.want) {
			t.Errorf("%+v on %s: %v, want %v", c.d, c.driver, got, c.want)
		}
	}
}

// TestFormatList: CPUs printed as the kernel's %*pbl prints them.
func TestFormatList(t *testing.T) {
	for in, want := range map[string]string{"0": "0", "3,1,2": "1-3", "0-3,8,10-11": "0-3,8,10-11", "5,7": "5,7", "8191": "8191"} {
		l, err := parseKernelList(in + "\n")
		if err != nil {
			t.Fatal(err)
		}
		if got := formatList(l); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}
