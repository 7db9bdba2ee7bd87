// Package kcmdline manages the kernel command line arguments a spec names
// (kernel_args): the IOMMU mode, ACS, NUMA balancing and huge pages that
// RDMA and GPUDirect need. They are written the way the host's bootloader
// takes them, take effect at the next boot, and /proc/cmdline says after
// that boot whether they did: an argument a reboot did not bring is an
// activation failure, named and never written again.
//
// Debian and Ubuntu (update-grub on the PATH): rdmaform owns
// /etc/default/grub.d/90-rdmaform.cfg, which appends its arguments to
// GRUB_CMDLINE_LINUX, and runs update-grub. An argument to make absent
// that another file sets is refused with a finding naming that file:
// rdmaform edits no file but its own. Hosts with grubby (RHEL, Fedora,
// Rocky): grubby --update-kernel=ALL --args/--remove-args edits every
// boot entry, where grubby's text matching gives exactly the spec's
// arguments (grubby.go). A host with no bootloader tool rdmaform knows is
// a finding.
//
// systemd-boot, BLS and UKI hosts (/etc/kernel/cmdline and
// kernel-install): rdmaform edits the words of /etc/kernel/cmdline and
// runs kernel-install add for each installed kernel (kernelinstall.go).
package kcmdline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// Files rdmaform reads and writes.
const (
	// GrubFile is the /etc/default/grub.d file rdmaform owns.
	GrubFile = "/etc/default/grub.d/90-rdmaform.cfg"
	// GrubDefault and GrubDir are the files grub-mkconfig sources before
	// it: /etc/default/grub, then /etc/default/grub.d/*.cfg in order.
	GrubDefault = "/etc/default/grub"
	GrubDir     = "/etc/default/grub.d"
	// ProcCmdline is the running kernel's command line.
	ProcCmdline = "/proc/cmdline"
	// KernelCmdline is systemd's kernel-install command line file.
	KernelCmdline = "/etc/kernel/cmdline"
	// BootIDPath changes on every boot.
	BootIDPath = "/proc/sys/kernel/random/boot_id"
)

// Bootloaders rdmaform recognises.
const (
	BootGrub          = "update-grub"
	BootGrubby        = "grubby"
	BootKernelInstall = "kernel-install"
)

const header = "# Managed by rdmaform: kernel arguments for update-grub (grub-mkconfig sources this file).\n" +
	"# The spec's kernel_args: list is the source; edits here are overwritten.\n"

// Provider is the kernel command line provider.
type Provider struct{}

var _ plan.TypedProvider[*Observed, *payload] = (*Provider)(nil)

// New is the provider as plan.Build and apply take it.
func New() plan.Provider { return plan.Adapt[*Observed, *payload](&Provider{}) }

// Name implements plan.Provider.
func (*Provider) Name() string { return "kcmdline" }

// Kinds of this provider's addresses: the bootloader configuration it
// writes, and each argument (what an audit reports on).
const (
	Kind    = "kernel_cmdline"
	ArgKind = "kernel_arg"
)

// Observed is what the host says about its kernel command line.
type Observed struct {
	// Bootloader is how arguments are written here ("" when rdmaform
	// recognises none).
	Bootloader string
	// Running are /proc/cmdline's arguments, in order.
	Running []string
	// Listed are the arguments GrubFile gives; nil when it does not exist.
	Listed []string
	// Raw is the file rdmaform writes (GrubFile, or KernelCmdline on a
	// kernel-install host) as read (nil when absent), for rollback.
	Raw []byte `json:"-"`
	// Words are KernelCmdline's words, and Kernels the installed kernels
	// kernel-install adds again (kernel-install hosts).
	Words   []string          `json:",omitempty"`
	Kernels []installedKernel `json:",omitempty"`
	// Grubby are the boot entries grubby --info=ALL lists (grubby hosts).
	Grubby    []grubbyEntry `json:",omitempty"`
	GrubbyErr error         `json:"-"`
	// Elsewhere maps a key to the other GRUB file that sets it, and
	// ElsewhereArg to the argument it sets there (its last).
	Elsewhere    map[string]string
	ElsewhereArg map[string]string
	// BootID is this boot's.
	BootID string
	// Ledger is the staged ledger of kernel arguments.
	Ledger    *Ledger
	LedgerErr error `json:"-"`
}

