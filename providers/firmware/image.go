package firmware

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/firmware/mlxfmt"
	"github.com/rdmaform/rdmaform/schema"
)

// ImageKind is the kind of a firmware burn's address: one per adapter
// function whose spec gives firmware.image.
const ImageKind = "firmware_image"

// ImageAddress is the plan address of burning an adapter's firmware image.
func ImageAddress(pci string) plan.Address { return plan.Addr(ImageKind, pci) }

// Firmware burning tools: MFT's flint beside mlxconfig, mstflint beside
// mstconfig (package mstflint).
const (
	Flint    = "flint"
	MSTFlint = "mstflint"
)

// LedgerImage is the ledger's parameter name of a burned image (its value
// is the image's version); firmware parameters are upper case.
const LedgerImage = "image"

// BurnTimeout bounds one burn: a ConnectX flash takes minutes.
const BurnTimeout = 20 * time.Minute

// ImageObs is what was read of a spec device's firmware image and, when
// the running firmware is not the spec's version, of the adapter's flash.
type ImageObs struct {
	// Tool is flint or mstflint.
	Tool string
	// Path is the image as the tool opens it (under --root or --sim, the
	// file inside the host's tree).
	Path string
	// Image is the image's query; Err why the image cannot be used.
	Image mlxfmt.FlintQuery
	Err   error
	// Missing: the image file does not exist (Err says so). Once its
	// version runs, or rdmaform's ledger says it burned it and the flash
	// holds it, the file is not needed (imagePlan).
	Missing bool
	// Flash is the adapter's query (FW Version is the flash's); nil when
	// the running firmware is the spec's version. FlashErr why it failed.
	Flash    *mlxfmt.FlintQuery
	FlashErr error
	// Reset is the reset tool's query of the card, asked when the flash
	// holds the spec's version and the running firmware does not (the
	// burned image is pending): how it can become current.
	Reset *ResetObs
	// NotCached: a catalog image of an https URL that the cache does not
	// hold (or holds with another digest): apply downloads it, checks its
	// digest, then its PSID and version, before it burns.
	NotCached bool
}

// imageTarget is one spec device with an image.
type imageTarget struct {
	index   int
	pci     string
	tool    string
	want    *wantImage
	image   string // the file the tool reads (a catalog URL's cache file)
	version string
	query   bool // the running firmware is not the version: read the flash
}

func imageTargets(req *plan.Request) []imageTarget {
	if req.Full {
		return nil
	}
	var out []imageTarget
	for i, d := range req.Spec.Devices {
		w := wantOf(req, i)
		if w == nil {
			continue
		}
		dev := req.Devices[i]
		if dev == nil || dev.PCI == "" {
			continue
		}
		if w.entry != nil && sameVersion(dev.FWVer, w.version) {
			continue // a catalog image is read only for an adapter that needs it
		}
		out = append(out, imageTarget{index: i, pci: dev.PCI, tool: d.Firmware.Tool, want: w, image: w.local(), version: w.version, query: dev.FWVer != w.version})
	}
	return out
}

// observeImages reads every image the spec gives, and the flash of each
// adapter whose running firmware is not its version, in parallel.
func observeImages(ctx context.Context, h *host.Host, tools *ToolPicker, resets *resetQueries, ts []imageTarget) map[int]*ImageObs {
	res := make([]*ImageObs, len(ts))
	var wg sync.WaitGroup
	for i, t := range ts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = readImage(ctx, h, tools, resets, t)
		}()
	}
	wg.Wait()
	out := map[int]*ImageObs{}
	for i, t := range ts {
		out[t.index] = res[i]
	}
	return out
}

