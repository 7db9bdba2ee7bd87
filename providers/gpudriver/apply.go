package gpudriver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// Make implements plan.TypedProvider: it loads or unloads nvidia_peermem
// when the change says so, writes (or removes) the change's file and
// reads it back; for the modprobe.d file it records in the staged ledger
// each parameter the running driver does not have yet.
//
// Equivalent to: modprobe -- nvidia_peermem; echo nvidia_peermem > /etc/modules-load.d/rdmaform-gpu.conf; echo 'options nvidia NVreg_...=...' > /etc/modprobe.d/rdmaform-nvidia.conf
func (p *Provider) Make(ctx context.Context, h *host.Host, c *plan.Change, pl *payload) error {
	if pl.unload && !h.Offline() {
		if _, err := h.Run(ctx, "modprobe", "-r", "--", PeermemModule); err != nil {
			return fmt.Errorf("unloading %s: %w", PeermemModule, err)
		}
	}
	if pl.loadModule {
		if err := h.Modprobe(ctx, PeermemModule); err != nil {
			return fmt.Errorf("loading %s: %w (nvidia-peermem ships with the NVIDIA driver and is built only against MLNX_OFED's ib_core)", PeermemModule, err)
		}
	}
	if pl.file == "" {
		return nil
	}
	if err := writeOwn(h, pl.file, pl.content); err != nil {
		return err
	}
	got, err := readOptional(h, pl.file)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, pl.content) {
		return fmt.Errorf("%s reads back %q, not what was written", pl.file, got)
	}
	if pl.file == ConfFile {
		return record(h, pl)
	}
	return nil
}

func writeOwn(h *host.Host, file string, content []byte) error {
	if content == nil {
		if err := h.FS.Remove(file); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", file, err)
		}
		return nil
	}
	if err := h.FS.WriteFile(file, content, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	return nil
}

// record updates the ledger after ConfFile was written: each parameter
// the running driver does not have at the written value is staged in
// this boot (an entry already there for it keeps its boot); the others
// leave.
func record(h *host.Host, pl *payload) error {
	l, err := ReadLedger(h.FS)
	if err != nil {
		return err
	}
	boot, _ := host.ReadAttr(h.FS, BootIDPath)
	if boot == "" {
		boot = "unknown"
	}
	now := time.Now().UTC().Truncate(time.Second)
	before := map[string]string{}
	for _, o := range nvidiaOptions(string(pl.before), ConfFile) {
		before[o.Name] = o.Value
	}
	var keep []LedgerEntry
	if pl.content != nil {
		for _, prm := range pl.params {
			if v, ok := pl.running[prm.Name]; ok && v == shown(*prm.Value) {
				continue
			}
			// An entry keeps its boot only while the file it was staged
			// with still gave the value: a value written again (after a
			// rollback took it out) is staged again in this boot.
			if e := l.Find(prm.Name, *prm.Value); e != nil && before[prm.Name] == strconv.Itoa(*prm.Value) {
				keep = append(keep, *e)
				continue
			}
			keep = append(keep, LedgerEntry{BootID: boot, StagedAt: now, Param: prm.Name, Value: *prm.Value, File: ConfFile})
		}
	}
	l.Entries = keep
	return writeLedger(h.FS, l)
}

var _ plan.Settler = (*Provider)(nil)

// Settle implements plan.Settler: entries the running driver matches now,
// or that the spec no longer asks for, leave the ledger; a parameter the
// plan reports pending without an entry gets one in this boot.
//
// Equivalent to: editing /var/lib/rdmaform/staged-nvidia.json
func (p *Provider) Settle(_ context.Context, h *host.Host, res *plan.Result) error {
	obs := plan.Observation[*Observed](res.Observed[p.Name()])
	if obs == nil || obs.LedgerErr != nil || obs.Ledger == nil || obs.Driver == nil || !obs.Driver.Loaded {
		return nil
	}
	g := res.Request.Spec.GPU
	asked := func(param string, value int) bool {
		if g == nil {
			return false
		}
		return slices.ContainsFunc(g.DriverParams, func(x schema.GPUDriverParam) bool { return x.Name == param && x.Value != nil && *x.Value == value })
	}
	running := func(param string, value int) bool {
		key, _ := schema.NVIDIAParamKey(param)
		v, ok := obs.Driver.Params[key]
		return ok && v == shown(value)
	}
	var keep []LedgerEntry
	for _, e := range obs.Ledger.Entries {
		if asked(e.Param, e.Value) && !running(e.Param, e.Value) {
			keep = append(keep, e)
		}
	}
	changed := len(keep) != len(obs.Ledger.Entries)
	boot := obs.BootID
	if boot == "" {
		boot = "unknown"
	}
	for _, pe := range res.Plan.Pending {
		if pe.Address.Kind != ParamKind || g == nil {
			continue
		}
		v, ok := g.DriverParam(pe.Address.Key)
		if !ok || obs.Ledger.Find(pe.Address.Key, v) != nil {
			continue
		}
		keep = append(keep, LedgerEntry{BootID: boot, StagedAt: time.Now().UTC().Truncate(time.Second), Param: pe.Address.Key, Value: v, File: ConfFile})
		changed = true
	}
	if !changed {
		return nil
	}
	return writeLedger(h.FS, &Ledger{Entries: keep})
}
