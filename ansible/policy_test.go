package ansible_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/rdmaform/rdmaform/agent"
	"github.com/rdmaform/rdmaform/api/v1alpha1"
	"github.com/rdmaform/rdmaform/sim/simtest"
	"gopkg.in/yaml.v3"
)

// policyReport is the role's report with what a rollout policy adds.
type policyReport struct {
	rolloutReport
	StopReason string `json:"stop_reason"`
	Deferred   []struct {
		Host   string `json:"host"`
		Wave   int    `json:"wave"`
		Reason string `json:"reason"`
	} `json:"deferred"`
	WaveHosts [][]string `json:"wave_hosts"`
	Policy    struct {
		Canary        int `json:"canary"`
		BakeSeconds   int `json:"bake_seconds"`
		FailedHosts   int `json:"failed_hosts"`
		FailedPercent int `json:"failed_percent"`
	} `json:"policy"`
}

func (f *fleet) policyReport(t *testing.T, path string) policyReport {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r policyReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
	return r
}

// policyFleet is a fleet of n simulated hosts in 8 domains, 2 of them
// subnet manager hosts, the odd ones in the inventory group gpu and the
// even ones in storage (rdma's children), with a rollout policy file.
func policyFleet(t *testing.T, n int, policy string) (*fleet, string) {
	t.Helper()
	f := newFleet(t, n, 8, []int{0, 1})
	f.group = map[string]string{}
	for i, h := range f.names {
		f.group[h] = map[bool]string{true: "gpu", false: "storage"}[i%2 == 0]
	}
	f.writeInventory(t, []int{0, 1}, nil)
	p := filepath.Join(f.l.dir, "policy.yaml")
	if err := os.WriteFile(p, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	return f, p
}

// wavesOf is `rdmaform waves --policy -o json` on the fleet's hosts: the
// same inventory as the play's (domains, SM roles, groups).
func (f *fleet) wavesOf(t *testing.T, policy string) [][]string {
	t.Helper()
	var inv strings.Builder
	inv.WriteString("hosts:\n")
	for i, h := range f.names {
		fmt.Fprintf(&inv, "  - {name: %s, domain: %s, groups: [%s, rdma]", h, f.domain[h], f.group[h])
		if i < 2 {
			inv.WriteString(", roles: [sm]")
		}
		inv.WriteString("}\n")
	}
	return f.cutWaves(t, "waves-inventory.yaml", inv.String(), policy)
}

// cutWaves writes an inventory for rdmaform waves (NAME in the fleet's
// directory) and returns the hosts of each wave the policy cuts.
func (f *fleet) cutWaves(t *testing.T, name, inventory, policy string) [][]string {
	t.Helper()
	file := filepath.Join(f.l.dir, name)
	if err := os.WriteFile(file, []byte(inventory), 0o644); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Waves []struct {
			Hosts []string `json:"hosts"`
		} `json:"waves"`
	}
	if err := json.Unmarshal([]byte(rdmaform(t, 0, "waves", "--inventory", file, "--policy", policy, "-o", "json")), &doc); err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for _, w := range doc.Waves {
		out = append(out, w.Hosts)
	}
	return out
}

// agentWaves is the agent's slot order for the same hosts as Nodes with
// the agent's labels, and the policy as an RDMAHostConfig's
// policy.rollout (the same keys as the file).
func (f *fleet) agentWaves(t *testing.T, mu string, ro *v1alpha1.Rollout) [][]string {
	t.Helper()
	var nodes []corev1.Node
	for i, h := range f.names {
		l := map[string]string{agent.LabelDomain: f.domain[h], agent.LabelCompartment: f.group[h]}
		if i < 2 {
			l[agent.LabelRoles] = "sm"
		}
		nodes = append(nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: h, Labels: l}})
	}
	m := intstr.Parse(mu)
	r, err := agent.RolloutOf(v1alpha1.Policy{MaxUnavailable: &m, Rollout: ro})
	if err != nil {
		t.Fatal(err)
	}
	w, err := agent.Waves(nodes, *r)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func i32(n int32) *int32 { return &n }