// readImage checks that the image is a regular file, reads its version
// and PSID, and (t.query) the adapter's flash; when the flash holds the
// spec's version (burned, not running), the card's reset query.
//
// Equivalent to: mstflint -i /lib/firmware/fw.bin q; mstflint -d 0000:3b:00.0 q; mstfwreset -d 0000:3b:00.0 query
func readImage(ctx context.Context, h *host.Host, tools *ToolPicker, resets *resetQueries, t imageTarget) *ImageObs {
	o := &ImageObs{}
	o.Tool, o.Err = pickFlint(ctx, h, tools, t.tool)
	if o.Err != nil {
		return o
	}
	fi, err := h.FS.Stat(t.image)
	switch {
	case t.want.url() && (err != nil || checkLocal(h, t.want) != nil):
		// Not in the cache (or not with its digest): apply downloads it.
		o.NotCached = true
		if t.query {
			readFlash(ctx, h, tools, resets, t, o)
		}
		return o
	case errors.Is(err, fs.ErrNotExist):
		o.Err = fmt.Errorf("image %s does not exist", t.image)
		o.Missing = true
		if t.query {
			// Burned from a share that is gone? The flash says (imagePlan).
			readFlash(ctx, h, tools, resets, t, o)
		}
		return o
	case err != nil:
		o.Err = fmt.Errorf("image %s: %w", t.image, err)
		return o
	case !fi.Mode().IsRegular():
		o.Err = fmt.Errorf("image %s is not a regular file (%s)", t.image, fileKind(fi.Mode()))
		return o
	}
	if t.want.entry != nil && !t.want.url() {
		// The digest before anything else reads the file.
		if o.Err = checkLocal(h, t.want); o.Err != nil {
			return o
		}
	}
	if o.Path, o.Err = h.FS.Resolve(t.image); o.Err != nil {
		return o
	}
	if o.Image, o.Err = flintQuery(ctx, h, o.Tool, "-i", o.Path); o.Err != nil || !t.query {
		return o
	}
	readFlash(ctx, h, tools, resets, t, o)
	return o
}

// readFlash reads the adapter's flash and, when it holds the spec's
// version, the card's reset query.
func readFlash(ctx context.Context, h *host.Host, tools *ToolPicker, resets *resetQueries, t imageTarget, o *ImageObs) {
	q, err := flintQuery(ctx, h, o.Tool, "-d", t.pci)
	o.Flash, o.FlashErr = &q, err
	if err == nil && sameVersion(q.FWVersion, t.version) {
		o.Reset = resets.of(ctx, h, tools, ResetToolOf(o.Tool), t.pci)
	}
}

// flintQuery runs `TOOL -i IMAGE q` or `TOOL -d DEV q` and reads it.
func flintQuery(ctx context.Context, h *host.Host, tool, flag, arg string) (mlxfmt.FlintQuery, error) {
	cmd := host.Cmd{Args: []string{tool, flag, arg, "q"}}
	res, runErr := h.Runner.Run(ctx, cmd)
	out := res.Stdout
	var ee *host.ExitError
	if errors.As(runErr, &ee) {
		if ee.Code < 0 {
			return mlxfmt.FlintQuery{}, runErr
		}
		out = ee.Stdout
	}
	q, err := mlxfmt.ParseFlintQuery(out)
	if err != nil {
		return q, &QueryError{Cmd: cmd, Err: err}
	}
	return q, runErr
}

// pickFlint is the burning tool of the configuration tool the spec's
// `tool` picks: flint with MFT's mlxconfig (when MFT has it), else
// mstflint.
func pickFlint(ctx context.Context, h *host.Host, tools *ToolPicker, choice string) (string, error) {
	cfg, err := tools.Pick(ctx, h, choice)
	if err != nil {
		return "", err
	}
	if cfg == MLXConfig && tools.installed(ctx, h, Flint) == nil {
		return Flint, nil
	}
	if err := tools.installed(ctx, h, MSTFlint); err != nil {
		if errors.Is(err, host.ErrNotFound) {
			return "", fmt.Errorf("%w: burning an image needs mstflint (package mstflint) or flint (NVIDIA MFT), and neither is on PATH", ErrNoTool)
		}
		return "", err
	}
	return MSTFlint, nil
}

func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}

// burn is the payload part of a firmware burn.
type burn struct {
	path    string // as the tool opens it
	version string // the image's, the spec's
	// want is a catalog image's (nil otherwise): apply fetches it and
	// checks its digest, PSID and version before the burn; psid is the
	// adapter's.
	want *wantImage
	psid string
}

