// Command rdmaform-agent is rdmaform on a Kubernetes node (package agent):
// it applies the RDMAHostConfig that selects its Node and reports in the
// node's RDMAHostState. A separate binary, so that rdmaform itself links
// no Kubernetes client library.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/rdmaform/rdmaform/agent"
	"github.com/rdmaform/rdmaform/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Environ(), os.Stderr))
}

// defaultNamespace holds the activation slots when neither --namespace
// nor POD_NAMESPACE says otherwise (deploy/kubernetes installs there).
const defaultNamespace = "rdmaform-system"

func run(ctx context.Context, args, environ []string, stderr io.Writer) int {
	env := func(k string) string {
		for i := len(environ) - 1; i >= 0; i-- {
			if v, ok := cut(environ[i], k+"="); ok {
				return v
			}
		}
		return ""
	}
	fs := flag.NewFlagSet("rdmaform-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig `FILE` (default: the in-cluster configuration)")
	node := fs.String("node-name", env("NODE_NAME"), "this node's `NAME` (default $NODE_NAME)")
	ns := fs.String("namespace", or(env("POD_NAMESPACE"), defaultNamespace), "`NAMESPACE` of the activation slots' Leases (default $POD_NAMESPACE, else "+defaultNamespace+")")
	sim := fs.String("sim", "", "run against the simulated host in `DIR` (as rdmaform --sim)")
	root := fs.String("root", "", "read and write sysfs, configfs, /etc and /run under `DIR` (as rdmaform --root)")
	metrics := fs.String("metrics-address", ":9477", "serve /metrics on `ADDRESS`; 0 turns it off")
	interval := fs.Duration("interval", agent.DefaultInterval, "plan again after `D` when nothing changed (a config's policy.interval wins)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "rdmaform-agent: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *showVersion {
		v := version.Get()
		fmt.Fprintf(stderr, "rdmaform-agent %s (%s, %s)\n", v.Version, v.Commit, v.Go)
		return 0
	}
	if *sim != "" && *root != "" {
		fmt.Fprintln(stderr, "rdmaform-agent: --sim and --root: give one")
		return 2
	}
	var hostArgs []string
	switch {
	case *sim != "":
		hostArgs = []string{"--sim", *sim}
	case *root != "":
		hostArgs = []string{"--root", *root}
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(stderr)))
	var cfg *rest.Config
	var err error
	if *kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", *kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		fmt.Fprintln(stderr, "rdmaform-agent:", err)
		return 1
	}
	o := agent.Options{NodeName: *node, Namespace: *ns, HostArgs: hostArgs, Environ: environ, Interval: *interval, Metrics: agent.NewMetrics(), Now: time.Now}
	if err := agent.Run(ctx, cfg, o, *metrics); err != nil {
		fmt.Fprintln(stderr, "rdmaform-agent:", err)
		return 1
	}
	return 0
}

func cut(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && s[:len(prefix)] == prefix {
		return s[len(prefix):], true
	}
	return "", false
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
