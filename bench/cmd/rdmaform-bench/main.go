// Command rdmaform-bench runs rdmaform's performance comparisons side by
// side and prints one table (`make bench`):
//
//  1. plan wall time on simulated gpu-node hosts (1, 8, 32 cards) where
//     every emulated tool run takes L, as a multiple of L; apply's
//     firmware stage, and activate --by fw-reset's reset stage;
//  2. the same queries scripted by hand, one mlxconfig after another;
//  3. tool runs per plan (mlxconfig per adapter, nmcli for 16 IPoIB
//     connections);
//  4. 16 IPoIB connections on a real NetworkManager (nmlab) by rdmaform and
//     by Ansible's community.general.nmcli, and the no-change re-run;
//  5. validate and plan of a 2,000-resource spec: CPU, allocations, peak RSS;
//  6. the kernel lab (make kernel-test): build, boot to the first guest
//     test, the guest tests, and the whole run;
//  7. rdmaform waves on a 10,000-host inventory;
//  8. rdmaform fabric-test schedule of 1,000 hosts;
//  9. the fleet rollout (role against serial:);
//  10. rdmaform-agent: one process's memory and CPU against the lab's API
//     server, and 1,000 nodes against one API server (agent.go).
//
// Parts that need root, NetworkManager or Ansible say why they were
// skipped (with -require they fail instead).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/agent"
	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/bench"
	"github.com/rdmaform/rdmaform/internal/testlab/benchlab"
	"github.com/rdmaform/rdmaform/internal/testlab/nmlab"
	"github.com/rdmaform/rdmaform/providers/qos"
)

func main() { os.Exit(run(os.Args[1:], os.Environ(), os.Stdout, os.Stderr)) }

type options struct {
	latency time.Duration
	// resetLatency is the run time of an emulated firmware reset.
	resetLatency time.Duration
	cards        []int
	reps         int
	conns        int
	rdmaform     string
	// nmcliBaseline is an rdmaform binary from before the D-Bus switch.
	nmcliBaseline string
	only          string
	require       bool
	kernlab       string
	// The rollout part: hosts, the activation latency A, the share of
	// hosts per wave, and the Ansible module binary.
	rolloutHosts   int
	activation     time.Duration
	rolloutPercent int
	module         string
	// rolloutPolicy: a rollout policy file the role runs with (its
	// waves, not -rollout-percent's); then the role's run alone.
	rolloutPolicy string
	// The agent part: the rdmaform-agent binary, the manifests, the
	// fleet's nodes and how many of them run a real agent, the agents'
	// interval, the steady state's window, the idle measurement's.
	agentBin       string
	deploy         string
	agentNodes     int
	agentInProcess int
	agentInterval  time.Duration
	agentWindow    time.Duration
	agentIdle      time.Duration
}

// report collects the table's sections.
type report struct {
	opts options
	// agentApply: a config change to InSync on one agent (the agent
	// part's "one apply").
	agentApply time.Duration
	environ    []string
	sections   []section
}

type section struct {
	title string
	head  []string
	rows  [][]string
	notes []string
	raw   []string // lines in go test -bench format
}