// imagePlan plans spec device i's image: it is refused when it is not the
// adapter's (PSID) or not the spec's version; burned when the flash holds
// another version; pending when the flash holds it and the running
// firmware does not (burned, waiting for a reboot or a firmware reset),
// or an activation failure when a reboot since the burn did not load it.
// burned records the cards (slots) a burn is planned for: one per card.
func imagePlan(req *plan.Request, i int, w *wantImage, obs *Observed, prop *plan.Proposal, burned map[string]bool) {
	fw := &schema.Firmware{Version: w.version, Image: w.image}
	dev := req.Devices[i]
	ip := w.path
	if dev.PCI == "" {
		prop.Errors = append(prop.Errors, req.Finding(ip, "%s is not a PCI adapter; it has no firmware to burn", dev.Name))
		return
	}
	var o *ImageObs
	if obs != nil {
		o = obs.Images[i]
	}
	switch {
	case o == nil && w.entry != nil && sameVersion(dev.FWVer, fw.Version):
		return // running: its image is not read
	case o == nil:
		prop.Errors = append(prop.Errors, req.Unreadable(ip, "image %s was not read", fw.Image))
		return
	case o.Missing && sameVersion(dev.FWVer, fw.Version):
		return // running: the image was on a share that is gone, and not needed
	case o.Missing && burnedHere(obs, dev.PCI, fw.Version, o):
		stagedImage(req, i, w, obs, o, prop) // burned by rdmaform, waiting for a reload
		return
	case o.NotCached:
		notCachedPlan(req, i, w, obs, o, prop, burned)
		return
	case o.Err != nil:
		prop.Errors = append(prop.Errors, req.Finding(ip, "%v; rdmaform burns nothing on %s", o.Err, dev.PCI))
		return
	}
	name := deviceName(dev)
	if dev.PSID == "" {
		prop.Errors = append(prop.Errors, req.Finding(ip, "%s reports no PSID (sysfs board_id), so image %s (PSID %s) cannot be checked against it; rdmaform burns nothing", name, fw.Image, o.Image.PSID))
		return
	}
	if o.Image.PSID != dev.PSID {
		prop.Errors = append(prop.Errors, req.Finding(ip, "image %s is for PSID %s, but %s has PSID %s: an image of another board can leave the adapter unusable; rdmaform burns nothing", fw.Image, o.Image.PSID, name, dev.PSID))
		return
	}
	if !sameVersion(o.Image.FWVersion, fw.Version) {
		prop.Errors = append(prop.Errors, req.Finding(ip, "image %s holds firmware %s; the spec asks for version %s; rdmaform burns nothing", fw.Image, o.Image.FWVersion, fw.Version))
		return
	}
	if sameVersion(dev.FWVer, fw.Version) {
		return // running
	}
	if o.FlashErr != nil || o.Flash == nil {
		prop.Errors = append(prop.Errors, req.Unreadable(ip, "reading the firmware on the flash of %s: %v", dev.PCI, o.FlashErr))
		return
	}
	addr := ImageAddress(dev.PCI)
	if sameVersion(o.Flash.FWVersion, fw.Version) {
		stagedImage(req, i, w, obs, o, prop)
		return
	}
	slot := slotOf(dev.PCI)
	if burned[slot] {
		return // another function of the card burns it
	}
	burned[slot] = true
	prop.Changes = append(prop.Changes, &plan.Change{Address: addr, Action: plan.Update, Activation: plan.NextBoot, Source: req.Pos(ip),
		Attributes: imageAttrs(o.Flash.FWVersion, w),
		Payload:    &payload{tool: o.Tool, dev: dev.PCI, pci: dev.PCI, burn: &burn{path: o.Path, version: fw.Version, want: catalogWant(w), psid: dev.PSID}}})
}

// catalogWant is what apply checks again before a burn: a catalog
// image's digest (nil for firmware.image).
func catalogWant(w *wantImage) *wantImage {
	if w.entry == nil {
		return nil
	}
	return w
}

// imageAttrs are a burn's attributes: the version, the image, and a
// catalog image's digest.
func imageAttrs(flash string, w *wantImage) []plan.Attr {
	attrs := []plan.Attr{{Name: "version", Before: flash, After: w.version}, {Name: "image", Before: "", After: w.image}}
	if w.entry != nil {
		attrs = append(attrs, plan.Attr{Name: "sha256", Before: "", After: w.sha256})
	}
	return attrs
}

// notCachedPlan plans a catalog image apply has to download first: a
// burn when the flash holds another version (apply checks the image's
// digest, PSID and version before it burns), pending when it holds the
// entry's version already.
func notCachedPlan(req *plan.Request, i int, w *wantImage, obs *Observed, o *ImageObs, prop *plan.Proposal, burned map[string]bool) {
	dev := req.Devices[i]
	if o.FlashErr != nil || o.Flash == nil {
		prop.Errors = append(prop.Errors, req.Unreadable(w.path, "reading the firmware on the flash of %s: %v", dev.PCI, o.FlashErr))
		return
	}
	if sameVersion(o.Flash.FWVersion, w.version) {
		stagedImage(req, i, w, obs, o, prop)
		return
	}
	slot := slotOf(dev.PCI)
	if burned[slot] {
		return
	}
	burned[slot] = true
	prop.Changes = append(prop.Changes, &plan.Change{Address: ImageAddress(dev.PCI), Action: plan.Update, Activation: plan.NextBoot, Source: req.Pos(w.path),
		Attributes: imageAttrs(o.Flash.FWVersion, w),
		Payload:    &payload{tool: o.Tool, dev: dev.PCI, pci: dev.PCI, burn: &burn{version: w.version, want: w, psid: dev.PSID}}})
}

