package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rdmaform/rdmaform/fabrictest"
	"github.com/rdmaform/rdmaform/fleet"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/words"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

const fabricInventoryHelp = `The inventory is the one 'rdmaform waves' reads (rdmaform's YAML/JSON, or
ansible-inventory --list), with each host's link layer: link_layer in
rdmaform's inventory, the host variable rdmaform_link_layer in Ansible's,
InfiniBand or Ethernet (any case; ib and eth too). Hosts are paired only
within one fabric (fabric, rdmaform_fabric) and one link layer; a host
without a link layer is paired only with hosts without one.`

func (a *app) fabricTestCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fabric-test",
		Short: "A cluster-wide bandwidth and latency test: the pairwise rounds, the report, the retest rounds",
		Long: `A fabric test in the ClusterKit style, run by the engines you have
(Ansible, Slurm): 'fabric-test schedule' cuts an inventory's hosts into
pairwise rounds, the engine measures each pair (perftest's ib_write_bw
and ib_write_lat, one pair per host at a time) and writes the results,
'fabric-test report' judges them against the best pair and names the bad
hosts, and 'fabric-test retest' prints the next round while a bad pair
has no culprit yet. rdmaform itself reads no host here.

` + fabricInventoryHelp,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(a.fabricScheduleCmd(), a.fabricReportCmd(), a.fabricRetestCmd())
	return cmd
}

func (a *app) readFabricInventory(file string) (string, *fleet.Inventory, error) {
	if file == "" {
		return "", nil, errors.New("no --inventory FILE")
	}
	data, err := host.ReadLocalFile(file, a.env.Stdin)
	if err != nil {
		return "", nil, fmt.Errorf("reading inventory: %w", err)
	}
	name := file
	if name == "-" {
		name = "<stdin>"
	}
	inv, err := fleet.ReadInventory(name, data)
	return name, inv, err
}

