package subnetmanager

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/internal/testlab/smlab"
	"github.com/rdmaform/rdmaform/internal/testlab/systemdlab"
)

// newRHELLabHost is a lab host laid out as RHEL's opensm package installs
// itself (testdata/rhel: the package's files), bound to node simHost: its
// opensm.service runs the package's opensm-launch, which sources the
// host's /etc/sysconfig/opensm and starts opensm with -p PRIORITY and -g
// GUID, in the lab's systemd manager. What stands in for RHEL's files:
//   - the unit runs a copy of the launcher whose absolute paths
//     (/etc/sysconfig/opensm, /etc/rdma, prog=/usr/sbin/opensm) are moved
//     under the host's root, nothing else of it changed (the root's
//     /usr/libexec/opensm-launch, which rdmaform reads, is the package's);
//   - prog is a wrapper that runs the real opensm (Debian's build, whose
//     compiled-in files are /etc/opensm/...) with RHEL's files under the
//     root (-F, -P), its log there, and the launcher's arguments after
//     them (opensm reads -F's file first, then the command line wins);
//   - the root's /usr/sbin/opensm, which rdmaform reads to tell the
//     layout, names RHEL's compiled-in partitions file, as RHEL's build
//     does (opensm.spec: --with-opensm-conf-sub-dir=rdma).
func newRHELLabHost(t *testing.T, f *smlab.Fabric, l *systemdlab.Lab, simHost string) *labHost {
	t.Helper()
	guid := f.PortGUID(t, simHost)
	root := t.TempDir()
	smlab.SysfsPort(t, root, guid)
	in := func(p string) string { return filepath.Join(root, p) }
	work := filepath.Join(f.Dir, "rhel-"+simHost)
	launch := strings.NewReplacer(
		"prog=/usr/sbin/opensm", "prog="+in("/usr/libexec/opensm-lab"),
		"/etc/sysconfig/opensm", in("/etc/sysconfig/opensm"),
		"/etc/rdma/", in("/etc/rdma")+"/",
	).Replace(readTestdata(t, "rhel/opensm.launch"))
	wrapper := fmt.Sprintf("#!/bin/sh\nexec %s -F %s -P %s -f %s -s 0 \"$@\"\n",
		smlab.OpenSM, in(RHEL.Conf), in(RHEL.Partitions), in("/var/log/opensm.log"))
	files := map[string]string{
		Binary:                           "RHEL's opensm build names its files:\x00" + RHEL.Partitions + "\x00" + RHEL.Conf + "\x00",
		Launcher:                         readTestdata(t, "rhel/opensm.launch"),
		"/usr/libexec/opensm-launch-lab": launch,
		"/usr/libexec/opensm-lab":        wrapper,
		SysconfigFile:                    readTestdata(t, "rhel/opensm.sysconfig"),
		RHEL.Partitions:                  readTestdata(t, "rhel/opensm.partitions"),
	}
	for p, body := range files {
		if err := os.MkdirAll(filepath.Dir(in(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(in(p), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{in("/var/log"), work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The package's opensm.service (Type=forking, ExecStart=the launcher),
	// with the simulator's environment; rdma.service, which it requires,
	// has no part here.
	unit := readTestdata(t, "rhel/opensm.service")
	unit = strings.NewReplacer(
		"Requires=rdma.service\n", "",
		"After=rdma.service\n", "",
		"ExecStart=/usr/libexec/opensm-launch", fmt.Sprintf("Environment=%s OSM_TMP_DIR=%s OSM_CACHE_DIR=%s\nWorkingDirectory=%s\nExecStart=/bin/bash %s",
			strings.Join(f.Env(simHost), " "), work, work, work, in("/usr/libexec/opensm-launch-lab")),
	).Replace(unit)
	l.AddUnit(t, "opensm.service", unit)
	return rootedLabHost(t, f, l, simHost, root, guid, "opensm.service", "sm lab RHEL "+simHost)
}

// TestLabRHELLauncher: on a host laid out as RHEL's package, the
// administrator's PRIORITY=15 in /etc/sysconfig/opensm is what the real
// opensm runs with (the launcher's -p); rdmaform sets PRIORITY and GUIDS
// there (subnet_manager[launcher]) for the spec's priority and port,
// restarts opensm.service, and the real opensm then runs on the port the
// spec names (its -g: sminfo shows that port's GUID) at the spec's
// priority, with the spec's partitions in every HCA's P_Key table. Apply,
// then plan is empty; opensm.conf names neither sm_priority nor guid.
func TestLabRHELLauncher(t *testing.T) {
	f := smlab.Start(t)
	l := systemdlab.Start(t)
	a := newRHELLabHost(t, f, l, "Hca1")
	g2 := f.PortGUID(t, "Hca2")
	short := "0x" + strings.TrimLeft(strings.TrimPrefix(a.guid, "0x"), "0")
	admin := strings.Replace(readTestdata(t, "rhel/opensm.sysconfig"), "#PRIORITY=15", "PRIORITY=15", 1)
	if err := a.FS.WriteFile(SysconfigFile, []byte(admin), 0o644); err != nil {
		t.Fatal(err)
	}
	a.start(t)
	f.WaitSMInfo(t, "Hca3", regexp.MustCompile(`sm guid `+short+`, .* priority 15 state 3 SMINFO_MASTER`), 30*time.Second)

	src := strings.Replace(partitionsSpec(4, []string{a.guid}, []string{g2}), "  priority: 4\n", "  priority: 4\n  port: {device: ibsim0, port: 1}\n", 1)
	a.applyOnPort(t, f, src, []string{
		"subnet_manager[launcher] update: PRIORITY GUIDS opensm.service",
		"subnet_manager[opensm.conf] create: sminfo_polling_timeout polling_retry_number opensm",
		"subnet_manager[partitions.conf] update: partition Default partition storage",
	})
	if b, _ := a.FS.ReadFile(SysconfigFile); !strings.Contains(string(b), "\nPRIORITY=4\n") || !strings.HasSuffix(string(b), "\nGUIDS="+a.guid+"\n") || strings.Contains(string(b), "\nPRIORITY=15") {
		t.Errorf("%s:\n%s", SysconfigFile, b)
	}
	if b, _ := a.FS.ReadFile(RHEL.Conf); strings.Contains(string(b), "sm_priority") || strings.Contains(string(b), "guid") {
		t.Errorf("%s names what the launcher's command line overrides:\n%s", RHEL.Conf, b)
	}
	if got := a.audit(t, src); len(got) != 0 {
		t.Errorf("audit after apply: %v", got)
	}
}

// TestLabRHELWithoutOptions: on the RHEL layout a spec without options
// has nothing for opensm.conf (the launcher's -p and -g carry the
// priority and the port): no file is made, and the real opensm, started
// by the package's launcher with no opensm.conf at all, runs on the
// spec's port at the spec's priority with the spec's partitions. Apply,
// then plan is empty.
func TestLabRHELWithoutOptions(t *testing.T) {
	f := smlab.Start(t)
	l := systemdlab.Start(t)
	a := newRHELLabHost(t, f, l, "Hca1")
	a.start(t)
	src := strings.NewReplacer(
		"  options: {sminfo_polling_timeout: 500, polling_retry_number: 2}\n", "",
		"  priority: 4\n", "  priority: 4\n  port: {device: ibsim0, port: 1}\n",
	).Replace(partitionsSpec(4, []string{a.guid}, []string{f.PortGUID(t, "Hca2")}))
	a.applyOnPort(t, f, src, []string{
		"subnet_manager[launcher] update: PRIORITY GUIDS opensm.service",
		"subnet_manager[partitions.conf] update: partition Default partition storage",
	})
	if b, err := a.FS.ReadFile(RHEL.Conf); err == nil {
		t.Errorf("%s written with nothing in it:\n%s", RHEL.Conf, b)
	}
}

// applyOnPort plans a partitionsSpec at priority 4 with Hca2 a limited
// member of storage, wants the plan, applies it, then plans empty, and
// sees the real opensm run it: master on the host's port at priority 4,
// and Hca2's P_Key table.
func (h *labHost) applyOnPort(t *testing.T, f *smlab.Fabric, src string, want []string) {
	t.Helper()
	if got := summary(h.plan(t, src)); !cmp.Equal(got, want) {
		t.Errorf("plan (-want +got):\n%s", cmp.Diff(want, got))
	}
	h.applyThenEmpty(t, src)
	short := "0x" + strings.TrimLeft(strings.TrimPrefix(h.guid, "0x"), "0")
	f.WaitSMInfo(t, "Hca3", regexp.MustCompile(`sm guid `+short+`, .* priority 4 state 3 SMINFO_MASTER`), 30*time.Second)
	if got := firstRow(t, f, "Hca2"); got != "0: 0xffff 0x0002 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000" {
		t.Errorf("Hca2 P_Keys: %q", got)
	}
}
