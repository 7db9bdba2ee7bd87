package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func realStatus(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/status")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestParseRealStatus: the real status of an image base (testdata/README.md)
// gives every installed package, with the source package where dpkg names
// one: "Source: glibc" (a name only), "Source: bash (5.2.15-2)" (a binNMU's
// source version).
func TestParseRealStatus(t *testing.T) {
	data := realStatus(t)
	pkgs, err := ParseStatus(data)
	if err != nil {
		t.Fatal(err)
	}
	if want := bytes.Count(data, []byte("\nPackage: ")) + 1; len(pkgs) != want {
		t.Errorf("%d packages, the file has %d paragraphs", len(pkgs), want)
	}
	by := map[string]Package{}
	for _, p := range pkgs {
		by[p.Name] = p
	}
	for name, want := range map[string]Package{
		"bash":     {Name: "bash", Version: "5.2.15-2+b13", Arch: "amd64", SourceVersion: "5.2.15-2"},
		"libc6":    {Name: "libc6", Version: "2.36-9+deb12u14", Arch: "amd64", Source: "glibc"},
		"mstflint": {Name: "mstflint", Version: "4.21.0+1-1", Arch: "amd64"},
		"adduser":  {Name: "adduser", Version: "3.134", Arch: "all"},
	} {
		if got := by[name]; got != want {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
	for i := 1; i < len(pkgs); i++ {
		if pkgs[i-1].Name > pkgs[i].Name {
			t.Fatalf("not sorted: %s before %s", pkgs[i-1].Name, pkgs[i].Name)
		}
	}
}

// TestParseStatusSkipsNotInstalled: a package dpkg removed but whose
// configuration stays ("deinstall ok config-files", no Version needed) is
// not in the image's list.
func TestParseStatusSkipsNotInstalled(t *testing.T) {
	in := "Package: a\nStatus: install ok installed\nArchitecture: all\nVersion: 1\n\n" +
		"Package: b\nStatus: deinstall ok config-files\nArchitecture: amd64\n\n"
	pkgs, err := ParseStatus([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 1 || pkgs[0].Name != "a" {
		t.Errorf("%+v, want only a", pkgs)
	}
}

// TestParseStatusErrors: what the SBOM cannot trust is an error naming
// the line of the paragraph, never a package list with a hole.
func TestParseStatusErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Package: a\nStatus: install ok installed\nArchitecture: all\n", "line 1: a paragraph without Version"},
		{"Package: a\nStatus: install ok installed\nArchitecture: all\nVersion: 1\n\nPackage: b\nStatus: install ok installed\nVersion: 2\n", "line 6: a paragraph without Architecture"},
		{"Status: install ok installed\nArchitecture: all\nVersion: 1\n", "line 1: a paragraph without Package"},
		{"Package: a\nStatus: install ok installed\nArchitecture: all\nVersion: 1\nSource: b 1.0\n", `line 1: Source "b 1.0": want NAME or NAME (VERSION)`},
		{" continued\n", "line 1: a continuation line outside a paragraph"},
		{"Package: a\nnot a field\n", `line 2: "not a field" is not a field`},
		{"\n\n", "no installed package"},
	} {
		_, err := ParseStatus([]byte(c.in))
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
}

func tarOf(t *testing.T, files map[string]string, typ byte) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for name, body := range files {
		h := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: typ}
		if typ != tar.TypeReg {
			h.Size, h.Linkname = 0, "elsewhere"
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			tw.Write([]byte(body))
		}
	}
	tw.Close()
	return b.Bytes()
}

// TestStatusFromTar: the status is found as mmdebstrap writes members
// (./var/lib/dpkg/status) and without the ./; a missing one or a link in
// its place is named.
func TestStatusFromTar(t *testing.T) {
	for _, name := range []string{"./var/lib/dpkg/status", "var/lib/dpkg/status"} {
		got, err := StatusFromTar(bytes.NewReader(tarOf(t, map[string]string{"./etc/hostname": "x", name: "Package: a\n"}, tar.TypeReg)))
		if err != nil || string(got) != "Package: a\n" {
			t.Errorf("%s: %q, %v", name, got, err)
		}
	}
	if _, err := StatusFromTar(bytes.NewReader(tarOf(t, map[string]string{"./var/lib/dpkg/status-old": "x"}, tar.TypeReg))); err == nil || !strings.Contains(err.Error(), "no var/lib/dpkg/status") {
		t.Errorf("missing: %v", err)
	}
	if _, err := StatusFromTar(bytes.NewReader(tarOf(t, map[string]string{"./var/lib/dpkg/status": ""}, tar.TypeSymlink))); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("symlink: %v", err)
	}
}

// TestDocument: the SPDX document holds the image and every package, each
// with its purl (an epoch's ':' and a '+' percent-encoded), the image
// CONTAINS each, and identifiers are unique and of SPDX's characters.
func TestDocument(t *testing.T) {
	pkgs := []Package{
		{Name: "libstdc++6", Version: "12.2.0-14+deb12u1", Arch: "amd64", Source: "gcc-12"},
		{Name: "perl-base", Version: "5.36.0-7+deb12u2", Arch: "amd64", Source: "perl"},
		{Name: "libsystemd0", Version: "1:252.39-1~deb12u1", Arch: "amd64", Source: "systemd"},
	}
	data, err := json.Marshal(Document("rdmaform-agent", "1.2.3", "amd64", "2026-01-01T00:00:00Z", "sha256:ab12", pkgs))
	if err != nil {
		t.Fatal(err)
	}
	var doc spdxDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || doc.DocumentNamespace != "https://rdmaform.io/spdx/rdmaform-agent/1.2.3/amd64/ab12" {
		t.Errorf("header: %+v", doc)
	}
	if len(doc.Packages) != 4 || len(doc.Relationships) != 4 {
		t.Fatalf("%d packages, %d relationships", len(doc.Packages), len(doc.Relationships))
	}
	ids := map[string]bool{}
	for _, p := range doc.Packages {
		rest, ok := strings.CutPrefix(p.SPDXID, "SPDXRef-")
		if ids[p.SPDXID] || !ok || strings.Trim(rest, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-") != "" {
			t.Errorf("identifier %q: repeated or not SPDX's", p.SPDXID)
		}
		ids[p.SPDXID] = true
	}
	if got := doc.Packages[1].SPDXID; got != "SPDXRef-deb-libstdc--6-amd64" {
		t.Errorf("identifier %s", got)
	}
	if got, want := doc.Packages[1].ExternalRefs[0].ReferenceLocator, "pkg:deb/debian/libstdc%2B%2B6@12.2.0-14%2Bdeb12u1?arch=amd64&distro=debian-12&upstream=gcc-12"; got != want {
		t.Errorf("purl %s, want %s", got, want)
	}
	if got, want := doc.Packages[3].ExternalRefs[0].ReferenceLocator, "pkg:deb/debian/libsystemd0@1%3A252.39-1~deb12u1?arch=amd64&distro=debian-12&upstream=systemd"; got != want {
		t.Errorf("purl %s, want %s", got, want)
	}
	for _, r := range doc.Relationships[1:] {
		if r.Element != "SPDXRef-Image" || r.Type != "CONTAINS" || !ids[r.Related] {
			t.Errorf("relationship %+v", r)
		}
	}
}

// TestTagDigest: the manifest a tag names in index.json; none, or two,
// is an error.
func TestTagDigest(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(dir, "index.json"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := func(d, tag string) string {
		return `{"digest":"` + d + `","annotations":{"org.opencontainers.image.ref.name":"` + tag + `"}}`
	}
	write(`{"schemaVersion":2,"manifests":[` + m("sha256:aa", "1.0") + `,` + m("sha256:bb", "2.0") + `]}`)
	if d, err := TagDigest(dir, "2.0"); err != nil || d != "sha256:bb" {
		t.Errorf("2.0: %s, %v", d, err)
	}
	if _, err := TagDigest(dir, "3.0"); err == nil || !strings.Contains(err.Error(), `0 manifests tagged "3.0"`) {
		t.Errorf("3.0: %v", err)
	}
	write(`{"schemaVersion":2,"manifests":[` + m("sha256:aa", "1.0") + `,` + m("sha256:bb", "1.0") + `]}`)
	if _, err := TagDigest(dir, "1.0"); err == nil || !strings.Contains(err.Error(), `2 manifests tagged "1.0"`) {
		t.Errorf("twice: %v", err)
	}
}