// rolloutHosts is RDMAFORM_ROLLOUT_HOSTS (make fleet-test: 200), or 16.
func rolloutHosts(t *testing.T) int {
	n := 16
	if s := os.Getenv("RDMAFORM_ROLLOUT_HOSTS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 16 {
			t.Fatalf("RDMAFORM_ROLLOUT_HOSTS=%q: want 16 or more", s)
		}
	}
	return n
}

// TestRolloutPolicy rolls a spec out by reboot under a rollout policy
// (examples/ansible/fleet-rollout.yml with rdma_policy) on
// RDMAFORM_ROLLOUT_HOSTS simulated hosts (16; make fleet-test: 200) in
// two compartments (inventory groups gpu and storage), with a canary of
// one, ramp steps of 2 hosts then 25 %, a bake of 1 s and the stop rules
// failed_hosts 3 (here: the hosts failed at waves 2 and 3, plus 2) and
// failed_percent 50.
//
// The waves the role ran (its report's wave_hosts) are those of
// `rdmaform waves --policy` on the same inventory and those the agent
// computes for the same hosts as Nodes and the policy as a config's
// policy.rollout.
//
// Planted failures (warm reboots that leave the firmware staged): half
// of wave 2 (exactly 50 %: the percent rule's limit, the line goes on),
// one of wave 3 (failed in all: the host rule's limit less one, the line
// goes on) and one of a later wave of two hosts or more: failed in all
// reaches failed_hosts, the line stops there, and the waves after it
// are untouched (still staged, not rebooted). The report names the rule.
// The failed hosts stay drained and max_unavailable counts them: with
// 16 hosts (3 a wave), the stopped wave, after 2 failed, takes 1 host
// (the limit: one left) and defers the other, untouched; the hooks' log
// never has more than max_unavailable hosts drained at once, the failed
// ones included.
// After the faults are cleared, the play runs again: the hosts the last
// run left failed first (they are drained already), then it resumes
// where it stopped: the stopped wave's hosts left to do, then the
// stopped run's later waves as they were; every host plans empty, none
// is left drained.
func TestRolloutPolicy(t *testing.T) {
	n := rolloutHosts(t)
	perDomain := (n/5 + 7) / 8
	policy := fmt.Sprintf(`version: 1
max_unavailable: 20%%
max_per_domain: %d
canary: 1
bake: 1s
ramp:
  steps: [2, 25%%]
stop:
  failed_hosts: FAILED_HOSTS
  failed_percent: 50
compartments:
  order: sequential
  groups: [gpu, storage]
`, perDomain)
	f, _ := policyFleet(t, n, "")
	// The waves, from rdmaform waves, to plant the failures.
	probe := filepath.Join(f.l.dir, "probe-policy.yaml")
	if err := os.WriteFile(probe, []byte(strings.Replace(policy, "FAILED_HOSTS", "100", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	waves := f.wavesOf(t, probe)
	if len(waves) < 5 || len(waves[1]) != 2 {
		t.Fatalf("waves %v: want 5 or more, the second of 2 hosts", waves)
	}
	half := waves[1][:1] // wave 2: 1 of 2, 50 %
	w3 := waves[2][:1]   // wave 3
	stopAt := -1
	for i := 3; i < len(waves)-1; i++ {
		if len(waves[i]) >= 2 {
			stopAt = i
			break
		}
	}
	if stopAt < 0 {
		t.Fatalf("waves %v: want a wave of 2 or more after the third, not the last", waves)
	}
	last := waves[stopAt][:1]
	// The hosts each wave takes: max_unavailable (20 %) less the hosts
	// failed before it, which stay drained; the others are deferred.
	mu := n / 5
	var deferred []string
	failedBefore := 0
	for i := 0; i <= stopAt; i++ {
		room := max(mu-failedBefore, 0)
		took := waves[i][:min(room, len(waves[i]))]
		deferred = append(deferred, waves[i][len(took):]...)
		for _, h := range took {
			if h == half[0] || h == w3[0] || h == last[0] {
				failedBefore++
			}
		}
	}
	if failedBefore != 3 {
		t.Fatalf("waves %v, max_unavailable %d: the planted failures are not all in hosts the waves take (deferred %v)", waves, mu, deferred)
	}
	if n == 16 && (len(waves[stopAt]) != 2 || !slices.Equal(deferred, waves[stopAt][1:])) {
		t.Fatalf("waves %v: want the stopped wave of 2, its second host deferred (max_unavailable 3, 2 failed before it); deferred %v", waves, deferred)
	}
	k := len(half) + len(w3) + 1
	pfile := filepath.Join(f.l.dir, "policy.yaml")
	if err := os.WriteFile(pfile, []byte(strings.Replace(policy, "FAILED_HOSTS", strconv.Itoa(k), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	// The same policy, as the agent reads it.
	ro := &v1alpha1.Rollout{
		MaxPerDomain: i32(int32(perDomain)), Canary: i32(1), Bake: &metav1.Duration{Duration: time.Second},
		Ramp:         &v1alpha1.RolloutRamp{Steps: []intstr.IntOrString{intstr.FromInt32(2), intstr.FromString("25%")}},
		Stop:         &v1alpha1.RolloutStop{FailedHosts: i32(int32(k)), FailedPercent: i32(50)},
		Compartments: &v1alpha1.RolloutCompartments{Order: "sequential", Groups: []string{"gpu", "storage"}},
	}
	if d := cmp.Diff(waves, f.agentWaves(t, "20%", ro)); d != "" {
		t.Errorf("the agent's waves differ from rdmaform waves' (-waves +agent):\n%s", d)
	}

	bad := append(append(append([]string{}, half...), w3...), last...)
	warm := map[string]bool{}
	for _, h := range bad {
		warm[h] = true
	}
	f.writeInventory(t, []int{0, 1}, warm)
	var later []string
	for _, w := range waves[stopAt+1:] {
		later = append(later, w...)
	}
	boots := map[string]string{}
	for _, h := range f.names {
		boots[h] = f.bootID(t, h)
	}
	report := filepath.Join(f.l.dir, "report.json")
	extra := f.hooks()
	for k, v := range map[string]any{"rdma_activation": "reboot", "rdma_report": report, "rdma_policy": pfile} {
		extra[k] = v
	}
	out, code := f.play(t, 40, extra)
	if code != 2 {
		t.Fatalf("first run: exit %d, want 2 (stopped)\n%s", code, out)
	}
	r := f.policyReport(t, report)
	if d := cmp.Diff(waves, r.WaveHosts); d != "" {
		t.Errorf("the role's waves differ from rdmaform waves' (-waves +role):\n%s", d)
	}
	wantWhy := fmt.Sprintf("%d failed hosts: the policy stops at %d (stop.failed_hosts)", k, k)
	if r.StoppedAt != stopAt+1 || r.StopReason != wantWhy {
		t.Errorf("first run: stopped at wave %d (%q), want %d (%q)\n%s", r.StoppedAt, r.StopReason, stopAt+1, wantWhy, out)
	}
	var failed []string
	for _, x := range r.Failed {
		failed = append(failed, x.Host)
		if x.Gate != "did it take?" {
			t.Errorf("first run: %s failed at %s, want did it take?", x.Host, x.Gate)
		}
	}
	sort.Strings(failed)
	wantFailed := append([]string{}, bad...)
	sort.Strings(wantFailed)
	if d := cmp.Diff(wantFailed, failed); d != "" {
		t.Errorf("first run: failed hosts (-want +got):\n%s", d)
	}
	sort.Strings(r.Untouched)
	untouched := append(append([]string{}, later...), deferred...)
	sort.Strings(untouched)
	if d := cmp.Diff(untouched, r.Untouched); d != "" {
		t.Errorf("first run: untouched (-want: the later waves and the deferred hosts +got):\n%s", d)
	}
	var gotDeferred []string
	for _, x := range r.Deferred {
		gotDeferred = append(gotDeferred, x.Host)
		if x.Wave != stopAt+1 || !strings.Contains(x.Reason, "2 failed hosts still drained") || !strings.Contains(x.Reason, fmt.Sprintf("of max_unavailable %d", mu)) {
			t.Errorf("first run: deferred %+v: want wave %d, 2 failed hosts still drained of max_unavailable %d", x, stopAt+1, mu)
		}
		if !strings.Contains(out, "rdmaform rollout: deferred "+x.Host+" (wave "+strconv.Itoa(stopAt+1)+", untouched, still staged)") {
			t.Errorf("first run: the report does not print the deferred host %s:\n%s", x.Host, out)
		}
	}
	if !slices.Equal(gotDeferred, deferred) {
		t.Errorf("first run: deferred %v, want %v", gotDeferred, deferred)
	}
	if len(r.Done)+len(bad)+len(untouched) != n {
		t.Errorf("first run: %d done, %d failed, %d untouched: want %d in all", len(r.Done), len(bad), len(untouched), n)
	}
	if !strings.Contains(out, "stopped at wave "+strconv.Itoa(stopAt+1)+" of "+strconv.Itoa(len(waves))+" ("+wantWhy+")") {
		t.Errorf("first run: the summary lacks the stop and its rule:\n%s", out)
	}
	left := f.checkHooksBut(t, n/5, perDomain, wantFailed, waves)
	if d := cmp.Diff(wantFailed, left); d != "" {
		t.Errorf("first run: hosts left drained (-want: the failed +got):\n%s", d)
	}
	for _, h := range untouched {
		if f.bootID(t, h) != boots[h] {
			t.Errorf("first run: %s, deferred or of a wave after the stop, was rebooted", h)
		}
		rdmaform(t, 3, "--sim", f.dirs[h], "plan", "-f", f.rendered(t, h)) // still staged
	}

	// Clear the faults (the firmware reset the error asks for, plain
	// reboots from now on) and run again: it resumes where it stopped.
	for _, h := range bad {
		rdmaform(t, 0, "--sim", f.dirs[h], "activate", "--by", "fw-reset")
	}
	f.writeInventory(t, []int{0, 1}, nil)
	if err := os.Remove(f.hooksLog); err != nil {
		t.Fatal(err)
	}
	out, code = f.play(t, 40, extra)
	if code != 0 {
		t.Fatalf("second run: exit %d\n%s", code, out)
	}
	r2 := f.policyReport(t, report)
	// First the hosts failed last run (drained already), in waves of
	// their own, then the stopped wave's hosts left to do (the deferred
	// one) and the later waves as they were.
	var first []string
	i := 0
	for ; i < len(r2.WaveHosts) && len(first) < len(bad); i++ {
		first = append(first, r2.WaveHosts[i]...)
	}
	sort.Strings(first)
	var want [][]string
	if rest := slices.DeleteFunc(slices.Clone(waves[stopAt]), func(h string) bool { return slices.Contains(bad, h) }); len(rest) > 0 {
		want = append(want, rest)
	}
	want = append(want, waves[stopAt+1:]...)
	if !slices.Equal(first, wantFailed) || !cmp.Equal(want, r2.WaveHosts[i:]) {
		t.Errorf("second run: waves %v; want the hosts failed last run %v first, then the stopped wave's hosts left and the later waves as they were %v",
			r2.WaveHosts, wantFailed, want)
	}
	if len(r2.Failed) != 0 || r2.StoppedAt != 0 || len(r2.Done) != len(bad)+len(untouched) {
		t.Errorf("second run: failed %+v, stopped at %d, %d done; want none, 0, %d", r2.Failed, r2.StoppedAt, len(r2.Done), len(bad)+len(untouched))
	}
	if left := f.checkHooksBut(t, n/5, perDomain, nil, nil); len(left) != 0 {
		t.Errorf("second run: left drained %v", left)
	}
	for _, h := range f.names {
		rdmaform(t, 0, "--sim", f.dirs[h], "plan", "-f", f.rendered(t, h))
	}
}

// TestRolloutPolicyPercentAndBake: two rules one past their limit, on 16
// simulated hosts. failed_percent 50 with 2 of wave 2's 2 hosts failed
// (100 %, failed_hosts 100 far off): the line stops at wave 2 by the
// percent rule. Then, on a fleet without faults, a bake of 20 s: during
// the bake after the canary wave, the canary's ib1 port goes down (a
// cable pulled after its gates passed): its probes run again at the end
// of the bake, fail, and stop the line at wave 1 with the gate "bake";
// no later wave starts. With the port back, the next run resumes at
// wave 1 (the canary, through its gates again) and finishes.
func TestRolloutPolicyPercentAndBake(t *testing.T) {
	const pol = `version: 1
max_unavailable: 4
canary: 1
bake: %s
ramp: {steps: [2, 4]}
stop: {failed_hosts: 100, failed_percent: 50}
`
	t.Run("percent", func(t *testing.T) {
		f, pfile := policyFleet(t, 16, fmt.Sprintf(pol, "0s"))
		waves := f.wavesOf(t, pfile)
		if len(waves) < 3 || len(waves[1]) != 2 {
			t.Fatalf("waves %v: want a second wave of 2", waves)
		}
		warm := map[string]bool{waves[1][0]: true, waves[1][1]: true}
		f.writeInventory(t, []int{0, 1}, warm)
		report := filepath.Join(f.l.dir, "report.json")
		extra := map[string]any{"rdma_activation": "reboot", "rdma_report": report, "rdma_policy": pfile}
		out, code := f.play(t, 8, extra)
		if code != 2 {
			t.Fatalf("exit %d, want 2\n%s", code, out)
		}
		r := f.policyReport(t, report)
		want := "2 of the wave's 2 hosts failed, more than 50% (stop.failed_percent)"
		if r.StoppedAt != 2 || r.StopReason != want || len(r.Failed) != 2 || len(r.Done) != 1 {
			t.Errorf("stopped at %d (%q), failed %+v, done %v; want wave 2 (%q), 2 failed, the canary done\n%s", r.StoppedAt, r.StopReason, r.Failed, r.Done, want, out)
		}
	})
	t.Run("bake", func(t *testing.T) {
		f, pfile := policyFleet(t, 16, fmt.Sprintf(pol, "20s"))
		waves := f.wavesOf(t, pfile)
		canary := waves[0][0]
		report := filepath.Join(f.l.dir, "report.json")
		extra := f.hooks()
		for k, v := range map[string]any{"rdma_activation": "reboot", "rdma_report": report, "rdma_policy": pfile} {
			extra[k] = v
		}
		// Pull the canary's cable once it is undrained (its gates passed).
		pulled := make(chan bool, 1)
		go func() {
			deadline := time.Now().Add(10 * time.Minute)
			for time.Now().Before(deadline) {
				b, _ := os.ReadFile(f.hooksLog)
				if strings.Contains(string(b), "undrain "+canary+"\n") {
					setPortState(t, f.dirs[canary], "ib1", "DOWN")
					pulled <- true
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
			pulled <- false
		}()
		out, code := f.play(t, 8, extra)
		if !<-pulled {
			t.Fatalf("the canary %s was never undrained\n%s", canary, out)
		}
		if code != 2 {
			t.Fatalf("first run: exit %d, want 2\n%s", code, out)
		}
		r := f.policyReport(t, report)
		if r.StoppedAt != 1 || len(r.Failed) != 1 || r.Failed[0].Host != canary || r.Failed[0].Gate != "bake" ||
			!strings.Contains(r.Failed[0].Reason, "ping-peer1") || r.StopReason != "1 host failed during the bake" {
			t.Errorf("first run: stopped at %d (%q), failed %+v; want the canary %s failed at wave 1's bake (ping)\n%s", r.StoppedAt, r.StopReason, r.Failed, canary, out)
		}
		if len(r.Untouched) != 15 {
			t.Errorf("first run: %d untouched, want 15", len(r.Untouched))
		}
		setPortState(t, f.dirs[canary], "ib1", "ACTIVE")
		if err := os.Remove(f.hooksLog); err != nil {
			t.Fatal(err)
		}
		// No bake for the second run: the resume is what is tested.
		if err := os.WriteFile(pfile, []byte(fmt.Sprintf(pol, "0s")), 0o644); err != nil {
			t.Fatal(err)
		}
		out, code = f.play(t, 8, extra)
		if code != 0 {
			t.Fatalf("second run: exit %d\n%s", code, out)
		}
		r = f.policyReport(t, report)
		if len(r.WaveHosts) == 0 || !slices.Equal(r.WaveHosts[0], []string{canary}) || len(r.Done) != 16 {
			t.Errorf("second run: waves %v, %d done; want the canary's wave first, 16 done", r.WaveHosts, len(r.Done))
		}
		for _, h := range f.names {
			rdmaform(t, 0, "--sim", f.dirs[h], "plan", "-f", f.rendered(t, h))
		}
	})
}

// setPortState sets the state of the port whose IPoIB netdev is netdev
// on the simulated host in dir (DOWN: it reaches nobody).
func setPortState(t *testing.T, dir, netdev, state string) {
	st := simtest.State(t, dir)
	for _, d := range st.Devices {
		for _, p := range d.Ports {
			if p.NetdevIB == netdev {
				p.State = state
			}
		}
	}
	b, err := yaml.Marshal(st)
	if err != nil {
		t.Error(err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, "sim.yaml"), b, 0o644); err != nil {
		t.Error(err)
	}
}

// checkHooksBut replays the hooks' log as checkHooks does: never more
// than perWave hosts drained at once, the failed hosts still drained
// included (max_unavailable counts them), and never more than perDomain
// of one domain drained by one wave (a failed host of an earlier wave
// is out of its domain's count); the hosts left drained are returned.
func (f *fleet) checkHooksBut(t *testing.T, perWave, perDomain int, failed []string, waves [][]string) []string {
	t.Helper()
	b, err := os.ReadFile(f.hooksLog)
	if err != nil {
		t.Fatal(err)
	}
	drained, byDomain, all, failedOut := map[string]bool{}, map[string]int{}, map[string]bool{}, map[string]bool{}
	waveOf := map[string]int{}
	for i, w := range waves {
		for _, h := range w {
			waveOf[h] = i
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		what, host, _ := strings.Cut(line, " ")
		switch what {
		case "drain":
			if all[host] {
				t.Errorf("hooks: %s drained twice", host)
			}
			all[host] = true
			// The failed hosts drained before this one (of earlier
			// waves) stay drained: max_unavailable counts them; the
			// domain limit is the wave's own.
			for h := range drained {
				if slices.Contains(failed, h) && waveOf[h] < waveOf[host] && !failedOut[h] {
					failedOut[h] = true
					byDomain[f.domain[h]]--
				}
			}
			drained[host] = true
			byDomain[f.domain[host]]++
			if len(drained) > perWave {
				t.Errorf("hooks: %d hosts drained at once (at most %d per wave): %s", len(drained), perWave, line)
			}
			if byDomain[f.domain[host]] > perDomain {
				t.Errorf("hooks: %d hosts of %s drained at once (at most %d): %s", byDomain[f.domain[host]], f.domain[host], perDomain, line)
			}
		case "undrain":
			if !all[host] {
				t.Errorf("hooks: %s undrained before it was drained", host)
			}
			delete(all, host)
			if drained[host] {
				delete(drained, host)
				if !failedOut[host] {
					byDomain[f.domain[host]]--
				}
				delete(failedOut, host)
			}
		default:
			t.Fatalf("hooks: %q", line)
		}
	}
	var left []string
	for h := range all {
		left = append(left, h)
	}
	sort.Strings(left)
	return left
}