func (a *app) fabricScheduleCmd() *cobra.Command {
	var inventory string
	cmd := &cobra.Command{
		Use:   "schedule --inventory FILE [-o text|json]",
		Short: "Print the pairwise rounds of a fabric test: every pair of one fabric and link layer once, each host once a round",
		Long: `Print the rounds of a fabric test: the circle method (a round-robin
tournament) over each group of hosts of one fabric and one link layer,
the groups side by side in the same rounds. A group of n hosts has n-1
rounds of n/2 pairs (n even) or n rounds of (n-1)/2 pairs (n odd: each
host sits one round out); every pair of the group is in exactly one
round, and no host is in two pairs of a round, so the pairs of a round
run at the same time. The test's wall time is about rounds × the time
of one pair's measurement. A host alone in its group is in no round and
is listed as left out. The same inventory always gives the same rounds.

` + fabricInventoryHelp + `

Exit codes: 0 the rounds are printed; 1 a bad inventory.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			name, inv, err := a.readFabricInventory(inventory)
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			groups := fabrictest.Groups(inv)
			rounds := fabrictest.Schedule(groups)
			var left []fabricLeftOut
			for _, h := range fabrictest.Alone(groups) {
				for _, g := range groups {
					if len(g.Hosts) == 1 && g.Hosts[0] == h {
						left = append(left, fabricLeftOut{Hosts: []string{h}, Reason: "the only host of " + fabrictest.GroupName(g) + ": no peer to test with"})
					}
				}
			}
			doc := roundsDoc(name, "schedule", groups, rounds, left)
			if a.jsonOut() {
				return a.writeRoundsJSON(doc)
			}
			a.roundsText(doc)
			return nil
		},
	}
	cmd.Flags().StringVar(&inventory, "inventory", "", "the inventory `FILE` (- for stdin): rdmaform's YAML/JSON or ansible-inventory --list output")
	a.outputFlag(cmd, "text", "text", "json")
	return cmd
}

// fabricFlags are report's and retest's: the inventory, the results and
// the thresholds.
type fabricFlags struct {
	inventory string
	results   []string
	minBW     string
	maxLat    string
	// files are the results files read, in order.
	files []string
}

func (f *fabricFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.inventory, "inventory", "", "the inventory `FILE` the schedule was made from")
	cmd.Flags().StringArrayVar(&f.results, "results", nil, "a results `FILE` (repeat it, or name more files as arguments: the schedule's results, then each retest round's; a pair measured again counts by its latest result)")
	cmd.Flags().StringVar(&f.minBW, "min-bandwidth", "93", fmt.Sprintf("a pair is bad below `P` %% of the best pair's bandwidth in its group (%d to %d)", fabrictest.MinPercent, fabrictest.MaxPercent))
	cmd.Flags().StringVar(&f.maxLat, "max-latency", "2.1", fmt.Sprintf("a pair is bad above `F` times the best pair's latency in its group (%d to %d)", fabrictest.MinFactor, fabrictest.MaxFactor))
}

// fabricAnalyze reads the inventory and the results (--results, then
// the arguments) and judges them.
func (a *app) fabricAnalyze(f *fabricFlags, args []string) (string, *fabrictest.Report, error) {
	files := append(append([]string{}, f.results...), args...)
	var th fabrictest.Thresholds
	var err error
	if th.MinBandwidthPercent, err = strconv.ParseFloat(strings.TrimSuffix(f.minBW, "%"), 64); err != nil {
		return "", nil, fmt.Errorf("--min-bandwidth %q: want a percentage from %d to %d", f.minBW, fabrictest.MinPercent, fabrictest.MaxPercent)
	}
	if th.MaxLatencyFactor, err = strconv.ParseFloat(f.maxLat, 64); err != nil {
		return "", nil, fmt.Errorf("--max-latency %q: want a factor from %d to %d", f.maxLat, fabrictest.MinFactor, fabrictest.MaxFactor)
	}
	if err := th.Check(); err != nil {
		return "", nil, err
	}
	if len(files) == 0 {
		return "", nil, errors.New("no --results FILE")
	}
	name, inv, err := a.readFabricInventory(f.inventory)
	if err != nil {
		return "", nil, err
	}
	var all []fabrictest.Result
	for _, file := range files {
		data, err := host.ReadLocalFile(file, a.env.Stdin)
		if err != nil {
			return "", nil, fmt.Errorf("reading results: %w", err)
		}
		if len(data) > host.MaxLocalFile {
			return "", nil, fmt.Errorf("results file %s: more than %d bytes (write one results file per round)", file, host.MaxLocalFile)
		}
		rs, err := fabrictest.ReadResults(file, data)
		if err != nil {
			return "", nil, err
		}
		all = append(all, rs...)
	}
	rep, err := fabrictest.Analyze(fabrictest.Groups(inv), all, th)
	f.files = files
	return name, rep, err
}

func (a *app) fabricReportCmd() *cobra.Command {
	var f fabricFlags
	unknown := func(err error) error { return &exitError{code: int(fabrictest.Unknown), err: err} }
	cmd := &cobra.Command{
		Use:   "report --inventory FILE --results FILE [FILE...] [--min-bandwidth P] [--max-latency F] [-o text|json]",
		Short: "Judge a fabric test's results: the bad pairs, the bad hosts they name, with Nagios exit codes",
		Long: `Judge the per-pair results of a fabric test. A results file is JSON:

  {"format_version": 1, "results": [
    {"hosts": ["node01", "node02"], "bandwidth_gbps": 392.4, "latency_us": 1.93},
    {"hosts": ["node03", "node04"], "error": "what the failed run said"}]}

bandwidth_gbps is one direction's Gb/s (above 0, at most 100000),
latency_us microseconds (above 0, at most 10000000); a pair that could
not be measured has error instead, and is bad. The results files are
--results FILE (repeatable) and then the arguments, so that
'--results results/*.json' reads them all: the schedule's results, then
each retest round's, in that order (name them so that the shell sorts
them so: round-001.json); a pair measured again counts by its latest
result. A file holds at most 16 MiB: write one per round (a round of
500 pairs is about 40 KB).

A pair is bad below --min-bandwidth % of the best pair's bandwidth of
its group (fabric and link layer; default 93, from 1 to 100) or above
--max-latency times the best pair's latency (default 2.1, from 1 to 10),
as ClusterKit judges. A host in a good pair is cleared; a host in no
good pair and measured too slow with a cleared host is named bad. A host
in no good pair whose run with a cleared host failed (it was down, late
or would not connect) is reported apart, not measured: the test has no
figure of it. A bad pair of two hosts not yet cleared leaves them
suspects: 'fabric-test retest' prints the round that pairs each with a
cleared host. A bad pair of two
cleared hosts is a bad path (the route between them), measured again
once by the retest. The best pair sets the bar: a group whose every pair
is slow has no bad pair (compare the best with the port's rate).

` + fabricInventoryHelp + `

Exit codes (Nagios's, for health-check frameworks):
  0  OK: every host was measured and no pair is bad;
  1  WARNING: bad pairs with no host named yet (suspects: run the
     retest round; or a bad path), or hosts not measured or with no
     result;
  2  CRITICAL: a host is named bad;
  3  UNKNOWN: no verdict: a bad inventory, results file, threshold or
     command line.`,
		Args: cobra.ArbitraryArgs,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.checkOutput(cmd); err != nil {
				return unknown(err)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			name, rep, err := a.fabricAnalyze(&f, args)
			if err != nil {
				return unknown(err)
			}
			doc := reportDoc(name, f.files, rep)
			if a.jsonOut() {
				if err := a.writeJSON(doc); err != nil {
					return unknown(err)
				}
			} else {
				a.reportText(doc)
			}
			if rep.Status != fabrictest.OK {
				return &exitError{code: int(rep.Status)}
			}
			return nil
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return unknown(err) })
	f.add(cmd)
	a.outputFlag(cmd, "text", "text", "json")
	return cmd
}

func (a *app) fabricRetestCmd() *cobra.Command {
	var f fabricFlags
	cmd := &cobra.Command{
		Use:   "retest --inventory FILE --results FILE [FILE...] [--min-bandwidth P] [--max-latency F] [-o text|json]",
		Short: "Print the next retest round of a fabric test: each suspect host with a host known good",
		Long: `Print the next round of a fabric test's retest, from the results so
far (judged as 'fabric-test report' judges them, with the same flags).
Each bad pair whose hosts are not cleared is halved: each of its hosts
is paired with a cleared host of its group (one it has not been
measured with, when there is one), so that the next results name the
slow host and clear the other. A bad path (two cleared hosts) measured
once is measured again. No host is in two pairs; what does not fit, or
has no cleared host in its group, is listed as left out, for the round
after. Run the round, add its results file to --results, and run
'fabric-test report' and 'fabric-test retest' again: no round (an empty
rounds list) means the report is final.

The document is the schedule's (rounds of pairs), with stage "retest".

` + fabricInventoryHelp + `

Exit codes: 0 the round is printed (none when nothing is left to
retest); 1 a bad inventory, results file or threshold.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, rep, err := a.fabricAnalyze(&f, args)
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			round, waiting := fabrictest.Retest(rep)
			var rounds []fabrictest.Round
			if len(round.Pairs) > 0 {
				rounds = append(rounds, round)
			}
			groups := make([]fabrictest.Group, len(rep.Groups))
			for i, g := range rep.Groups {
				groups[i] = g.Group
			}
			var left []fabricLeftOut
			for _, w := range waiting {
				left = append(left, fabricLeftOut{Hosts: w.Hosts, Reason: w.Reason})
			}
			doc := roundsDoc(name, "retest", groups, rounds, left)
			if a.jsonOut() {
				return a.writeRoundsJSON(doc)
			}
			a.roundsText(doc)
			return nil
		},
	}
	f.add(cmd)
	a.outputFlag(cmd, "text", "text", "json")
	return cmd
}

