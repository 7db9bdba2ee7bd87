package need_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// labTests are tests that run a tool of this machine, each with a tool it
// needs. Each row is run with a PATH that lacks that tool.
var labTests = []struct {
	tool, pkg, test string
}{
	{"ethtool", "providers/qos", "TestVethHasNoDCB"},
	{"dcb", "providers/qos", "TestVethHasNoDCB"},
	{"ip", "providers/qos", "TestVethHasNoDCB"},
	{"mstconfig", "providers/firmware", "TestRealMstconfigNoAdapter"},
	{"mstconfig", "sim/mlxemu", "TestRealMstconfig"},
	{"NetworkManager", "providers/ipoib", "TestRealWithoutNetworkManager"},
	{"NetworkManager", "providers/ipoib/nmcli", "TestRealNmcliOutputs"},
	{"systemd-analyze", "providers/bootunit", "TestUnitFileVerifies"},
	{"udevadm", "providers/names", "TestUdevRuleByMACMatchesOnlyTheNetdev"},
	{"ansible-playbook", "ansible", "TestAnsible"},
	{"ping", "cli", "TestProbeAndAuditProbes"},
	{"pgrep", "cli", "TestEveryRollbackPathRestoresTheSame"},
	{"slurmd", "internal/testlab/slurmlab", "TestLab"},
	{"scontrol", "internal/testlab/slurmlab", "TestLab"},
}

// TestLabTestsSkipWithoutTheirTools: each lab test, run with a PATH that
// lacks one tool it needs, skips and names the tool; under
// RDMAFORM_REQUIRE_LAB=1 it fails and names it. (A test that ran the tool
// without asking need first fails in the first run instead of skipping:
// TestVethHasNoDCB did, without ethtool.)
func TestLabTestsSkipWithoutTheirTools(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs other packages' test binaries; not in -short")
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	bins := t.TempDir()
	built := map[string]string{}
	for _, c := range labTests {
		t.Run(c.tool+"/"+c.test, func(t *testing.T) {
			bin, ok := built[c.pkg]
			if !ok {
				bin = filepath.Join(bins, strings.ReplaceAll(c.pkg, "/", "_")+".test")
				cmd := exec.Command(gobin, "test", "-c", "-o", bin, "./"+c.pkg)
				cmd.Dir = "../../.."
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("go test -c ./%s: %v\n%s", c.pkg, err, out)
				}
				built[c.pkg] = bin
			}
			path := pathWithout(t, c.tool)
			run := func(require string) (string, error) {
				cmd := exec.Command(bin, "-test.run", "^"+c.test+"$", "-test.v", "-test.count=1")
				cmd.Dir = filepath.Join("../../..", c.pkg)
				cmd.Env = append(environWithout("PATH", "RDMAFORM_REQUIRE_LAB"), "PATH="+path, "RDMAFORM_REQUIRE_LAB="+require)
				out, err := cmd.CombinedOutput()
				return string(out), err
			}
			names := regexp.MustCompile(`\b` + regexp.QuoteMeta(c.tool) + `\b`)
			out, err := run("")
			if err != nil || !strings.Contains(out, "--- SKIP: "+c.test) || !names.MatchString(out) {
				t.Errorf("without %s on PATH: %v, want %s to skip naming it\n%s", c.tool, err, c.test, out)
			}
			out, err = run("1")
			if err == nil || !strings.Contains(out, "--- FAIL: "+c.test) || !names.MatchString(out) {
				t.Errorf("without %s on PATH and RDMAFORM_REQUIRE_LAB=1: %v, want %s to fail naming it\n%s", c.tool, err, c.test, out)
			}
		})
	}
}

// pathWithout is a directory of links to every program on this PATH but
// tool (the first of each name, as PATH finds it).
func pathWithout(t *testing.T, tool string) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range ents {
			link := filepath.Join(dir, e.Name())
			if e.Name() == tool {
				continue
			}
			if _, err := os.Lstat(link); err == nil {
				continue
			}
			if err := os.Symlink(filepath.Join(d, e.Name()), link); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := exec.LookPath(filepath.Join(dir, tool)); err == nil {
		t.Fatalf("%s is still in %s", tool, dir)
	}
	return dir
}

func environWithout(keys ...string) []string {
	var env []string
outer:
	for _, kv := range os.Environ() {
		for _, k := range keys {
			if strings.HasPrefix(kv, k+"=") {
				continue outer
			}
		}
		env = append(env, kv)
	}
	return env
}

// TestKernelLabSkipsWithoutQEMU: make kernel-test (kernlab/run.sh) without
// qemu-system-x86_64 on PATH skips with the reason and exits 0, as a lab
// test skips; under RDMAFORM_REQUIRE_LAB=1 it fails.
func TestKernelLabSkipsWithoutQEMU(t *testing.T) {
	bash := Tool(t, "bash")
	path := pathWithout(t, "qemu-system-x86_64")
	for _, require := range []string{"", "1"} {
		cmd := exec.Command(bash, "../kernlab/run.sh")
		cmd.Env = append(environWithout("PATH", "RDMAFORM_REQUIRE_LAB"), "PATH="+path, "RDMAFORM_REQUIRE_LAB="+require)
		out, err := cmd.CombinedOutput()
		named := strings.Contains(string(out), "qemu-system-x86_64 is missing: apt-get install -y qemu-system-x86")
		if require == "" && (err != nil || !named || !strings.Contains(string(out), "SKIP")) {
			t.Errorf("without qemu: %v, want a skip naming it (exit 0)\n%s", err, out)
		}
		if require == "1" && (err == nil || !named) {
			t.Errorf("without qemu and RDMAFORM_REQUIRE_LAB=1: %v, want a failure naming it\n%s", err, out)
		}
	}
}

// Tool is exec.LookPath that fails the test.
func Tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
