package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/rdmaform/rdmaform/bench"
	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/internal/testlab/benchlab"
)

// rollout: the role rdmaform.rdma.rollout on simulated hosts whose
// firmware reset takes A, against a plain serial: playbook doing the same
// (plan, stage, activate, batch after batch): the whole rollout and the
// phase 1 fleet summary (check mode), side by side, with the machine's
// load.
func (r *report) rollout(ctx context.Context, dir string, log io.Writer) error {
	n, A, pct := r.opts.rolloutHosts, r.opts.activation, r.opts.rolloutPercent
	perWave := max(1, n*pct/100)
	domains := min(50, n/4)
	perDomain := (perWave + domains - 1) / domains
	waves := (n + perWave - 1) / perWave
	sec := section{
		title: fmt.Sprintf("Rolling a firmware change through %d simulated hosts under ansible-core, each firmware reset taking A = %s, waves of %d%% (%d hosts, %d domains, at most %d of one per wave)",
			n, A, pct, perWave, domains, perDomain),
		head: []string{"play", "wall", "CPU", "waves × A", "bound 1.2 × waves × A + stage", "stage (phases 1, 2)", "waves (phase 3)", "load before → after"},
	}
	defer func() { r.sections = append(r.sections, sec) }()
	skip := func(why string) error {
		sec.notes = append(sec.notes, "skipped: "+why)
		if r.opts.require {
			return fmt.Errorf("%s", why)
		}
		return nil
	}
	switch {
	case !benchlab.LookPath("ansible-playbook"):
		return skip("ansible-playbook not installed (apt-get install ansible-core)")
	case !benchlab.Exists(r.opts.rdmaform):
		return skip(r.opts.rdmaform + " not built (make build)")
	case !benchlab.Exists(r.opts.module):
		return skip(r.opts.module + " not built (make ansible)")
	}
	colls := filepath.Join(dir, "collections")
	if err := bench.InstallCollection("ansible", colls, r.opts.module); err != nil {
		return err
	}
	cfg := filepath.Join(dir, "ansible.cfg")
	spec := filepath.Join(dir, "spec.yaml")
	if err := benchlab.WriteFile(cfg, nil); err != nil {
		return err
	}
	if err := benchlab.WriteFile(spec, []byte(bench.RolloutSpec)); err != nil {
		return err
	}
	env := []string{
		"PATH=" + getenv(r.environ, "PATH"), "HOME=" + filepath.Join(dir, "home"), "LANG=C.UTF-8",
		"ANSIBLE_CONFIG=" + cfg, "ANSIBLE_COLLECTIONS_PATH=" + colls,
		"ANSIBLE_LOCAL_TEMP=" + filepath.Join(dir, "tmp"), "ANSIBLE_REMOTE_TEMP=" + filepath.Join(dir, "tmp"),
		"ANSIBLE_NOCOLOR=1", "ANSIBLE_RETRY_FILES_ENABLED=0", "ANSIBLE_LOCALHOST_WARNING=0",
		"ANSIBLE_INVENTORY_UNPARSED_WARNING=0", "ANSIBLE_PYTHON_INTERPRETER=auto_silent",
		// The action plugin's module cache: the simulated hosts are this
		// machine, and share one (each real host has its own).
		"RDMAFORM_MODULE_CACHE=" + filepath.Join(dir, "module-cache"),
	}
	// The role runs as examples/ansible/fleet-rollout.yml has it (three
	// plays), without its probes.
	example, err := benchlab.ReadFile(filepath.Join("examples", "ansible", "fleet-rollout.yml"))
	if err != nil {
		return err
	}
	plays := map[string][]byte{"role.yml": example, "serial.yml": bench.SerialPlaybook(pct)}
	for name, data := range plays {
		if err := benchlab.WriteFile(filepath.Join(dir, name), data); err != nil {
			return err
		}
	}
	policy := r.opts.rolloutPolicy
	if policy != "" {
		if policy, err = filepath.Abs(policy); err != nil {
			return err
		}
		sec.title += "; the role with the rollout policy " + filepath.Base(policy)
	}
	// Two fleets alike: one for the role, one for serial:.
	invs := map[string]string{}
	who := []string{"role", "serial"}
	if policy != "" {
		who = who[:1] // the role's rollout alone
	}
	for _, who := range who {
		fmt.Fprintf(log, "   %d simulated hosts for %s\n", n, who)
		inv, err := bench.RolloutFleet(filepath.Join(dir, who+"-hosts"), n, domains, A)
		if err != nil {
			return err
		}
		invs[who] = filepath.Join(dir, who+"-inventory.yml")
		if err := benchlab.WriteFile(invs[who], inv); err != nil {
			return err
		}
	}
	report := filepath.Join(dir, "report.json")
	play := func(who string, check bool) (benchlab.Run, string, error) {
		vars := map[string]any{
			"rdma_spec_file": spec, "rdma_command": r.opts.rdmaform, "rdma_report": report,
			"rdma_max_unavailable": strconv.Itoa(pct) + "%", "rdma_max_per_domain": perDomain,
			"rdma_become": false, "rdma_probe_interface": "",
		}
		if who == "role" && policy != "" {
			vars["rdma_policy"] = policy
		}
		extra, _ := json.Marshal(vars)
		argv := []string{"ansible-playbook", "-i", invs[who], "-f", strconv.Itoa(min(perWave, 500)), filepath.Join(dir, who+".yml"), "-e", string(extra)}
		if check {
			argv = append(argv, "--check")
		}
		fmt.Fprintf(log, "   %s %s (check: %v)\n", who, filepath.Base(invs[who]), check)
		load := loadavg()
		run, err := benchlab.Exec(ctx, argv, env, nil)
		load += " → " + loadavg()
		if err == nil && run.Exit != 0 {
			err = fmt.Errorf("%s: exit %d\n%s", strings.Join(argv, " "), run.Exit, tail(append(run.Stdout, run.Stderr...), 3000))
		}
		return run, load, err
	}

	checks := []struct {
		who, what string
	}{{"role", "the role, phase 1: fleet summary (--check)"}, {"serial", "serial:, plan and a line per host (--check)"}}
	if policy != "" {
		checks = nil // the role's rollout alone: its check run is the same with a policy
	}
	for _, c := range checks {
		run, load, err := play(c.who, true)
		if err != nil {
			return err
		}
		sec.rows = append(sec.rows, []string{c.what, ms(run.Wall), ms(run.CPU()), "", "", "", "", load})
	}

	start := time.Now()
	run, load, err := play("role", false)
	if err != nil {
		return err
	}
	var rep struct {
		Waves        int        `json:"waves"`
		Done         []string   `json:"done"`
		WavesStarted float64    `json:"waves_started"`
		WavesEnded   float64    `json:"waves_ended"`
		WaveSeconds  []float64  `json:"wave_seconds"`
		WaveHosts    [][]string `json:"wave_hosts"`
	}
	data, err := benchlab.ReadFile(report)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		return fmt.Errorf("%s: %w", report, err)
	}
	if len(rep.Done) != n {
		return fmt.Errorf("the role's rollout: %d hosts done, want %d", len(rep.Done), n)
	}
	stage := time.Duration((rep.WavesStarted - float64(start.UnixNano())/1e9) * float64(time.Second))
	wavesTime := time.Duration((rep.WavesEnded - rep.WavesStarted) * float64(time.Second))
	bound := time.Duration(1.2*float64(time.Duration(rep.Waves)*A)) + stage
	verdict := "within"
	if run.Wall > bound {
		verdict = "**over**"
	}
	sec.rows = append(sec.rows, []string{fmt.Sprintf("the role: %d waves", rep.Waves), ms(run.Wall), ms(run.CPU()),
		ms(time.Duration(rep.Waves) * A), ms(bound) + " (" + verdict + ")", ms(stage), ms(wavesTime), load})

	fleets := []string{"role"}
	if policy == "" {
		run, load, err = play("serial", false)
		if err != nil {
			return err
		}
		sec.rows = append(sec.rows, []string{fmt.Sprintf("serial: %d%%, %d batches (plan, stage, activate)", pct, waves), ms(run.Wall), ms(run.CPU()),
			ms(time.Duration(waves) * A), "", "", "", load})
		fleets = append(fleets, "serial")
	}

	// Every host of both fleets plans empty.
	for _, who := range fleets {
		for i := 1; i <= n; i++ {
			h := filepath.Join(dir, who+"-hosts", fmt.Sprintf("node%04d", i))
			var out bytes.Buffer
			if code := cli.Run([]string{"--sim", h, "plan", "-f", spec}, cli.Env{Stdout: &out, Stderr: io.Discard}); code != 0 {
				return fmt.Errorf("%s after the %s rollout: plan exit %d\n%s", h, who, code, out.String())
			}
		}
	}
	var secs []string
	for _, s := range rep.WaveSeconds {
		secs = append(secs, strconv.FormatFloat(s, 'f', 1, 64)+" s")
	}
	if policy != "" {
		var sizes []string
		for _, w := range rep.WaveHosts {
			sizes = append(sizes, strconv.Itoa(len(w)))
		}
		sec.notes = append(sec.notes, "With the policy "+filepath.Base(policy)+", the waves held "+strings.Join(sizes, ", ")+" hosts; serial: and the check runs are not run (the run without a policy has them).")
	}
	sec.notes = append(sec.notes,
		fmt.Sprintf("Each play: `ansible-playbook -f %d` (forks: a wave's hosts at once), local connection, the module through its action plugin (plan, stage, and the activation: its state activated, `rdmaform activate --by fw-reset` in the module); every host of both fleets plans empty afterwards. Load: /proc/loadavg's 1-minute figure before and after each run, on %d CPUs shared with other work.", min(perWave, 500), runtime.NumCPU()),
		"The role: examples/ansible/fleet-rollout.yml, three plays (without its probes: rdma_probe_interface=\"\"): phase 1 plans everywhere and prints the fleet summary, phase 2 stages everywhere, phase 3 runs `rdmaform waves` once; then the waves play, on the waves' hosts with serial: the waves' sizes, runs a batch a wave: the activate task on the wave's hosts at once, and two run-once tasks (the batch is the wave; close the wave); no drain hook and no probes here; then the report play on localhost. Stage is from the first play's start to its end, the waves cut (its report's waves_started); the bound is the issue's: 1.2 × waves × A + the stage phase. Per wave: "+strings.Join(secs, ", ")+".",
	)
	if policy == "" {
		sec.notes = append(sec.notes, "serial: each batch plans, stages and activates its hosts; the summary of phase 1 there is one line per host, batch after batch (no fleet-wide view before the first change).")
	}
	return nil
}

// loadavg is the 1-minute load average, "?" when it cannot be read.
func loadavg() string {
	b, err := benchlab.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}