// fabricRoundsDoc is `fabric-test schedule -o json` and `fabric-test
// retest -o json`.
type fabricRoundsDoc struct {
	FormatVersion int               `json:"format_version"`
	Inventory     string            `json:"inventory"`
	Stage         string            `json:"stage"`
	Groups        []fabricGroupJSON `json:"groups"`
	// Rounds are written by writeRoundsJSON: {"pairs": [[a, b], ...]}.
	Rounds  []fabrictest.Round `json:"-"`
	LeftOut []fabricLeftOut    `json:"left_out"`
}

type fabricGroupJSON struct {
	Fabric    string `json:"fabric"`
	LinkLayer string `json:"link_layer"`
	Hosts     int    `json:"hosts"`
	// Report only.
	Pairs             *int     `json:"pairs,omitempty"`
	BestBandwidthGbps *float64 `json:"best_bandwidth_gbps,omitempty"`
	BestLatencyUs     *float64 `json:"best_latency_us,omitempty"`
}

type fabricLeftOut struct {
	Hosts  []string `json:"hosts"`
	Reason string   `json:"reason"`
}

func roundsDoc(name, stage string, groups []fabrictest.Group, rounds []fabrictest.Round, left []fabricLeftOut) fabricRoundsDoc {
	d := fabricRoundsDoc{FormatVersion: FormatVersion, Inventory: name, Stage: stage,
		Groups: make([]fabricGroupJSON, 0, len(groups)), Rounds: rounds, LeftOut: make([]fabricLeftOut, 0, len(left))}
	for _, g := range groups {
		d.Groups = append(d.Groups, fabricGroupJSON{Fabric: g.Fabric, LinkLayer: g.LinkLayer, Hosts: len(g.Hosts)})
	}
	d.LeftOut = append(d.LeftOut, left...)
	return d
}

