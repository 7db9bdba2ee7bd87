package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBootJob: the start job of an enabled unit of the tree is its
// ExecStartPre, ExecStart and ExecStartPost lines in that order, with the
// "-" prefix read and SuccessExitStatus added to 0; a unit that is not
// enabled, or not there, has none; a line the simulator cannot run as
// systemd would is refused with the unit's path.
func TestBootJob(t *testing.T) {
	const head = "[Unit]\nDescription=x\n\n[Service]\nType=oneshot\n"
	const install = "\n[Install]\nWantedBy=multi-user.target\n"
	tests := []struct {
		name    string
		unit    string
		enable  bool
		want    *StartJob
		wantErr string
	}{
		{name: "enabled", enable: true,
			unit: head + "ExecStart=/usr/sbin/rdmaform apply --yes\nExecStartPre=-/usr/sbin/rdmaform rollback --after-boot\nExecStartPost=+/bin/true\nSuccessExitStatus=2 3\n" + install,
			want: &StartJob{Unit: "x.service", Success: []int{0, 2, 3}, Exec: []ExecLine{
				{Key: "ExecStartPre", Line: "-/usr/sbin/rdmaform rollback --after-boot", Argv: []string{"/usr/sbin/rdmaform", "rollback", "--after-boot"}, IgnoreFailure: true},
				{Key: "ExecStart", Line: "/usr/sbin/rdmaform apply --yes", Argv: []string{"/usr/sbin/rdmaform", "apply", "--yes"}},
				{Key: "ExecStartPost", Line: "+/bin/true", Argv: []string{"/bin/true"}},
			}}},
		{name: "disabled", unit: head + "ExecStart=/usr/sbin/rdmaform apply\n" + install},
		{name: "absent"},
		{name: "quotes", enable: true, unit: head + "ExecStart=/bin/sh -c 'echo hi'\n" + install, wantErr: "x.service: ExecStart=/bin/sh -c 'echo hi': quotes"},
		{name: "relative", enable: true, unit: head + "ExecStart=rdmaform apply\n" + install, wantErr: "absolute path"},
		{name: "argv0", enable: true, unit: head + "ExecStart=@/usr/sbin/rdmaform rf apply\n" + install, wantErr: "@ prefix"},
		{name: "signal", enable: true, unit: head + "ExecStart=/usr/sbin/rdmaform apply\nSuccessExitStatus=SIGHUP\n" + install, wantErr: `not "SIGHUP"`},
		{name: "256", enable: true, unit: head + "ExecStart=/usr/sbin/rdmaform apply\nSuccessExitStatus=256\n" + install, wantErr: `not "256"`},
		{name: "255", enable: true, unit: head + "ExecStart=/usr/sbin/rdmaform apply\nSuccessExitStatus=255\n" + install,
			want: &StartJob{Unit: "x.service", Success: []int{0, 255}, Exec: []ExecLine{{Key: "ExecStart", Line: "/usr/sbin/rdmaform apply", Argv: []string{"/usr/sbin/rdmaform", "apply"}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := NewState("vm-soft", "vm", 0)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Create(t.TempDir(), st)
			if err != nil {
				t.Fatal(err)
			}
			if tt.unit != "" {
				writeTree(t, s.Dir, UnitDir+"/x.service", tt.unit)
			}
			if tt.enable {
				link := filepath.Join(s.Dir, wantsLink("multi-user.target", "x.service"))
				if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(UnitDir+"/x.service", link); err != nil {
					t.Fatal(err)
				}
			}
			job, err := s.BootJob("x.service")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("BootJob: %v, want an error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, job); d != "" {
				t.Errorf("BootJob (-want +got):\n%s", d)
			}
		})
	}
}

func writeTree(t *testing.T, root, p, content string) {
	t.Helper()
	f := filepath.Join(root, p)
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
