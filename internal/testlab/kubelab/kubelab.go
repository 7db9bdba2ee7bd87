// Package kubelab runs a real Kubernetes control plane for a test: etcd
// and kube-apiserver, built from the Go module proxy by `make k8s-lab`
// (package labbin says where and which versions), on free loopback ports,
// with every file (etcd's data, the API server's certificates, its token
// file and service-account signing key, the kubeconfig) under the test's
// own directory. Authorization is RBAC, as on a real cluster; the admin
// is a static token in system:masters. Both processes are stopped by
// their PIDs when the test (or the package, see Shared) ends.
//
// There is no kubelet, scheduler, controller manager or container runtime:
// Node objects, Leases, ServiceAccounts and custom resources are real API
// objects, but nothing runs pods, and nothing creates a namespace's
// "default" ServiceAccount or garbage-collects. A test makes the objects
// it needs (CreateNode, ServiceAccount).
//
// When the binaries are missing the test skips with the reason (fails
// under RDMAFORM_REQUIRE_LAB=1, package need).
package kubelab

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/rdmaform/rdmaform/internal/testlab/kubelab/labbin"
	"github.com/rdmaform/rdmaform/internal/testlab/need"
)

// AdminUser is the static token's user name; it is in system:masters.
const AdminUser = "rdmaform-admin"

// Issuer is the service-account token issuer (and audience) of the lab.
const Issuer = "https://kubelab.rdmaform.test"

// StartTimeout bounds how long the lab waits for etcd and the API server
// to answer (the machine may be loaded).
var StartTimeout = 90 * time.Second

// Lab is one running control plane.
type Lab struct {
	// Dir holds every file of the lab.
	Dir string
	// BinDir holds the binaries (kube-apiserver, etcd, kubectl).
	BinDir string
	// Server is the API server's URL, https://127.0.0.1:PORT.
	Server string
	// Config is the admin's client configuration (TLS verified against
	// the API server's own certificate). Copy it before changing it
	// (rest.CopyConfig).
	Config *rest.Config
	// Client is a clientset for Config.
	Client kubernetes.Interface
	// Kubeconfig is a kubeconfig file for the admin.
	Kubeconfig string
	// KubectlPath is the kubectl binary built with the API server.
	KubectlPath string
	// CAFile is the API server's certificate chain (a kubeconfig's
	// certificate-authority).
	CAFile string
	// Started is how long etcd and the API server took to be ready.
	Started time.Duration

	adminToken string
	procs      []*Proc
}

// Binaries returns the directory of a complete lab, or why there is none.
func Binaries() (string, error) {
	dir := labbin.Dir()
	return dir, labbin.Check(dir)
}

// Start starts a control plane for t, stopped at t's cleanup. It skips
// t (fails under RDMAFORM_REQUIRE_LAB=1) when the binaries are missing
// and fails it when the control plane does not start.
func Start(t testing.TB) *Lab {
	t.Helper()
	bin, err := Binaries()
	if err != nil {
		need.Skip(t, "%v", err)
	}
	l, err := start(bin, t.TempDir())
	if l != nil {
		t.Cleanup(l.Stop)
	}
	if err != nil {
		t.Fatalf("kubelab: %v", err)
	}
	t.Logf("kubelab: %s ready in %s (files in %s)", l.Server, l.Started.Round(time.Millisecond), l.Dir)
	return l
}

// Shared is one control plane for a whole test package, started by the
// first test that asks for it and stopped when the package's tests end:
//
//	var lab kubelab.Shared
//	func TestMain(m *testing.M) { os.Exit(lab.Run(m)) }
//	func TestX(t *testing.T) { l := lab.Get(t); ... }
//
// Tests that share it must not depend on each other's objects: use
// distinct names.
type Shared struct {
	once sync.Once
	lab  *Lab
	dir  string
	err  error
	miss error
}