func run(args, environ []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == benchlab.ChildArg {
		return benchlab.ChildMain(args[1:])
	}
	fs := flag.NewFlagSet("rdmaform-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var cards string
	fs.DurationVar(&o.latency, "latency", 200*time.Millisecond, "emulated run time L of every simulated tool run")
	fs.DurationVar(&o.resetLatency, "reset-latency", 10*time.Second, "emulated run time L of a firmware reset (activate's part)")
	fs.StringVar(&cards, "cards", "1,8,32", "gpu-node sizes (dual-port cards) to plan")
	fs.IntVar(&o.reps, "reps", 3, "plans per size (the median is reported)")
	fs.IntVar(&o.conns, "conns", 16, "IPoIB connections")
	fs.StringVar(&o.rdmaform, "rdmaform", "bin/rdmaform", "rdmaform binary for the runs that need a process of its own")
	fs.StringVar(&o.nmcliBaseline, "nmcli-baseline", "", "an rdmaform binary from before the D-Bus switch (nmcli per profile), measured beside the current one in the nm part")
	fs.StringVar(&o.only, "only", "", "run one part: plan, activate, qos, nm, big, kernel, waves, fabric, rollout, agent")
	fs.StringVar(&o.kernlab, "kernlab", "internal/testlab/kernlab/run.sh", "the kernel lab's script")
	fs.IntVar(&o.rolloutHosts, "rollout-hosts", 1000, "simulated hosts of the rollout part (the role rdmaform.rdma.rollout against a serial: playbook)")
	fs.DurationVar(&o.activation, "activation-latency", 2*time.Minute, "the rollout part's activation latency A: the run time of each host's firmware reset")
	fs.IntVar(&o.rolloutPercent, "rollout-percent", 20, "the rollout part's hosts per wave (and serial: batch), percent (forks: a wave's hosts; each fork of a 1,000-host play holds about 90 MB)")
	fs.StringVar(&o.rolloutPolicy, "rollout-policy", "", "the rollout part with a rollout policy `FILE` (canary, ramp: rdma_policy): the role's whole rollout alone, against the bound 1.2 × its waves × A + stage")
	fs.StringVar(&o.module, "ansible-module", "build/ansible/library/rdmaform", "the Ansible module binary (make ansible) for the rollout part")
	fs.StringVar(&o.agentBin, "agent", "bin/linux_"+runtime.GOARCH+"/rdmaform-agent", "the rdmaform-agent binary (make agent) for the agent part")
	fs.StringVar(&o.deploy, "deploy", "deploy/kubernetes", "the agent's manifests (CRDs under crds/), installed in the agent part's lab")
	fs.IntVar(&o.agentNodes, "agent-nodes", 1000, "the agent part's Nodes against one lab API server")
	fs.IntVar(&o.agentInProcess, "agent-inprocess", 500, "how many of -agent-nodes run a real agent (in this process, each with a simulated host, about 2 MiB each); a load driver plays the rest")
	fs.DurationVar(&o.agentInterval, "agent-interval", agent.DefaultInterval, "the agent part's reconcile interval (rdmaform-agent --interval) for the fleet")
	fs.DurationVar(&o.agentWindow, "agent-window", 10*time.Minute, "the agent part's steady-state window, over which requests are counted")
	fs.DurationVar(&o.agentIdle, "agent-idle", time.Minute, "how long the agent part measures one agent process at idle")
	fs.BoolVar(&o.require, "require", false, "fail instead of skipping a part whose components are missing")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	for _, c := range strings.Split(cards, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n < 1 {
			fmt.Fprintf(stderr, "rdmaform-bench: -cards %q: want numbers such as 1,8,32\n", cards)
			return 2
		}
		o.cards = append(o.cards, n)
	}
	if abs, err := filepath.Abs(o.rdmaform); err == nil {
		o.rdmaform = abs
	}
	o.agentInProcess = min(o.agentInProcess, o.agentNodes)
	if o.agentNodes < 1 || o.agentInProcess < 0 || o.agentInterval < time.Second || o.agentWindow < time.Second || o.agentIdle < time.Second {
		fmt.Fprintf(stderr, "rdmaform-bench: -agent-nodes %d, -agent-inprocess %d, -agent-interval %s, -agent-window %s, -agent-idle %s: want 1 or more nodes, 0 or more real agents (at most the nodes), 1s or more\n", o.agentNodes, o.agentInProcess, o.agentInterval, o.agentWindow, o.agentIdle)
		return 2
	}
	if o.rolloutHosts < 8 || o.rolloutPercent < 1 || o.rolloutPercent > 100 || o.activation < time.Second {
		fmt.Fprintf(stderr, "rdmaform-bench: -rollout-hosts %d, -rollout-percent %d, -activation-latency %s: want 8 or more hosts, 1 to 100 %%, 1s or more\n", o.rolloutHosts, o.rolloutPercent, o.activation)
		return 2
	}
	for _, p := range []*string{&o.module, &o.agentBin} {
		if abs, err := filepath.Abs(*p); err == nil {
			*p = abs
		}
	}
	if abs, err := filepath.Abs(o.nmcliBaseline); err == nil && o.nmcliBaseline != "" {
		o.nmcliBaseline = abs
	}
	tmp, remove, err := benchlab.TempDir("rdmaform-bench-")
	if err != nil {
		fmt.Fprintf(stderr, "rdmaform-bench: %v\n", err)
		return 1
	}
	defer remove()

	ctx := context.Background()
	r := &report{opts: o, environ: environ}
	parts := []struct {
		name string
		fn   func(context.Context, string, io.Writer) error
	}{
		{"plan", r.planRounds},
		{"activate", r.activateRounds},
		{"qos", r.qosRounds},
		{"nm", r.networkManager},
		{"big", r.big},
		{"kernel", r.kernelLab},
		{"waves", r.waves},
		{"fabric", r.fabric},
		{"rollout", r.rollout},
		{"agent", r.agentBench},
	}
	failed := false
	for _, p := range parts {
		if o.only != "" && o.only != p.name {
			continue
		}
		fmt.Fprintf(stderr, "== %s\n", p.name)
		if err := p.fn(ctx, filepath.Join(tmp, p.name), stderr); err != nil {
			fmt.Fprintf(stderr, "rdmaform-bench: %s: %v\n", p.name, err)
			failed = true
		}
	}
	r.print(stdout)
	if failed {
		return 1
	}
	return 0
}

// qosRounds: what a qos block on every RoCE port adds to a plan, side by
// side with the same plan without it.
func (r *report) qosRounds(ctx context.Context, dir string, log io.Writer) error {
	L := r.opts.latency
	sec := section{
		title: fmt.Sprintf("QoS reads on simulated RoCE gpu-node hosts, every emulated tool run taking L = %s", L),
		head:  []string{"cards", "RoCE ports", "plan without qos", "× L", "plan with qos", "× L", "qos adds", "× L", "dcb + ethtool runs", "the same runs one by one"},
	}
	for _, cards := range r.opts.cards {
		fmt.Fprintf(log, "   %d cards\n", cards)
		hdir := filepath.Join(dir, fmt.Sprintf("roce-%d", cards))
		s, err := bench.RoCENode(hdir, filepath.Join(dir, fmt.Sprintf("scratch-%d", cards)), cards, L)
		if err != nil {
			return err
		}
		var without, with []time.Duration
		var qosRuns int
		for i := 0; i < r.opts.reps; i++ {
			for _, q := range []bool{false, true} {
				pr, err := bench.Plan(ctx, hdir, bench.RoCESpec(s.State(), q))
				if err != nil {
					return err
				}
				if !q {
					without = append(without, pr.Wall)
					continue
				}
				with = append(with, pr.Wall)
				qosRuns = 0
				for _, c := range pr.Calls {
					if strings.HasPrefix(c, "dcb ") || strings.HasPrefix(c, "ethtool ") {
						qosRuns++
					}
				}
			}
		}
		w0, w1 := median(without), median(with)
		added := max(w1-w0, 0)
		seq := time.Duration(qosRuns) * L
		sec.rows = append(sec.rows, []string{
			strconv.Itoa(cards), strconv.Itoa(2 * cards), ms(w0), ratio(w0, L), ms(w1), ratio(w1, L), ms(added), ratio(added, L), strconv.Itoa(qosRuns), ms(seq),
		})
	}
	sec.notes = append(sec.notes,
		fmt.Sprintf("Both plans list every PCI function with the LINK_TYPE it has (the firmware queries run either way); \"with qos\" adds {trust: dscp, pfc: [3], pause: false} to every port: the dcb reads it needs (pfc, app, dcbx) and one ethtool read per port, all at once (at most %d at a time), alongside the firmware queries (providers discover in parallel). Median of %d plans each, in-process.", qos.MaxReads, r.opts.reps),
		"\"The same runs one by one\" is what reading them sequentially would add: runs × L.")
	r.sections = append(r.sections, sec)
	return nil
}

// planRounds: parts 1-3.
func (r *report) planRounds(ctx context.Context, dir string, log io.Writer) error {
	L := r.opts.latency
	sec := section{
		title: fmt.Sprintf("Plan on simulated gpu-node hosts, every emulated tool run taking L = %s (firmware params on every PCI function)", L),
		head:  []string{"cards", "PCI functions", "rdmaform plan", "× L", "sequential mlxconfig q", "× L", "speed-up", "mlxconfig runs per plan"},
	}
	for _, cards := range r.opts.cards {
		fmt.Fprintf(log, "   %d cards\n", cards)
		hdir := filepath.Join(dir, fmt.Sprintf("gpu-%d", cards))
		s, err := bench.GPUNode(hdir, cards, L)
		if err != nil {
			return err
		}
		spec := bench.FirmwareSpec(s.State())
		var walls []time.Duration
		var runs bench.Runs
		for i := 0; i < r.opts.reps; i++ {
			pr, err := bench.Plan(ctx, hdir, spec)
			if err != nil {
				return err
			}
			walls = append(walls, pr.Wall)
			runs = bench.CountRuns(pr.Calls)
		}
		wall := median(walls)
		targets := bench.FirmwareTargets(s.State())
		seq, err := bench.Sequential(ctx, s, targets)
		if err != nil {
			return err
		}
		sec.rows = append(sec.rows, []string{
			strconv.Itoa(cards), strconv.Itoa(len(targets)),
			ms(wall), ratio(wall, L), ms(seq), ratio(seq, L), fmt.Sprintf("%.1f×", float64(seq)/float64(wall)),
			fmt.Sprintf("%d (%d queries + %d `-v`)", runs.Mlxconfig, runs.Mlxconfig-runs.Probe, runs.Probe),
		})
	}
	sec.notes = append(sec.notes,
		fmt.Sprintf("rdmaform: `rdmaform --sim DIR plan -f SPEC` in-process (cli.Run), median of %d; sequential: one `mlxconfig -d DEV q NAMES` per function after another through the simulator's runner (sim.RunTool), once.", r.opts.reps),
		"A gpu-node card is two PCI functions (mlx5: one RDMA device per port); the spec lists both, function 0 with LINK_TYPE_P1, SRIOV_EN, NUM_OF_VFS and function 1 with LINK_TYPE_P2, and the firmware provider queries each spec device that has parameters once.")
	r.sections = append(r.sections, sec)
	if err := r.applyRounds(ctx, dir, log); err != nil {
		return err
	}

	// nmcli runs for o.conns IPoIB connections, before and after apply.
	cards := (r.opts.conns + 1) / 2
	hdir := filepath.Join(dir, "ipoib")
	s, err := bench.GPUNode(hdir, cards, 0)
	if err != nil {
		return err
	}
	conns, err := bench.IPoIBConns(s.State(), r.opts.conns)
	if err != nil {
		return err
	}
	spec := bench.IPoIBSpec(conns)
	before, err := bench.Plan(ctx, hdir, spec)
	if err != nil {
		return err
	}
	if err := bench.Apply(ctx, hdir, spec); err != nil {
		return err
	}
	after, err := bench.Plan(ctx, hdir, spec)
	if err != nil {
		return err
	}
	r.sections = append(r.sections, section{
		title: fmt.Sprintf("nmcli runs per plan, %d IPoIB connections (simulated gpu-node, %d cards)", r.opts.conns, cards),
		head:  []string{"plan", "nmcli runs", "commands"},
		rows: [][]string{
			{"before apply (no profile)", strconv.Itoa(bench.CountRuns(before.Calls).Nmcli), nmcliLines(before.Calls)},
			{fmt.Sprintf("after apply (%d profiles)", r.opts.conns), strconv.Itoa(bench.CountRuns(after.Calls).Nmcli), nmcliLines(after.Calls)},
		},
	})
	return nil
}

func nmcliLines(calls []string) string {
	var out []string
	for _, c := range calls {
		if strings.HasPrefix(c, "nmcli ") {
			if len(c) > 70 {
				c = c[:67] + "..."
			}
			out = append(out, "`"+c+"`")
		}
	}
	return strings.Join(out, "; ")
}

// networkManager: part 4.
func (r *report) networkManager(ctx context.Context, dir string, log io.Writer) error {
	sec := section{
		title: fmt.Sprintf("%d IPoIB connections on a real NetworkManager (nmlab), saved with autoconnect off, not activated", r.opts.conns),
		head:  []string{"tool", "first run (create)", "re-run (no change)", "CPU first run", "profiles", "changed (first/re-run)"},
	}
	defer func() { r.sections = append(r.sections, sec) }()
	skip := func(why string) error {
		sec.notes = append(sec.notes, "skipped: "+why)
		if r.opts.require {
			return fmt.Errorf("%s", why)
		}
		return nil
	}
	if !benchlab.Exists(r.opts.rdmaform) {
		return skip(fmt.Sprintf("%s not built (make build)", r.opts.rdmaform))
	}
	root := filepath.Join(dir, "root")
	s, err := bench.GPUNode(root, (r.opts.conns+1)/2, 0)
	if err != nil {
		return err
	}
	conns, err := bench.IPoIBConns(s.State(), r.opts.conns)
	if err != nil {
		return err
	}
	specPath := filepath.Join(dir, "ipoib.yaml")
	if err := benchlab.WriteFile(specPath, bench.IPoIBSpec(conns)); err != nil {
		return err
	}

	// rdmaform: apply, then apply again; reps times, the profiles deleted
	// between rounds (rdmaform runs are short and vary more).
	fmt.Fprintln(log, "   rdmaform")
	first, again, rdmaProfiles, rdmaFields, err := r.rdmaformRounds(ctx, r.opts.rdmaform, root, specPath, conns, log)
	if err != nil {
		return skipOr(err, skip)
	}
	sec.rows = append(sec.rows, []string{"rdmaform apply (D-Bus)", ms(first.Wall), ms(again.Wall), ms(first.CPU()),
		strconv.Itoa(rdmaProfiles), changedLine(first.Stdout) + " / " + changedLine(again.Stdout)})
	sec.notes = append(sec.notes, fmt.Sprintf("rdmaform: `DBUS_SYSTEM_BUS_ADDRESS=<lab bus> rdmaform --root <gpu-node tree> apply --yes -f ipoib.yaml` (plan, apply, plan again), then again with nothing to do; median of %d rounds, the profiles deleted between rounds. Profile: ", r.opts.reps)+rdmaFields)
	if r.opts.nmcliBaseline != "" {
		// The same rounds with an rdmaform built before the D-Bus switch,
		// which ran nmcli once or twice per profile.
		fmt.Fprintln(log, "   rdmaform (nmcli baseline)")
		bfirst, bagain, n, _, err := r.rdmaformRounds(ctx, r.opts.nmcliBaseline, root, specPath, conns, log)
		if err != nil {
			return skipOr(err, skip)
		}
		sec.rows = append(sec.rows,
			[]string{"rdmaform apply (nmcli: baseline)", ms(bfirst.Wall), ms(bagain.Wall), ms(bfirst.CPU()),
				strconv.Itoa(n), changedLine(bfirst.Stdout) + " / " + changedLine(bagain.Stdout)},
			[]string{"**nmcli ÷ D-Bus**", fmt.Sprintf("**%.1f×**", float64(bfirst.Wall)/float64(first.Wall)),
				fmt.Sprintf("**%.1f×**", float64(bagain.Wall)/float64(again.Wall)), fmt.Sprintf("%.1f×", float64(bfirst.CPU())/float64(first.CPU())), "", ""})
		sec.notes = append(sec.notes, "nmcli baseline: the same rounds with `-nmcli-baseline "+filepath.Base(r.opts.nmcliBaseline)+"`, an rdmaform built from the last commit that drove NetworkManager through nmcli.")
	}

	// Ansible: the same profiles with community.general.nmcli.
	if why := ansibleMissing(getenv(r.environ, "HOME")); why != "" {
		return skip(why)
	}
	fmt.Fprintln(log, "   ansible")
	lab, stop, err := benchlab.StartNM(log)
	if err != nil {
		return skip(err.Error())
	}
	defer stop()
	play := filepath.Join(dir, "ipoib-playbook.yml")
	if err := benchlab.WriteFile(play, bench.AnsiblePlaybook(conns)); err != nil {
		return err
	}
	aenv := append(lab.Env(),
		"ANSIBLE_HOME="+filepath.Join(dir, "ansible-home"),
		"ANSIBLE_LOCAL_TEMP="+filepath.Join(dir, "ansible-tmp"),
		"ANSIBLE_REMOTE_TEMP="+filepath.Join(dir, "ansible-tmp"),
		"ANSIBLE_RETRY_FILES_ENABLED=false",
		"ANSIBLE_PYTHON_INTERPRETER=auto_silent",
		"ANSIBLE_NOCOLOR=1",
		"ANSIBLE_LOCALHOST_WARNING=false",
		"ANSIBLE_INVENTORY_UNPARSED_WARNING=false",
	)
	aargv := []string{"ansible-playbook", "-i", "localhost,", "-c", "local", play}
	var afirsts, aagains []benchlab.Run
	var n int
	var fields string
	for i := 0; i < r.opts.reps && err == nil; i++ {
		var f, a benchlab.Run
		f, err = benchlab.Exec(ctx, aargv, aenv, nil)
		if err == nil && f.Exit != 0 {
			err = fmt.Errorf("ansible-playbook: exit %d\n%s%s", f.Exit, f.Stdout, f.Stderr)
		}
		if err == nil {
			a, err = benchlab.Exec(ctx, aargv, aenv, nil)
			if err == nil && a.Exit != 0 {
				err = fmt.Errorf("ansible-playbook (re-run): exit %d\n%s%s", a.Exit, a.Stdout, a.Stderr)
			}
		}
		if err == nil {
			n, fields, err = countProfiles(ctx, lab, conns[0].Name)
		}
		if err == nil && i+1 < r.opts.reps {
			err = deleteProfiles(ctx, lab, conns)
		}
		afirsts, aagains = append(afirsts, f), append(aagains, a)
	}
	if err != nil {
		return err
	}
	afirst, aagain := medianRun(afirsts), medianRun(aagains)
	sec.rows = append(sec.rows,
		[]string{"ansible-playbook (community.general.nmcli)", ms(afirst.Wall), ms(aagain.Wall), ms(afirst.CPU()),
			strconv.Itoa(n), recapChanged(afirst.Stdout) + " / " + recapChanged(aagain.Stdout)},
		[]string{"**Ansible ÷ rdmaform**", fmt.Sprintf("**%.1f×**", float64(afirst.Wall)/float64(first.Wall)),
			fmt.Sprintf("**%.1f×**", float64(aagain.Wall)/float64(again.Wall)), fmt.Sprintf("%.1f×", float64(afirst.CPU())/float64(first.CPU())), "", ""})
	sec.notes = append(sec.notes, fmt.Sprintf("Ansible: `DBUS_SYSTEM_BUS_ADDRESS=<lab bus> ansible-playbook -i localhost, -c local ipoib-playbook.yml` (one task, loop over the connections, no facts), twice; median of %d rounds, the profiles deleted between rounds. Profile: ", r.opts.reps)+fields)
	return nil
}

// skipOr turns a lab that could not start into a skip, other errors
// into a failure.
func skipOr(err error, skip func(string) error) error {
	var ls *labStartError
	if errors.As(err, &ls) {
		return skip(ls.why)
	}
	return err
}

// labStartError is a lab that could not start.
type labStartError struct{ why string }

func (e *labStartError) Error() string { return e.why }

// rdmaformRounds runs bin's apply, then apply again, reps times on a
// fresh lab, the profiles deleted between rounds, and returns the median
// runs, the number of infiniband profiles and the fields of one.
func (r *report) rdmaformRounds(ctx context.Context, bin, root, specPath string, conns []bench.IPoIBConn, log io.Writer) (first, again benchlab.Run, profiles int, fields string, err error) {
	lab, stop, err := benchlab.StartNM(log)
	if err != nil {
		return first, again, 0, "", &labStartError{why: err.Error()}
	}
	defer stop()
	argv := []string{bin, "--root", root, "apply", "--yes", "-f", specPath}
	env := append(lab.Env(), "NO_COLOR=1")
	var firsts, agains []benchlab.Run
	for i := 0; i < r.opts.reps && err == nil; i++ {
		var f, a benchlab.Run
		f, err = benchlab.Exec(ctx, argv, env, nil)
		if err == nil && f.Exit != 0 {
			err = fmt.Errorf("%s apply: exit %d\n%s%s", bin, f.Exit, f.Stdout, f.Stderr)
		}
		if err == nil {
			a, err = benchlab.Exec(ctx, argv, env, nil)
			if err == nil && a.Exit != 0 {
				err = fmt.Errorf("%s apply (re-run): exit %d\n%s%s", bin, a.Exit, a.Stdout, a.Stderr)
			}
		}
		if err == nil {
			profiles, fields, err = countProfiles(ctx, lab, conns[0].Name)
		}
		if err == nil && i+1 < r.opts.reps {
			err = deleteProfiles(ctx, lab, conns)
		}
		firsts, agains = append(firsts, f), append(agains, a)
	}
	if err != nil {
		return first, again, 0, "", err
	}
	return medianRun(firsts), medianRun(agains), profiles, fields, nil
}

// deleteProfiles removes the connections, for the next round.
//
// Equivalent to: nmcli connection delete id NAME...
func deleteProfiles(ctx context.Context, lab *nmlab.Lab, conns []bench.IPoIBConn) error {
	argv := []string{"nmcli", "connection", "delete"}
	for _, c := range conns {
		argv = append(argv, "id", c.Name)
	}
	res, err := lab.Run(ctx, argv)
	if err == nil && res.Exit != 0 {
		err = fmt.Errorf("nmcli connection delete: exit %d: %s", res.Exit, res.Stderr)
	}
	return err
}

// medianRun is the run of median wall time.
func medianRun(rs []benchlab.Run) benchlab.Run {
	s := append([]benchlab.Run(nil), rs...)
	sort.Slice(s, func(i, j int) bool { return s[i].Wall < s[j].Wall })
	return s[len(s)/2]
}

// profiles counts the lab's infiniband profiles and reads back the
// settings both tools write, for one of them.
func countProfiles(ctx context.Context, lab *nmlab.Lab, name string) (int, string, error) {
	res, err := lab.Run(ctx, []string{"nmcli", "-t", "-f", "TYPE", "connection", "show"})
	if err != nil {
		return 0, "", err
	}
	n := strings.Count(string(res.Stdout), "infiniband")
	res, err = lab.Run(ctx, []string{"nmcli", "-t", "-f",
		"connection.autoconnect,connection.interface-name,infiniband.mtu,infiniband.transport-mode,ipv4.method,ipv4.addresses,ipv6.method",
		"connection", "show", "id", name})
	if err != nil {
		return 0, "", err
	}
	return n, "`" + strings.Join(strings.Fields(string(res.Stdout)), " ") + "`", nil
}

var changedRE = regexp.MustCompile(`Apply: (\d+) applied`)

func changedLine(out []byte) string {
	if m := changedRE.FindSubmatch(out); m != nil {
		return string(m[1])
	}
	return "0"
}

var recapRE = regexp.MustCompile(`changed=(\d+)`)

// recapChanged reads the play recap: a looped task counts once, so the
// number of items changed is read from the per-item "changed:" lines.
func recapChanged(out []byte) string {
	items := strings.Count(string(out), "\nchanged: [localhost] => (item=")
	if m := recapRE.FindSubmatch(out); m != nil {
		return fmt.Sprintf("%d items (task changed=%s)", items, m[1])
	}
	return fmt.Sprintf("%d items", items)
}

// ansibleMissing says why the Ansible comparison cannot run, or "".
func ansibleMissing(home string) string {
	if !benchlab.LookPath("ansible-playbook") {
		return "ansible-playbook not installed (apt-get install -y --no-install-recommends ansible)"
	}
	for _, d := range []string{"/usr/lib/python3/dist-packages", "/usr/share/ansible/collections", home + "/.ansible/collections"} {
		if benchlab.Exists(filepath.Join(d, "ansible_collections/community/general/plugins/modules/nmcli.py")) {
			return ""
		}
	}
	return "community.general is not installed (Debian package ansible ships it: apt-get install -y --no-install-recommends ansible; CI's ansible-core alone does not)"
}

// big: part 5.
func (r *report) big(ctx context.Context, dir string, log io.Writer) error {
	fmt.Fprintln(log, "   building the 2,000-resource host")
	start := time.Now()
	hdir := filepath.Join(dir, "host")
	s, err := bench.BigHost(hdir, filepath.Join(dir, "scratch"))
	if err != nil {
		return err
	}
	setup := time.Since(start)
	spec, resources := bench.BigSpec(s.State())
	if n := bench.Total(resources); n != 2000 {
		return fmt.Errorf("the generated spec declares %d resources, want 2000", n)
	}
	specPath := filepath.Join(dir, "big.yaml")
	if err := benchlab.WriteFile(specPath, spec); err != nil {
		return err
	}
	sec := section{
		title: "validate + plan of a 2,000-resource spec on the simulator (" + kinds(resources) + fmt.Sprintf("; %d KiB of YAML)", len(spec)/1024),
		head:  []string{"what", "time/op", "CPU", "allocs/op", "bytes/op", "peak RSS"},
	}
	fmt.Fprintln(log, "   go benchmarks")
	v := testing.Benchmark(func(b *testing.B) { bench.Validate(b, spec) })
	p := testing.Benchmark(func(b *testing.B) { bench.PlanBuild(b, s, spec) })
	if v.N == 0 || p.N == 0 {
		return fmt.Errorf("a benchmark failed (run go test -bench . ./bench for its message)")
	}
	sec.raw = append(sec.raw, "BenchmarkValidate2000\t"+v.String()+"\t"+v.MemString(), "BenchmarkPlan2000\t"+p.String()+"\t"+p.MemString())
	sec.rows = append(sec.rows,
		[]string{"BenchmarkValidate2000 (schema.Parse)", ms(time.Duration(v.NsPerOp())), "", strconv.FormatInt(v.AllocsPerOp(), 10), mib(v.AllocedBytesPerOp()), ""},
		[]string{"BenchmarkPlan2000 (plan.Build + text)", ms(time.Duration(p.NsPerOp())), "", strconv.FormatInt(p.AllocsPerOp(), 10), mib(p.AllocedBytesPerOp()), ""})
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if benchlab.Exists(r.opts.rdmaform) {
		fmt.Fprintln(log, "   rdmaform validate / plan processes")
		for _, c := range []struct {
			what string
			argv []string
			want int
		}{
			{"`rdmaform validate -f big.yaml`", []string{r.opts.rdmaform, "validate", "-f", specPath}, 0},
			{"`rdmaform --sim DIR plan -f big.yaml`", []string{r.opts.rdmaform, "--sim", hdir, "plan", "-f", specPath}, 2},
		} {
			run, err := benchlab.ExecFresh(ctx, self, c.argv, []string{"NO_COLOR=1", "PATH=" + getenv(r.environ, "PATH")}, nil)
			if err != nil {
				return err
			}
			if run.Exit != c.want {
				return fmt.Errorf("%s: exit %d, want %d\n%s", c.what, run.Exit, c.want, run.Stderr)
			}
			sec.rows = append(sec.rows, []string{c.what + " (process)", ms(run.Wall), ms(run.CPU()), "", "", mib(run.MaxRSS)})
		}
	}
	sec.notes = append(sec.notes, fmt.Sprintf("Host: gpu-node with %d cards, %d on Ethernet (RoCE), %d extra netdevs; building it (~16,000 files) took %s and is not counted; its rdma_cm configfs groups exist already (see bench.BigHost).",
		bench.BigCards, bench.BigEthCards, bench.BigNetdevs, setup.Round(100*time.Millisecond)))
	r.sections = append(r.sections, sec)
	return nil
}

// waves: rdmaform waves on a 10,000-host inventory, in this process and
// as a process of its own.
func (r *report) waves(ctx context.Context, dir string, log io.Writer) error {
	inv := bench.FleetInventory(bench.FleetHosts, bench.FleetLeaves, bench.FleetFabrics)
	file := filepath.Join(dir, "fleet.yaml")
	if err := benchlab.WriteFile(file, inv); err != nil {
		return err
	}
	sec := section{
		title: fmt.Sprintf("rdmaform waves: %d hosts, %d leaves, %d fabrics with 2 subnet manager hosts each, --max-unavailable 5%%, 1 per leaf (%d KiB of YAML)",
			bench.FleetHosts, bench.FleetLeaves, bench.FleetFabrics, len(inv)/1024),
		head: []string{"what", "time/op", "CPU", "allocs/op", "bytes/op", "peak RSS"},
	}
	fmt.Fprintln(log, "   go benchmarks")
	p := testing.Benchmark(func(b *testing.B) { bench.Waves(b, inv) })
	j := testing.Benchmark(func(b *testing.B) { bench.WavesJSON(b, file) })
	if p.N == 0 || j.N == 0 {
		return fmt.Errorf("a benchmark failed (run go test -bench Waves ./bench for its message)")
	}
	sec.raw = append(sec.raw, "BenchmarkWaves10000\t"+p.String()+"\t"+p.MemString(), "BenchmarkWavesJSON10000\t"+j.String()+"\t"+j.MemString())
	sec.rows = append(sec.rows,
		[]string{"BenchmarkWaves10000 (read + plan the waves)", ms(time.Duration(p.NsPerOp())), "", strconv.FormatInt(p.AllocsPerOp(), 10), mib(p.AllocedBytesPerOp()), ""},
		[]string{"BenchmarkWavesJSON10000 (the command, -o json)", ms(time.Duration(j.NsPerOp())), "", strconv.FormatInt(j.AllocsPerOp(), 10), mib(j.AllocedBytesPerOp()), ""})
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if benchlab.Exists(r.opts.rdmaform) {
		fmt.Fprintln(log, "   rdmaform waves process")
		run, err := benchlab.ExecFresh(ctx, self, []string{r.opts.rdmaform, "waves", "--inventory", file, "--max-unavailable", "5%", "-o", "json"}, []string{"NO_COLOR=1"}, nil)
		if err != nil {
			return err
		}
		if run.Exit != 0 {
			return fmt.Errorf("rdmaform waves: exit %d\n%s", run.Exit, run.Stderr)
		}
		sec.rows = append(sec.rows, []string{"`rdmaform waves --inventory fleet.yaml -o json` (process)", ms(run.Wall), ms(run.CPU()), "", "", mib(run.MaxRSS)})
	}
	r.sections = append(r.sections, sec)
	return nil
}

func kinds(m map[string]int) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var out []string
	for _, k := range ks {
		out = append(out, fmt.Sprintf("%d %s", m[k], k))
	}
	return strings.Join(out, ", ")
}