// stagedImage plans spec device i's image that its flash holds and its
// adapter does not run: pending, or an activation failure when a reboot
// since the burn did not load it.
func stagedImage(req *plan.Request, i int, w *wantImage, obs *Observed, o *ImageObs, prop *plan.Proposal) {
	fw := &schema.Firmware{Version: w.version, Image: w.image}
	dev := req.Devices[i]
	ip := w.path
	addr := ImageAddress(dev.PCI)
	if e := survived(obs, dev.PCI, LedgerImage, fw.Version); e != nil {
		prop.ActivationFailures = append(prop.ActivationFailures, plan.ActivationFailure{Address: addr, Attribute: "version",
			Current: dev.FWVer, Staged: fw.Version, StagedAt: e.StagedAt.Format(time.RFC3339), BootID: e.BootID, Tool: e.Tool, Source: req.Pos(ip)})
		prop.Errors = append(prop.Errors, req.Finding(ip, "firmware %s did not take: it was burned on %s at %s (boot %s) and a reboot has not made it run (%s still runs %s; this is boot %s): the firmware was not reloaded. rdmaform will not burn it again: power-cycle the host, or reset the adapter's firmware with rdmaform activate --by fw-reset (it takes the VFs down and back, applies the runtime settings again and verifies; by hand: mstfwreset -d %s reset, or mlxfwreset with MFT)",
			fw.Version, dev.PCI, e.StagedAt.Format(time.RFC3339), e.BootID, dev.PCI, dev.FWVer, obs.BootID, dev.PCI))
		return
	}
	prop.Pending = append(prop.Pending, plan.Pending{Address: addr, Attribute: "version", Current: dev.FWVer, NextBoot: fw.Version, Source: req.Pos(ip), Activation: catalogActivation(req, w, activationOf(o.Reset))})
}

// burnedHere tells whether rdmaform burned version on the card of pci and
// its flash still holds it: the staged ledger has the burn (of any boot)
// and the flash query says so. Then the image file is not needed.
func burnedHere(obs *Observed, pci, version string, o *ImageObs) bool {
	if obs == nil || o.Flash == nil || o.FlashErr != nil || !sameVersion(o.Flash.FWVersion, version) {
		return false
	}
	e := obs.Ledger.Find(pci, LedgerImage)
	return e != nil && sameVersion(e.Value, version)
}

func deviceName(dev *inventory.Device) string {
	if dev.PCI != "" {
		return dev.Name + " (" + dev.PCI + ")"
	}
	return dev.Name
}

// sameVersion compares two dotted versions number by number (28.39.1002
// and 28.39.01002 agree); a version that is not numbers compares as text.
func sameVersion(a, b string) bool {
	x, okA := parseRunning(a)
	y, okB := parseRunning(b)
	if !okA || !okB {
		return a == b
	}
	return len(x) == len(y) && compareVersions(x, y) == 0
}

// BurnError is a burn the tool failed: its command line and its -E- line
// (or how it ended).
type BurnError struct {
	Address plan.Address
	Cmd     host.Cmd
	Tool    *mlxfmt.ToolError
	Err     error
}

func (e *BurnError) Error() string {
	if e.Tool != nil {
		return fmt.Sprintf("%s: -E- %s (the flash may hold a partial image: the adapter keeps running its firmware, and the next apply burns again)", e.Cmd, e.Tool.Message)
	}
	return fmt.Sprintf("%s: %v", e.Cmd, e.Err)
}

func (e *BurnError) Unwrap() error { return e.Err }

// makeBurn burns an image, never torn by an interrupt (Gentle), then
// records it in the staged ledger and the reboot marker.
//
// Equivalent to: mstflint -d 0000:3b:00.0 -i /lib/firmware/fw.bin -y burn
func makeBurn(ctx context.Context, h *host.Host, c *plan.Change, pl *payload) error {
	if pl.burn.want != nil {
		if err := readyCatalogImage(ctx, h, c, pl); err != nil {
			return err
		}
	}
	cmd := host.Cmd{Args: []string{pl.tool, "-d", pl.dev, "-i", pl.burn.path, "-y", "burn"}, Gentle: true, Timeout: BurnTimeout,
		Progress: burnProgress(host.ProgressOf(ctx), c.Address)}
	if _, err := h.Runner.Run(ctx, cmd); err != nil {
		be := &BurnError{Address: c.Address, Cmd: cmd, Err: err}
		var ee *host.ExitError
		if errors.As(err, &ee) {
			be.Tool = mlxfmt.ParseError(ee.Stdout)
		}
		return be
	}
	if err := recordImage(h, pl); err != nil {
		return err
	}
	return MarkRebootRequired(h)
}

