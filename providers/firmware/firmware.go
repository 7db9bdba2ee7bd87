// Package firmware manages the non-volatile firmware configuration of
// NVIDIA (Mellanox) adapters through mlxconfig (MFT) or mstconfig
// (mstflint): LINK_TYPE_Pn, SRIOV_EN, NUM_OF_VFS and any other parameter
// the tool knows. Values are written to the Next Boot column and take
// effect at the next boot; a value staged but not yet current is pending
// and never set again.
//
// Ports and link types: LINK_TYPE_Pn belongs to the card, not to one PCI
// function; every function of a card shows the same values. On mlx5
// (ConnectX-4 and later) each port is a PCI function with one RDMA port,
// so LINK_TYPE_Pn is port 1 of function n-1 of the slot. On mlx4 one
// function has both ports, so LINK_TYPE_Pn is its port n (AffectedPort).
package firmware

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/firmware/mlxfmt"
)

// Tools rdmaform can drive: one source built twice, same output.
const (
	MLXConfig = "mlxconfig" // NVIDIA MFT
	MSTConfig = "mstconfig" // open-source mstflint
)

// ErrNoTool is wrapped when the firmware tool the spec needs is missing.
var ErrNoTool = errors.New("no firmware configuration tool")

// Provider is the firmware provider.
type Provider struct{}

var _ plan.Provider = (*Provider)(nil)

// Name implements plan.Provider.
func (*Provider) Name() string { return "firmware" }

// Observed is what the tools said of each adapter the spec configures.
type Observed struct {
	// Adapters by spec device index.
	Adapters map[int]*AdapterObs
}

// AdapterObs is one adapter's query.
type AdapterObs struct {
	// Tool is the program that answered (mlxconfig or mstconfig).
	Tool string
	// Device is what -d was given: the PCI address, or a /dev/mst node when
	// MFT could not open the adapter by address.
	Device string
	// Info is the query's device block.
	Info mlxfmt.DeviceInfo
	// Params are the queried rows by name.
	Params map[string]mlxfmt.Param
	// Unknown holds the tool's refusal of each parameter it does not know.
	Unknown map[string]*mlxfmt.ToolError
	// Err is a failure to read the adapter at all.
	Err error
}

func (a *AdapterObs) deviceType() string {
	if a.Info.Type == "" {
		return "unknown device type"
	}
	return a.Info.Type
}

// Discover implements plan.Provider: it picks the tool, then queries the
// named parameters of every adapter in parallel, one run per adapter.
func (p *Provider) Discover(ctx context.Context, h *host.Host, req *plan.Request) (any, error) {
	ts := targets(req)
	if len(ts) == 0 {
		return nil, nil
	}
	tools := &ToolPicker{}
	mst := &MSTMap{}
	res := make([]*AdapterObs, len(ts))
	var wg sync.WaitGroup
	for i, t := range ts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = ReadAdapter(ctx, h, tools, mst, t.tool, t.pci, t.names)
		}()
	}
	wg.Wait()
	obs := &Observed{Adapters: map[int]*AdapterObs{}}
	for i, t := range ts {
		obs.Adapters[t.index] = res[i]
	}
	return obs, nil
}

// ReadAdapter picks the tool and queries the named parameters of the
// adapter function at pci (a full query when names is empty). When MFT
// cannot open the adapter by its address, its /dev/mst node is used.
func ReadAdapter(ctx context.Context, h *host.Host, tools *ToolPicker, mst *MSTMap, choice, pci string, names []string) *AdapterObs {
	tool, err := tools.Pick(ctx, h, choice)
	if err != nil {
		return &AdapterObs{Err: err}
	}
	a := &AdapterObs{Tool: tool, Device: pci}
	q, unknown, err := Query(ctx, h, tool, pci, names)
	var te *mlxfmt.ToolError
	if err != nil && tool == MLXConfig && errors.As(err, &te) && te.Kind == mlxfmt.ErrOpenDevice {
		dev, merr := mst.Node(ctx, h, pci)
		if merr != nil {
			a.Err = fmt.Errorf("%w (and through mst: %v)", err, merr)
			return a
		}
		a.Device = dev
		q, unknown, err = Query(ctx, h, tool, dev, names)
	}
	if err != nil {
		a.Err = err
		return a
	}
	a.Info, a.Unknown = q.Device, unknown
	a.Params = map[string]mlxfmt.Param{}
	for _, prm := range q.Params {
		a.Params[prm.Name] = prm
	}
	return a
}