func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "rdmaform-bench: L = %s, %d CPUs, %s\n\n", r.opts.latency, runtime.NumCPU(), time.Now().UTC().Format("2006-01-02"))
	for _, s := range r.sections {
		fmt.Fprintf(w, "### %s\n\n", s.title)
		if len(s.rows) > 0 {
			fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(s.head, " | "), strings.Repeat(" --- |", len(s.head)))
			for _, row := range s.rows {
				for len(row) < len(s.head) {
					row = append(row, "")
				}
				fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
			}
			fmt.Fprintln(w)
		}
		for _, n := range s.notes {
			fmt.Fprintf(w, "- %s\n", n)
		}
		if len(s.notes) > 0 {
			fmt.Fprintln(w)
		}
		if len(s.raw) > 0 {
			fmt.Fprintf(w, "```\n%s\n```\n\n", strings.Join(s.raw, "\n"))
		}
	}
}

// kernelLab: part 6. It runs the kernel lab once, all guest tests, and
// reports the timings its script writes to KERNLAB_OUT/times.
func (r *report) kernelLab(ctx context.Context, dir string, log io.Writer) error {
	sec := section{
		title: "Kernel lab (make kernel-test): Debian's kernel under QEMU (TCG, no KVM), every guest test",
		head:  []string{"build (host)", "boot to first test (guest clock)", "guest run (guest clock)", "whole run (host)"},
	}
	defer func() { r.sections = append(r.sections, sec) }()
	if !benchlab.LookPath("qemu-system-x86_64") {
		why := "qemu-system-x86_64 is missing (apt-get install -y qemu-system-x86)"
		sec.notes = append(sec.notes, "skipped: "+why)
		if r.opts.require {
			return fmt.Errorf("%s", why)
		}
		return nil
	}
	out := filepath.Join(dir, "out")
	env := append(append([]string(nil), r.environ...), "KERNLAB_OUT="+out)
	run, err := benchlab.Exec(ctx, []string{"bash", r.opts.kernlab}, env, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "%s", run.Stderr)
	if run.Exit != 0 {
		return fmt.Errorf("%s exited %d:\n%s%s", r.opts.kernlab, run.Exit, tail(run.Stdout, 20), run.Stderr)
	}
	b, err := benchlab.ReadFile(filepath.Join(out, "times"))
	if err != nil {
		return err
	}
	t := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok {
			t[k] = v + " s"
		}
	}
	sec.rows = append(sec.rows, []string{t["build_s"], t["boot_to_first_test_s"], t["guest_s"], t["total_s"]})
	sec.notes = append(sec.notes,
		"build: package fetch (cached after the first run), static rdmaform, `go test -c -tags kernlab` binaries, initramfs; the guest times come from /proc/uptime inside the guest.",
		"Budget: the lab may add at most 5 minutes to CI on a 2-core machine without KVM.")
	return nil
}

