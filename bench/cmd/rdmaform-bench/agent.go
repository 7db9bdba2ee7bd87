package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/rdmaform/rdmaform/agent"
	"github.com/rdmaform/rdmaform/api/v1alpha1"
	"github.com/rdmaform/rdmaform/internal/testlab/benchlab"
	"github.com/rdmaform/rdmaform/internal/testlab/kubelab"
	"github.com/rdmaform/rdmaform/sim"
)

// The agent part (#48 §5): rdmaform-agent's memory and CPU, one real
// process against the lab's API server (kubelab: a real kube-apiserver
// and etcd) with a simulated host, at idle and per reconcile; then a
// fleet of -agent-nodes Nodes against the same API server: the first
// -agent-inprocess with a real agent each (agent.Run, in this process,
// each with its own simulated host and its own ServiceAccount token
// bound to its Node, as the DaemonSet's pod has), the rest driven by a
// load driver that makes the requests an agent makes and writes their
// RDMAHostStates as an agent would. Measured: requests per node per
// hour at steady state (a counting transport on the real agents; the
// API server's apiserver_request_total for all), the time from a config
// change to every node InSync, and the API server's memory
// (process_resident_memory_bytes of its own /metrics).

// agentNS is where deploy/kubernetes puts the agent's ServiceAccount and
// the slots.
const agentNS = "rdmaform-system"

// nodeWright is NVIDIA NodeWright's published operator sizing, "Operator
// Resources at Scale" (docs.nvidia.com/nodewright/operations/resources-at-scale,
// v0.21.0), validated up to 1,000 nodes, N nodes and P packages: memory
// request max(256Mi, N × 0.45 Mi), limit max(N × 0.8 × max(P × 0.4, 1),
// 512) Mi; CPU limit max(N × 1.6 × max(P × 0.4, 1), 1000) millicores,
// request max(500m, limit / 2).
func nodeWright(n, p int) (memReq, memLim, cpuReq, cpuLim float64) {
	f := max(float64(p)*0.4, 1)
	memReq = max(256, float64(n)*0.45)
	memLim = max(float64(n)*0.8*f, 512)
	cpuLim = max(float64(n)*1.6*f, 1000)
	cpuReq = max(500, cpuLim/2)
	return
}

// agentSpec is the hostSpec of the agent part's configs: a module and a
// locked-memory limit; each change of the limit is an apply (a file).
func agentSpec(memlockMiB int) string {
	return fmt.Sprintf("version: 1\nmodules: [rdma_ucm]\nlimits:\n  memlock: %dM\n", memlockMiB)
}

func (r *report) agentBench(ctx context.Context, dir string, log io.Writer) error {
	head := []string{"what", "figure", "load average (1 min)"}
	one := section{title: "rdmaform-agent, one process against the lab's API server with a simulated host (cx6-vpi-ib): memory and CPU", head: head}
	fleet := section{title: fmt.Sprintf("%d nodes against one lab API server: %d real agents in this process, %d driven", r.opts.agentNodes, r.opts.agentInProcess, r.opts.agentNodes-r.opts.agentInProcess), head: head}
	defer func() { r.sections = append(r.sections, one, fleet) }()
	if !benchlab.Exists(r.opts.agentBin) {
		why := fmt.Sprintf("%s is missing (make agent)", r.opts.agentBin)
		one.notes = append(one.notes, "skipped: "+why)
		if r.opts.require {
			return errors.New(why)
		}
		return nil
	}
	if _, err := kubelab.Binaries(); err != nil {
		one.notes = append(one.notes, "skipped: "+err.Error()+" (make k8s-lab)")
		if r.opts.require {
			return err
		}
		return nil
	}
	// controller-runtime's log (the in-process agents') goes nowhere.
	ctrllog.SetLogger(logr.Discard())
	fmt.Fprintln(log, "   the lab's API server")
	lab, stop, err := benchlab.StartKube(log)
	if err != nil {
		return err
	}
	defer stop()
	deploy := r.opts.deploy
	for _, args := range [][]string{
		{"apply", "-f", filepath.Join(deploy, "crds") + "/"},
		{"wait", "--for", "condition=established", "--timeout", "120s", "crd/rdmahostconfigs.rdmaform.io", "crd/rdmahoststates.rdmaform.io"},
		{"apply", "-f", deploy + "/"},
	} {
		if out, err := lab.Kubectl(ctx, args...); err != nil {
			return fmt.Errorf("installing %s: %w\n%s", deploy, err, out)
		}
	}
	s, err := agent.Scheme()
	if err != nil {
		return err
	}
	admin, err := client.NewWithWatch(rest.CopyConfig(lab.Config), client.Options{Scheme: s})
	if err != nil {
		return err
	}
	b := &agentLab{lab: lab, c: admin, log: log}
	if err := r.agentProcess(ctx, filepath.Join(dir, "one"), b, &one); err != nil {
		return err
	}
	return r.agentFleet(ctx, filepath.Join(dir, "fleet"), b, &fleet)
}

