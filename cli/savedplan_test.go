package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/plan"
)

// TestSavedPlanIsExact: a saved plan whose spec was edited and its spec
// digest recomputed, one made by another rdmaform, and one with an empty
// identity (each with the body digest recomputed, as a careful forger
// would) are refused with a clear reason, exit 1, nothing changed; the
// untouched file applies.
func TestSavedPlanIsExact(t *testing.T) {
	dir := t.TempDir()
	h := filepath.Join(dir, "host")
	if code, _, errs := runCLI(t, "sim", "new", h, "--profile", "cx5-roce"); code != 0 {
		t.Fatalf("sim new: %s", errs)
	}
	spec := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(spec, []byte("version: 1\ndevices:\n  - name: mlx5_0\n    ports:\n      - port: 1\n        roce: {tos: 106}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.json")
	if code, _, errs := runCLI(t, "--sim", h, "plan", "-f", spec, "--out", good); code != 2 {
		t.Fatalf("plan --out: exit %d %s", code, errs)
	}
	load := func() map[string]any {
		b, err := os.ReadFile(good)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	write := func(name string, m map[string]any, resign bool) string {
		if resign {
			m["digest"] = ""
			b, _ := json.Marshal(m)
			// The body digest is over the Go encoding of the same fields;
			// re-encode through the type to get the same bytes.
			var s plan.Saved
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatal(err)
			}
			b, _ = json.Marshal(&s)
			m["digest"] = plan.Digest(b)
		}
		b, _ := json.MarshalIndent(m, "", "  ")
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	cases := map[string]struct {
		edit func(m map[string]any)
		why  string
	}{
		"spec edited, its digest recomputed": {func(m map[string]any) {
			sp := m["spec"].(map[string]any)
			sp["content"] = strings.Replace(sp["content"].(string), "106", "107", 1)
			sp["digest"] = plan.Digest([]byte(sp["content"].(string)))
		}, "saved plan was changed after it was made"},
		"another rdmaform": {func(m map[string]any) {
			m["rdmaform"].(map[string]any)["version"] = "0.0.1"
			m["resign"] = true
		}, "the plan was made by rdmaform 0.0.1"},
		"empty identity": {func(m map[string]any) {
			hs := m["host"].(map[string]any)
			hs["hostname"] = ""
			m["resign"] = true
		}, "saved plan records no host identity"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			m := load()
			c.edit(m)
			resign := m["resign"] == true
			delete(m, "resign")
			f := write(strings.ReplaceAll(name, " ", "-")+".json", m, resign)
			code, out, errs := runCLI(t, "--sim", h, "apply", f)
			if code != 1 || !strings.Contains(errs, c.why) || !strings.Contains(errs, "nothing was changed") {
				t.Errorf("exit %d, want 1 saying %q and nothing was changed:\n%s%s", code, c.why, out, errs)
			}
			if code, _, _ := runCLI(t, "--sim", h, "plan", "-f", spec); code != 2 {
				t.Errorf("the host changed: plan exit %d", code)
			}
		})
	}
	if code, _, errs := runCLI(t, "--sim", h, "apply", good, "-f", good); code != 1 || !strings.Contains(errs, "not both") {
		t.Errorf("apply PLAN -f PLAN: exit %d %s", code, errs)
	}
	if code, out, errs := runCLI(t, "--sim", h, "apply", good); code != 0 {
		t.Errorf("the untouched plan: exit %d\n%s%s", code, out, errs)
	}
}
