package agent

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/rdmaform/rdmaform/api/v1alpha1"
	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/schema"
)

// run is one rdmaform command on the agent's host, in process through
// cli.RunResults as an operator would type it (as the Ansible module
// does): the same plan, apply (lock, journal, verification), activate and
// audit code, never a second flow. spec goes to stdin (-f -).
type run struct {
	code   int
	res    *cli.Results
	stdout []byte
	stderr string
}

func (r *Reconciler) rdmaform(ctx context.Context, spec []byte, args ...string) run {
	var out, errb bytes.Buffer
	argv := append(append([]string{}, r.opts.HostArgs...), args...)
	code, res := cli.RunResults(argv, cli.Env{Stdin: bytes.NewReader(spec), Stdout: &out, Stderr: &errb, Environ: r.opts.Environ, Ctx: ctx})
	return run{code: code, res: res, stdout: out.Bytes(), stderr: errb.String()}
}

// message is what a failed run said, for a condition: its stderr's
// lines, and its stdout's unless it printed JSON (the last ones when
// long).
func (x run) message() string {
	s := strings.TrimSpace(x.stderr)
	if out := strings.TrimSpace(string(x.stdout)); out != "" && !strings.HasPrefix(out, "{") && !strings.HasPrefix(out, "#") {
		s = strings.TrimSpace(out + "\n" + s)
	}
	if s == "" {
		return fmt.Sprintf("rdmaform exited %d", x.code)
	}
	lines := strings.Split(s, "\n")
	if len(lines) > 12 {
		lines = append([]string{"..."}, lines[len(lines)-12:]...)
	}
	return strings.Join(lines, "\n")
}

// specSource names a config's hostSpec in findings, as a file would be
// named: rdmahostconfig/NAME/spec.hostSpec:LINE:COL: error: $.PATH: ...
func specSource(config string) string { return "rdmahostconfig/" + config + "/spec.hostSpec" }

// specYAML renders a hostSpec (JSON, as the API server stores it) as a
// YAML document in block style, keys in the order the API server gave
// them, and checks it with the CLI's own loader and validation
// (schema.Parse): a spec error comes back as the findings, each with its
// line:col in this document and its path ($.devices[0].ports[0].mtu).
func specYAML(cfg *v1alpha1.RDMAHostConfig) ([]byte, schema.Report, error) {
	if len(cfg.Spec.HostSpec.Raw) == 0 {
		return nil, nil, fmt.Errorf("%s: no hostSpec", specSource(cfg.Name))
	}
	var n yaml.Node
	if err := yaml.Unmarshal(cfg.Spec.HostSpec.Raw, &n); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", specSource(cfg.Name), err)
	}
	block(&n)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", specSource(cfg.Name), err)
	}
	if err := enc.Close(); err != nil {
		return nil, nil, err
	}
	if _, rep := schema.Parse(specSource(cfg.Name), b.Bytes()); len(rep) > 0 {
		return b.Bytes(), rep, nil
	}
	return b.Bytes(), nil, nil
}

// block makes every node of a document parsed from JSON block style.
func block(n *yaml.Node) {
	n.Style &^= yaml.FlowStyle
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" && n.Style == yaml.DoubleQuotedStyle {
		// Keep strings quoted where YAML would read them as something
		// else ("0x8001", "yes"); quoting every one is harmless.
		return
	}
	for _, c := range n.Content {
		block(c)
	}
}