// agentLab is the lab's API server with the agent installed, and its
// admin client.
type agentLab struct {
	lab *kubelab.Lab
	c   client.WithWatch
	log io.Writer
}

// node creates a Node with labels.
func (b *agentLab) node(ctx context.Context, name string, labels map[string]string) (*corev1.Node, error) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	return n, b.c.Create(ctx, n)
}

// token is a token of the agent's ServiceAccount bound to the Node, as
// the DaemonSet's pod on it has one.
func (b *agentLab) token(ctx context.Context, n *corev1.Node) (string, error) {
	exp := int64(3 * 3600)
	tr, err := b.lab.Client.CoreV1().ServiceAccounts(agentNS).CreateToken(ctx, "rdmaform-agent", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &exp,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: n.Name, UID: n.UID},
	}}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}

// agentConfig is the client configuration of an agent with token: as
// rest.InClusterConfig gives it in a pod (no QPS or burst set: client-go's
// 5 and 10).
func (b *agentLab) agentConfig(token string) *rest.Config {
	cfg := rest.AnonymousClientConfig(b.lab.Config)
	cfg.BearerToken = token
	cfg.QPS, cfg.Burst = 0, 0
	return cfg
}

// config creates or updates the RDMAHostConfig name selecting rail=name.
func (b *agentLab) config(ctx context.Context, name, spec string) (*v1alpha1.RDMAHostConfig, error) {
	js, err := yaml.YAMLToJSON([]byte(spec))
	if err != nil {
		return nil, err
	}
	var c v1alpha1.RDMAHostConfig
	err = b.c.Get(ctx, client.ObjectKey{Name: name}, &c)
	if apierrors.IsNotFound(err) {
		mu := intstr.FromInt32(1)
		c = v1alpha1.RDMAHostConfig{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.RDMAHostConfigSpec{
				NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"rail": name}},
				HostSpec:     v1alpha1.HostSpec{Raw: js},
				Policy:       v1alpha1.Policy{Mode: v1alpha1.ModeApply, Activation: v1alpha1.ActivationNone, MaxUnavailable: &mu},
			},
		}
		return &c, b.c.Create(ctx, &c)
	}
	if err != nil {
		return nil, err
	}
	c.Spec.HostSpec.Raw = js
	return &c, b.c.Update(ctx, &c)
}

// inSync says whether a state is InSync for the config's generation.
func inSync(st *v1alpha1.RDMAHostState, cfg *v1alpha1.RDMAHostConfig) bool {
	c := meta.FindStatusCondition(st.Status.Conditions, v1alpha1.ConditionInSync)
	return st.Status.Config == cfg.Name && c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == cfg.Generation
}

// waitInSync waits until every node of names is InSync for the config's
// generation, watching the states; it returns when each got there.
func (b *agentLab) waitInSync(ctx context.Context, cfg *v1alpha1.RDMAHostConfig, names []string, limit time.Duration) (map[string]time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	got := map[string]time.Time{}
	for {
		var l v1alpha1.RDMAHostStateList
		if err := b.c.List(ctx, &l); err != nil {
			return got, err
		}
		for i := range l.Items {
			if st := &l.Items[i]; want[st.Name] && inSync(st, cfg) {
				if _, ok := got[st.Name]; !ok {
					got[st.Name] = time.Now()
				}
			}
		}
		if len(got) == len(want) {
			return got, nil
		}
		w, err := b.c.Watch(ctx, &v1alpha1.RDMAHostStateList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: l.ResourceVersion}})
		if err != nil {
			return got, err
		}
		for ev := range w.ResultChan() {
			st, ok := ev.Object.(*v1alpha1.RDMAHostState)
			if !ok {
				continue
			}
			if _, ok := got[st.Name]; want[st.Name] && !ok && inSync(st, cfg) {
				got[st.Name] = time.Now()
			}
			if len(got) == len(want) {
				w.Stop()
				return got, nil
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			var missing []string
			for n := range want {
				if _, ok := got[n]; !ok {
					missing = append(missing, n)
				}
			}
			sort.Strings(missing)
			return got, fmt.Errorf("%d of %d nodes not InSync for %s generation %d within %s, e.g. %s", len(missing), len(want), cfg.Name, cfg.Generation, limit, strings.Join(missing[:min(5, len(missing))], ", "))
		}
		// The watch ended (the server's timeout): list and watch again.
	}
}

// apiMetrics reads the API server's own /metrics: its resident memory
// and its requests by verb (apiserver_request_total summed over the
// other labels).
type apiMetrics struct {
	rss      float64
	cpu      float64
	requests map[string]float64
}

