// Command sbom is make image's helper: the image's package list as an
// SPDX 2.3 document, from the dpkg status inside the base layer's tarball,
// and the digest of the manifest an OCI layout's tag names.
//
//	sbom -name N -version V -arch A -created T -base BASE.tar -layout DIR -o OUT.spdx.json
//	sbom -digest -layout DIR -tag V
package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// statusPath is dpkg's database of installed packages, as a tar member
// of a root file system (mmdebstrap writes members as ./path).
const statusPath = "var/lib/dpkg/status"

// maxStatus bounds the status file read from the tarball: bookworm's
// whole archive installed would be far below it.
const maxStatus = 64 << 20

// Package is one installed Debian package.
type Package struct {
	Name, Version, Arch string
	// Source is the source package when it differs from Name, and
	// SourceVersion its version when it differs from Version (dpkg writes
	// "Source: NAME (VERSION)" then).
	Source, SourceVersion string
}

func main() {
	var o options
	flag.StringVar(&o.name, "name", "", "the image's name")
	flag.StringVar(&o.version, "version", "", "the image's version (its tag)")
	flag.StringVar(&o.arch, "arch", "", "the image's architecture (Debian's name)")
	flag.StringVar(&o.created, "created", "", "the document's creation time (RFC 3339, UTC)")
	flag.StringVar(&o.base, "base", "", "the base layer's tarball")
	flag.StringVar(&o.layout, "layout", "", "the OCI image layout directory")
	flag.StringVar(&o.tag, "tag", "", "with -digest: the tag whose manifest digest to print")
	flag.StringVar(&o.out, "o", "", "the SPDX document to write")
	digest := flag.Bool("digest", false, "print the manifest digest of -tag in -layout")
	flag.Parse()
	var err error
	if *digest {
		var d string
		if d, err = TagDigest(o.layout, o.tag); err == nil {
			fmt.Println(d)
		}
	} else {
		err = o.write()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sbom:", err)
		os.Exit(1)
	}
}

type options struct {
	name, version, arch, created, base, layout, tag, out string
}

func (o *options) write() error {
	for flagName, v := range map[string]string{"-name": o.name, "-version": o.version, "-arch": o.arch, "-created": o.created, "-base": o.base, "-layout": o.layout, "-o": o.out} {
		if v == "" {
			return fmt.Errorf("%s is required", flagName)
		}
	}
	f, err := os.Open(o.base)
	if err != nil {
		return err
	}
	defer f.Close()
	status, err := StatusFromTar(f)
	if err != nil {
		return fmt.Errorf("%s: %w", o.base, err)
	}
	pkgs, err := ParseStatus(status)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", o.base, statusPath, err)
	}
	d, err := TagDigest(o.layout, o.version)
	if err != nil {
		return err
	}
	doc := Document(o.name, o.version, o.arch, o.created, d, pkgs)
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(o.out, append(data, '\n'), 0o644)
}

// StatusFromTar reads dpkg's status file out of a root file system's
// tarball.
func StatusFromTar(r io.Reader) ([]byte, error) {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("no %s in the tarball", statusPath)
		}
		if err != nil {
			return nil, err
		}
		if strings.TrimPrefix(h.Name, "./") != statusPath {
			continue
		}
		if h.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("%s is not a regular file in the tarball", statusPath)
		}
		data, err := io.ReadAll(io.LimitReader(tr, maxStatus+1))
		if err != nil {
			return nil, err
		}
		if len(data) > maxStatus {
			return nil, fmt.Errorf("%s is larger than %d bytes", statusPath, maxStatus)
		}
		return data, nil
	}
}