// writeRoundsJSON writes the rounds document as writeJSON would, but
// each pair on one line: a 1,000-host schedule is 499,500 pairs, which
// json.MarshalIndent would spread over two million lines and most of a
// second.
func (a *app) writeRoundsJSON(d fabricRoundsDoc) error {
	head, err := json.MarshalIndent(struct {
		FormatVersion int               `json:"format_version"`
		Inventory     string            `json:"inventory"`
		Stage         string            `json:"stage"`
		Groups        []fabricGroupJSON `json:"groups"`
	}{d.FormatVersion, d.Inventory, d.Stage, d.Groups}, "", "  ")
	if err != nil {
		return err
	}
	left, err := json.MarshalIndent(d.LeftOut, "  ", "  ")
	if err != nil {
		return err
	}
	size := len(head) + len(left) + 64
	for _, r := range d.Rounds {
		size += 20
		for _, p := range r.Pairs {
			size += len(p[0]) + len(p[1]) + 16
		}
	}
	b := make([]byte, 0, size)
	b = append(b, head[:len(head)-2]...) // without "\n}"
	b = append(b, ",\n  \"rounds\": ["...)
	for i, r := range d.Rounds {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n    {\"pairs\": ["...)
		for k, p := range r.Pairs {
			if k > 0 {
				b = append(b, ',')
			}
			b = append(b, "\n      ["...)
			b = appendJSONString(b, p[0])
			b = append(b, ", "...)
			b = appendJSONString(b, p[1])
			b = append(b, ']')
		}
		b = append(b, "\n    ]}"...)
	}
	if len(d.Rounds) > 0 {
		b = append(b, "\n  "...)
	}
	b = append(b, "],\n  \"left_out\": "...)
	b = append(b, left...)
	b = append(b, "\n}\n"...)
	a.wroteDoc = true
	_, err = a.env.Stdout.Write(b)
	return err
}

// appendJSONString appends s as a JSON string (s is UTF-8: a host name).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

func fabricGroupText(g fabricGroupJSON) string {
	return words.Printable(fabrictest.GroupName(fabrictest.Group{Fabric: g.Fabric, LinkLayer: g.LinkLayer}))
}

// roundsText prints rounds one a line: "round N: a-b c-d". Host names
// are host names (the inventory refuses others); fabric names are
// printed escaped.
func (a *app) roundsText(d fabricRoundsDoc) {
	out := a.env.Stdout
	pairs := 0
	for _, r := range d.Rounds {
		pairs += len(r.Pairs)
	}
	fmt.Fprintf(out, "%s: %s, %d %s of %d %s\n", words.Printable(d.Inventory), d.Stage, len(d.Rounds), words.Plural(len(d.Rounds), "round", "rounds"), pairs, words.Plural(pairs, "pair", "pairs"))
	for _, g := range d.Groups {
		fmt.Fprintf(out, "  %s: %d %s\n", fabricGroupText(g), g.Hosts, words.Plural(g.Hosts, "host", "hosts"))
	}
	for i, r := range d.Rounds {
		ps := make([]string, len(r.Pairs))
		for k, p := range r.Pairs {
			ps[k] = p[0] + "-" + p[1]
		}
		fmt.Fprintf(out, "round %d: %s\n", i+1, strings.Join(ps, " "))
	}
	for _, l := range d.LeftOut {
		fmt.Fprintf(out, "left out: %s: %s\n", strings.Join(l.Hosts, " "), words.Printable(l.Reason))
	}
}

