package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/internal/testlab/fstree"
	"github.com/rdmaform/rdmaform/plan"
)

// TestSavedPlanIsExact: a saved plan whose spec was edited and its spec
// digest recomputed, one whose change was edited or removed, one made by
// another rdmaform version or commit, and one with an empty identity
// (each with the body digest recomputed, as a careful forger would: the
// digest is unkeyed), and one cut short, are refused with a clear reason,
// exit 1, nothing changed; the untouched file applies.
func TestSavedPlanIsExact(t *testing.T) {
	dir := t.TempDir()
	h, spec, good := savedPlanOn(t, dir, "version: 1\ndevices:\n  - name: mlx5_0\n    ports:\n      - port: 1\n        roce: {tos: 106}\n")
	write := func(name string, m map[string]any, again bool) string {
		if again {
			resign(t, m)
		}
		return writeSaved(t, filepath.Join(dir, name), m)
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
		"a change edited, the digest recomputed": {func(m map[string]any) {
			ch := m["plan"].(map[string]any)["changes"].([]any)[0].(map[string]any)
			ch["attributes"].([]any)[0].(map[string]any)["after"] = 107
			m["resign"] = true
		}, "the spec in the plan no longer gives the changes it records on this host (the host changed since the plan was made, or the plan was edited); first difference: rdma_cm[mlx5_0/1] tos: the plan records 0 -> 107, the spec gives 0 -> 106 (differing: rdma_cm[mlx5_0/1])"},
		"a change removed, the digest recomputed": {func(m map[string]any) {
			m["plan"].(map[string]any)["changes"] = []any{}
			m["resign"] = true
		}, "first difference: rdma_cm[mlx5_0/1]: the plan records no change, the spec gives update"},
		"another rdmaform commit": {func(m map[string]any) {
			m["rdmaform"].(map[string]any)["commit"] = "0123456789ab"
			m["resign"] = true
		}, " (0123456789ab), this is "},
		"empty identity": {func(m map[string]any) {
			hs := m["host"].(map[string]any)
			hs["hostname"] = ""
			m["resign"] = true
		}, "saved plan records no host identity"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			m := loadSaved(t, good)
			c.edit(m)
			resign := m["resign"] == true
			delete(m, "resign")
			f := write(strings.ReplaceAll(name, " ", "-")+".json", m, resign)
			before := simTreeButLock(t, h)
			code, out, errs := runCLI(t, "--sim", h, "apply", f)
			if code != 1 || !strings.Contains(errs, c.why) || !strings.Contains(errs, "nothing was changed") {
				t.Errorf("exit %d, want 1 saying %q and nothing was changed:\n%s%s", code, c.why, out, errs)
			}
			if diff := cmp.Diff(before, simTreeButLock(t, h)); diff != "" {
				t.Errorf("a refused apply changed the host (-before +after):\n%s", diff)
			}
			if code, _, _ := runCLI(t, "--sim", h, "plan", "-f", spec); code != 2 {
				t.Errorf("the host changed: plan exit %d", code)
			}
		})
	}
	t.Run("cut short", func(t *testing.T) {
		b, err := os.ReadFile(good)
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, "cut.json")
		if err := os.WriteFile(f, b[:len(b)*2/3], 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errs := runCLI(t, "--sim", h, "apply", f)
		if code != 1 || !strings.Contains(errs, "saved plan is damaged (cut short?)") || !strings.Contains(errs, "nothing was changed") {
			t.Errorf("exit %d, want 1 saying it is damaged:\n%s%s", code, out, errs)
		}
		if code, _, _ := runCLI(t, "--sim", h, "plan", "-f", spec); code != 2 {
			t.Errorf("the host changed: plan exit %d", code)
		}
	})
	if code, _, errs := runCLI(t, "--sim", h, "apply", good, "-f", good); code != 1 || !strings.Contains(errs, "not both") {
		t.Errorf("apply PLAN -f PLAN: exit %d %s", code, errs)
	}
	if code, out, errs := runCLI(t, "--sim", h, "apply", good); code != 0 {
		t.Errorf("the untouched plan: exit %d\n%s%s", code, out, errs)
	}
}

