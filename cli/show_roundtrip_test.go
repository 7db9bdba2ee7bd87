package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// TestShowRoundTripEveryProfile: on every simulated host profile
// (ConnectX-3 included), what show captures passes validate, with the
// firmware parameter database when it is installed, and plans nothing;
// also with firmware parameters named that some adapters lack (an
// Ethernet-only ConnectX-5 has no LINK_TYPE_Pn): those are left out of
// that adapter and noted on stderr and in the YAML, not an error.
func TestShowRoundTripEveryProfile(t *testing.T) {
	for _, prof := range sim.ProfileNames() {
		for _, fw := range []string{"", "LINK_TYPE_P1,LINK_TYPE_P2,SRIOV_EN,NUM_OF_VFS,NO_SUCH_PARAM"} {
			t.Run(prof+"/"+map[bool]string{true: "default", false: "named"}[fw == ""], func(t *testing.T) {
				dir := t.TempDir()
				h := filepath.Join(dir, "host")
				if code, _, errs := runCLI(t, "sim", "new", h, "--profile", prof); code != 0 {
					t.Fatalf("sim new: %s", errs)
				}
				args := []string{"--sim", h, "show"}
				if fw != "" {
					args = append(args, "--firmware", fw)
				}
				code, out, errs := runCLI(t, args...)
				hasTool := !strings.Contains(errs, "no firmware configuration tool")
				adapters := strings.Contains(out, "- pci: ")
				switch {
				case fw != "" && !hasTool:
					// Named parameters and no tool to read them: an error,
					// the rest still captured.
					if code != 1 {
						t.Fatalf("show --firmware without a tool: exit %d\n%s", code, errs)
					}
				case code != 0:
					t.Fatalf("show: exit %d\n%s", code, errs)
				case fw != "" && adapters && (!strings.Contains(errs, "rdmaform: note: device pci ") || !strings.Contains(errs, "no NO_SUCH_PARAM on this adapter")):
					t.Errorf("show --firmware: no note for the parameter the adapters lack:\n%s", errs)
				case fw != "" && adapters && (!strings.Contains(out, "left out: ") || !strings.Contains(out, "no NO_SUCH_PARAM on this adapter")):
					t.Errorf("show --firmware: the YAML does not say what was left out:\n%s", out)
				}
				file := filepath.Join(dir, "captured.yaml")
				if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
				if code, vout, verrs := runCLI(t, "validate", "-f", file); code != 0 {
					t.Fatalf("validate of the capture: exit %d\n%s%s\n%s", code, vout, verrs, out)
				}
				if code, pout, perrs := runCLI(t, "--sim", h, "plan", "-f", file); code != 0 {
					t.Errorf("plan of the capture: exit %d\n%s%s\n%s", code, pout, perrs, out)
				}
			})
		}
	}
}