func (b *agentLab) apiMetrics(ctx context.Context) (apiMetrics, error) {
	m := apiMetrics{requests: map[string]float64{}}
	raw, err := b.lab.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return m, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		name := line[:i]
		switch {
		case name == "process_resident_memory_bytes":
			m.rss = v
		case name == "process_cpu_seconds_total":
			m.cpu = v
		case strings.HasPrefix(name, "apiserver_request_total{"):
			verb := label(name, "verb")
			m.requests[verb] += v
		}
	}
	if m.rss == 0 {
		return m, errors.New("the API server's /metrics has no process_resident_memory_bytes")
	}
	return m, nil
}

// label is a label's value in a Prometheus series name.
func label(series, key string) string {
	_, rest, ok := strings.Cut(series, key+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// agentProcess: one rdmaform-agent process, its memory and CPU idle, per
// reconcile that finds nothing to do, and per reconcile that applies.
func (r *report) agentProcess(ctx context.Context, dir string, b *agentLab, sec *section) error {
	fmt.Fprintln(b.log, "   one rdmaform-agent process")
	const name = "bench-one"
	n, err := b.node(ctx, name, map[string]string{"rail": "one"})
	if err != nil {
		return err
	}
	host := filepath.Join(dir, "host")
	st, err := sim.NewState("cx6-vpi-ib", name, 0)
	if err != nil {
		return err
	}
	if _, err := sim.Create(host, st); err != nil {
		return err
	}
	tok, err := b.token(ctx, n)
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, "agent.kubeconfig")
	ca := filepath.Join(dir, "ca.crt")
	if err := benchlab.WriteFile(ca, b.lab.Config.CAData); err != nil {
		return err
	}
	if err := benchlab.WriteFile(kubeconfig, []byte(fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: lab\n  cluster:\n    server: %s\n    certificate-authority: %s\nusers:\n- name: agent\n  user:\n    token: %s\ncontexts:\n- name: lab\n  context: {cluster: lab, user: agent}\ncurrent-context: lab\n", b.lab.Server, ca, tok))); err != nil {
		return err
	}
	port, err := benchlab.FreePort()
	if err != nil {
		return err
	}
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	p, err := benchlab.Start([]string{r.opts.agentBin, "--kubeconfig", kubeconfig, "--node-name", name, "--namespace", agentNS,
		"--sim", host, "--metrics-address", fmt.Sprintf("127.0.0.1:%d", port), "--interval", agent.DefaultInterval.String()},
		[]string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "NO_COLOR=1"}, filepath.Join(dir, "agent.log"))
	if err != nil {
		return err
	}
	defer p.Stop()
	reconciles := func() (float64, error) {
		if p.Exited() {
			return 0, fmt.Errorf("rdmaform-agent exited:\n%s", p.Tail())
		}
		return agentReconciles(ctx, metricsURL)
	}
	memlock := 64
	cfg, err := b.config(ctx, "one", agentSpec(memlock))
	if err != nil {
		return err
	}
	if _, err := b.waitInSync(ctx, cfg, []string{name}, 2*time.Minute); err != nil {
		return fmt.Errorf("%w\n%s", err, p.Tail())
	}
	// Idle: nothing changes for a minute; the interval is 5 minutes.
	time.Sleep(5 * time.Second)
	load0 := loadavg()
	u0, err := benchlab.ProcUsage(p.PID)
	if err != nil {
		return err
	}
	rc0, err := reconciles()
	if err != nil {
		return err
	}
	t0 := time.Now()
	time.Sleep(r.opts.agentIdle)
	u1, err := benchlab.ProcUsage(p.PID)
	if err != nil {
		return err
	}
	rc1, err := reconciles()
	if err != nil {
		return err
	}
	idle := time.Since(t0)
	idleRate := float64(u1.CPU-u0.CPU) / float64(idle) // CPU seconds per second
	load := load0 + " → " + loadavg()
	sec.rows = append(sec.rows,
		[]string{"resident memory, idle (VmRSS)", mib(u1.RSS), load},
		[]string{fmt.Sprintf("CPU at idle (%s, %d reconciles in it)", idle.Round(time.Second), int(rc1-rc0)), fmt.Sprintf("%.3f millicores", idleRate*1000), load})

	// A reconcile with nothing to do: a label of the Node changes (the
	// agent plans again on a label change), K times.
	const k = 20
	load0 = loadavg()
	u0, _ = benchlab.ProcUsage(p.PID)
	rc0, _ = reconciles()
	t0 = time.Now()
	for i := 0; i < k; i++ {
		var obj corev1.Node
		if err := b.c.Get(ctx, client.ObjectKey{Name: name}, &obj); err != nil {
			return err
		}
		obj.Labels["bench.rdmaform.io/poke"] = strconv.Itoa(i)
		if err := b.c.Update(ctx, &obj); err != nil {
			return err
		}
		for deadline := time.Now().Add(time.Minute); ; {
			rc, err := reconciles()
			if err != nil {
				return err
			}
			if rc >= rc0+float64(i+1) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("rdmaform-agent did not reconcile after a label change")
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	u1, _ = benchlab.ProcUsage(p.PID)
	rc1, _ = reconciles()
	el := time.Since(t0)
	steady := (float64(u1.CPU-u0.CPU) - idleRate*float64(el)) / (rc1 - rc0)
	load = load0 + " → " + loadavg()
	sec.rows = append(sec.rows, []string{fmt.Sprintf("CPU per reconcile with nothing to do (%d label changes, %d reconciles)", k, int(rc1-rc0)), ms(time.Duration(steady)), load})

	// A reconcile that applies: the config's memlock limit changes, K
	// times; each change is timed from the update to InSync.
	const ka = 10
	load0 = loadavg()
	u0, _ = benchlab.ProcUsage(p.PID)
	rc0, _ = reconciles()
	t0 = time.Now()
	var walls []time.Duration
	for i := 0; i < ka; i++ {
		memlock += 64
		start := time.Now()
		if cfg, err = b.config(ctx, "one", agentSpec(memlock)); err != nil {
			return err
		}
		got, err := b.waitInSync(ctx, cfg, []string{name}, 2*time.Minute)
		if err != nil {
			return fmt.Errorf("%w\n%s", err, p.Tail())
		}
		walls = append(walls, got[name].Sub(start))
	}
	// The reconcile counts itself after its last write: wait for it.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if rc1, _ = reconciles(); rc1 >= rc0+ka {
			break
		}
	}
	u1, _ = benchlab.ProcUsage(p.PID)
	el = time.Since(t0)
	applyCPU := (float64(u1.CPU-u0.CPU) - idleRate*float64(el)) / (rc1 - rc0)
	r.agentApply = median(walls)
	load = load0 + " → " + loadavg()
	sec.rows = append(sec.rows,
		[]string{fmt.Sprintf("CPU per reconcile that applies (%d config changes, %d reconciles)", ka, int(rc1-rc0)), ms(time.Duration(applyCPU)), load},
		[]string{"a config change to InSync (update to the state's InSync, median)", ms(r.agentApply), load},
		[]string{"resident memory after, and its peak (VmRSS, VmHWM)", mib(u1.RSS) + ", peak " + mib(u1.Peak), load})
	memReq, memLim, cpuReq, _ := nodeWright(1000, 1)
	sec.rows = append(sec.rows,
		[]string{"NodeWright's operator at 1,000 nodes, per node: memory request (limit)", fmt.Sprintf("%.2f MiB (%.2f MiB)", memReq/1000, memLim/1000), ""},
		[]string{"NodeWright's operator at 1,000 nodes, per node: CPU request", fmt.Sprintf("%.2f millicores", cpuReq/1000), ""})
	sec.notes = append(sec.notes,
		fmt.Sprintf("The agent: %s --kubeconfig (a token of the rdmaform-agent ServiceAccount bound to the Node, under deploy/kubernetes's RBAC and admission policy) --sim DIR --interval %s; memory and CPU from /proc/PID/status and /proc/PID/stat, reconciles from its own /metrics (rdmaform_agent_reconciles_total). CPU per reconcile is the CPU over the changes less the idle rate, divided by the reconciles.", r.opts.agentBin, agent.DefaultInterval),
		"NodeWright's sizing is its operator's, one pod for the cluster (\"Operator Resources at Scale\", docs.nvidia.com/nodewright/operations/resources-at-scale, v0.21.0: memory request max(256Mi, N × 0.45), limit max(N × 0.8 × max(P × 0.4, 1), 512); CPU limit max(N × 1.6 × max(P × 0.4, 1), 1000) m, request max(500m, limit/2); N nodes, P packages, here P = 1), divided by N. rdmaform has no operator: one agent per node, whose memory does not grow with the cluster (it caches its own Node and state, the configs and the slot Leases); the cluster-wide cost per node is the API server's share, in the next table.")
	return nil
}

// agentReconciles reads rdmaform_agent_reconciles_total (both results)
// from an agent's /metrics.
func agentReconciles(ctx context.Context, url string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	return reconcilesIn(string(body))
}

func reconcilesIn(text string) (float64, error) {
	var sum float64
	found := false
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "rdmaform_agent_reconciles_total{") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, err
		}
		sum += v
		found = true
	}
	if !found {
		return 0, errors.New("no rdmaform_agent_reconciles_total in the agent's /metrics")
	}
	return sum, nil
}

