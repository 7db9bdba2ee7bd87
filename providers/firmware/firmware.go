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

var _ plan.TypedProvider[*Observed, *payload] = (*Provider)(nil)

// New is the provider as plan.Build and apply take it.
func New() plan.Provider { return plan.Adapt[*Observed, *payload](&Provider{}) }

// Name implements plan.Provider.
func (*Provider) Name() string { return "firmware" }

// Observed is what the tools said of each adapter the spec configures.
type Observed struct {
	// Adapters by spec device index.
	Adapters map[int]*AdapterObs
	// Ledger is the staged ledger (LedgerPath), LedgerErr why it could not
	// be read; BootID is this boot's identity.
	Ledger    *Ledger
	LedgerErr error
	BootID    string
	// Images by spec device index: the firmware images the spec gives.
	Images map[int]*ImageObs
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
	// Reset is the reset tool's query of the card, asked when a spec
	// parameter is staged but not current (nil otherwise).
	Reset *ResetObs
}

// staged reports whether one of the named parameters has a Next Boot
// value that is not current: something a reset or reboot would activate.
func (a *AdapterObs) staged(names []string) bool {
	for _, n := range names {
		p, ok := a.Params[n]
		if ok && p.Current.Kind != mlxfmt.KindAbsent && p.Current.Kind != mlxfmt.KindNA && !mlxfmt.Equal(p.NextBoot.Display(), p.Current) {
			return true
		}
	}
	return false
}

func (a *AdapterObs) deviceType() string {
	if a.Info.Type == "" {
		return "unknown device type"
	}
	return a.Info.Type
}

// Observe implements plan.TypedProvider: it picks the tool, then queries the
// named parameters of every adapter in parallel, one run per adapter. For
// show (Request.Full) it queries one function per card.
func (p *Provider) Observe(ctx context.Context, h *host.Host, req *plan.Request) (*Observed, error) {
	ts := targets(req)
	its := imageTargets(req)
	tools := &ToolPicker{}
	if len(ts) == 0 {
		if req.Full {
			return nil, nil
		}
		// The ledger still: apply drops the entries of values the spec
		// no longer asks for.
		obs := &Observed{Images: observeImages(ctx, h, tools, &resetQueries{}, its)}
		obs.Ledger, obs.LedgerErr = ReadLedger(h.FS)
		obs.BootID, _ = host.ReadAttr(h.FS, BootIDPath)
		return obs, nil
	}
	if req.Full && len(req.Capture.FirmwareParams) == 0 {
		// show on a host without either tool captures no firmware,
		// unless parameters were asked for by name.
		if _, err := tools.Pick(ctx, h, "auto"); errors.Is(err, ErrNoTool) {
			return &Observed{}, nil
		}
	}
	mst := &MSTMap{}
	resets := &resetQueries{}
	res := make([]*AdapterObs, len(ts))
	var wg sync.WaitGroup
	for i, t := range ts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := ReadAdapter(ctx, h, tools, mst, t.tool, t.pci, t.names)
			if !req.Full && a.Err == nil && a.staged(t.names) {
				a.Reset = resets.of(ctx, h, tools, ResetToolOf(a.Tool), t.pci)
			}
			res[i] = a
		}()
	}
	images := observeImages(ctx, h, tools, resets, its)
	wg.Wait()
	obs := &Observed{Adapters: map[int]*AdapterObs{}, Images: images}
	if !req.Full {
		obs.Ledger, obs.LedgerErr = ReadLedger(h.FS)
		obs.BootID, _ = host.ReadAttr(h.FS, BootIDPath)
	}
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