// Observe implements plan.TypedProvider. It reads /proc/cmdline, the boot
// ID, the staged ledger, and on a GRUB host /etc/default/grub and
// /etc/default/grub.d/*.cfg. It changes nothing.
func (p *Provider) Observe(ctx context.Context, h *host.Host, req *plan.Request) (*Observed, error) {
	if req.Spec.KernelArgs == nil && !req.Full {
		return nil, nil
	}
	obs := &Observed{Elsewhere: map[string]string{}, ElsewhereArg: map[string]string{}}
	obs.Bootloader = detect(h)
	b, err := h.FS.ReadFile(ProcCmdline)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading %s: %w", ProcCmdline, err)
	}
	obs.Running = ParseCmdline(string(b))
	obs.BootID, _ = host.ReadAttr(h.FS, BootIDPath)
	obs.Ledger, obs.LedgerErr = ReadLedger(h.FS)
	if obs.Bootloader == BootGrubby {
		if h.Offline() {
			obs.GrubbyErr = fmt.Errorf("grubby's boot entries are read by running grubby --info=ALL, which an offline tree (--root) cannot")
		} else {
			obs.Grubby, obs.GrubbyErr = readGrubby(ctx, h)
		}
		return obs, nil
	}
	if obs.Bootloader == BootKernelInstall {
		b, err := h.FS.ReadFile(KernelCmdline)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", KernelCmdline, err)
		}
		obs.Raw = b
		obs.Words = strings.Fields(string(b))
		if obs.Kernels, err = installedKernels(h.FS); err != nil {
			return nil, err
		}
		return obs, nil
	}
	if obs.Bootloader != BootGrub {
		return obs, nil
	}
	b, err = h.FS.ReadFile(GrubFile)
	switch {
	case err == nil:
		obs.Raw = b
		obs.Listed = parseOwnFile(string(b))
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("reading %s: %w", GrubFile, err)
	}
	files := []string{GrubDefault}
	if ents, err := h.FS.ReadDir(GrubDir); err == nil {
		var names []string
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".cfg") && path.Join(GrubDir, e.Name()) != GrubFile {
				names = append(names, path.Join(GrubDir, e.Name()))
			}
		}
		sort.Strings(names)
		files = append(files, names...)
	}
	for _, f := range files {
		b, err := h.FS.ReadFile(f)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("reading %s: %w", f, err)
		}
		for _, a := range argsSetIn(string(b)) {
			obs.Elsewhere[keyOf(a)] = f
			obs.ElsewhereArg[keyOf(a)] = a
		}
	}
	return obs, nil
}

// detect names the host's bootloader tool: kernel-install with
// /etc/kernel/cmdline and a BLS or UKI layout first (a systemd-boot or
// UKI host may keep GRUB's tools installed; a Debian host with systemd's
// kernel-install and the layout "other" boots GRUB's entries), then
// grubby, then update-grub. A live host is asked
// through its PATH; an offline tree (--root), whose programs are not
// this machine's, by the files in its /usr/sbin, /sbin, /usr/bin, /bin.
func detect(h *host.Host) string {
	has := func(n string) bool {
		if h.Offline() {
			for _, d := range []string{"/usr/sbin/", "/sbin/", "/usr/bin/", "/bin/"} {
				if host.Exists(h.FS, d+n) {
					return true
				}
			}
			return false
		}
		found, ok := host.Installed(h.Runner, n)
		return ok && found
	}
	switch {
	case host.Exists(h.FS, KernelCmdline) && has(BootKernelInstall) && slices.Contains([]string{"bls", "uki"}, kernelInstallLayout(h.FS)):
		return BootKernelInstall
	case has(BootGrubby):
		return BootGrubby
	case has(BootGrub):
		return BootGrub
	}
	return ""
}

