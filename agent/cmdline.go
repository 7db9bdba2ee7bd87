package agent

import (
	"flag"
	"time"
)

// DefaultNamespace holds the activation slots when neither --namespace
// nor POD_NAMESPACE says otherwise (deploy/kubernetes installs there).
const DefaultNamespace = "rdmaform-system"

// DefaultMetricsAddress is where the agent serves /metrics unless
// --metrics-address says otherwise.
const DefaultMetricsAddress = ":9477"

// CommandShort and CommandLong describe rdmaform-agent for its manual
// page and the command reference (cmd/rdmaform-docs).
const (
	CommandShort = "Apply the RDMAHostConfig that selects this Kubernetes node"
	CommandLong  = `rdmaform-agent runs on every Kubernetes node of the DaemonSet in
deploy/kubernetes. It applies the one RDMAHostConfig whose node selector
selects its Node (two: ConfigConflict, nothing applied), reports in the
node's RDMAHostState, plans again on config, Node label and slot changes
and every interval, and activates staged firmware one node at a time
(a Lease in --namespace is the slot: cordon, evict, activate, check,
uncordon). It serves the audit's series, its build and its counters on
/metrics.

Environment: NODE_NAME and POD_NAMESPACE give the defaults of
--node-name and --namespace (the DaemonSet sets them from the downward
API).

Exit codes: 0 when stopped by SIGINT or SIGTERM, or after --version;
1 when the API server configuration cannot be read or the agent fails;
2 for a bad command line (and -h, which prints the flags).`
)

// CommandLine is what rdmaform-agent's flags say.
type CommandLine struct {
	Kubeconfig     string
	NodeName       string
	Namespace      string
	Sim            string
	Root           string
	MetricsAddress string
	Interval       time.Duration
	Version        bool
}

// NewFlagSet returns rdmaform-agent's flags, bound to a CommandLine,
// with the defaults getenv gives (NODE_NAME, POD_NAMESPACE).
func NewFlagSet(getenv func(string) string) (*flag.FlagSet, *CommandLine) {
	fs := flag.NewFlagSet("rdmaform-agent", flag.ContinueOnError)
	c := &CommandLine{}
	ns := getenv("POD_NAMESPACE")
	if ns == "" {
		ns = DefaultNamespace
	}
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "kubeconfig `FILE` (default: the in-cluster configuration)")
	fs.StringVar(&c.NodeName, "node-name", getenv("NODE_NAME"), "this node's `NAME` (default $NODE_NAME)")
	fs.StringVar(&c.Namespace, "namespace", ns, "`NAMESPACE` of the activation slots' Leases (default $POD_NAMESPACE, else "+DefaultNamespace+")")
	fs.StringVar(&c.Sim, "sim", "", "run against the simulated host in `DIR` (as rdmaform --sim)")
	fs.StringVar(&c.Root, "root", "", "read and write sysfs, configfs, /etc and /run under `DIR` (as rdmaform --root)")
	fs.StringVar(&c.MetricsAddress, "metrics-address", DefaultMetricsAddress, "serve /metrics on `ADDRESS`; 0 turns it off")
	fs.DurationVar(&c.Interval, "interval", DefaultInterval, "plan again after `D` when nothing changed (a config's policy.interval wins)")
	fs.BoolVar(&c.Version, "version", false, "print the version and exit")
	return fs, c
}
