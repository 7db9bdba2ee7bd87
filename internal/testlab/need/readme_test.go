package need_test

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// aptInstall is the package list of the first `apt-get install` command
// in text (continued lines joined), sorted.
func aptInstall(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	m := regexp.MustCompile(`(?m)^\s*apt-get install ([^\n]*)$`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("%s has no apt-get install line", name)
	}
	var pkgs []string
	for _, f := range strings.Fields(m[1]) {
		if !strings.HasPrefix(f, "-") {
			pkgs = append(pkgs, f)
		}
	}
	sort.Strings(pkgs)
	return pkgs
}

// TestREADMEListsWhatCIInstalls: the packages README's Tests section says
// to install are the ones CI installs before it runs make test.
func TestREADMEListsWhatCIInstalls(t *testing.T) {
	ci := aptInstall(t, "../../../.ci/run")
	readme := aptInstall(t, "../../../README.md")
	if d := cmp.Diff(ci, readme); d != "" {
		t.Errorf("README's apt-get install line differs from .ci/run's (-ci +README):\n%s", d)
	}
	for _, p := range []string{"ethtool", "iproute2", "qemu-system-x86", "network-manager"} {
		if !strings.Contains(" "+strings.Join(readme, " ")+" ", " "+p+" ") {
			t.Errorf("README does not list %s", p)
		}
	}
}