// Run runs the package's tests and stops the lab, if one was started;
// its result is the exit code for os.Exit.
func (s *Shared) Run(m *testing.M) int {
	code := m.Run()
	if s.lab != nil {
		s.lab.Stop()
	}
	if s.dir != "" {
		if code == 0 {
			os.RemoveAll(s.dir)
		} else {
			fmt.Fprintf(os.Stderr, "kubelab: the failed run's files are kept in %s\n", s.dir)
		}
	}
	return code
}

// Get returns the package's lab, starting it at the first call; it skips
// t (or fails it) as Start does.
func (s *Shared) Get(t testing.TB) *Lab {
	t.Helper()
	s.once.Do(func() {
		bin, err := Binaries()
		if err != nil {
			s.miss = err
			return
		}
		s.dir, s.err = os.MkdirTemp("", "kubelab-")
		if s.err != nil {
			return
		}
		s.lab, s.err = start(bin, s.dir)
		if s.err != nil && s.lab != nil {
			s.lab.Stop()
			s.lab = nil
		}
		if s.lab != nil {
			t.Logf("kubelab: %s ready in %s (files in %s)", s.lab.Server, s.lab.Started.Round(time.Millisecond), s.lab.Dir)
		}
	})
	if s.miss != nil {
		need.Skip(t, "%v", s.miss)
	}
	if s.err != nil {
		t.Fatalf("kubelab: %v", s.err)
	}
	return s.lab
}

// freePorts returns n distinct loopback ports that were free a moment
// ago (the kernel picks them; a process that takes one in between makes
// the start fail and try again).
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// start runs etcd and the API server with their files in dir. A port
// taken between choosing it and binding it costs another try.
func start(bin, dir string) (*Lab, error) {
	t0 := time.Now()
	var l *Lab
	var err error
	for try := 1; try <= 3; try++ {
		sub := filepath.Join(dir, "try"+strconv.Itoa(try))
		l, err = startOnce(bin, sub)
		if err == nil {
			l.Started = time.Since(t0)
			return l, nil
		}
		if l != nil {
			l.Stop()
		}
		if !errors.Is(err, errPortTaken) {
			return nil, err
		}
	}
	return nil, err
}

var errPortTaken = errors.New("a port was taken")