// tail is the last n lines of b.
func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func ms(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
}

func ratio(d, l time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(l)) }

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func getenv(environ []string, key string) string {
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}

// applyRounds: apply of the same firmware specs, the firmware stage (the
// sets) measured from the first set started to the last one done.
func (r *report) applyRounds(ctx context.Context, dir string, log io.Writer) error {
	L := r.opts.latency
	sec := section{
		title: fmt.Sprintf("Apply on simulated gpu-node hosts, every emulated tool run taking L = %s: one firmware set per card, all cards at once", L),
		head:  []string{"cards", "PCI functions", "rdmaform apply", "× L", "firmware stage (sets)", "× L", "sets one after another", "× L"},
	}
	for _, cards := range r.opts.cards {
		fmt.Fprintf(log, "   apply, %d cards\n", cards)
		var walls, stages []time.Duration
		var targets []bench.FirmwareTarget
		for i := 0; i < r.opts.reps; i++ {
			hdir := filepath.Join(dir, fmt.Sprintf("apply-%d-%d", cards, i))
			s, err := bench.GPUNode(hdir, cards, L)
			if err != nil {
				return err
			}
			targets = bench.FirmwareTargets(s.State())
			ar, err := bench.ApplyTimed(ctx, hdir, bench.FirmwareSpec(s.State()))
			if err != nil {
				return err
			}
			walls, stages = append(walls, ar.Wall), append(stages, ar.Stage)
		}
		wall, stage := median(walls), median(stages)
		// Sets one after another: one L per adapter (a card's two
		// functions are set one after the other anyway).
		seq := time.Duration(len(targets)) * L
		sec.rows = append(sec.rows, []string{strconv.Itoa(cards), strconv.Itoa(len(targets)), ms(wall), ratio(wall, L), ms(stage), ratio(stage, L), ms(seq), ratio(seq, L)})
	}
	sec.notes = append(sec.notes,
		fmt.Sprintf("rdmaform: `rdmaform --sim DIR apply --yes -f SPEC` in-process on a fresh host each time (plan, sets, plan again), median of %d; the firmware stage runs from the first set's start to the last set's end, read from apply's progress lines as they arrive. Cards are set at once (at most %d at a time); a card's two functions share its firmware configuration, so their card-wide parameters go in one set through function 0 (firmware.CardWide, from mstflint's database), and L is the floor. Above it is the simulator's own work: it emulates each set under one lock and saves its whole state once for the sets that finish together. One after another is what apply did before: one L per PCI function.", r.opts.reps, apply.MaxParallel))
	r.sections = append(r.sections, sec)
	return nil
}

