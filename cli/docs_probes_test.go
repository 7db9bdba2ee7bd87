package cli_test

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli"
)

// TestDocsProbeExamples runs the console block of docs/guides/audits-and-probes.md's
// "Proving a fabric: probes" section on simulated hosts: every command exits 0 and prints
// the lines shown ("..." stands for lines left out; round trips, which
// rdma_cm measures by the clock, are compared as "N ms").
func TestDocsProbeExamples(t *testing.T) {
	readme, err := os.ReadFile("../docs/guides/audits-and-probes.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	i := strings.Index(text, "\n## Proving a fabric: probes\n")
	if i < 0 {
		t.Fatal("docs/guides/audits-and-probes.md has no section \"Proving a fabric: probes\"")
	}
	section := text[i:]
	if end := strings.Index(section[1:], "\n## "); end >= 0 {
		section = section[:end+1]
	}
	start := strings.Index(section, "```console run\n")
	if start < 0 {
		t.Fatal("the probes section has no console block")
	}
	block := section[start+len("```console run\n"):]
	block = block[:strings.Index(block, "```")]

	tmp := t.TempDir()
	rtt := regexp.MustCompile(`\d+\.\d{3} ms`)
	mask := func(s string) string { return rtt.ReplaceAllString(s, "N ms") }
	type step struct {
		cmd  string
		want []string
	}
	var steps []step
	for _, l := range strings.Split(strings.TrimSuffix(block, "\n"), "\n") {
		if c, ok := strings.CutPrefix(l, "$ "); ok {
			steps = append(steps, step{cmd: c})
			continue
		}
		steps[len(steps)-1].want = append(steps[len(steps)-1].want, l)
	}
	if len(steps) < 6 {
		t.Fatalf("only %d commands in the block:\n%s", len(steps), block)
	}
	probed := false
	for _, s := range steps {
		args := strings.Fields(strings.ReplaceAll(s.cmd, "/tmp/", tmp+"/"))
		switch args[0] {
		case "cp":
			if len(args) != 4 || args[1] != "-r" {
				t.Fatalf("unexpected %q", s.cmd)
			}
			copyHost(t, args[2], args[3])
			continue
		case "bin/rdmaform":
		default:
			t.Fatalf("unexpected %q", s.cmd)
		}
		for j, a := range args {
			if strings.HasPrefix(a, "examples/") {
				args[j] = "../" + a
			}
		}
		var out bytes.Buffer
		code := cli.Run(args[1:], cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out, Environ: []string{"PATH=" + os.Getenv("PATH")}})
		got := strings.Split(strings.TrimSuffix(mask(out.String()), "\n"), "\n")
		if code != 0 || !linesMatch(got, s.want, mask) {
			t.Errorf("%s: exit %d\n%s\nwant:\n%s", s.cmd, code, out.String(), strings.Join(s.want, "\n"))
		}
		probed = probed || strings.Contains(s.cmd, " probe -f ")
	}
	if !probed {
		t.Error("the block runs no probe")
	}
}

// linesMatch: got is want, where a "..." line of want stands for any
// number of lines.
func linesMatch(got, want []string, mask func(string) string) bool {
	if len(want) == 0 {
		return true
	}
	if want[0] == "..." {
		for k := 0; k <= len(got); k++ {
			if linesMatch(got[k:], want[1:], mask) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && got[0] == mask(want[0]) && linesMatch(got[1:], want[1:], mask)
}