func startOnce(bin, dir string) (*Lab, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdPort, peerPort, apiPort := ports[0], ports[1], ports[2]
	l := &Lab{
		Dir:         dir,
		BinDir:      bin,
		Server:      fmt.Sprintf("https://127.0.0.1:%d", apiPort),
		KubectlPath: filepath.Join(bin, labbin.Kubectl),
		CAFile:      filepath.Join(dir, "certs", "apiserver.crt"),
		Kubeconfig:  filepath.Join(dir, "admin.kubeconfig"),
	}

	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	etcd, err := startProc(filepath.Join(bin, labbin.EtcdBin), filepath.Join(dir, "etcd.log"),
		"--name", "kubelab",
		"--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "kubelab="+peerURL,
		// A test's data need not survive a power cut; fsync on a loaded
		// machine is what makes etcd slow.
		"--unsafe-no-fsync",
		"--log-level", "warn")
	if err != nil {
		return nil, err
	}
	l.procs = append(l.procs, etcd)
	if err := waitHTTP(etcd, nil, etcdURL+"/health", ""); err != nil {
		return l, err
	}

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return l, err
	}
	saKey := filepath.Join(dir, "sa.key")
	if err := os.WriteFile(saKey, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return l, err
	}
	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return l, err
	}
	l.adminToken = hex.EncodeToString(tok)
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(l.adminToken+","+AdminUser+","+AdminUser+",system:masters\n"), 0o600); err != nil {
		return l, err
	}
	api, err := startProc(filepath.Join(bin, labbin.APIServer), filepath.Join(dir, "kube-apiserver.log"),
		"--etcd-servers", etcdURL,
		"--cert-dir", filepath.Join(dir, "certs"),
		"--bind-address", "127.0.0.1",
		// No endpoints for the "kubernetes" Service: it would need an
		// address that is not loopback, and nothing here runs a pod.
		"--endpoint-reconciler-type", "none",
		"--secure-port", strconv.Itoa(apiPort),
		"--service-account-issuer", Issuer,
		"--service-account-key-file", saKey,
		"--service-account-signing-key-file", saKey,
		"--token-auth-file", tokens,
		"--authorization-mode", "RBAC",
		// As kubeadm and every distribution set it: a node agent's
		// DaemonSet may be privileged.
		"--allow-privileged=true",
		"--service-cluster-ip-range", "10.0.0.0/24",
		"--v", "1")
	if err != nil {
		return l, err
	}
	l.procs = append(l.procs, api)
	// The API server writes its self-signed certificate (and the CA that
	// signed it) before it listens; until then readyz is polled without
	// verification, then the chain is checked once it exists.
	if err := waitHTTP(api, &tls.Config{InsecureSkipVerify: true}, l.Server+"/readyz", l.adminToken); err != nil {
		return l, err
	}
	ca, err := os.ReadFile(l.CAFile)
	if err != nil {
		return l, fmt.Errorf("the API server wrote no certificate: %w", err)
	}
	l.Config = &rest.Config{
		Host:            l.Server,
		BearerToken:     l.adminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca},
		// The lab's tests make many requests in bursts.
		QPS:   200,
		Burst: 400,
	}
	if l.Client, err = kubernetes.NewForConfig(l.Config); err != nil {
		return l, err
	}
	// The server's certificate verifies against what it wrote.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := l.Client.Discovery().ServerVersion(); err != nil {
		return l, fmt.Errorf("the admin client cannot talk to %s: %w", l.Server, err)
	}
	// RBAC's bootstrap policy (the cluster roles every cluster has) is
	// in place when readyz answers; the lab waits for the "default"
	// namespace too, which the API server makes itself.
	for {
		_, err := l.Client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return l, fmt.Errorf("namespace default: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := os.WriteFile(l.Kubeconfig, []byte(l.kubeconfig(AdminUser, l.adminToken)), 0o600); err != nil {
		return l, err
	}
	return l, nil
}