// Query reads the named parameters of one adapter with the Default,
// Current and Next Boot columns. A parameter the tool does not know ends
// its query, so it is recorded and the query repeated without it: one run
// when every name is known, and every unknown name reported at once.
//
// Equivalent to: mlxconfig -d 0000:81:00.0 -e q LINK_TYPE_P1 SRIOV_EN
func Query(ctx context.Context, h *host.Host, tool, dev string, names []string) (mlxfmt.Query, map[string]*mlxfmt.ToolError, error) {
	unknown := map[string]*mlxfmt.ToolError{}
	left := append([]string(nil), names...)
	for {
		cmd := host.Cmd{Args: append([]string{tool, "-d", dev, "-e", "q"}, left...)}
		res, runErr := h.Runner.Run(ctx, cmd)
		out := res.Stdout
		var ee *host.ExitError
		if errors.As(runErr, &ee) {
			if ee.Code < 0 {
				return mlxfmt.Query{}, unknown, runErr
			}
			out = ee.Stdout
		}
		q, err := mlxfmt.ParseQuery(out)
		var te *mlxfmt.ToolError
		if errors.As(err, &te) && te.Kind == mlxfmt.ErrUnknownParam {
			name := matchName(left, te.Param)
			if name == "" {
				return q, unknown, &QueryError{Cmd: cmd, Err: te}
			}
			unknown[name] = te
			if left = remove(left, name); len(left) == 0 {
				return q, unknown, nil
			}
			continue
		}
		if err != nil {
			return q, unknown, &QueryError{Cmd: cmd, Err: err}
		}
		if runErr != nil {
			return q, unknown, runErr
		}
		return q, unknown, nil
	}
}

// QueryError is a query that failed: the command line and the tool's
// -E- message (or why its output could not be read).
type QueryError struct {
	Cmd host.Cmd
	Err error
}

func (e *QueryError) Error() string {
	var te *mlxfmt.ToolError
	if errors.As(e.Err, &te) {
		return fmt.Sprintf("%s: -E- %s", e.Cmd, te.Message)
	}
	return fmt.Sprintf("%s: %v", e.Cmd, e.Err)
}

func (e *QueryError) Unwrap() error { return e.Err }

func matchName(names []string, got string) string {
	for _, n := range names {
		if strings.EqualFold(n, got) {
			return n
		}
	}
	return ""
}

func remove(xs []string, x string) []string {
	var out []string
	for _, s := range xs {
		if s != x {
			out = append(out, s)
		}
	}
	return out
}

// ToolPicker resolves `tool: auto|mlxconfig|mstconfig`, running each
// candidate at most once per plan. It is safe for concurrent use.
type ToolPicker struct {
	mu   sync.Mutex
	have map[string]error
}

// installed tells whether a tool is installed and remembers the answer.
// It looks the program up on PATH without running it when the runner can
// (so a plan's tool calls stay one parallel round of queries), and
// otherwise runs `TOOL -v` once.
//
// Equivalent to: command -v mlxconfig (or: mlxconfig -v)
func (t *ToolPicker) installed(ctx context.Context, h *host.Host, tool string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.have == nil {
		t.have = map[string]error{}
	}
	if err, ok := t.have[tool]; ok {
		return err
	}
	var err error
	if found, ok := host.Installed(h.Runner, tool); ok {
		if !found {
			err = fmt.Errorf("%s: %w on PATH", tool, host.ErrNotFound)
		}
	} else {
		_, err = h.Run(ctx, tool, "-v")
	}
	t.have[tool] = err
	return err
}

// Pick returns the program to run: the one named, or for auto (and "")
// mlxconfig when it runs, else mstconfig.
//
// Equivalent to: command -v mlxconfig || command -v mstconfig
func (t *ToolPicker) Pick(ctx context.Context, h *host.Host, choice string) (string, error) {
	switch choice {
	case MLXConfig, MSTConfig:
		if err := t.installed(ctx, h, choice); err != nil {
			if errors.Is(err, host.ErrNotFound) {
				return "", fmt.Errorf("%w: the spec asks for %s, which is not on PATH (%s)", ErrNoTool, choice, pkgOf(choice))
			}
			return "", fmt.Errorf("checking the firmware tool: %w", err)
		}
		return choice, nil
	case "", "auto":
	default:
		return "", fmt.Errorf("%w: %q is not auto, mlxconfig or mstconfig", ErrNoTool, choice)
	}
	errM := t.installed(ctx, h, MLXConfig)
	if errM == nil {
		return MLXConfig, nil
	}
	errS := t.installed(ctx, h, MSTConfig)
	if errS == nil {
		return MSTConfig, nil
	}
	if errors.Is(errM, host.ErrNotFound) && errors.Is(errS, host.ErrNotFound) {
		return "", fmt.Errorf("%w: neither mlxconfig (NVIDIA MFT) nor mstconfig (package mstflint) is on PATH", ErrNoTool)
	}
	return "", fmt.Errorf("%w: mlxconfig: %v; mstconfig: %v", ErrNoTool, errM, errS)
}

