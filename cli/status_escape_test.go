package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStatusEscapesTheLedger: status prints the staged ledger's values
// and /run/reboot-required.pkgs, files a person may edit by hand,
// escaped: a newline in a value cannot forge a line of status, an ESC
// or BEL sequence does not reach the terminal.
func TestStatusEscapesTheLedger(t *testing.T) {
	h, spec, ledger := ledgerHost(t)
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 3 {
		t.Fatalf("apply: exit %d, want 3\n%s%s", code, out, errs)
	}
	b, err := os.ReadFile(ledger)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(b), `"value": "ETH"`, `"value": "ETH\n  ! forged line\u001b[2J"`, 1)
	edited = strings.Replace(edited, `"tool": "mlxconfig"`, `"tool": "mlx\u001b]0;owned\u0007config"`, 1)
	if edited == string(b) || !strings.Contains(edited, "forged") || !strings.Contains(edited, "owned") {
		t.Fatalf("the ledger is not as this test expects:\n%s", b)
	}
	if err := os.WriteFile(ledger, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h, "run/reboot-required.pkgs"), []byte("linux-image\x1b[31m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h, "run/reboot-required"), []byte("*** System restart required ***\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, out, errs := runCLI(t, "--sim", h, "status")
	if strings.ContainsAny(out, "\x1b\x07") || strings.Contains(out, "\n  ! forged line") ||
		!strings.Contains(out, `LINK_TYPE_P1=ETH\n  ! forged line\x1b[2J staged at `) || !strings.Contains(out, `with mlx\x1b]0;owned\x07config`) ||
		!strings.Contains(out, `(linux-image\x1b[31m)`) {
		t.Errorf("status of a hand-edited ledger:\n%q\nstderr:\n%s", out, errs)
	}
}