// ParseStatus reads dpkg's status file (deb822 paragraphs, as dpkg's
// lib/dpkg/dump.c writes them): the packages whose Status is "install ok
// installed", sorted by name and architecture. A paragraph without a
// Package, Version or Architecture field is an error naming its line.
func ParseStatus(data []byte) ([]Package, error) {
	var pkgs []Package
	fields := map[string]string{}
	start, line := 0, 0
	flush := func() error {
		defer func() { fields = map[string]string{} }()
		if len(fields) == 0 {
			return nil
		}
		for _, k := range []string{"Package", "Status", "Version", "Architecture"} {
			if fields[k] == "" && !(k == "Version" && fields["Status"] != "install ok installed") {
				return fmt.Errorf("line %d: a paragraph without %s", start, k)
			}
		}
		if fields["Status"] != "install ok installed" {
			return nil
		}
		p := Package{Name: fields["Package"], Version: fields["Version"], Arch: fields["Architecture"]}
		if src := fields["Source"]; src != "" {
			name, ver, _ := strings.Cut(src, " ")
			if ver != "" {
				if !strings.HasPrefix(ver, "(") || !strings.HasSuffix(ver, ")") {
					return fmt.Errorf("line %d: Source %q: want NAME or NAME (VERSION)", start, src)
				}
				ver = ver[1 : len(ver)-1]
			}
			if name != p.Name {
				p.Source = name
			}
			if ver != "" && ver != p.Version {
				p.SourceVersion = ver
			}
		}
		pkgs = append(pkgs, p)
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line++
		text := sc.Text()
		switch {
		case strings.TrimSpace(text) == "":
			if err := flush(); err != nil {
				return nil, err
			}
		case text[0] == ' ' || text[0] == '\t':
			// A continuation line (Description, Conffiles): not needed.
			if len(fields) == 0 {
				return nil, fmt.Errorf("line %d: a continuation line outside a paragraph", line)
			}
		default:
			k, v, ok := strings.Cut(text, ":")
			if !ok {
				return nil, fmt.Errorf("line %d: %q is not a field", line, text)
			}
			if len(fields) == 0 {
				start = line
			}
			fields[k] = strings.TrimSpace(v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if len(pkgs) == 0 {
		return nil, errors.New("no installed package")
	}
	sort.Slice(pkgs, func(i, j int) bool {
		if pkgs[i].Name != pkgs[j].Name {
			return pkgs[i].Name < pkgs[j].Name
		}
		return pkgs[i].Arch < pkgs[j].Arch
	})
	return pkgs, nil
}

// The SPDX 2.3 document (spdx.github.io/spdx-spec/v2.3): the image is one
// package, which CONTAINS every Debian package, each with its purl
// (pkg:deb/debian/NAME@VERSION?arch=A&distro=debian-12).
type spdxDoc struct {
	SPDXVersion       string      `json:"spdxVersion"`
	DataLicense       string      `json:"dataLicense"`
	SPDXID            string      `json:"SPDXID"`
	Name              string      `json:"name"`
	DocumentNamespace string      `json:"documentNamespace"`
	CreationInfo      spdxCreated `json:"creationInfo"`
	Packages          []spdxPkg   `json:"packages"`
	Relationships     []spdxRel   `json:"relationships"`
}

type spdxCreated struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPkg struct {
	Name             string    `json:"name"`
	SPDXID           string    `json:"SPDXID"`
	VersionInfo      string    `json:"versionInfo"`
	Supplier         string    `json:"supplier,omitempty"`
	DownloadLocation string    `json:"downloadLocation"`
	FilesAnalyzed    bool      `json:"filesAnalyzed"`
	LicenseConcluded string    `json:"licenseConcluded"`
	LicenseDeclared  string    `json:"licenseDeclared"`
	CopyrightText    string    `json:"copyrightText"`
	SourceInfo       string    `json:"sourceInfo,omitempty"`
	Checksums        []spdxSum `json:"checksums,omitempty"`
	ExternalRefs     []spdxRef `json:"externalRefs,omitempty"`
}

type spdxSum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

type spdxRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type spdxRel struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

// Document is the SPDX document of an image: its name, version,
// architecture and manifest digest, and the packages it holds.
func Document(name, version, arch, created, digest string, pkgs []Package) any {
	const noAssertion = "NOASSERTION"
	image := "SPDXRef-Image"
	hexDigest := strings.TrimPrefix(digest, "sha256:")
	doc := spdxDoc{
		SPDXVersion: "SPDX-2.3",
		DataLicense: "CC0-1.0",
		SPDXID:      "SPDXRef-DOCUMENT",
		Name:        name + "-" + version + "-" + arch,
		// Unique per image: its manifest digest.
		DocumentNamespace: "https://rdmaform.io/spdx/" + name + "/" + version + "/" + arch + "/" + hexDigest,
		CreationInfo:      spdxCreated{Created: created, Creators: []string{"Tool: rdmaform-image-sbom-" + version}},
		Packages: []spdxPkg{{
			Name: name, SPDXID: image, VersionInfo: version, Supplier: "Organization: rdmaform",
			DownloadLocation: noAssertion, LicenseConcluded: noAssertion, LicenseDeclared: noAssertion, CopyrightText: noAssertion,
			Checksums: []spdxSum{{Algorithm: "SHA256", ChecksumValue: hexDigest}},
			ExternalRefs: []spdxRef{{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl",
				ReferenceLocator: "pkg:oci/" + name + "@" + strings.ReplaceAll(digest, ":", "%3A") + "?tag=" + version}},
		}},
		Relationships: []spdxRel{{Element: "SPDXRef-DOCUMENT", Type: "DESCRIBES", Related: image}},
	}
	for _, p := range pkgs {
		id := "SPDXRef-deb-" + spdxIDPart(p.Name) + "-" + spdxIDPart(p.Arch)
		sp := spdxPkg{
			Name: p.Name, SPDXID: id, VersionInfo: p.Version, Supplier: "Organization: Debian",
			DownloadLocation: noAssertion, LicenseConcluded: noAssertion, LicenseDeclared: noAssertion, CopyrightText: noAssertion,
			ExternalRefs: []spdxRef{{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl", ReferenceLocator: purl(p)}},
		}
		if p.Source != "" || p.SourceVersion != "" {
			src, ver := p.Source, p.SourceVersion
			if src == "" {
				src = p.Name
			}
			if ver == "" {
				ver = p.Version
			}
			sp.SourceInfo = "built from the Debian source package " + src + " " + ver
		}
		doc.Packages = append(doc.Packages, sp)
		doc.Relationships = append(doc.Relationships, spdxRel{Element: image, Type: "CONTAINS", Related: id})
	}
	return doc
}

// spdxIDPart keeps what an SPDX identifier allows (letters, digits, '.'
// and '-'); a Debian name's '+' becomes '-'.
func spdxIDPart(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '-'
	}, s)
}

// purl is a Debian package's package URL (github.com/package-url/purl-spec,
// type deb): the version's ':' (an epoch) and '+' percent-encoded.
func purl(p Package) string {
	esc := strings.NewReplacer("%", "%25", ":", "%3A", "+", "%2B")
	s := "pkg:deb/debian/" + esc.Replace(p.Name) + "@" + esc.Replace(p.Version) + "?arch=" + p.Arch + "&distro=debian-12"
	if p.Source != "" || p.SourceVersion != "" {
		src := p.Source
		if src == "" {
			src = p.Name
		}
		if p.SourceVersion != "" {
			src += "@" + p.SourceVersion
		}
		s += "&upstream=" + esc.Replace(src)
	}
	return s
}

// TagDigest is the digest of the manifest that an OCI layout's index.json
// names with the tag (annotation org.opencontainers.image.ref.name).
func TagDigest(layout, tag string) (string, error) {
	if layout == "" || tag == "" {
		return "", errors.New("-layout and -tag are required")
	}
	data, err := os.ReadFile(filepath.Join(layout, "index.json"))
	if err != nil {
		return "", err
	}
	var index struct {
		Manifests []struct {
			Digest      string            `json:"digest"`
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(data, &index); err != nil {
		return "", fmt.Errorf("%s/index.json: %w", layout, err)
	}
	var found []string
	for _, m := range index.Manifests {
		if m.Annotations["org.opencontainers.image.ref.name"] == tag {
			found = append(found, m.Digest)
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("%s/index.json: %d manifests tagged %q, want 1", layout, len(found), tag)
	}
	return found[0], nil
}
