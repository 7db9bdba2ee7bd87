package ansible_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/internal/testlab/need"
)

// packagedModule is where the rdmaform package installs the Ansible
// module (packaging/nfpm.yaml): ansible-core's default module directory.
const packagedModule = "/usr/share/ansible/plugins/modules/rdmaform"

// TestExampleFindsTheModule: `cd examples/ansible && ansible-playbook
// site.yml` finds the module with the example's own ansible.cfg and no
// other configuration: in a checkout, once make ansible has built it
// (before, the real ansible-playbook says it cannot resolve the module);
// and the package's copy of the example lists the directory the package
// installs the module in.
func TestExampleFindsTheModule(t *testing.T) {
	need.Tool(t, "ansible-playbook", "apt-get install ansible-core")
	// A checkout's layout: examples/ansible beside build/.
	root := t.TempDir()
	ex := filepath.Join(root, "examples", "ansible")
	if err := os.MkdirAll(ex, 0o755); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("../examples/ansible/*")
	if err != nil || len(files) == 0 {
		t.Fatalf("examples/ansible: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ex, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(root, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	check := func() (string, error) {
		cmd := exec.Command("ansible-playbook", "site.yml", "--syntax-check")
		cmd.Dir = ex
		// No ANSIBLE_CONFIG or ANSIBLE_LIBRARY: the directory's
		// ansible.cfg is the configuration, as for the README's user.
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8", "ANSIBLE_NOCOLOR=1",
			"ANSIBLE_LOCAL_TEMP=" + filepath.Join(root, "tmp"), "ANSIBLE_COLLECTIONS_PATH=" + filepath.Join(root, "collections")}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if _, err := os.Stat(packagedModule); err != nil {
		if out, err := check(); err == nil || !strings.Contains(out, "couldn't resolve module/action 'rdmaform'") {
			t.Errorf("before make ansible: %v, want the module not found\n%s", err, out)
		}
	}
	// What make ansible builds (Makefile: ANSIBLE_LIBRARY_DIR).
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	build := exec.Command(gobin, "build", "-o", filepath.Join(root, "build", "ansible", "library", "rdmaform"), "../cmd/rdmaform-ansible")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the module: %v\n%s", err, out)
	}
	if out, err := check(); err != nil || !strings.Contains(out, "playbook: site.yml") {
		t.Errorf("after make ansible: %v\n%s", err, out)
	}

	// The package installs the module where the example's configuration
	// looks, and make ansible builds it where the checkout's does.
	cfg, err := os.ReadFile("../examples/ansible/ansible.cfg")
	if err != nil {
		t.Fatal(err)
	}
	var library []string
	for _, line := range strings.Split(string(cfg), "\n") {
		if v, ok := strings.CutPrefix(line, "library = "); ok {
			library = strings.Split(v, ":")
		}
	}
	nfpm, err := os.ReadFile("../packaging/nfpm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if len(library) != 2 || library[0] != "../../build/ansible/library" || library[1] != filepath.Dir(packagedModule) ||
		!strings.Contains(string(nfpm), "dst: "+packagedModule+"\n") || !strings.Contains(string(makefile), "ANSIBLE_LIBRARY_DIR ?= build/ansible/library\n") {
		t.Errorf("examples/ansible/ansible.cfg's library is %q; want the checkout's build/ansible/library and the package's %s", library, filepath.Dir(packagedModule))
	}
}