// counter counts an agent's requests: all, the writes among them, and
// the watches.
type counter struct{ all, writes, watches atomic.Int64 }

func (c *counter) add(o *counter) {
	c.all.Add(o.all.Load())
	c.writes.Add(o.writes.Load())
	c.watches.Add(o.watches.Load())
}

type countingTransport struct {
	rt http.RoundTripper
	c  *counter
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.c.all.Add(1)
	switch {
	case req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1":
		t.c.watches.Add(1)
	case req.Method != http.MethodGet && req.Method != http.MethodHead:
		t.c.writes.Add(1)
	}
	return t.rt.RoundTrip(req)
}

// counted wraps a client configuration's transport with a counter.
func counted(cfg *rest.Config, c *counter) *rest.Config {
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt: rt, c: c} }
	return cfg
}

// agentFleet: -agent-nodes Nodes, the first -agent-inprocess with real
// agents, the rest driven.
func (r *report) agentFleet(ctx context.Context, dir string, b *agentLab, sec *section) error {
	n, k, interval := r.opts.agentNodes, r.opts.agentInProcess, r.opts.agentInterval
	fmt.Fprintf(b.log, "   %d nodes: %d agents in this process, %d driven; interval %s\n", n, k, n-k, interval)
	base, err := b.apiMetrics(ctx)
	if err != nil {
		return err
	}
	self0, _ := benchlab.ProcUsage(0)
	const rail = "fleet"
	names := make([]string, n)
	nodes := make([]*corev1.Node, n)
	tokens := make([]string, n)
	var mu sync.Mutex
	var firstErr error
	parallel(16, n, func(i int) {
		name := fmt.Sprintf("fleet-%04d", i+1)
		nd, err := b.node(ctx, name, map[string]string{"rail": rail, agent.LabelDomain: fmt.Sprintf("leaf%d", i/20+1)})
		var tok string
		if err == nil {
			tok, err = b.token(ctx, nd)
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil && firstErr == nil {
			firstErr = err
		}
		names[i], nodes[i], tokens[i] = name, nd, tok
	})
	if firstErr != nil {
		return firstErr
	}
	withNodes, err := b.apiMetrics(ctx)
	if err != nil {
		return err
	}

	// The real agents.
	actx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	agents := make([]*counter, k)
	metrics := make([]*agent.Metrics, k)
	for i := 0; i < k; i++ {
		host := filepath.Join(dir, names[i])
		st, err := sim.NewState("cx6-vpi-ib", names[i], 0)
		if err != nil {
			return err
		}
		if _, err := sim.Create(host, st); err != nil {
			return err
		}
		agents[i], metrics[i] = &counter{}, agent.NewMetrics()
		cfg := counted(b.agentConfig(tokens[i]), agents[i])
		o := agent.Options{NodeName: names[i], Namespace: agentNS, HostArgs: []string{"--sim", host}, Interval: interval, Metrics: metrics[i]}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := agent.Run(actx, cfg, o, "0"); err != nil && actx.Err() == nil {
				fmt.Fprintf(b.log, "   agent %s: %v\n", o.NodeName, err)
			}
		}()
	}
	// The driven nodes.
	quiet := &atomic.Bool{}
	driven := make([]*counter, n-k)
	for i := k; i < n; i++ {
		d := &driver{name: names[i], interval: interval, apply: r.agentApply, c: &counter{}, log: b.log, quiet: quiet}
		driven[i-k] = d.c
		c, err := client.NewWithWatch(counted(b.agentConfig(tokens[i]), d.c), client.Options{Scheme: b.c.Scheme()})
		if err != nil {
			return err
		}
		d.cl = c
		wg.Add(1)
		go func() { defer wg.Done(); d.run(actx) }()
	}
	time.Sleep(10 * time.Second)
	self1, _ := benchlab.ProcUsage(0)

	// The first config: every node applies it.
	memlock := 64
	load0 := loadavg()
	start := time.Now()
	cfg, err := b.config(ctx, rail, agentSpec(memlock))
	if err != nil {
		return err
	}
	got, err := b.waitInSync(ctx, cfg, names, 30*time.Minute)
	if err != nil {
		return err
	}
	first := latest(got).Sub(start)
	sec.rows = append(sec.rows, []string{fmt.Sprintf("a new config to every node InSync (%d nodes)", n), ms(first), load0 + " → " + loadavg()})

	// One interval: the real agents' steady reconciles tell the driver
	// whether a reconcile that changes nothing writes.
	rcA, wA := totalReconciles(metrics), sum(agents).writes.Load()
	time.Sleep(interval + interval/4)
	rcB, wB := totalReconciles(metrics), sum(agents).writes.Load()
	mode := "writes its state on every reconcile"
	if rcB > rcA && float64(wB-wA)/(rcB-rcA) < 0.5 {
		quiet.Store(true)
		mode = "writes its state only when it changes"
	}
	fmt.Fprintf(b.log, "   the real agents made %d writes in %.0f reconciles of a steady interval: the driver %s\n", wB-wA, rcB-rcA, mode)

	// Steady state: nothing changes for the window.
	load0 = loadavg()
	a0, d0 := sum(agents), sum(driven)
	m0, err := b.apiMetrics(ctx)
	if err != nil {
		return err
	}
	rc0 := totalReconciles(metrics)
	t0 := time.Now()
	time.Sleep(r.opts.agentWindow)
	w := time.Since(t0)
	a1, d1 := sum(agents), sum(driven)
	m1, err := b.apiMetrics(ctx)
	if err != nil {
		return err
	}
	rc1 := totalReconciles(metrics)
	load := load0 + " → " + loadavg()
	perHour := func(v int64, nodes int) string {
		return fmt.Sprintf("%.1f", float64(v)/float64(nodes)*float64(time.Hour)/float64(w))
	}
	var apiAll float64
	for _, v := range m1.requests {
		apiAll += v
	}
	for _, v := range m0.requests {
		apiAll -= v
	}
	sec.rows = append(sec.rows,
		[]string{fmt.Sprintf("requests per node per hour at steady state, the real agents (interval %s; of them writes, watches)", interval),
			fmt.Sprintf("%s (%s, %s)", perHour(a1.all.Load()-a0.all.Load(), k), perHour(a1.writes.Load()-a0.writes.Load(), k), perHour(a1.watches.Load()-a0.watches.Load(), k)), load},
		[]string{"the same, the driven nodes", fmt.Sprintf("%s (%s, %s)", perHour(d1.all.Load()-d0.all.Load(), n-k), perHour(d1.writes.Load()-d0.writes.Load(), n-k), perHour(d1.watches.Load()-d0.watches.Load(), n-k)), load},
		[]string{"the same, the API server's apiserver_request_total, per node", fmt.Sprintf("%.1f", apiAll/float64(n)*float64(time.Hour)/float64(w)), load},
		[]string{"reconciles per real agent per hour", fmt.Sprintf("%.1f", (rc1-rc0)/float64(k)*float64(time.Hour)/float64(w)), load},
		[]string{"the API server's resident memory: before the nodes, with the nodes, at steady state", fmt.Sprintf("%s, %s, %s", mib(int64(base.rss)), mib(int64(withNodes.rss)), mib(int64(m1.rss))), load},
		[]string{"the API server's memory per node (steady state less before the nodes, ÷ nodes)", fmt.Sprintf("%.3f MiB", (m1.rss-base.rss)/float64(n)/(1<<20)), load},
		[]string{"the API server's CPU at steady state", fmt.Sprintf("%.0f millicores", (m1.cpu-m0.cpu)/w.Seconds()*1000), load},
	)

	// The driver plays the agent of this commit: when the agent's
	// requests change (fewer writes, say), the two rates part, and the
	// table says so.
	if k > 0 && n > k {
		ra := float64(a1.all.Load()-a0.all.Load()) / float64(k)
		rd := float64(d1.all.Load()-d0.all.Load()) / float64(n-k)
		if ra > 0 && (rd/ra > 1.2 || rd/ra < 0.8) {
			sec.notes = append(sec.notes, fmt.Sprintf("**The driven nodes made %.2f times the real agents' requests at steady state: the driver (agent.go's driver.reconcile) no longer plays the agent's requests; bring it up to date before reading the API server's figures.**", rd/ra))
		}
	}

	// The config change: the memlock limit changes.
	memlock += 64
	load0 = loadavg()
	var peak float64
	stopPeak := make(chan struct{})
	peakDone := make(chan struct{})
	go func() {
		defer close(peakDone)
		for {
			if m, err := b.apiMetrics(ctx); err == nil {
				peak = max(peak, m.rss)
			}
			select {
			case <-stopPeak:
				return
			case <-time.After(time.Second):
			}
		}
	}()
	mc0, err := b.apiMetrics(ctx)
	if err != nil {
		close(stopPeak)
		return err
	}
	cpu0, _ := benchlab.ProcUsage(0)
	start = time.Now()
	cfg, err = b.config(ctx, rail, agentSpec(memlock))
	if err != nil {
		close(stopPeak)
		return err
	}
	got, err = b.waitInSync(ctx, cfg, names, 30*time.Minute)
	close(stopPeak)
	<-peakDone
	if err != nil {
		return err
	}
	all := latest(got).Sub(start)
	cpu1, _ := benchlab.ProcUsage(0)
	mc1, err := b.apiMetrics(ctx)
	if err != nil {
		return err
	}
	var changeReqs float64
	for _, v := range mc1.requests {
		changeReqs += v
	}
	for _, v := range mc0.requests {
		changeReqs -= v
	}
	realAt := map[string]time.Time{}
	for _, nm := range names[:k] {
		realAt[nm] = got[nm]
	}
	goal := 2 * (interval + r.agentApply)
	verdict := "within"
	if all > goal {
		verdict = "over"
	}
	load = load0 + " → " + loadavg()
	self2, _ := benchlab.ProcUsage(0)
	sec.rows = append(sec.rows,
		[]string{fmt.Sprintf("a config change to every node InSync (%d nodes)", n), ms(all), load},
		[]string{fmt.Sprintf("the same, the %d real agents", k), ms(latest(realAt).Sub(start)), load},
		[]string{fmt.Sprintf("the goal: 2 × (interval %s + one apply %s)", interval, ms(r.agentApply)), ms(goal) + ": " + verdict, ""},
		[]string{"the API server's peak resident memory during the change (sampled each second)", mib(int64(peak)), load},
		[]string{"CPU over the change: the API server's, and this process's (the real agents, the driver, the bench)", fmt.Sprintf("%.1f s, %.1f s", mc1.cpu-mc0.cpu, (cpu1.CPU - cpu0.CPU).Seconds()), load},
		[]string{"requests the API server served over the change, per node", fmt.Sprintf("%.1f", changeReqs/float64(n)), load},
		[]string{"this process's memory per real agent (resident, with the agents less before, ÷ agents)", mib((self1.RSS - self0.RSS) / int64(max(k, 1))), ""},
		[]string{"this process's resident memory, all agents and the driver", mib(self2.RSS), ""},
	)
	sec.notes = append(sec.notes,
		fmt.Sprintf("The real agents made %d writes in %.0f reconciles of one steady interval before the window: the driver %s.", wB-wA, rcB-rcA, mode),
		fmt.Sprintf("Nodes fleet-0001..%04d (rail=fleet, domains of 20), one RDMAHostConfig selecting them (mode apply, activation none; hostSpec: a module and limits.memlock, which the change raises by 64 MiB). Each node has a token of the rdmaform-agent ServiceAccount bound to it: its requests pass deploy/kubernetes's RBAC and own-node admission policy. Client QPS and burst are client-go's defaults (5, 10), as rest.InClusterConfig leaves them.", n),
		fmt.Sprintf("The real agents: agent.Run (the controller-runtime manager of rdmaform-agent) in this process, each with a simulated cx6-vpi-ib host; a counting transport counts their requests. The driven nodes (%d): per node the three watches an agent holds (its Node, the configs, the namespace's Leases), and per reconcile, on a config's generation change and every interval, the requests the agent makes (get its Node, list the configs, get its state, update it to Applying and wait one apply, the apply measured above, when the config changed; list the slots; update its state) with the status an agent writes.", n-k),
		fmt.Sprintf("Steady state: a window of %s after the first config and 1.25 intervals; per hour = count ÷ nodes × 1 h ÷ window. The API server's figure counts every request it served, the bench's own few lists among them.", r.opts.agentWindow),
		fmt.Sprintf("%d CPUs shared with other work; load: /proc/loadavg's 1-minute figure before and after each measurement.", runtime.NumCPU()))
	return nil
}