// fabricReportDoc is `fabric-test report -o json`.
type fabricReportDoc struct {
	FormatVersion int                  `json:"format_version"`
	Inventory     string               `json:"inventory"`
	Results       []string             `json:"results"`
	Status        string               `json:"status"`
	ExitCode      int                  `json:"exit_code"`
	Thresholds    fabricThresholdsJSON `json:"thresholds"`
	Groups        []fabricGroupJSON    `json:"groups"`
	Pairs         int                  `json:"pairs"`
	BadPairs      []fabricPairJSON     `json:"bad_pairs"`
	BadHosts      []fabricBadHostJSON  `json:"bad_hosts"`
	Unmeasured    []fabricBadHostJSON  `json:"unmeasured"`
	Suspects      []string             `json:"suspects"`
	BadPaths      []fabricPairJSON     `json:"bad_paths"`
	Untested      []string             `json:"untested"`
	Retest        bool                 `json:"retest"`
}

type fabricThresholdsJSON struct {
	MinBandwidthPercent float64 `json:"min_bandwidth_percent"`
	MaxLatencyFactor    float64 `json:"max_latency_factor"`
}

type fabricPairJSON struct {
	Hosts         [2]string  `json:"hosts"`
	BandwidthGbps *float64   `json:"bandwidth_gbps,omitempty"`
	LatencyUs     *float64   `json:"latency_us,omitempty"`
	Error         string     `json:"error,omitempty"`
	Measured      int        `json:"measured"`
	Reasons       []string   `json:"reasons"`
	Source        schema.Pos `json:"source"`
}

type fabricBadHostJSON struct {
	Host   string `json:"host"`
	Reason string `json:"reason"`
}

func pairJSON(m *fabrictest.Measured) fabricPairJSON {
	p := fabricPairJSON{Hosts: m.Hosts, Error: m.Err, Measured: m.Times, Reasons: append([]string{}, m.Reasons...),
		Source: schema.Pos{File: m.File, Line: m.Line, Col: m.Col}}
	if m.Err == "" {
		bw, lat := m.BandwidthGbps, m.LatencyUs
		p.BandwidthGbps, p.LatencyUs = &bw, &lat
	}
	return p
}

func reportDoc(name string, files []string, rep *fabrictest.Report) fabricReportDoc {
	d := fabricReportDoc{FormatVersion: FormatVersion, Inventory: name, Results: files, Status: rep.Status.String(), ExitCode: int(rep.Status),
		Thresholds: fabricThresholdsJSON{rep.Thresholds.MinBandwidthPercent, rep.Thresholds.MaxLatencyFactor},
		Pairs:      len(rep.Pairs), BadPairs: []fabricPairJSON{}, BadHosts: []fabricBadHostJSON{}, Unmeasured: []fabricBadHostJSON{},
		Suspects: append([]string{}, rep.Suspects...),
		BadPaths: []fabricPairJSON{}, Untested: append([]string{}, rep.Untested...)}
	for _, g := range rep.Groups {
		pairs := g.Pairs
		j := fabricGroupJSON{Fabric: g.Fabric, LinkLayer: g.LinkLayer, Hosts: len(g.Hosts), Pairs: &pairs}
		if g.BestBandwidthGbps > 0 {
			bw, lat := g.BestBandwidthGbps, g.BestLatencyUs
			j.BestBandwidthGbps, j.BestLatencyUs = &bw, &lat
		}
		d.Groups = append(d.Groups, j)
	}
	for _, m := range rep.BadPairs {
		d.BadPairs = append(d.BadPairs, pairJSON(m))
	}
	for _, m := range rep.BadPaths {
		d.BadPaths = append(d.BadPaths, pairJSON(m))
	}
	for _, b := range rep.BadHosts {
		d.BadHosts = append(d.BadHosts, fabricBadHostJSON{Host: b.Host, Reason: b.Reason})
	}
	for _, b := range rep.Unmeasured {
		d.Unmeasured = append(d.Unmeasured, fabricBadHostJSON{Host: b.Host, Reason: b.Reason})
	}
	round, _ := fabrictest.Retest(rep)
	d.Retest = len(round.Pairs) > 0
	return d
}

