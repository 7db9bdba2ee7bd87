package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmaform/rdmaform/fleet"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/words"
	"github.com/rdmaform/rdmaform/plan"
)

func (a *app) wavesCmd() *cobra.Command {
	var inventory, maxUnavailable, plans string
	var perDomain int
	var pol wavesPolicy
	cmd := &cobra.Command{
		Use:   "waves --inventory FILE [--max-unavailable N|P%] [--max-per-domain K] [--plans DIR] [--policy FILE] [--canary N] [--explain] [-o text|json]",
		Short: "Cut a fleet's pending hosts into rollout waves that know the fabric; never reads a host",
		Long: `Cut the hosts of an inventory into waves for a rollout: each wave is
hosts that may be down (reset, rebooted) at the same time.

The inventory is rdmaform's own YAML or JSON:

  hosts:
    - {name: node01, domain: leaf1, roles: [sm]}
    - {name: node02, domain: leaf1, fabric: ib0, pending: false}

or the JSON that ansible-inventory --list prints (not --export), with the
host variables rdmaform_domain, rdmaform_fabric, rdmaform_roles (a list,
or names split at commas) and rdmaform_pending. A domain is any failure
domain (leaf, rail, rack); every host has one or none does (then the
waves are by count only, and the output says so). Host names are host
names: RFC 1123 names (letters, digits and hyphens in labels of at most
63 characters, 253 in all; an IPv4 address is one) or IPv6 addresses;
any other name is refused at its position.

Every wave holds:
  - at most --max-unavailable hosts: N (1 to 100000), or P% (1% to
    100%) of the inventory's hosts (rounded down, at least 1); default 20%;
  - at most --max-per-domain hosts of one domain (1 to 100000, default 1);
  - never two hosts with the role sm (subnet manager) of one fabric.
It takes the fewest waves these allow and says which limit set their
number; the same inventory always gives the same waves.

A host with nothing pending is left out, with the reason. What is pending
comes from --plans DIR when given: DIR/HOST.json is the host's
'rdmaform plan -o json' (changes, values staged for the next boot or
parts planned after one are pending; a plan with errors or activation
failures is left out for a person to look at; a missing file is an
error). Without --plans it is the inventory's pending (rdmaform_pending):
false leaves the host out, true or unset keeps it in.

A policy file (--policy FILE) adds a canary and a ramp (the first wave
of --canary N hosts, later waves growing by ramp steps or a factor,
always within the limits above), stop rules for the rollout, and
compartments: inventory groups rolled one after the other, each with
waves of its own (or side by side, order: parallel), a bake between
waves. waves -o json carries the policy and each wave's step for the
rollout role. --explain prints, for each host, its domain, SM pair,
compartment and ramp step.

Exit codes: 0 the waves are printed (none when nothing is pending);
1 a bad inventory, limit or plan file.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			limit, err := fleet.ParseLimit(maxUnavailable)
			if err != nil {
				return &exitError{code: plan.ExitError, err: fmt.Errorf("--max-unavailable: %w", err)}
			}
			data, err := host.ReadLocalFile(inventory, a.env.Stdin)
			if err != nil {
				return &exitError{code: plan.ExitError, err: fmt.Errorf("reading inventory: %w", err)}
			}
			name := inventory
			if name == "-" {
				name = "<stdin>"
			}
			inv, err := fleet.ReadInventory(name, data)
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			if plans != "" {
				if err := a.readPlans(inv, plans); err != nil {
					return &exitError{code: plan.ExitError, err: err}
				}
			}
			policy, err := pol.rollout(cmd, limit, perDomain)
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			rolled, err := fleet.PlanRollout(inv, policy)
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			w := rolled.Waves
			if pol.explain && a.jsonOut() {
				return &exitError{code: plan.ExitError, err: errors.New("--explain prints text: not with -o json")}
			}
			if pol.explain {
				a.wavesExplain(name, inv, rolled)
				return nil
			}
			if a.jsonOut() {
				return a.writeJSON(wavesJSON(name, inv, rolled))
			}
			a.wavesText(name, inv, w)
			return nil
		},
	}
	cmd.Flags().StringVar(&inventory, "inventory", "", "the inventory `FILE` (- for stdin): rdmaform's YAML/JSON or ansible-inventory --list output")
	cmd.Flags().StringVar(&maxUnavailable, "max-unavailable", "20%", "at most `N|P%` hosts per wave (1 to 100000 hosts, or 1% to 100% of the inventory's)")
	cmd.Flags().IntVar(&perDomain, "max-per-domain", 1, "at most `K` hosts of one failure domain per wave (1 to 100000)")
	cmd.Flags().StringVar(&plans, "plans", "", "what is pending: `DIR`/HOST.json is each host's rdmaform plan -o json")
	pol.flags(cmd)
	_ = cmd.MarkFlagRequired("inventory")
	a.outputFlag(cmd, "text", "text", "json")
	return cmd
}

// readPlans sets each host's Pending from DIR/HOST.json.
func (a *app) readPlans(inv *fleet.Inventory, dir string) error {
	var missing []string
	for i := range inv.Hosts {
		h := &inv.Hosts[i]
		if h.Name == "." || h.Name == ".." || strings.ContainsAny(h.Name, "/\x00") {
			return fmt.Errorf("--plans: host %q cannot name a file in %s", h.Name, dir)
		}
		file := filepath.Join(dir, h.Name+".json")
		data, err := host.ReadLocalFile(file, nil)
		if errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, h.Name)
			continue
		}
		if err != nil {
			return fmt.Errorf("--plans: %w", err)
		}
		h.Pending, h.Why, err = fleet.PlanPending(file, data)
		if err != nil {
			return fmt.Errorf("--plans: %w", err)
		}
	}
	if len(missing) > 0 {
		shown := missing
		if len(shown) > 5 {
			shown = shown[:5]
		}
		more := ""
		if len(missing) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(missing)-len(shown))
		}
		return fmt.Errorf("--plans: no plan in %s for %d %s: %s%s (want DIR/HOST.json, each host's rdmaform plan -o json)",
			dir, len(missing), words.Plural(len(missing), "host", "hosts"), strings.Join(shown, ", "), more)
	}
	return nil
}

// wavesDoc is `waves -o json`.
type wavesDoc struct {
	FormatVersion  int           `json:"format_version"`
	Inventory      string        `json:"inventory"`
	Format         string        `json:"format"`
	Hosts          int           `json:"hosts"`
	Pending        int           `json:"pending"`
	MaxUnavailable int           `json:"max_unavailable"`
	MaxPerDomain   int           `json:"max_per_domain"`
	Domains        bool          `json:"domains"`
	Note           string        `json:"note,omitempty"`
	Bound          string        `json:"bound,omitempty"`
	Policy         policyJSON    `json:"policy"`
	Waves          []waveJSON    `json:"waves"`
	LeftOut        []leftOutJSON `json:"left_out"`
}

type waveJSON struct {
	Hosts   []string          `json:"hosts"`
	Reasons map[string]string `json:"reasons"`
	Step    stepJSON          `json:"step"`
}

// policyJSON is what a rollout does between and after waves, for the
// rollout role: it reads these from waves -o json rather than reading
// the policy file a second time.
type policyJSON struct {
	Canary        int      `json:"canary"`
	BakeSeconds   int      `json:"bake_seconds"`
	FailedHosts   int      `json:"failed_hosts"`
	FailedPercent int      `json:"failed_percent"`
	Compartments  []string `json:"compartments"`
	Order         string   `json:"order,omitempty"`
}

// stepJSON is what set a wave's size (fleet.Step).
type stepJSON struct {
	Compartment string `json:"compartment,omitempty"`
	Ramp        int    `json:"ramp"`
	Rule        string `json:"rule"`
	Size        int    `json:"size"`
	Short       string `json:"short,omitempty"`
}

type leftOutJSON struct {
	Host   string `json:"host"`
	Reason string `json:"reason"`
}

const countOnlyNote = "the inventory names no domain: waves by count only"

func wavesJSON(name string, inv *fleet.Inventory, r *fleet.Rolled) wavesDoc {
	w := r.Waves
	p := r.Policy
	d := wavesDoc{
		FormatVersion: FormatVersion, Inventory: name, Format: inv.Format.String(),
		Hosts: w.Hosts, Pending: w.Pending, MaxUnavailable: w.PerWave, MaxPerDomain: w.MaxPerDomain,
		Domains: !w.CountOnly, Bound: w.Bound,
		Policy: policyJSON{Canary: p.Canary, BakeSeconds: int(p.Bake / time.Second), FailedHosts: max(p.Stop.FailedHosts, 1), FailedPercent: p.Stop.FailedPercent,
			Compartments: append([]string{}, p.Compartments.Groups...), Order: p.Compartments.Order},
		Waves: make([]waveJSON, 0, len(w.Waves)), LeftOut: make([]leftOutJSON, 0, len(w.LeftOut)),
	}
	if w.CountOnly {
		d.Note = countOnlyNote
	}
	for i, wv := range w.Waves {
		st := r.Steps[i]
		d.Waves = append(d.Waves, waveJSON{Hosts: wv.Hosts, Reasons: wv.Reasons,
			Step: stepJSON{Compartment: st.Compartment, Ramp: st.Index, Rule: st.Rule, Size: st.Size, Short: st.Short}})
	}
	for _, l := range w.LeftOut {
		d.LeftOut = append(d.LeftOut, leftOutJSON{Host: l.Host, Reason: l.Reason})
	}
	return d
}

// wavesText prints the waves. Host names are host names (the inventory
// refuses others), but domains, fabrics and the reasons a plan file gave
// are anyone's text: every string is printed escaped (words.Printable),
// so that none splits a line or reaches the terminal as an escape.
func (a *app) wavesText(name string, inv *fleet.Inventory, w *fleet.Waves) {
	out := a.env.Stdout
	p := words.Printable
	fmt.Fprintf(out, "%s (%s): %d %s, %d pending in %d %s; at most %d per wave",
		p(name), inv.Format, w.Hosts, words.Plural(w.Hosts, "host", "hosts"), w.Pending, len(w.Waves), words.Plural(len(w.Waves), "wave", "waves"), w.PerWave)
	if w.CountOnly {
		fmt.Fprintf(out, " (%s)\n", countOnlyNote)
	} else {
		fmt.Fprintf(out, ", %d of a domain\n", w.MaxPerDomain)
	}
	if w.Bound != "" {
		fmt.Fprintf(out, "waves: %d, because %s\n", len(w.Waves), p(w.Bound))
	}
	for i, wv := range w.Waves {
		hosts := make([]string, len(wv.Hosts))
		for k, h := range wv.Hosts {
			hosts[k] = p(h)
		}
		fmt.Fprintf(out, "\nwave %d (%d %s): %s\n", i+1, len(wv.Hosts), words.Plural(len(wv.Hosts), "host", "hosts"), strings.Join(hosts, " "))
		for _, h := range wv.Hosts {
			fmt.Fprintf(out, "  %s: %s\n", p(h), p(wv.Reasons[h]))
		}
	}
	if len(w.LeftOut) > 0 {
		fmt.Fprintf(out, "\nleft out (%d):\n", len(w.LeftOut))
		for _, l := range w.LeftOut {
			fmt.Fprintf(out, "  %s: %s\n", p(l.Host), p(l.Reason))
		}
	}
}
