package ansible_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// cachePlay runs two planning tasks of rdmaform.rdma.rdmaform on a
// simulated host, each asserting the real plan (one change, rc 2),
// with the play's extra keywords (become) and variables.
const cachePlay = `- hosts: localhost
  gather_facts: false
  tasks:
    - name: First
      rdmaform.rdma.rdmaform: {content: "{{ spec }}", sim: "{{ sim }}", state: planned}
      register: first
    - name: Second
      rdmaform.rdma.rdmaform: {content: "{{ spec }}", sim: "{{ sim }}", state: planned}
      register: second
    - name: Both planned the change
      ansible.builtin.assert:
        that:
          - first.rc == 2 and second.rc == 2
          - first.plan.changes | length == 1
          - second.plan.changes[0].address == 'rdma_cm[mlx5_0/1]'
`

// TestModuleCache: the action plugin keeps the module's binary on the
// host in the module cache (RDMAFORM_MODULE_CACHE here, the variable
// rdmaform_module_cache) under its SHA-256 and runs it from there: the
// first task copies it once, the next and a later run's copy nothing;
// other builds there are removed, and so are temporary files a killed
// copy left a day ago. A cached file someone else may write, or a
// directory others may write, is not used: the first is replaced, the
// second makes the plugin copy the module per task as Ansible does,
// with a warning; so does a directory that cannot be made. "" turns the cache off; a relative path is an error.
// With become by su (Ansible does not pipe a module's input there) the
// arguments go in a file.
func TestModuleCache(t *testing.T) {
	l := newLab(t)
	l.installCollection(t)
	sim := newSim(t, "cx5-roce")
	module := filepath.Join(l.dir, "collections", "ansible_collections", "rdmaform", "rdma", "plugins", "modules")
	builds, err := filepath.Glob(filepath.Join(module, "rdmaform_*"))
	if err != nil || len(builds) != 1 {
		t.Fatalf("the module's build: %v %v", builds, err)
	}
	bin, err := os.ReadFile(builds[0])
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bin)
	cache := filepath.Join(l.dir, "module-cache")
	cached := filepath.Join(cache, "rdmaform-"+hex.EncodeToString(sum[:]))

	put := regexp.MustCompile(`(?m)^<localhost> PUT \S+/plugins/modules/rdmaform_\S+ TO `)
	run := func(t *testing.T, play string, flags ...string) (puts int, out string) {
		t.Helper()
		out, err := l.playbook(t, play, append([]string{"-vvv", "-e", "sim=" + sim, "-e", "spec='" + roceSpec + "'"}, flags...)...)
		if err != nil {
			t.Fatalf("ansible-playbook: %v\n%s", err, out)
		}
		return len(put.FindAllString(out, -1)), out
	}
	entries := func(t *testing.T) []string {
		t.Helper()
		es, err := os.ReadDir(cache)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		sort.Strings(names)
		return names
	}
	isBuild := func(t *testing.T) {
		t.Helper()
		data, err := os.ReadFile(cached)
		if err != nil || !bytes.Equal(data, bin) {
			t.Fatalf("%s is not the module's build (%v)", cached, err)
		}
		if fi, err := os.Stat(cached); err != nil || fi.Mode().Perm() != 0o755 {
			t.Fatalf("%s: %v %v, want mode 0755", cached, fi.Mode(), err)
		}
	}

	// notUsed runs the play with the cache directory dir, which the
	// plugin must refuse for why: the module copied for each task, and a
	// warning for each.
	notUsed := func(t *testing.T, dir, why string) {
		t.Helper()
		n, out := run(t, cachePlay, "-e", "rdmaform_module_cache="+dir)
		if n != 2 {
			t.Errorf("the module was copied %d times, want once a task (2):\n%s", n, out)
		}
		warn := "the module cache " + dir + " is not used on this host: " + why
		// Ansible folds a warning's lines, in the path too.
		if strings.Count(strings.Join(strings.Fields(out), ""), strings.Join(strings.Fields(warn), "")) != 2 {
			t.Errorf("want the warning %q for each task:\n%s", warn, out)
		}
	}

	t.Run("copied once", func(t *testing.T) {
		// Another build, a temporary file of a copy killed two days ago
		// and one of a copy under way.
		if err := os.Mkdir(cache, 0o755); err != nil {
			t.Fatal(err)
		}
		other := "rdmaform-" + strings.Repeat("0", 64)
		for _, f := range []string{other, ".rdmaform-old.1", ".rdmaform-new.2"} {
			if err := os.WriteFile(filepath.Join(cache, f), []byte("x"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		old := time.Now().Add(-48 * time.Hour)
		if err := os.Chtimes(filepath.Join(cache, ".rdmaform-old.1"), old, old); err != nil {
			t.Fatal(err)
		}
		if n, out := run(t, cachePlay); n != 1 {
			t.Fatalf("the module was copied %d times, want once:\n%s", n, out)
		}
		isBuild(t)
		if got, want := entries(t), []string{".rdmaform-new.2", filepath.Base(cached)}; !slices.Equal(got, want) {
			t.Errorf("cache %v, want %v", got, want)
		}
		if n, out := run(t, cachePlay); n != 0 {
			t.Fatalf("a second run copied the module %d times, want none:\n%s", n, out)
		}
	})

	t.Run("a file others may write is replaced", func(t *testing.T) {
		fake := "#!/bin/sh\necho '{\"changed\": false, \"rc\": 0, \"msg\": \"not rdmaform\"}'\n"
		if err := os.WriteFile(cached, []byte(fake), 0o775); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(cached, 0o775); err != nil {
			t.Fatal(err)
		}
		if n, out := run(t, cachePlay); n != 1 {
			t.Fatalf("the module was copied %d times, want once:\n%s", n, out)
		}
		isBuild(t)
	})

	t.Run("a file of another user is replaced", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to give the file to another user")
		}
		fake := "#!/bin/sh\necho '{\"changed\": false, \"rc\": 0, \"msg\": \"not rdmaform\"}'\n"
		if err := os.WriteFile(cached, []byte(fake), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(cached, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if n, out := run(t, cachePlay); n != 1 {
			t.Fatalf("the module was copied %d times, want once:\n%s", n, out)
		}
		isBuild(t)
	})

	t.Run("a directory others may write is not used", func(t *testing.T) {
		open := filepath.Join(l.dir, "open-cache")
		if err := os.Mkdir(open, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(open, 0o777); err != nil {
			t.Fatal(err)
		}
		notUsed(t, open, "the directory is not owned by uid")
		if es, err := os.ReadDir(open); err != nil || len(es) != 0 {
			t.Errorf("%s: %v %v, want it left empty", open, es, err)
		}
	})

	t.Run("a directory that cannot be made is not used", func(t *testing.T) {
		file := filepath.Join(l.dir, "not-a-directory")
		if err := os.WriteFile(file, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		notUsed(t, filepath.Join(file, "cache"), "cannot create the directory")
	})

	t.Run("off", func(t *testing.T) {
		if n, out := run(t, cachePlay, "-e", `{"rdmaform_module_cache": ""}`); n != 2 {
			t.Errorf("without the cache the module was copied %d times, want once a task (2):\n%s", n, out)
		}
	})

	t.Run("relative", func(t *testing.T) {
		out, err := l.playbook(t, cachePlay, "-e", "sim="+sim, "-e", "spec='"+roceSpec+"'", "-e", "rdmaform_module_cache=cache")
		if err == nil || !strings.Contains(out, "rdmaform_module_cache (or RDMAFORM_MODULE_CACHE on the controller) must be an absolute directory path other than /") {
			t.Errorf("a relative cache directory: %v, want the task failed saying why:\n%s", err, out)
		}
	})

	t.Run("become su: arguments in a file", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("su to root without a password needs root")
		}
		need := regexp.MustCompile(`(?m)^<localhost> EXEC .*` + regexp.QuoteMeta(filepath.Base(cached)) + `.*/args`)
		n, out := run(t, cachePlay, "-b", "--become-method", "su")
		if n != 0 || !need.MatchString(out) || strings.Contains(out, "--rdmaform-ansible-args-stdin") {
			t.Errorf("with become by su: %d copies, want none, and the cached module run with an arguments file, not stdin:\n%s", n, out)
		}
	})
}
