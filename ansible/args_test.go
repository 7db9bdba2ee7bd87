package ansible

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name string
		json string
		want Args
		err  string // a substring of the error; "" for none
	}{
		{
			name: "playbook types",
			json: `{"spec": "/etc/rdmaform.yaml", "state": "planned", "allow_firmware": true, "confirm_timeout": 300, "_ansible_check_mode": true, "_ansible_diff": false, "_ansible_verbosity": 2}`,
			want: Args{Spec: "/etc/rdmaform.yaml", State: Planned, AllowFirmware: true, ConfirmTimeout: 300 * time.Second, CheckMode: true},
		},
		{
			name: "k=v strings",
			json: `{"content": "version: 1", "allow_firmware": "yes", "confirm_timeout": "2m", "sim": "/tmp/h", "_ansible_diff": "True"}`,
			want: Args{Content: "version: 1", AllowFirmware: true, ConfirmTimeout: 2 * time.Minute, Sim: "/tmp/h", Diff: true},
		},
		{
			name: "false spellings",
			json: `{"spec": "s", "allow_firmware": "No", "_ansible_check_mode": 0, "_ansible_diff": "off"}`,
			want: Args{Spec: "s"},
		},
		{
			name: "one and seconds as strings",
			json: `{"spec": "s", "allow_firmware": "1", "confirm_timeout": "90"}`,
			want: Args{Spec: "s", AllowFirmware: true, ConfirmTimeout: 90 * time.Second},
		},
		{
			name: "content as a mapping",
			json: `{"content": {"version": 1, "modules": ["rdma_ucm"]}}`,
			want: Args{Content: `{"modules":["rdma_ucm"],"version":1}`},
		},
		{
			name: "nulls are not given",
			json: `{"spec": "s", "content": null, "state": null, "allow_firmware": null, "root": null}`,
			want: Args{Spec: "s"},
		},
		{
			name: "confirmed needs no spec",
			json: `{"state": "confirmed", "sim": "/tmp/h"}`,
			want: Args{State: Confirmed, Sim: "/tmp/h"},
		},
		{
			name: "facts needs no spec",
			json: `{"state": "facts", "sim": "/tmp/h"}`,
			want: Args{State: Facts, Sim: "/tmp/h"},
		},
		{name: "neither spec nor content", json: `{"state": "applied"}`, err: "give spec"},
		{name: "both", json: `{"spec": "s", "content": "c"}`, err: "mutually exclusive"},
		{name: "root and sim", json: `{"spec": "s", "root": "/a", "sim": "/b"}`, err: "root and sim are mutually exclusive"},
		{name: "bad state", json: `{"spec": "s", "state": "present"}`, err: `state: must be applied, planned, confirmed, facts or activated, not "present"`},
		{name: "bad bool", json: `{"spec": "s", "allow_firmware": "maybe"}`, err: `allow_firmware: must be a boolean`},
		{name: "bool as 2", json: `{"spec": "s", "allow_firmware": 2}`, err: `allow_firmware: must be a boolean`},
		{name: "bad duration", json: `{"spec": "s", "confirm_timeout": "soon"}`, err: `confirm_timeout: "soon" is not a duration`},
		{name: "negative duration", json: `{"spec": "s", "confirm_timeout": "-5s"}`, err: `confirm_timeout: must not be negative`},
		{name: "spec not a string", json: `{"spec": ["a"]}`, err: "spec: must be a string, not a list"},
		{name: "unknown keys", json: `{"spec": "s", "statе": "x", "force": true}`, err: "unsupported parameters: force, statе"},
		{name: "not an object", json: `["spec"]`, err: "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseArgs([]byte(tt.json))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseArgsReportsEveryProblem: one run names every bad argument.
func TestParseArgsReportsEveryProblem(t *testing.T) {
	_, err := ParseArgs([]byte(`{"state": "x", "allow_firmware": "maybe", "extra": 1}`))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"state:", "allow_firmware:", "unsupported parameters: extra", "give spec"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
}
