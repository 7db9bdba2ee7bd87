package kcmdline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/schema"
)

// systemd's kernel-install (systemd-boot, BLS entries, UKIs).
//
// kernel-install(8) (systemd 252, src/kernel-install/kernel-install and
// 90-loaderentry.install) takes an entry's whole command line, when it
// installs a kernel, from $KERNEL_INSTALL_CONF_ROOT/cmdline, else
// /etc/kernel/cmdline, else /usr/lib/kernel/cmdline, else /proc/cmdline
// (BOOT_IMAGE= and initrd= left out), with its whitespace squeezed
// (tr -s "$IFS" ' '): the file is one line of words. An entry already
// written keeps its "options" line until "kernel-install add VERSION
// IMAGE" runs again for its kernel, which is what a distribution's kernel
// package does on install (Fedora's kernel-core: kernel-install add
// VERSION /lib/modules/VERSION/vmlinuz; Debian's postinst.d hook:
// /boot/vmlinuz-VERSION); the initrd is found by the plugins (Debian's
// 85-initrd.install, Fedora's 50-dracut.install), not passed. A UKI host
// (layout=uki, 60-ukify.install from systemd 253) reads the same file.
//
// rdmaform edits the words of /etc/kernel/cmdline, which is the
// operator's line (root=, rd.lvm ...): an argument of the spec replaces
// the words of its key (in the place of the first), an absent one
// removes them; the other words stay as they are, in their order. Then
// it runs kernel-install add for each installed kernel.

// ModulesDir is where the installed kernels' modules (and, on Fedora,
// their images) are.
const ModulesDir = "/lib/modules"

// kernelVersion is a kernel version as it becomes an argument and a path.
var kernelVersion = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+~-]{0,127}$`)

// installedKernel is a kernel kernel-install adds again.
type installedKernel struct {
	Version string
	Image   string
}

// installedKernels lists the kernels with an image: /lib/modules/V/vmlinuz
// (Fedora, Arch), else /boot/vmlinuz-V (Debian), for each V of
// /lib/modules and of /boot/vmlinuz-*, in version order. A name that is
// not a kernel version is left out.
func installedKernels(f host.FS) ([]installedKernel, error) {
	versions := map[string]bool{}
	for _, d := range []string{ModulesDir, "/boot"} {
		ents, err := f.ReadDir(d)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("reading %s: %w", d, err)
		}
		for _, e := range ents {
			v := e.Name()
			if d == "/boot" {
				var ok bool
				if v, ok = strings.CutPrefix(v, "vmlinuz-"); !ok {
					continue
				}
			}
			if kernelVersion.MatchString(v) {
				versions[v] = true
			}
		}
	}
	var out []installedKernel
	for v := range versions {
		for _, img := range []string{path.Join(ModulesDir, v, "vmlinuz"), "/boot/vmlinuz-" + v} {
			if host.Exists(f, img) {
				out = append(out, installedKernel{Version: v, Image: img})
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// editWords is a command line's words with the spec's arguments: a
// present one replaces the first word of its key (later words of that key
// go) or is appended; an absent KEY removes every word of the key, an
// absent KEY=VALUE that word.
func editWords(words []string, args []schema.KernelArg) []string {
	out := append([]string{}, words...)
	for _, a := range args {
		key := keyOf(a.Arg)
		var next []string
		placed := false
		for _, w := range out {
			switch {
			case a.Absent && strings.Contains(a.Arg, "=") && w == a.Arg:
			case a.Absent && !strings.Contains(a.Arg, "=") && keyOf(w) == key:
			case !a.Absent && keyOf(w) == key:
				if !placed {
					next = append(next, a.Arg)
					placed = true
				}
			default:
				next = append(next, w)
			}
		}
		if !a.Absent && !placed {
			next = append(next, a.Arg)
		}
		out = next
	}
	if out == nil {
		out = []string{}
	}
	return out
}

// renderKernelCmdline is /etc/kernel/cmdline's content for words.
func renderKernelCmdline(words []string) []byte {
	return []byte(strings.Join(words, " ") + "\n")
}

// RegenerateKernelInstall runs kernel-install add for each installed
// kernel, which writes its entry (or UKI) again with /etc/kernel/cmdline.
// Offline (--root) nothing runs.
func RegenerateKernelInstall(ctx context.Context, h *host.Host) error {
	if h.Offline() {
		return nil
	}
	ks, err := installedKernels(h.FS)
	if err != nil {
		return err
	}
	if len(ks) == 0 {
		return fmt.Errorf("kernel-install: no installed kernel (%s/VERSION/vmlinuz or /boot/vmlinuz-VERSION) to add again", ModulesDir)
	}
	for _, k := range ks {
		if _, err := h.Run(ctx, BootKernelInstall, "add", k.Version, k.Image); err != nil {
			return fmt.Errorf("regenerating the boot entry of kernel %s: %w", k.Version, err)
		}
	}
	return nil
}

// kernelInstallLayout is the layout kernel-install uses on this host, as
// its script decides it (systemd 252, src/kernel-install/kernel-install):
// layout= of the first of /etc/kernel/install.conf and
// /usr/lib/kernel/install.conf that exists (the one it sources); else,
// for each of /efi, /boot and /boot/efi, loader/entries.srel ("type1" is
// bls, anything else other) or an entry directory named after the entry
// token (/etc/kernel/entry-token, else the machine ID: bls); else other.
// With "other" kernel-install writes no boot entry (90-loaderentry.install
// exits), so /etc/kernel/cmdline is not what the next boot reads.
func kernelInstallLayout(f host.FS) string {
	for _, conf := range []string{"/etc/kernel/install.conf", "/usr/lib/kernel/install.conf"} {
		b, err := f.ReadFile(conf)
		if err != nil {
			continue
		}
		layout := ""
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "layout="); ok {
				layout = strings.Trim(v, `"'`)
			}
		}
		if layout != "" {
			return layout
		}
		break
	}
	token, _ := host.ReadAttr(f, "/etc/kernel/entry-token")
	if token == "" {
		token, _ = host.ReadAttr(f, "/etc/machine-id")
	}
	for _, boot := range []string{"/efi", "/boot", "/boot/efi"} {
		if b, err := f.ReadFile(boot + "/loader/entries.srel"); err == nil {
			if strings.TrimSpace(string(b)) == "type1" {
				return "bls"
			}
			return "other"
		}
		if token != "" && !strings.ContainsAny(token, "/.") {
			if fi, err := f.Stat(path.Join(boot, token)); err == nil && fi.IsDir() {
				return "bls"
			}
		}
	}
	return "other"
}