// TestSavedPlanOnItsMachineOnly: a plan made on one machine is refused on
// another machine of the same hostname (machine-id), and on its own
// machine once an adapter's firmware version changed; each refusal says
// why and changes nothing, and the plan applies once the host is as it was.
func TestSavedPlanOnItsMachineOnly(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(spec, []byte("version: 1\ndevices:\n  - name: mlx5_0\n    ports:\n      - port: 1\n        roce: {tos: 106}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hosts := map[string]string{"a": "4f1e0c2a9b7d4e3f8a6b5c4d3e2f1a0b", "b": "0b1a2f3e4d5c6b7a8f3e4d7b9a2c0e1f"}
	for name, id := range hosts {
		h := filepath.Join(dir, name)
		if code, _, errs := runCLI(t, "sim", "new", h, "--profile", "cx5-roce", "--hostname", "node7"); code != 0 {
			t.Fatalf("sim new: %s", errs)
		}
		if err := os.MkdirAll(filepath.Join(h, "etc"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(h, "etc/machine-id"), []byte(id+"\n"), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	saved := filepath.Join(dir, "a.plan")
	if code, _, errs := runCLI(t, "--sim", a, "plan", "-f", spec, "--out", saved); code != 2 {
		t.Fatalf("plan --out: exit %d %s", code, errs)
	}
	refused := func(h, why string) {
		t.Helper()
		before := simTreeButLock(t, h)
		code, out, errs := runCLI(t, "--sim", h, "apply", saved)
		if code != 1 || !strings.Contains(errs, "saved plan is stale, nothing was changed: "+why+"; run plan again") {
			t.Errorf("exit %d, want 1 saying %q:\n%s%s", code, why, out, errs)
		}
		if diff := cmp.Diff(before, simTreeButLock(t, h)); diff != "" {
			t.Errorf("a refused apply changed the host (-before +after):\n%s", diff)
		}
		if code, _, _ := runCLI(t, "--sim", h, "plan", "-f", spec); code != 2 {
			t.Errorf("the host changed: plan exit %d", code)
		}
	}
	refused(b, `different machine: the plan was made on machine-id "4f1e0c2a9b7d4e3f8a6b5c4d3e2f1a0b", this is "0b1a2f3e4d5c6b7a8f3e4d7b9a2c0e1f"`)

	// The kernel shows a flashed firmware's version in fw_ver once the
	// card runs it.
	fw := filepath.Join(a, "sys/devices/pci0000:00/0000:5e:00.1/infiniband/mlx5_1/fw_ver")
	was, err := os.ReadFile(fw)
	if err != nil {
		t.Fatal(err)
	}
	if string(was) != "16.35.2000\n" {
		t.Fatalf("mlx5_1's fw_ver is %q", was)
	}
	if err := os.WriteFile(fw, []byte("16.35.3000\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	refused(a, "adapters changed: mlx5_1 firmware 16.35.2000, now 16.35.3000")
	if err := os.WriteFile(fw, was, 0o444); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCLI(t, "--sim", a, "apply", saved); code != 0 {
		t.Errorf("on its host as it was: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "--sim", a, "plan", "-f", spec); code != 0 {
		t.Errorf("plan after apply: exit %d\n%s%s", code, out, errs)
	}
}

// TestSavedPlanOnlyRuntime: apply PLAN --only runtime applies the
// runtime changes the plan records and leaves the rest, as with a spec
// (it refused the plan, saying its changes differed); an edit of a
// runtime change is still refused, the host unchanged.
func TestSavedPlanOnlyRuntime(t *testing.T) {
	dir := t.TempDir()
	h, spec, saved := savedPlanOn(t, dir, "version: 1\nmodules: [rdma_ucm]\ndevices:\n  - name: mlx5_0\n    ports:\n      - port: 1\n        roce: {tos: 106}\n")
	// A copy whose runtime change says 107, its digest recomputed.
	m := loadSaved(t, saved)
	for _, c := range m["plan"].(map[string]any)["changes"].([]any) {
		if c := c.(map[string]any); c["address"] == "rdma_cm[mlx5_0/1]" {
			c["attributes"].([]any)[0].(map[string]any)["after"] = 107
		}
	}
	resign(t, m)
	forged := writeSaved(t, filepath.Join(dir, "forged.json"), m)
	before := simTreeButLock(t, h)
	code, out, errs := runCLI(t, "--sim", h, "apply", forged, "--only", "runtime")
	if code != 1 || !strings.Contains(errs, "first difference: rdma_cm[mlx5_0/1] tos: the plan records 0 -> 107, the spec gives 0 -> 106") {
		t.Errorf("forged, --only runtime: exit %d, want 1 naming the difference\n%s%s", code, out, errs)
	}
	if diff := cmp.Diff(before, simTreeButLock(t, h)); diff != "" {
		t.Errorf("a refused apply changed the host (-before +after):\n%s", diff)
	}

	code, out, errs = runCLI(t, "--sim", h, "apply", saved, "--only", "runtime")
	if code != 2 || !strings.Contains(out, "Apply: 1 applied") || !strings.Contains(out, "now: module[rdma_ucm]") {
		t.Errorf("apply PLAN --only runtime: exit %d, want 2 with the module left\n%s%s", code, out, errs)
	}
	code, out, _ = runCLI(t, "--sim", h, "plan", "-f", spec)
	if code != 2 || !strings.Contains(out, "module[rdma_ucm]") || strings.Contains(out, "rdma_cm[") {
		t.Errorf("after the partial apply, plan: exit %d, want the module alone\n%s", code, out)
	}
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 0 {
		t.Errorf("apply: exit %d\n%s%s", code, out, errs)
	}
	if code, out, _ := runCLI(t, "--sim", h, "plan", "-f", spec); code != 0 {
		t.Errorf("plan after apply: exit %d\n%s", code, out)
	}
}

// simTreeButLock is a simulated host's tree but the apply lock, which every
// apply takes, refused or not.
func simTreeButLock(t *testing.T, h string) map[string]string {
	t.Helper()
	s := fstree.Snapshot(t, h)
	// /run is made for the lock; what else is in it still counts.
	delete(s, "run")
	delete(s, "run/rdmaform.lock")
	return s
}

// savedPlanOn makes a simulated cx5-roce host in dir, writes specText
// there and saves its plan (plan --out exits 2: there is work to do).
func savedPlanOn(t *testing.T, dir, specText string) (h, spec, saved string) {
	t.Helper()
	h = filepath.Join(dir, "host")
	if code, _, errs := runCLI(t, "sim", "new", h, "--profile", "cx5-roce"); code != 0 {
		t.Fatalf("sim new: %s", errs)
	}
	spec = filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(spec, []byte(specText), 0o644); err != nil {
		t.Fatal(err)
	}
	saved = filepath.Join(dir, "saved.json")
	if code, _, errs := runCLI(t, "--sim", h, "plan", "-f", spec, "--out", saved); code != 2 {
		t.Fatalf("plan --out: exit %d %s", code, errs)
	}
	return h, spec, saved
}

// loadSaved reads a saved plan as a generic JSON document, to edit.
func loadSaved(t *testing.T, file string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// resign recomputes an edited saved plan's digest, as anyone can: it is
// unkeyed. The digest is over the Go encoding of the fields, so the
// document goes through plan.Saved to get the same bytes.
func resign(t *testing.T, m map[string]any) {
	t.Helper()
	m["digest"] = ""
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var s plan.Saved
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if b, err = json.Marshal(&s); err != nil {
		t.Fatal(err)
	}
	m["digest"] = plan.Digest(b)
}

// writeSaved writes a saved plan document to file.
func writeSaved(t *testing.T, file string, m map[string]any) string {
	t.Helper()
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}