func totalReconciles(ms []*agent.Metrics) float64 {
	var s float64
	for _, m := range ms {
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, nil)
		v, err := reconcilesIn(rec.Body.String())
		if err == nil {
			s += v
		}
	}
	return s
}

func sum(cs []*counter) *counter {
	var s counter
	for _, c := range cs {
		s.add(c)
	}
	return &s
}

func latest(m map[string]time.Time) time.Time {
	var t time.Time
	for _, v := range m {
		if v.After(t) {
			t = v
		}
	}
	return t
}

// parallel runs f(0..n-1) on at most w goroutines.
func parallel(w, n int, f func(int)) {
	ch := make(chan int)
	var wg sync.WaitGroup
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ch {
				f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		ch <- i
	}
	close(ch)
	wg.Wait()
}

// driver plays one node's agent against the API server: the watches it
// holds and the requests of its reconciles, with the states it writes
// (agent.go's reconcile, the case of a config that applies without an
// activation). It runs no plan: an apply is a wait of the measured time.
type driver struct {
	name            string
	interval, apply time.Duration
	cl              client.WithWatch
	c               *counter
	log             io.Writer
	// quiet: a reconcile that changes nothing writes nothing (as the
	// real agents were seen to do); else it writes the state each time.
	quiet       *atomic.Bool
	mu          sync.Mutex
	generations map[string]int64
}

