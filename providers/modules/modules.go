// Package modules manages the kernel modules a spec names: each is loaded
// now (modprobe) and listed in /etc/modules-load.d/rdmaform.conf, the one
// file rdmaform owns there, so systemd-modules-load loads it at every boot.
// Modules are never unloaded: a module dropped from the spec only leaves
// the file.
package modules

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// Files rdmaform reads and writes.
const (
	// ConfFile is the modules-load.d file rdmaform owns.
	ConfFile = "/etc/modules-load.d/rdmaform.conf"
	// ProcModules lists loaded modules, one a line, name first.
	ProcModules = "/proc/modules"
	// OSRelease is `uname -r`.
	OSRelease = "/proc/sys/kernel/osrelease"
	// SysModule holds a directory per loaded or built-in module.
	SysModule = "/sys/module"
)

// header opens ConfFile.
const header = "# Managed by rdmaform: kernel modules systemd-modules-load loads at boot.\n" +
	"# The spec's modules: list is the source; edits here are overwritten.\n"

// Provider is the kernel modules provider.
type Provider struct{}

var _ plan.TypedProvider[*Observed, *payload] = (*Provider)(nil)

// New is the provider as plan.Build and apply take it.
func New() plan.Provider { return plan.Adapt[*Observed, *payload](&Provider{}) }

// Name implements plan.Provider.
func (*Provider) Name() string { return "modules" }

// Normalize is a module's canonical name: modprobe treats '-' and '_'
// alike and /proc/modules shows '_'.
func Normalize(name string) string { return strings.ReplaceAll(name, "-", "_") }

// Kind is the kind of this provider's addresses.
const Kind = "module"

// Address is the plan address of a module.
func Address(name string) plan.Address { return plan.Addr(Kind, Normalize(name)) }

// Observed is what the host says about modules.
type Observed struct {
	// Loaded holds modules in /proc/modules.
	Loaded map[string]bool
	// Builtin holds modules built into the kernel (modules.builtin, or a
	// /sys/module directory without a /proc/modules line).
	Builtin map[string]bool
	// Listed holds the modules ConfFile lists; nil when it does not exist.
	Listed map[string]bool
	// NoModules: the kernel has no /proc/modules, so it cannot load
	// modules (CONFIG_MODULES off, or a container that hides it); only
	// built-in modules are there.
	NoModules bool `json:",omitempty"`
}

// Observe implements plan.TypedProvider. It reads /proc/modules, the running
// kernel's modules.builtin, /sys/module/NAME for the spec's modules and
// ConfFile. It changes nothing.
func (p *Provider) Observe(_ context.Context, h *host.Host, req *plan.Request) (*Observed, error) {
	if req.Spec.Modules == nil && !req.Full {
		return nil, nil
	}
	obs := &Observed{Loaded: map[string]bool{}, Builtin: map[string]bool{}}
	b, err := h.FS.ReadFile(ProcModules)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		obs.NoModules = true
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", ProcModules, err)
	default:
		obs.Loaded = parseProcModules(string(b))
	}
	if rel, err := host.ReadAttr(h.FS, OSRelease); err == nil && rel != "" && !strings.Contains(rel, "/") {
		f := path.Join("/lib/modules", rel, "modules.builtin")
		b, err := h.FS.ReadFile(f)
		switch {
		case err == nil:
			obs.Builtin = parseBuiltin(string(b))
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("reading %s: %w", f, err)
		}
	}
	for _, m := range req.Spec.Modules {
		n := Normalize(m)
		if !obs.Loaded[n] && host.Exists(h.FS, path.Join(SysModule, n)) {
			obs.Builtin[n] = true
		}
	}
	b, err = h.FS.ReadFile(ConfFile)
	switch {
	case err == nil:
		obs.Listed = parseConf(string(b))
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("reading %s: %w", ConfFile, err)
	}
	return obs, nil
}

// parseProcModules reads /proc/modules: "name size refcount deps state addr".
func parseProcModules(s string) map[string]bool {
	out := map[string]bool{}
	for _, l := range strings.Split(s, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			out[Normalize(f[0])] = true
		}
	}
	return out
}

// parseBuiltin reads modules.builtin: one path a line,
// "kernel/drivers/infiniband/core/ib_core.ko".
func parseBuiltin(s string) map[string]bool {
	out := map[string]bool{}
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		out[Normalize(strings.TrimSuffix(path.Base(l), ".ko"))] = true
	}
	return out
}

// parseConf reads a modules-load.d file as systemd-modules-load does: one
// module a line; lines starting with '#' or ';' and blank lines are
// ignored.
func parseConf(s string) map[string]bool {
	out := map[string]bool{}
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || l[0] == '#' || l[0] == ';' {
			continue
		}
		out[Normalize(l)] = true
	}
	return out
}

// renderConf is ConfFile's content for a set of modules: the header, then
// the names sorted.
func renderConf(set map[string]bool) []byte {
	names := sortedKeys(set)
	var b strings.Builder
	b.WriteString(header)
	for _, n := range names {
		b.WriteString(n + "\n")
	}
	return []byte(b.String())
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		if v {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// payload is what Apply needs for one module.
type payload struct {
	name string // normalized
	load bool   // modprobe it
	// listed: true adds it to ConfFile, false removes it.
	listed bool
	// unload (a revert of a load) runs modprobe -r; skipFile leaves
	// ConfFile alone.
	unload, skipFile bool
}

// Attribute names and values: loaded and load_at_boot are booleans
// (true and false in JSON, as every boolean attribute).
const (
	attrLoaded = "loaded"
	attrAtBoot = "load_at_boot"
	yes        = "true"
	no         = "false"
)