func pkgOf(tool string) string {
	if tool == MLXConfig {
		return "it comes with NVIDIA MFT; or use tool: mstconfig from package mstflint"
	}
	return "install package mstflint"
}

// MSTMap maps PCI addresses to MFT's /dev/mst nodes, running mst at most
// once per plan. It is safe for concurrent use.
type MSTMap struct {
	mu      sync.Mutex
	nodes   map[string]string
	skipped []string
	err     error
	done    bool
}

// Node returns the /dev/mst node of an adapter function. The first call
// lists the nodes. rdmaform never runs 'mst start' itself: it loads MFT's
// kernel modules, a change to the host no plan may make (and no apply
// asked for); without nodes the error says what to do.
//
// Equivalent to: mst status -v
func (m *MSTMap) Node(ctx context.Context, h *host.Host, pci string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.done {
		m.done = true
		m.nodes, m.skipped, m.err = loadMST(ctx, h)
	}
	if m.err != nil {
		return "", m.err
	}
	n, ok := m.nodes[normBDF(pci)]
	if !ok {
		if len(m.skipped) > 0 {
			return "", fmt.Errorf("mst status -v lists no /dev/mst node for %s (rows it could not read: %s)", pci, strings.Join(m.skipped, "; "))
		}
		return "", fmt.Errorf("mst status -v lists no /dev/mst node for %s", pci)
	}
	return n, nil
}

func loadMST(ctx context.Context, h *host.Host) (map[string]string, []string, error) {
	st, err := mstStatus(ctx, h)
	if err != nil {
		return nil, nil, err
	}
	if !hasNodes(st) {
		return nil, st.Skipped, errors.New("MFT's /dev/mst nodes are not there (mst status -v lists none): run 'mst start' once (it loads MFT's kernel modules; rdmaform does not), or use the mstconfig tool")
	}
	out := map[string]string{}
	for _, d := range st.Devices {
		if d.MST != "" {
			out[normBDF(d.BDF)] = d.MST
		}
	}
	return out, st.Skipped, nil
}

func mstStatus(ctx context.Context, h *host.Host) (mlxfmt.MSTStatus, error) {
	res, err := h.Run(ctx, "mst", "status", "-v")
	if err != nil {
		return mlxfmt.MSTStatus{}, err
	}
	st, err := mlxfmt.ParseMSTStatusVerbose(res.Stdout)
	if err != nil {
		return st, fmt.Errorf("mst status -v: %w", err)
	}
	return st, nil
}

func hasNodes(s mlxfmt.MSTStatus) bool {
	for _, d := range s.Devices {
		if d.MST != "" {
			return true
		}
	}
	return false
}

// normBDF writes a PCI address with its domain, in lower case.
func normBDF(s string) string {
	s = strings.ToLower(s)
	if strings.Count(s, ":") == 1 {
		return "0000:" + s
	}
	return s
}

// SetError is a set the tool refused, naming the parameter and its spec
// line when the tool's message names one.
type SetError struct {
	Address string
	Param   string
	Source  *plan.Source
	Cmd     host.Cmd
	Tool    *mlxfmt.ToolError
	Err     error
}

