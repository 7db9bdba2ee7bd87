//go:build kernlab

package guest

import (
	"os"
	"strings"
	"testing"
)

func TestBooted(t *testing.T) {
	b, err := os.ReadFile("/proc/version")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "Linux") {
		t.Fatalf("/proc/version: %q", b)
	}
	t.Logf("%s", b)
}
