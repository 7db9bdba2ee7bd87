package sim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The simulated grubby, modelled on rhboot/grubby's grubby-bls (commit
// fdb5c761: get_bls_values, display_info_values, update_bls_fragment,
// update_args), which RHEL, Fedora and Rocky hosts run: boot entries are
// BootLoaderSpec files in /boot/loader/entries, listed in reverse version
// order (ls -vr), the first being the default. Own code; nothing is
// shared with the provider.

const simGrubbyOptions = "root=/dev/mapper/rhel-root ro crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M resume=/dev/mapper/rhel-swap rd.lvm.lv=rhel/root rd.lvm.lv=rhel/swap rhgb quiet"

// grubbyEntries lists the entry files, the default first.
func (s *Sim) grubbyEntries() []string {
	files, _ := filepath.Glob(filepath.Join(s.Dir, "boot/loader/entries/*.conf"))
	sort.Sort(sort.Reverse(sort.StringSlice(files)))
	return files
}

// blsValue is a BLS file's value of key (grubby-bls get_bls_value).
func blsValue(text, key string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, key+" ") || strings.HasPrefix(l, key+"\t") {
			return strings.TrimLeft(l[len(key):], " \t")
		}
	}
	return ""
}

// grubbyTool: --info=ALL, and --update-kernel=ALL|KERNEL with --args
// and --remove-args.
func grubbyTool(_ context.Context, s *Sim, args []string, _ []byte) (string, string, int) {
	var info, update, add, remove string
	var hasAdd, hasRemove bool
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		switch k {
		case "--info":
			info = v
		case "--update-kernel":
			update = v
		case "--args":
			add, hasAdd = v, true
		case "--remove-args":
			remove, hasRemove = v, true
		default:
			return "", "\ngrubby: invalid option \"" + k + "\"\nTry 'grubby --help' for more information\n\n", 1
		}
	}
	files := s.grubbyEntries()
	pick := func(param string) []int {
		var out []int
		for i, f := range files {
			b, _ := os.ReadFile(f)
			if param == "ALL" || param == blsValue(string(b), "linux") || param == fmt.Sprint(i) {
				out = append(out, i)
			}
		}
		return out
	}
	switch {
	case info != "":
		var out strings.Builder
		for _, i := range pick(info) {
			b, _ := os.ReadFile(files[i])
			t := string(b)
			fmt.Fprintf(&out, "index=%d\nkernel=%s\nargs=\"%s\"\ninitrd=%s\ntitle=%s\n", i, blsValue(t, "linux"), blsValue(t, "options"), blsValue(t, "initrd"), blsValue(t, "title"))
		}
		return out.String(), "", 0
	case update != "":
		idx := pick(update)
		if len(idx) == 0 {
			return "", "The param " + update + " is incorrect\n", 1
		}
		for _, i := range idx {
			b, err := os.ReadFile(files[i])
			if err != nil {
				return "", err.Error() + "\n", 1
			}
			t := string(b)
			if !hasAdd && !hasRemove {
				continue
			}
			opts := grubbyUpdateArgs(blsValue(t, "options"), remove, add)
			var lines []string
			for _, l := range strings.Split(t, "\n") {
				if strings.HasPrefix(l, "options") {
					l = "options " + opts
				}
				lines = append(lines, l)
			}
			if err := os.WriteFile(files[i], []byte(strings.Join(lines, "\n")), 0o644); err != nil {
				return "", err.Error() + "\n", 1
			}
		}
		return "", "", 0
	}
	return "", "no action specified\n", 1
}

// grubbyUpdateArgs is update_args: each word to remove deletes the first
// place its text occurs with the non-blanks after it; a KEY=VALUE to add
// (the value after the last '=') replaces the first "KEY=" and the
// non-blanks after it, or is appended; a bare word is appended unless
// its text occurs. Blanks are squeezed at the end (echo ${args}).
func grubbyUpdateArgs(args, remove, add string) string {
	for _, r := range strings.Fields(remove) {
		if i := strings.Index(args, r); i >= 0 {
			j := i + len(r)
			for j < len(args) && args[j] != ' ' {
				j++
			}
			args = args[:i] + args[j:]
		}
		args = strings.Join(strings.Fields(args), " ")
	}
	for _, a := range strings.Fields(add) {
		if eq := strings.LastIndexByte(a, '='); eq >= 0 {
			key, value := a[:eq], a[eq+1:]
			if i := strings.Index(args, key+"="); i >= 0 {
				j := i + len(key) + 1
				for j < len(args) && args[j] != ' ' {
					j++
				}
				args = args[:i] + key + "=" + value + args[j:]
			} else {
				args += " " + key + "=" + value
			}
		} else if !strings.Contains(args, a) {
			args += " " + a
		}
	}
	return strings.Join(strings.Fields(args), " ")
}

// installGrubbyEntry gives a new grubby host its kernel's BLS entry, as
// the kernel package's install leaves it.
func (s *Sim) installGrubbyEntry() error {
	version := strings.TrimPrefix(simKernelImage, "/boot/vmlinuz-")
	f := filepath.Join(s.Dir, "boot/loader/entries", "3d1219c7c4c5404aaa1f6d2a48adfda4-"+version+".conf")
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		return err
	}
	text := "title Red Hat Enterprise Linux (" + version + ") 9.4 (Plow)\nversion " + version + "\nlinux /vmlinuz-" + version +
		"\ninitrd /initramfs-" + version + ".img\noptions " + simGrubbyOptions + "\nid rhel-20240101000000-" + version + "\ngrub_users $grub_users\ngrub_arg --unrestricted\ngrub_class rhel\n"
	return os.WriteFile(f, []byte(text), 0o644)
}

// rebootGrubby boots the default entry (the first): BOOT_IMAGE= and its
// options are /proc/cmdline.
func (s *Sim) rebootGrubby(st *State) {
	files := s.grubbyEntries()
	if len(files) == 0 {
		return
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		return
	}
	st.Cmdline = strings.TrimSpace("BOOT_IMAGE=(hd0,gpt2)" + blsValue(string(b), "linux") + " " + blsValue(string(b), "options"))
}