// activateRounds: activate --by fw-reset of staged values on every card,
// the reset stage measured from the first reset started to the last one
// ended.
func (r *report) activateRounds(ctx context.Context, dir string, log io.Writer) error {
	L := r.opts.resetLatency
	sec := section{
		title: fmt.Sprintf("Activate on simulated gpu-node hosts, every firmware reset taking L = %s (other tool runs %s): one reset per card, all cards at once", L, r.opts.latency),
		head:  []string{"cards", "rdmaform activate --by fw-reset", "× L", "reset stage", "× L", "resets one after another", "× L"},
	}
	for _, cards := range r.opts.cards {
		fmt.Fprintf(log, "   activate, %d cards\n", cards)
		var walls, stages []time.Duration
		for i := 0; i < r.opts.reps; i++ {
			hdir := filepath.Join(dir, fmt.Sprintf("activate-%d-%d", cards, i))
			s, err := bench.GPUNodeReset(hdir, cards, r.opts.latency, L)
			if err != nil {
				return err
			}
			spec := bench.FirmwareSpec(s.State())
			if err := bench.Apply(ctx, hdir, spec); err != nil {
				return err
			}
			ar, err := bench.ActivateTimed(ctx, hdir, spec)
			if err != nil {
				return err
			}
			walls, stages = append(walls, ar.Wall), append(stages, ar.Stage)
		}
		wall, stage := median(walls), median(stages)
		seq := time.Duration(cards) * L
		sec.rows = append(sec.rows, []string{strconv.Itoa(cards), ms(wall), ratio(wall, L), ms(stage), ratio(stage, L), ms(seq), ratio(seq, L)})
	}
	sec.notes = append(sec.notes,
		fmt.Sprintf("rdmaform: `rdmaform --sim DIR activate --by fw-reset -f SPEC` in-process after an apply staged the spec's firmware values, on a fresh host each time, median of %d. The reset stage runs from the first reset's start to the last one's end, read from activate's progress lines as they arrive; cards are reset at once, one mlxfwreset per card, so L is the floor. L stands for a level 3 reset (driver stop, PCI reset, firmware load, driver start), which takes tens of seconds on real hosts; -reset-latency sets it. Above it is the simulator's own work: it resets each card under one lock and writes its state and tree once for the resets that end together. The whole activate adds the plan before (with each card's reset query) and the plan after.", r.opts.reps))
	r.sections = append(r.sections, sec)
	return nil
}