func (e *SetError) Error() string {
	var b strings.Builder
	if e.Source != nil && e.Source.Line > 0 {
		fmt.Fprintf(&b, "%s: ", e.Source)
	}
	if e.Param != "" {
		fmt.Fprintf(&b, "%s: ", e.Param)
	}
	if e.Tool != nil {
		fmt.Fprintf(&b, "%s: -E- %s", e.Cmd, e.Tool.Message)
		return b.String()
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *SetError) Unwrap() error {
	if e.Tool != nil {
		return e.Tool
	}
	return e.Err
}

// Apply implements plan.Provider: every changed parameter of the adapter
// in one set (one flash write), then the Debian reboot marker.
//
// Equivalent to: mlxconfig -d 0000:81:00.0 -y set LINK_TYPE_P1=ETH SRIOV_EN=True
// and: echo '*** System restart required ***' > /run/reboot-required; echo rdmaform >> /run/reboot-required.pkgs
func (p *Provider) Apply(ctx context.Context, h *host.Host, c *plan.Change) error {
	pl, ok := c.Payload.(*payload)
	if !ok {
		return fmt.Errorf("%s: no firmware payload", c.Address)
	}
	if len(pl.sets) == 0 {
		return nil
	}
	// Gentle: an interrupt never tears a flash write (SIGTERM after the
	// grace period, never SIGKILL; Ctrl-C does not reach it).
	cmd := host.Cmd{Args: append([]string{pl.tool, "-d", pl.dev, "-y", "set"}, pl.sets...), Gentle: true}
	if _, err := h.Runner.Run(ctx, cmd); err != nil {
		se := &SetError{Address: c.Address, Cmd: cmd, Err: err}
		var ee *host.ExitError
		if errors.As(err, &ee) {
			if te := mlxfmt.ParseError(ee.Stdout); te != nil {
				se.Tool = te
				se.Param = paramOf(pl, te)
				se.Source = pl.source[se.Param]
			}
		}
		return se
	}
	return MarkRebootRequired(h)
}

// ParallelKey implements plan.Parallel: sets on different adapters run at
// once, one tool process each; the functions of one adapter (0000:3b:00.0
// and .1 share its firmware configuration) go to ApplyBatch together.
func (p *Provider) ParallelKey(c *plan.Change) string {
	pl, ok := c.Payload.(*payload)
	if !ok {
		return ""
	}
	key := pl.pci
	if i := strings.LastIndexByte(key, '.'); i > 0 {
		key = key[:i]
	}
	return key
}

// ApplyBatch implements plan.Batcher for the changes of one adapter (its
// PCI functions in the spec): one set through the first change's function
// carries the others' parameters too when all of them are card-wide (see
// CardWide) and none is set twice, so an adapter costs one flash write and
// one tool run. A change that cannot join is set on its own afterwards. If
// the joint set fails, each of its changes is set on its own, one after
// another, so that each gets its own outcome and the tool's own message.
//
// Equivalent to: mlxconfig -d 0000:81:00.0 -y set LINK_TYPE_P1=ETH SRIOV_EN=True LINK_TYPE_P2=ETH
// (LINK_TYPE_P2 written in the spec under 0000:81:00.1)
func (p *Provider) ApplyBatch(ctx context.Context, h *host.Host, cs []*plan.Change) []error {
	errs := make([]error, len(cs))
	joint, alone := jointSets(cs)
	if len(joint) > 1 {
		first := cs[joint[0]].Payload.(*payload)
		args := []string{first.tool, "-d", first.dev, "-y", "set"}
		for _, i := range joint {
			args = append(args, cs[i].Payload.(*payload).sets...)
		}
		_, err := h.Runner.Run(ctx, host.Cmd{Args: args, Gentle: true})
		switch {
		case err == nil:
			err = MarkRebootRequired(h)
			for _, i := range joint {
				errs[i] = err
			}
		case ctx.Err() != nil:
			for _, i := range joint {
				errs[i] = &SetError{Address: cs[i].Address, Cmd: host.Cmd{Args: args}, Err: err}
			}
		default:
			alone = append(joint, alone...)
		}
	} else {
		alone = append(joint, alone...)
	}
	sort.Ints(alone)
	for _, i := range alone {
		errs[i] = p.Apply(ctx, h, cs[i])
	}
	return errs
}

// jointSets splits one adapter's changes into those one set can carry
// (the first change with sets, and every later one with sets of the same
// tool whose parameters are all card-wide and not set by another of the
// joint) and those to set on their own.
func jointSets(cs []*plan.Change) (joint, alone []int) {
	var first *payload
	names := map[string]bool{}
	for i, c := range cs {
		pl, ok := c.Payload.(*payload)
		if !ok || len(pl.sets) == 0 {
			alone = append(alone, i)
			continue
		}
		if first == nil {
			first = pl
			joint = append(joint, i)
			for _, s := range pl.sets {
				names[setName(s)] = true
			}
			continue
		}
		fits := pl.tool == first.tool
		for _, s := range pl.sets {
			n := setName(s)
			fits = fits && CardWide(n) && !names[n]
		}
		if !fits {
			alone = append(alone, i)
			continue
		}
		for _, s := range pl.sets {
			names[setName(s)] = true
		}
		joint = append(joint, i)
	}
	return joint, alone
}

func setName(s string) string {
	name, _, _ := strings.Cut(s, "=")
	return name
}

// paramOf finds which of a set's parameters a tool error is about.
func paramOf(pl *payload, te *mlxfmt.ToolError) string {
	for _, s := range pl.sets {
		name, val, _ := strings.Cut(s, "=")
		switch {
		case te.Param != "" && strings.EqualFold(te.Param, name):
			return name
		case te.Kind == mlxfmt.ErrUnknownValue && te.Value == val:
			return name
		}
	}
	if len(pl.sets) == 1 {
		name, _, _ := strings.Cut(pl.sets[0], "=")
		return name
	}
	return ""
}

// Reboot markers, as Debian's update-notifier, needrestart and motd read
// them.
const (
	RebootRequired     = "/run/reboot-required"
	RebootRequiredPkgs = "/run/reboot-required.pkgs"
	rebootText         = "*** System restart required ***\n"
	pkgName            = "rdmaform"
)

// MarkRebootRequired writes /run/reboot-required (kept as it is when
// present) and lists rdmaform once in /run/reboot-required.pkgs, as Debian
// packages' postinst scripts do.
//
// Equivalent to: echo '*** System restart required ***' > /run/reboot-required; echo rdmaform >> /run/reboot-required.pkgs
func MarkRebootRequired(h *host.Host) error {
	if !host.Exists(h.FS, RebootRequired) {
		if err := h.FS.WriteFile(RebootRequired, []byte(rebootText), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", RebootRequired, err)
		}
	}
	old, err := h.FS.ReadFile(RebootRequiredPkgs)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading %s: %w", RebootRequiredPkgs, err)
	}
	lines := strings.Fields(string(old))
	for _, l := range lines {
		if l == pkgName {
			return nil
		}
	}
	lines = append(lines, pkgName)
	if err := h.FS.WriteFile(RebootRequiredPkgs, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", RebootRequiredPkgs, err)
	}
	return nil
}

