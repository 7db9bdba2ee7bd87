package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rdmaform/rdmaform/fleet"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/words"
)

// wavesPolicy is waves' --policy, --canary and --explain.
type wavesPolicy struct {
	file    string
	canary  string
	explain bool
}

func (p *wavesPolicy) flags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&p.file, "policy", "", "a rollout policy `FILE` (YAML: max_unavailable, max_per_domain, canary, ramp, stop, compartments); "+
		"--max-unavailable and --max-per-domain, when given, override its limits")
	cmd.Flags().StringVar(&p.canary, "canary", "", fmt.Sprintf("the first wave holds `N` hosts (1 to %d, at most max-unavailable); with a ramp only", fleet.MaxCanary))
	cmd.Flags().BoolVar(&p.explain, "explain", false, "print why each host is in its wave: its domain, SM pair, compartment and ramp step")
}

// rollout is the policy of the command line: the file's (or the
// default), with the flags given over it.
func (p *wavesPolicy) rollout(cmd *cobra.Command, limit fleet.Limit, perDomain int) (fleet.Rollout, error) {
	r := fleet.DefaultRollout()
	if p.file == "-" {
		return r, fmt.Errorf("--policy -: the policy is a file (stdin is the inventory's)")
	}
	if p.file != "" {
		data, err := host.ReadLocalFile(p.file, nil)
		if err != nil {
			return r, fmt.Errorf("reading the policy: %w", err)
		}
		if r, err = fleet.ReadPolicy(p.file, data); err != nil {
			return r, err
		}
	}
	if p.file == "" || cmd.Flags().Changed("max-unavailable") {
		r.MaxUnavailable = limit
	}
	if p.file == "" || cmd.Flags().Changed("max-per-domain") {
		r.MaxPerDomain = perDomain
	}
	if cmd.Flags().Changed("canary") {
		n, err := strconv.Atoi(p.canary)
		if err != nil || n < 1 || n > fleet.MaxCanary || strings.TrimLeft(p.canary, "0123456789") != "" {
			return r, fmt.Errorf("--canary %q: want a number of hosts from 1 to %d", p.canary, fleet.MaxCanary)
		}
		if !r.Ramp.On() {
			return r, fmt.Errorf("--canary %d: a canary wave needs a ramp for the waves after it (ramp.steps or ramp.factor in --policy FILE)", n)
		}
		r.Canary = n
	}
	return r, nil
}

// wavesExplain prints each wave's step and, per host, why it is there.
func (a *app) wavesExplain(name string, inv *fleet.Inventory, r *fleet.Rolled) {
	out := a.env.Stdout
	w := r.Waves
	fmt.Fprintf(out, "%s (%s): %d %s, %d pending in %d %s; at most %d per wave, %d of a domain\n",
		words.Printable(name), inv.Format, w.Hosts, words.Plural(w.Hosts, "host", "hosts"), w.Pending, len(w.Waves), words.Plural(len(w.Waves), "wave", "waves"), w.PerWave, w.MaxPerDomain)
	if w.Bound != "" {
		fmt.Fprintf(out, "waves: %d, because %s\n", len(w.Waves), words.Printable(w.Bound))
	}
	s := r.Policy.Stop
	stop := fmt.Sprintf("stop: after %d failed %s", max(s.FailedHosts, 1), words.Plural(max(s.FailedHosts, 1), "host", "hosts"))
	if s.FailedPercent >= 0 {
		stop += fmt.Sprintf(", or when more than %d%% of a wave failed", s.FailedPercent)
	}
	fmt.Fprintln(out, stop)
	if k := max(s.FailedHosts, 1); k > 1 {
		// Below the host rule the line goes on past a failure; the
		// failed host stays drained, out of service, and max_unavailable
		// counts it (the rollout role, and the agent's slots).
		fmt.Fprintf(out, "failed hosts stay drained and count against max_unavailable %d: a later wave takes its first hosts up to %d less the failed hosts still drained (at most %d below the stop rule), the others wait; a wave that can take none stops the line\n",
			w.PerWave, w.PerWave, k-1)
	}
	if r.Policy.Bake > 0 {
		fmt.Fprintf(out, "bake: %s after each wave but the last\n", r.Policy.Bake)
	}
	for i, wv := range w.Waves {
		st := r.Steps[i]
		fmt.Fprintf(out, "\nwave %d (%d %s): %s\n", i+1, len(wv.Hosts), words.Plural(len(wv.Hosts), "host", "hosts"), words.Printable(st.Rule))
		if st.Short != "" {
			fmt.Fprintf(out, "  holds %s\n", words.Printable(st.Short))
		}
		for _, h := range wv.Hosts {
			fmt.Fprintf(out, "  %s:\n", words.Printable(h))
			for _, l := range r.Explain(inv, i, h) {
				fmt.Fprintf(out, "    %s\n", words.Printable(l))
			}
		}
	}
	if len(w.LeftOut) > 0 {
		fmt.Fprintf(out, "\nleft out (%d):\n", len(w.LeftOut))
		for _, l := range w.LeftOut {
			fmt.Fprintf(out, "  %s: %s\n", words.Printable(l.Host), words.Printable(l.Reason))
		}
	}
}