// kubeconfig is a kubeconfig for user with a bearer token.
func (l *Lab) kubeconfig(user, token string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kubelab
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: %s
  user:
    token: %s
contexts:
- name: kubelab
  context:
    cluster: kubelab
    user: %s
current-context: kubelab
`, l.Server, l.CAFile, user, token, user)
}

// Stop stops the API server, then etcd, each by its PID (SIGTERM, then
// SIGKILL after 10 s). It may be called more than once.
func (l *Lab) Stop() {
	for i := len(l.procs) - 1; i >= 0; i-- {
		l.procs[i].Stop()
	}
	l.procs = nil
}

// Proc is one process of the lab (or of a benchmark: benchlab starts
// its programs so too).
type Proc struct {
	PID  int
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error // Wait's result, once done is closed
}

// StartProc starts argv with env (nil: this process's), its output in
// logFile. The process gets SIGKILL if this one dies first (Pdeathsig),
// so a test killed by its timeout leaves nothing running. Pdeathsig is
// tied to the thread that started the child, so that thread is locked to
// the goroutine that waits for the process and lives as long as it does.
//
// Equivalent to: ARGV >LOG 2>&1 &
func StartProc(argv, env []string, logFile string) (*Proc, error) {
	f, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	p := &Proc{name: filepath.Base(argv[0]), log: logFile, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Never unlocked: the thread ends with this goroutine, after the
		// process has.
		defer f.Close()
		p.cmd = exec.Command(argv[0], argv[1:]...)
		p.cmd.Env = env
		p.cmd.Stdout = f
		p.cmd.Stderr = f
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := p.cmd.Start(); err != nil {
			started <- err
			return
		}
		p.PID = p.cmd.Process.Pid
		started <- nil
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	return p, nil
}

func startProc(bin, logFile string, args ...string) (*Proc, error) {
	return StartProc(append([]string{bin}, args...), nil, logFile)
}

// Exited says whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM to the process (by its PID), SIGKILL after 10 s,
// and waits for it.
func (p *Proc) Stop() {
	if p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Tail is the end of the process's log, for an error message.
func (p *Proc) Tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// waitHTTP polls url until it answers 200, the process exits, or
// StartTimeout passes.
func waitHTTP(p *Proc, tlsConf *tls.Config, url, token string) error {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConf}}
	defer c.CloseIdleConnections()
	deadline := time.Now().Add(StartTimeout)
	var last string
	for {
		if p.Exited() {
			t := p.Tail()
			if strings.Contains(t, "address already in use") {
				return fmt.Errorf("%s: %w: %s", p.name, errPortTaken, t)
			}
			return fmt.Errorf("%s exited (%v) before %s answered; its log %s ends:\n%s", p.name, p.err, url, p.log, t)
		}
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err == nil {
			b := make([]byte, 512)
			n, _ := resp.Body.Read(b)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%s: %s", resp.Status, bytes.TrimSpace(b[:n]))
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer %s within %s (last: %s); its log %s ends:\n%s", p.name, url, StartTimeout, last, p.log, p.Tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Kubectl runs the lab's kubectl as the admin with args and returns its
// standard output; the error carries its standard error.
func (l *Lab) Kubectl(ctx context.Context, args ...string) (string, error) {
	return l.KubectlWith(ctx, l.Kubeconfig, nil, args...)
}

// KubectlWith runs kubectl with a kubeconfig file (AsUser makes one for
// a token) and stdin (nil for none).
func (l *Lab) KubectlWith(ctx context.Context, kubeconfig string, stdin []byte, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, l.KubectlPath, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	// kubectl reads nothing of the user's: no ~/.kube cache, no
	// $KUBECONFIG.
	cmd.Env = []string{"HOME=" + l.Dir, "PATH=/usr/bin:/bin"}
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// MustKubectl runs kubectl as the admin and fails t when it fails.
func (l *Lab) MustKubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, err := l.Kubectl(context.Background(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// AsUser returns a client configuration and a kubeconfig file (in the
// lab's directory) that authenticate with token, e.g. one from Token.
func (l *Lab) AsUser(t testing.TB, name, token string) (*rest.Config, string) {
	t.Helper()
	cfg := rest.AnonymousClientConfig(l.Config)
	cfg.BearerToken = token
	f, err := os.CreateTemp(l.Dir, "user-*.kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(l.kubeconfig(name, token)); err != nil {
		t.Fatal(err)
	}
	return cfg, f.Name()
}

// CreateNode creates a Node object named name with labels (there is no
// kubelet: it stays as created, with no status), and returns it.
func (l *Lab) CreateNode(t testing.TB, name string, labels map[string]string) *corev1.Node {
	t.Helper()
	n, err := l.Client.CoreV1().Nodes().Create(context.Background(), &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create node %s: %v", name, err)
	}
	return n
}

// ServiceAccount makes sure namespace and the ServiceAccount name in it
// exist (a lab has no controller that makes them).
func (l *Lab) ServiceAccount(t testing.TB, namespace, name string) {
	t.Helper()
	ctx := context.Background()
	_, err := l.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", namespace, err)
	}
	_, err = l.Client.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create serviceaccount %s/%s: %v", namespace, name, err)
	}
}

// Token returns a token for the ServiceAccount namespace/name (which must
// exist) through the TokenRequest API, valid for an hour. With node set,
// the token is bound to that Node object: the API server then gives its
// requests the user extra authentication.kubernetes.io/node-name (and
// node-uid), as it does for a pod's projected token on that node.
func (l *Lab) Token(t testing.TB, namespace, name, node string) string {
	t.Helper()
	ctx := context.Background()
	exp := int64(3600)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}
	if node != "" {
		n, err := l.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("token bound to node %s: %v", node, err)
		}
		req.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: n.Name, UID: n.UID}
	}
	tr, err := l.Client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for serviceaccount %s/%s: %v", namespace, name, err)
	}
	return tr.Status.Token
}

// NodeNameExtra is the user extra the API server gives a ServiceAccount
// token bound to a Node, or to a Pod on a node (k8s.io/apiserver's
// serviceaccount.NodeNameKey); an admission policy reads it as
// request.userInfo.extra["authentication.kubernetes.io/node-name"].
const NodeNameExtra = "authentication.kubernetes.io/node-name"

// Env is the environment for a program that runs kubectl as the admin
// (an Ansible module, a script): this process's, with KUBECONFIG set to
// the admin's and the lab's kubectl first on PATH.
func (l *Lab) Env() []string {
	env := []string{"KUBECONFIG=" + l.Kubeconfig, "PATH=" + l.BinDir + string(os.PathListSeparator) + os.Getenv("PATH")}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "KUBECONFIG=") && !strings.HasPrefix(e, "PATH=") {
			env = append(env, e)
		}
	}
	return env
}

// Apply applies the manifests (files or directories, as kubectl -f takes
// them) as the admin, server-side with strict field validation, in order;
// CustomResourceDefinitions among them are waited for until established.
func (l *Lab) Apply(t testing.TB, paths ...string) {
	t.Helper()
	ctx := context.Background()
	for _, p := range paths {
		out, err := l.Kubectl(ctx, "apply", "--server-side", "--field-manager", "kubelab", "-f", p, "-o", "name")
		if err != nil {
			t.Fatal(err)
		}
		var crds []string
		for _, n := range strings.Fields(out) {
			if strings.HasPrefix(n, "customresourcedefinition.apiextensions.k8s.io/") {
				crds = append(crds, n)
			}
		}
		if len(crds) > 0 {
			if _, err := l.Kubectl(ctx, append([]string{"wait", "--for", "condition=Established", "--timeout", "60s"}, crds...)...); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// CreatePod creates a pod bound to node (spec.nodeName set, as the
// scheduler would) in namespace, with the namespace and its "default"
// ServiceAccount made first. Nothing runs it: it stays Pending.
func (l *Lab) CreatePod(t testing.TB, namespace, name, node string) *corev1.Pod {
	t.Helper()
	l.ServiceAccount(t, namespace, "default")
	p, err := l.Client.CoreV1().Pods(namespace).Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/kubelab:none"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s/%s: %v", namespace, name, err)
	}
	return p
}

// FinishTerminatingPods plays the one part of a kubelet that drains
// wait for: once a pod is being deleted (an eviction or a delete sets its
// deletionTimestamp), a kubelet stops its containers and deletes it for
// good. Until t's cleanup, every pod the API server marks so is deleted
// with a grace period of 0 (as the kubelet does once its containers have
// stopped); without this, `kubectl drain` waits for them until its
// timeout.
func (l *Lab) FinishTerminatingPods(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		zero := int64(0)
		for ctx.Err() == nil {
			pods, err := l.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			if err == nil {
				for _, p := range pods.Items {
					if p.DeletionTimestamp != nil {
						_ = l.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
							GracePeriodSeconds: &zero,
							Preconditions:      &metav1.Preconditions{UID: &p.UID},
						})
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
}

// PodToken returns a token for the ServiceAccount namespace/sa bound to
// the pod namespace/pod (which must exist and name that ServiceAccount):
// what the kubelet projects into a pod's containers. When the pod is on a
// node, the API server adds the node's name and UID to the token, and
// its requests carry the user extras pod-name, pod-uid, node-name
// (NodeNameExtra) and node-uid.
func (l *Lab) PodToken(t testing.TB, namespace, sa, pod string) string {
	t.Helper()
	ctx := context.Background()
	p, err := l.Client.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("token bound to pod %s/%s: %v", namespace, pod, err)
	}
	exp := int64(3600)
	tr, err := l.Client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: &exp,
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for serviceaccount %s/%s bound to pod %s: %v", namespace, sa, pod, err)
	}
	return tr.Status.Token
}