// statusMaxHosts is how many hosts the status line names; the lines
// under it name them all.
const statusMaxHosts = 10

// statusHosts names hosts on the status line: at most statusMaxHosts,
// then how many more.
func statusHosts(bs []fabricBadHostJSON) string {
	var hs []string
	for i, b := range bs {
		if i == statusMaxHosts {
			hs = append(hs, fmt.Sprintf("and %d more", len(bs)-i))
			break
		}
		hs = append(hs, b.Host)
	}
	return strings.Join(hs, " ")
}

// reportText is a Nagios plugin's output: one status line with
// performance data, then the details.
func (a *app) reportText(d fabricReportDoc) {
	out := a.env.Stdout
	var what string
	switch {
	case len(d.BadHosts) > 0:
		what = fmt.Sprintf("%d bad %s: %s", len(d.BadHosts), words.Plural(len(d.BadHosts), "host", "hosts"), statusHosts(d.BadHosts))
		if n := len(d.Unmeasured); n > 0 {
			what += fmt.Sprintf(", %d not measured", n)
		}
	case len(d.Suspects) > 0:
		what = fmt.Sprintf("%d bad %s, %d suspect %s: run fabric-test retest", len(d.BadPairs), words.Plural(len(d.BadPairs), "pair", "pairs"), len(d.Suspects), words.Plural(len(d.Suspects), "host", "hosts"))
	case len(d.Unmeasured) > 0:
		what = fmt.Sprintf("%d %s not measured: %s", len(d.Unmeasured), words.Plural(len(d.Unmeasured), "host", "hosts"), statusHosts(d.Unmeasured))
	case len(d.BadPaths) > 0:
		what = fmt.Sprintf("%d bad %s between good hosts", len(d.BadPaths), words.Plural(len(d.BadPaths), "path", "paths"))
	case len(d.Untested) > 0:
		what = fmt.Sprintf("%d %s with no result", len(d.Untested), words.Plural(len(d.Untested), "host", "hosts"))
	default:
		what = fmt.Sprintf("%d %s, none bad", d.Pairs, words.Plural(d.Pairs, "pair", "pairs"))
	}
	fmt.Fprintf(out, "FABRIC %s - %s | pairs=%d bad_pairs=%d bad_hosts=%d unmeasured=%d\n", d.Status, what, d.Pairs, len(d.BadPairs), len(d.BadHosts), len(d.Unmeasured))
	for _, g := range d.Groups {
		fmt.Fprintf(out, "%s: %d %s, %d %s measured", fabricGroupText(g), g.Hosts, words.Plural(g.Hosts, "host", "hosts"), *g.Pairs, words.Plural(*g.Pairs, "pair", "pairs"))
		if g.BestBandwidthGbps != nil {
			fmt.Fprintf(out, "; best %.6g Gb/s, %.6g µs", *g.BestBandwidthGbps, *g.BestLatencyUs)
		}
		fmt.Fprintln(out)
	}
	for _, b := range d.BadHosts {
		fmt.Fprintf(out, "bad host %s: %s\n", b.Host, words.Printable(b.Reason))
	}
	for _, b := range d.Unmeasured {
		fmt.Fprintf(out, "not measured %s: %s\n", b.Host, words.Printable(b.Reason))
	}
	if len(d.Suspects) > 0 {
		fmt.Fprintf(out, "suspects: %s\n", strings.Join(d.Suspects, " "))
	}
	for _, p := range d.BadPaths {
		fmt.Fprintf(out, "bad path %s-%s (measured %d×): %s\n", p.Hosts[0], p.Hosts[1], p.Measured, words.Printable(strings.Join(p.Reasons, "; ")))
	}
	if len(d.Untested) > 0 {
		fmt.Fprintf(out, "no result: %s\n", strings.Join(d.Untested, " "))
	}
	if n := len(d.BadPairs); n > 0 {
		shown := d.BadPairs
		if len(shown) > 20 {
			shown = shown[:20]
		}
		for _, p := range shown {
			fmt.Fprintf(out, "bad pair %s-%s: %s\n", p.Hosts[0], p.Hosts[1], words.Printable(strings.Join(p.Reasons, "; ")))
		}
		if n > len(shown) {
			fmt.Fprintf(out, "... and %d more bad pairs (-o json lists them all)\n", n-len(shown))
		}
	}
}