func (d *driver) run(ctx context.Context) {
	wake := make(chan struct{}, 1)
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	d.generations = map[string]int64{}
	go d.watch(ctx, &corev1.NodeList{}, &client.ListOptions{Raw: &metav1.ListOptions{FieldSelector: "metadata.name=" + d.name}}, func(watchEvent) bool { return false }, poke)
	go d.watch(ctx, &v1alpha1.RDMAHostConfigList{}, &client.ListOptions{}, d.generationChanged, poke)
	go d.watch(ctx, &coordinationv1.LeaseList{}, &client.ListOptions{Namespace: agentNS}, func(e watchEvent) bool { return e.deleted }, poke)
	for {
		if err := d.reconcile(ctx); err != nil && ctx.Err() == nil {
			fmt.Fprintf(d.log, "   driven %s: %v\n", d.name, err)
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-time.After(d.interval):
		}
	}
}

type watchEvent struct {
	obj     client.Object
	deleted bool
}

// generationChanged: a config's generation moved (the agent's
// GenerationChangedPredicate).
func (d *driver) generationChanged(e watchEvent) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	name, gen := e.obj.GetName(), e.obj.GetGeneration()
	old, ok := d.generations[name]
	d.generations[name] = gen
	return e.deleted || !ok || old != gen
}