// TestPlanJSONUnsupportedParameter: a firmware parameter the adapter lacks
// ("-E- The Device doesn't support X parameter", exit 3 from the tool) is
// in plan -o json's errors at its spec position, plan exits 1, and the
// adapter's other parameter and the other adapter are still in changes.
func TestPlanJSONUnsupportedParameter(t *testing.T) {
	st, err := sim.NewState("gpu-node", "node1", 2)
	if err != nil {
		t.Fatal(err)
	}
	st.Faults = []sim.Fault{{Tool: "mlxconfig", Match: "-d 0000:10:00.0 -e q SRIOV_EN INTERNAL_CPU_OFFLOAD_ENGINE", Exit: 3,
		Stdout: "-E- The Device doesn't support INTERNAL_CPU_OFFLOAD_ENGINE parameter\n"}}
	dir := t.TempDir()
	h := filepath.Join(dir, "host")
	if _, err := sim.Create(h, st); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "fw.yaml")
	if err := os.WriteFile(spec, []byte("version: 1\ndevices:\n  - pci: \"0000:10:00.0\"\n    firmware:\n      params:\n        SRIOV_EN: true\n        INTERNAL_CPU_OFFLOAD_ENGINE: DISABLED\n  - pci: \"0000:20:00.0\"\n    firmware:\n      params:\n        SRIOV_EN: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "--sim", h, "plan", "-o", "json", "-f", spec)
	if code != 1 {
		t.Fatalf("plan: exit %d, want 1\n%s%s", code, out, errs)
	}
	var doc struct {
		Changes []struct {
			Address string `json:"address"`
		} `json:"changes"`
		Errors []struct {
			Path    string `json:"path"`
			Message string `json:"message"`
			Source  struct {
				Line int `json:"line"`
				Col  int `json:"col"`
			} `json:"source"`
		} `json:"errors"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc.Errors) != 1 || doc.Errors[0].Path != "$.devices[0].firmware.params.INTERNAL_CPU_OFFLOAD_ENGINE" ||
		doc.Errors[0].Source.Line != 7 || !strings.Contains(doc.Errors[0].Message, "The Device doesn't support INTERNAL_CPU_OFFLOAD_ENGINE parameter") {
		t.Errorf("errors: %+v", doc.Errors)
	}
	var addrs []string
	for _, c := range doc.Changes {
		addrs = append(addrs, c.Address)
	}
	if strings.Join(addrs, " ") != "firmware[0000:10:00.0] firmware[0000:20:00.0]" {
		t.Errorf("changes: %v, want both adapters", addrs)
	}
}

// TestShowSubnetManagerPort: the port a subnet manager is bound to is in
// what show captures, as port: {device, port}, on each layout (Debian's
// PORTS, RHEL's launcher's GUIDS, opensm.conf's guid without a
// launcher), and planning the capture changes nothing. A host whose
// opensm is installed and bound to no port (Debian's PORTS=ALL) shows no
// subnet_manager section at all.
func TestShowSubnetManagerPort(t *testing.T) {
	const src = "version: 1\nsubnet_manager:\n  priority: 5\n  port: {device: mlx5_1, port: 1}\n"
	for _, layout := range []string{"debian", "rhel", "rhel-no-launcher"} {
		t.Run(layout, func(t *testing.T) {
			s, h := simtest.New(t, "cx6-vpi-ib", 0, func(st *sim.State) {
				st.OpenSM = &sim.OpenSMState{Layout: strings.TrimSuffix(layout, "-no-launcher"), NoLauncher: strings.HasSuffix(layout, "-no-launcher")}
				st.Tools = append(st.Tools, "sminfo")
			})
			dir := s.Dir
			if err := h.Systemd.Start(context.Background(), "opensm.service"); err != nil {
				t.Fatal(err)
			}
			shown := func() map[string]any {
				t.Helper()
				code, out, errs := runCLI(t, "--sim", dir, "show")
				if code != 0 {
					t.Fatalf("show: exit %d\n%s", code, errs)
				}
				var doc map[string]any
				if err := yaml.Unmarshal([]byte(out), &doc); err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
				sm, _ := doc["subnet_manager"].(map[string]any)
				return sm
			}
			if sm := shown(); layout == "debian" && sm != nil {
				t.Errorf("show before apply, opensm bound to no port: subnet_manager %v, want none", sm)
			}
			spec := filepath.Join(t.TempDir(), "sm.yaml")
			if err := os.WriteFile(spec, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			if code, out, errs := runCLI(t, "--sim", dir, "apply", "--yes", "-f", spec); code != 0 {
				t.Fatalf("apply: exit %d\n%s%s", code, out, errs)
			}
			code, out, errs := runCLI(t, "--sim", dir, "show")
			if code != 0 {
				t.Fatalf("show: exit %d\n%s", code, errs)
			}
			sm := shown()
			if port, _ := sm["port"].(map[string]any); port["device"] != "mlx5_1" || port["port"] != 1 {
				t.Errorf("show: subnet_manager %v, want port: {device: mlx5_1, port: 1}\n%s", sm, out)
			}
			captured := filepath.Join(t.TempDir(), "captured.yaml")
			if err := os.WriteFile(captured, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Changes []struct {
					Address string `json:"address"`
				} `json:"changes"`
			}
			pout := runJSON(t, "", 0, "--sim", dir, "plan", "-o", "json", "-f", captured)
			if err := json.Unmarshal([]byte(pout), &doc); err != nil || len(doc.Changes) != 0 {
				t.Errorf("plan of the capture: %v, %v; want no change\n%s", doc.Changes, err, out)
			}
		})
	}
}