// ParseCmdline splits a kernel command line as the kernel does
// (lib/cmdline.c next_arg: whitespace separates, double quotes group);
// what follows "--" is init's and is left out.
func ParseCmdline(s string) []string {
	var out []string
	var cur strings.Builder
	inQuote, any := false, false
	flush := func() {
		if any {
			out = append(out, cur.String())
		}
		cur.Reset()
		any = false
	}
	for _, r := range s {
		switch {
		case r == '"':
			inQuote = !inQuote
			any = true
		case !inQuote && (r == ' ' || r == '\t' || r == '\n'):
			flush()
		default:
			cur.WriteRune(r)
			any = true
		}
	}
	flush()
	for i, a := range out {
		if a == "--" {
			return out[:i]
		}
	}
	return out
}

// keyOf is an argument's key: what comes before '='.
func keyOf(arg string) string {
	k, _, _ := strings.Cut(arg, "=")
	return k
}

// lastOf is the last argument of a key in args ("" when none): the one
// the kernel's parameter handler sees last.
func lastOf(args []string, key string) (string, bool) {
	v, found := "", false
	for _, a := range args {
		if keyOf(a) == key {
			v, found = a, true
		}
	}
	return v, found
}

// satisfied tells whether args meet one spec entry: a present argument
// is the last of its key; an absent KEY has no argument of that key; an
// absent KEY=VALUE is not there.
func satisfied(args []string, a schema.KernelArg) bool {
	key := keyOf(a.Arg)
	if !a.Absent {
		v, ok := lastOf(args, key)
		return ok && v == a.Arg
	}
	for _, x := range args {
		if (strings.Contains(a.Arg, "=") && x == a.Arg) || (!strings.Contains(a.Arg, "=") && keyOf(x) == key) {
			return false
		}
	}
	return true
}

// parseOwnFile reads back the arguments of GrubFile: the words of its
// GRUB_CMDLINE_LINUX line after "${GRUB_CMDLINE_LINUX}".
func parseOwnFile(s string) []string {
	out := []string{}
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		v, ok := strings.CutPrefix(l, `GRUB_CMDLINE_LINUX="${GRUB_CMDLINE_LINUX}`)
		if !ok {
			continue
		}
		v = strings.TrimSuffix(v, `"`)
		out = append(out, strings.Fields(v)...)
	}
	return out
}

// renderOwnFile is GrubFile's content for arguments; nil for none.
func renderOwnFile(args []string) []byte {
	if len(args) == 0 {
		return nil
	}
	return []byte(header + `GRUB_CMDLINE_LINUX="${GRUB_CMDLINE_LINUX} ` + strings.Join(args, " ") + "\"\n")
}

// argsSetIn lists the kernel arguments a GRUB defaults file sets in
// GRUB_CMDLINE_LINUX or GRUB_CMDLINE_LINUX_DEFAULT: a textual scan of the
// words of those assignments (quotes dropped, variables skipped), enough
// to name the file that sets an argument the spec wants absent or sets
// its key to another value.
func argsSetIn(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		l = strings.TrimPrefix(l, "export ")
		var v string
		var ok bool
		if v, ok = strings.CutPrefix(l, "GRUB_CMDLINE_LINUX_DEFAULT="); !ok {
			if v, ok = strings.CutPrefix(l, "GRUB_CMDLINE_LINUX="); !ok {
				continue
			}
		}
		v = strings.NewReplacer(`"`, " ", `'`, " ").Replace(v)
		for _, w := range strings.Fields(v) {
			if strings.HasPrefix(w, "$") || strings.HasPrefix(w, "#") {
				continue
			}
			out = append(out, w)
		}
	}
	return out
}

// ArgAddress is the plan address of a kernel argument's key.
func ArgAddress(key string) plan.Address { return plan.Addr(ArgKind, key) }

// payload is what Make needs: the new content of the file (GrubFile, nil:
// remove it; or KernelCmdline), the arguments it gives and the spec's
// absent entries (for the ledger).
type payload struct {
	// tool is the bootloader the file is for (BootGrub when "").
	tool string
	// spec and entries (grubby): the spec's arguments, and the boot
	// entries as the plan read them; restore: the entries to put back
	// (a rollback).
	spec    []schema.KernelArg
	entries []grubbyEntry
	restore bool
	content []byte
	args    []string
	absent  []schema.KernelArg
	// running is /proc/cmdline at plan time.
	running []string
	// before is GrubFile's content at plan time (nil: absent), for Revert.
	before []byte
}