// watch lists, then watches (as an informer's reflector does, the watch
// ending after 5 to 10 minutes), calling poke for the events want takes.
func (d *driver) watch(ctx context.Context, list client.ObjectList, opts *client.ListOptions, want func(watchEvent) bool, poke func()) {
	for ctx.Err() == nil {
		if err := d.cl.List(ctx, list, opts); err != nil {
			time.Sleep(time.Second)
			continue
		}
		if items, err := meta.ExtractList(list); err == nil {
			for _, it := range items {
				if o, ok := it.(client.Object); ok {
					want(watchEvent{obj: o})
				}
			}
		}
		rv := list.(metav1.ListInterface).GetResourceVersion()
		for ctx.Err() == nil {
			timeout := int64(300 + time.Now().UnixNano()%300)
			raw := metav1.ListOptions{ResourceVersion: rv, TimeoutSeconds: &timeout, AllowWatchBookmarks: true}
			if opts.Raw != nil {
				raw.FieldSelector = opts.Raw.FieldSelector
			}
			w, err := d.cl.Watch(ctx, list, &client.ListOptions{Namespace: opts.Namespace, Raw: &raw})
			if err != nil {
				break // list again
			}
			gone := false
			for ev := range w.ResultChan() {
				o, ok := ev.Object.(client.Object)
				if !ok {
					gone = true // an error event: the version is too old
					continue
				}
				rv = o.GetResourceVersion()
				if ev.Type == "BOOKMARK" {
					continue
				}
				if want(watchEvent{obj: o, deleted: ev.Type == "DELETED"}) {
					poke()
				}
			}
			w.Stop()
			if gone {
				break
			}
		}
	}
}