// burnProgress reports a burn's percentages to apply's progress (w) as
// the tool prints them, each tenth once: "firmware_image[PCI]: Burning FW
// image without signatures 40%...". nil when there is no progress to
// report to.
func burnProgress(w io.Writer, addr plan.Address) func(string) {
	if w == nil {
		return nil
	}
	last := map[string]int{}
	return func(line string) {
		stage, pct, ok := mlxfmt.BurnProgress(line)
		if !ok || pct == 100 {
			return
		}
		if t, seen := last[stage]; seen && t == pct/10 {
			return
		}
		last[stage] = pct / 10
		fmt.Fprintf(w, "%s: %s %d%%...\n", addr, stage, pct)
	}
}

// recordImage adds the ledger entry of a burned image: its version.
func recordImage(h *host.Host, pl *payload) error {
	boot, err := host.ReadAttr(h.FS, BootIDPath)
	if err != nil {
		return &LedgerError{Path: LedgerPath, Err: fmt.Errorf("reading the boot ID: %w", err)}
	}
	e := LedgerEntry{BootID: boot, StagedAt: time.Now().UTC().Truncate(time.Second), Device: pl.pci, Parameter: LedgerImage, Value: pl.burn.version, Tool: pl.tool}
	return updateLedger(h.FS, func(l *Ledger) bool {
		if old := l.Find(pl.pci, LedgerImage); old != nil {
			*old = e
		} else {
			l.Entries = append(l.Entries, e)
		}
		return true
	})
}

// keepImageEntry tells whether a burned image's ledger entry still
// stands: the spec still asks for its version with an image on its
// device, and that version does not run.
func keepImageEntry(e LedgerEntry, req *plan.Request) bool {
	for i := range req.Spec.Devices {
		dev := req.Devices[i]
		w := wantOf(req, i)
		if w == nil || dev == nil || dev.PCI != e.Device {
			continue
		}
		return sameVersion(w.version, e.Value) && !sameVersion(dev.FWVer, e.Value)
	}
	return false
}

// readyCatalogImage makes a catalog burn's image ready: fetched (or its
// cache file) and its digest checked, then its PSID and version read and
// checked against the adapter and the entry. Nothing is burned when one
// fails.
//
// Equivalent to: curl ... -o /var/cache/rdmaform/firmware/SHA.bin URL; sha256sum -c; mstflint -i /var/cache/rdmaform/firmware/SHA.bin q
func readyCatalogImage(ctx context.Context, h *host.Host, c *plan.Change, pl *payload) error {
	w := pl.burn.want
	fail := func(err error) error { return &CatalogError{Address: c.Address, Err: err} }
	if err := fetchImage(ctx, h, w); err != nil {
		return fail(err)
	}
	p, err := h.FS.Resolve(w.local())
	if err != nil {
		return fail(err)
	}
	q, err := flintQuery(ctx, h, pl.tool, "-i", p)
	switch {
	case err != nil:
		return fail(fmt.Errorf("reading image %s: %w", w.image, err))
	case q.PSID != pl.burn.psid:
		return fail(fmt.Errorf("image %s is for PSID %s, but %s has PSID %s: an image of another board can leave the adapter unusable", w.image, q.PSID, pl.pci, pl.burn.psid))
	case !sameVersion(q.FWVersion, w.version):
		return fail(fmt.Errorf("image %s holds firmware %s; the catalog entry says %s", w.image, q.FWVersion, w.version))
	}
	pl.burn.path = p
	return nil
}

// CheckImage checks a burned image's ledger entry against the firmware
// version the adapter runs (fw_ver): it took, it is pending in the boot
// it was burned in, or a reboot since did not load it.
func (e LedgerEntry) CheckImage(bootID, running string) EntryState {
	switch {
	case running == "":
		return EntryUnread
	case sameVersion(running, e.Value):
		return EntryTook
	case bootID != "" && e.BootID != bootID:
		return EntryFailed
	}
	return EntryPending
}