// ClearRebootMarker takes rdmaform off /run/reboot-required.pkgs, and
// removes both files when no other package is left there. Another
// package's entry, or a marker that does not list rdmaform, is left as
// it is.
//
// Equivalent to: sed -i '/^rdmaform$/d' /run/reboot-required.pkgs, then
// rm /run/reboot-required /run/reboot-required.pkgs if the list is empty
func ClearRebootMarker(h *host.Host) error {
	old, err := h.FS.ReadFile(RebootRequiredPkgs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", RebootRequiredPkgs, err)
	}
	var rest []string
	found := false
	for _, l := range strings.Fields(string(old)) {
		if l == pkgName {
			found = true
			continue
		}
		rest = append(rest, l)
	}
	if !found {
		return nil
	}
	if len(rest) > 0 {
		if err := h.FS.WriteFile(RebootRequiredPkgs, []byte(strings.Join(rest, "\n")+"\n"), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", RebootRequiredPkgs, err)
		}
		return nil
	}
	for _, f := range []string{RebootRequired, RebootRequiredPkgs} {
		if err := h.FS.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", f, err)
		}
	}
	return nil
}

// SyncRebootMarker makes rdmaform's entry in the reboot marker true to a
// plan: listed while a firmware value of the plan waits for a reboot,
// gone when none does (un-staged, or active after the reboot). A plan
// whose firmware could not be read changes nothing.
func SyncRebootMarker(h *host.Host, p *plan.Plan) error {
	for _, f := range p.Errors {
		if f.Unreadable {
			return nil
		}
	}
	if len(p.Pending) > 0 {
		return MarkRebootRequired(h)
	}
	return ClearRebootMarker(h)
}

// RebootMarker is what /run/reboot-required says.
type RebootMarker struct {
	Required bool
	// Packages from reboot-required.pkgs, sorted.
	Packages []string
}

// ReadRebootMarker reads /run/reboot-required and its .pkgs list.
func ReadRebootMarker(h *host.Host) (RebootMarker, error) {
	var m RebootMarker
	m.Required = host.Exists(h.FS, RebootRequired)
	b, err := h.FS.ReadFile(RebootRequiredPkgs)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return m, err
	}
	m.Packages = strings.Fields(string(b))
	sort.Strings(m.Packages)
	return m, nil
}