// reconcile makes the requests of the agent's reconcile of a node that a
// config selects, applying (a wait) when its state is not in sync for
// the config's generation.
func (d *driver) reconcile(ctx context.Context) error {
	var node corev1.Node
	if err := d.cl.Get(ctx, client.ObjectKey{Name: d.name}, &node); err != nil {
		return err
	}
	var cfgs v1alpha1.RDMAHostConfigList
	if err := d.cl.List(ctx, &cfgs); err != nil {
		return err
	}
	var cfg *v1alpha1.RDMAHostConfig
	for i := range cfgs.Items {
		if node.Labels["rail"] != "" && cfgs.Items[i].Spec.NodeSelector.MatchLabels["rail"] == node.Labels["rail"] {
			cfg = &cfgs.Items[i]
		}
	}
	st := &v1alpha1.RDMAHostState{ObjectMeta: metav1.ObjectMeta{Name: d.name}}
	err := d.cl.Get(ctx, client.ObjectKey{Name: d.name}, st)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if cfg == nil {
		return nil
	}
	gen := cfg.Generation
	set := func(typ string, on bool, reason, msg string) {
		s := metav1.ConditionFalse
		if on {
			s = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Status.Conditions, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen})
	}
	write := func() error {
		if st.ResourceVersion == "" {
			return d.cl.Create(ctx, st)
		}
		return d.cl.Update(ctx, st)
	}
	steady := inSync(st, cfg)
	now := metav1.Now()
	st.Status.Config = cfg.Name
	set(v1alpha1.ConditionConfigConflict, false, "OneConfig", "selected by "+cfg.Name)
	if !inSync(st, cfg) {
		set(v1alpha1.ConditionProgressing, true, "Applying", "applying 1 changes")
		st.Status.Plan = v1alpha1.PlanSummary{Change: 1}
		st.Status.Drift = []string{"limits"}
		st.Status.LastPlanTime = &now
		if err := write(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d.apply):
		}
		st.Status.LastApply = &v1alpha1.ApplyResult{Action: "apply", Time: metav1.Now(), ExitCode: 0, Applied: 1}
	}
	var leases coordinationv1.LeaseList
	if err := d.cl.List(ctx, &leases, client.InNamespace(agentNS), client.MatchingLabels{agent.LabelConfig: cfg.Name}); err != nil {
		return err
	}
	if steady && d.quiet.Load() {
		return nil
	}
	set(v1alpha1.ConditionDegraded, false, "Planned", "")
	set(v1alpha1.ConditionActivationRequired, false, "NothingPending", "")
	set(v1alpha1.ConditionActivationFailed, false, "NoFailure", "")
	set(v1alpha1.ConditionInSync, true, "InSync", "the host matches the spec: the plan is empty, nothing pending")
	set(v1alpha1.ConditionProgressing, false, "Idle", "")
	st.Status.Plan = v1alpha1.PlanSummary{}
	st.Status.Drift, st.Status.Pending = nil, nil
	now = metav1.Now()
	st.Status.LastPlanTime = &now
	return write()
}
