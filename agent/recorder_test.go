package agent_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	yaml3 "gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmaform/rdmaform/agent"
	"github.com/rdmaform/rdmaform/api/v1alpha1"
	"github.com/rdmaform/rdmaform/sim"
)

// apiRequest is one request an agent made, as the API server's
// authorizer sees it: the verb, API group, resource, subresource,
// namespace and name.
type apiRequest struct {
	node, verb, group, resource, subresource, namespace, name string
}

func (r apiRequest) String() string {
	res := r.resource
	if r.subresource != "" {
		res += "/" + r.subresource
	}
	if r.group != "" {
		res += "." + r.group
	}
	where := r.name
	if r.namespace != "" {
		where = r.namespace + "/" + r.name
	}
	return fmt.Sprintf("%s %s %s", r.verb, res, where)
}

// writes are the verbs that change an object.
var writes = []string{"create", "update", "patch", "delete", "deletecollection"}

func (r apiRequest) write() bool { return slices.Contains(writes, r.verb) }

// classify turns an HTTP request into its authorization attributes, as
// the API server does (k8s.io/apiserver v0.37.2,
// pkg/endpoints/request/requestinfo.go, RequestInfoFactory.NewRequestInfo):
// /api/VERSION/... (the core group) or /apis/GROUP/VERSION/..., then
// namespaces/NS/ when a resource follows it, then RESOURCE[/NAME[/SUB]];
// the method gives the verb (POST create, GET get, PUT update, PATCH
// patch, DELETE delete), a GET without a name is list, or watch with
// watch=true (also "1"), and a DELETE without a name deletecollection.
// The deprecated /watch/ path prefix is not used by client-go. ok is
// false for a request that is not about a resource (discovery).
func classify(node string, req *http.Request) (apiRequest, bool) {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	r := apiRequest{node: node}
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		r.group = parts[1]
		parts = parts[3:]
	default:
		return r, false
	}
	if parts[0] == "namespaces" && len(parts) > 2 && parts[2] != "status" && parts[2] != "finalize" {
		r.namespace = parts[1]
		parts = parts[2:]
	}
	r.resource = parts[0]
	if len(parts) > 1 {
		r.name = parts[1]
	}
	if len(parts) > 2 {
		r.subresource = parts[2]
	}
	switch req.Method {
	case http.MethodPost:
		r.verb = "create"
	case http.MethodGet, http.MethodHead:
		r.verb = "get"
		if r.name == "" {
			r.verb = "list"
			if w := strings.ToLower(req.URL.Query().Get("watch")); w != "" && w != "false" && w != "0" {
				r.verb = "watch"
			}
		}
	case http.MethodPut:
		r.verb = "update"
	case http.MethodPatch:
		r.verb = "patch"
	case http.MethodDelete:
		r.verb = "delete"
		if r.name == "" {
			r.verb = "deletecollection"
		}
	}
	return r, true
}

// recorder records the API requests of the agents whose clients it wraps.
type recorder struct {
	mu   sync.Mutex
	reqs []apiRequest
}

type recordingTransport struct {
	node string
	rec  *recorder
	next http.RoundTripper
}

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if r, ok := classify(t.node, req); ok {
		t.rec.mu.Lock()
		t.rec.reqs = append(t.rec.reqs, r)
		t.rec.mu.Unlock()
	}
	return t.next.RoundTrip(req)
}

// since returns the requests recorded after the first n, and how many
// there are in all now.
func (rc *recorder) since(n int) ([]apiRequest, int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]apiRequest(nil), rc.reqs[n:]...), len(rc.reqs)
}

// writesOf are the writes among reqs.
func writesOf(reqs []apiRequest) []string {
	var out []string
	for _, r := range reqs {
		if r.write() {
			out = append(out, r.String())
		}
	}
	return out
}

// startRecorded runs an agent for each node as start does (the agent's
// ServiceAccount, a token bound to the node), with every request of its
// clients recorded in rec, planning again every interval.
func (k *cluster) startRecorded(rec *recorder, m *agent.Metrics, interval time.Duration, nodes ...node) {
	k.t.Helper()
	for _, n := range nodes {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		o := agent.Options{NodeName: n.name, Namespace: ns, HostArgs: []string{"--sim", n.dir}, Interval: interval, Metrics: m}
		cfg, _ := k.lab.AsUser(k.t, "agent-"+n.name, k.lab.Token(k.t, ns, "rdmaform-agent", n.name))
		name := n.name
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
			return &recordingTransport{node: name, rec: rec, next: rt}
		}
		go func() { done <- agent.Run(ctx, cfg, o, "0") }()
		k.t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				k.t.Errorf("agent %s: %v", name, err)
			}
		})
	}
}

// nodeWith creates a Node with labels and a simulated cx6-vpi-ib host
// for it whose PATH lacks the programs in without.
func (k *cluster) nodeWith(name string, labels map[string]string, without ...string) node {
	k.t.Helper()
	obj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := k.c.Create(context.Background(), obj); err != nil {
		k.t.Fatal(err)
	}
	k.t.Cleanup(func() {
		_ = k.c.Delete(context.Background(), obj)
		_ = k.c.Delete(context.Background(), &v1alpha1.RDMAHostState{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	st, err := sim.NewState("cx6-vpi-ib", name, 0)
	if err != nil {
		k.t.Fatal(err)
	}
	st.Tools = slices.DeleteFunc(st.Tools, func(t string) bool { return slices.Contains(without, t) })
	dir := filepath.Join(k.t.TempDir(), "host")
	if _, err := sim.Create(dir, st); err != nil {
		k.t.Fatal(err)
	}
	return node{name: name, dir: dir}
}

// install puts a program on the simulated host's PATH, as a package
// install would, under the host's lock (sim/lock.go: sim.yaml is
// replaced by a rename, which other processes notice).
func (k *cluster) install(n node, tool string) {
	k.t.Helper()
	lock, err := os.OpenFile(filepath.Join(n.dir, sim.LockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		k.t.Fatal(err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		k.t.Fatal(err)
	}
	defer unix.Flock(int(lock.Fd()), unix.LOCK_UN)
	p := filepath.Join(n.dir, sim.StateFile)
	b, err := os.ReadFile(p)
	if err != nil {
		k.t.Fatal(err)
	}
	var st sim.State
	if err := yaml3.Unmarshal(b, &st); err != nil {
		k.t.Fatal(err)
	}
	st.Tools = append(st.Tools, tool)
	if b, err = yaml3.Marshal(&st); err != nil {
		k.t.Fatal(err)
	}
	if err := os.WriteFile(p+".tmp", b, 0o644); err != nil {
		k.t.Fatal(err)
	}
	if err := os.Rename(p+".tmp", p); err != nil {
		k.t.Fatal(err)
	}
}

var reconcilesRE = regexp.MustCompile(`(?m)^rdmaform_agent_reconciles_total\{result="(success|error)"\} (\d+)$`)

// reconciles reads the agents' reconcile counters from /metrics.
func reconciles(m *agent.Metrics) (ok, failed int) {
	w := httptest.NewRecorder()
	m.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, s := range reconcilesRE.FindAllStringSubmatch(w.Body.String(), -1) {
		n, _ := strconv.Atoi(s[2])
		if s[1] == "success" {
			ok = n
		} else {
			failed = n
		}
	}
	return ok, failed
}
