// Command rdmaform-agent is rdmaform on a Kubernetes node (package agent):
// it applies the RDMAHostConfig that selects its Node and reports in the
// node's RDMAHostState. A separate binary, so that rdmaform itself links
// no Kubernetes client library.
package main

import (
	"context"
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

func run(ctx context.Context, args, environ []string, stderr io.Writer) int {
	env := func(k string) string {
		for i := len(environ) - 1; i >= 0; i-- {
			if v, ok := cut(environ[i], k+"="); ok {
				return v
			}
		}
		return ""
	}
	fs, cl := agent.NewFlagSet(env)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "rdmaform-agent: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if cl.Version {
		v := version.Get()
		fmt.Fprintf(stderr, "rdmaform-agent %s (%s, %s)\n", v.Version, v.Commit, v.Go)
		return 0
	}
	if cl.Sim != "" && cl.Root != "" {
		fmt.Fprintln(stderr, "rdmaform-agent: --sim and --root: give one")
		return 2
	}
	var hostArgs []string
	switch {
	case cl.Sim != "":
		hostArgs = []string{"--sim", cl.Sim}
	case cl.Root != "":
		hostArgs = []string{"--root", cl.Root}
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(stderr)))
	var cfg *rest.Config
	var err error
	if cl.Kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", cl.Kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		fmt.Fprintln(stderr, "rdmaform-agent:", err)
		return 1
	}
	o := agent.Options{NodeName: cl.NodeName, Namespace: cl.Namespace, HostArgs: hostArgs, Environ: environ, Interval: cl.Interval, Metrics: agent.NewMetrics(), Now: time.Now}
	if err := agent.Run(ctx, cfg, o, cl.MetricsAddress); err != nil {
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
