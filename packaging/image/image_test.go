// The agent's image as make image built it (dist/): an OCI archive whose
// entry point is the static agent, with every tool rdmaform runs on a host,
// /var/run a directory, its SPDX package list and digest beside it, and
// the DaemonSet naming it by its version tag.
package image_test

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/rdmaform/rdmaform/internal/testlab/need"
)

// version is the one make image tags with on a checkout without a release
// tag: the Makefile's fallback.
func version(t *testing.T) string {
	t.Helper()
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^VERSION \?= .*,([0-9][^)]*)\)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("Makefile: no VERSION fallback")
	}
	return string(m[1])
}

// archive is the path of the image make image built for this machine.
func archive(t *testing.T) (file, digestFile, sbomFile string) {
	t.Helper()
	matches, _ := filepath.Glob("../../dist/rdmaform-agent_*_amd64.oci.tar")
	if len(matches) == 0 {
		need.Skip(t, "no dist/rdmaform-agent_*_amd64.oci.tar: run make image (as root; apt-get install mmdebstrap umoci)")
	}
	file = matches[len(matches)-1]
	base := strings.TrimSuffix(file, ".oci.tar")
	return file, base + ".digest", base + ".spdx.json"
}

// layout is an OCI image layout read from its archive: file name → bytes
// (blobs are read when asked, from the archive again, being large).
type layout struct {
	file  string
	small map[string][]byte
}

func openLayout(t *testing.T, file string) *layout {
	t.Helper()
	l := &layout{file: file, small: map[string][]byte{}}
	l.walk(t, func(name string, r io.Reader, size int64) bool {
		if size < 1<<20 {
			b, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			l.small[name] = b
		}
		return true
	})
	return l
}

func (l *layout) walk(t *testing.T, f func(name string, r io.Reader, size int64) bool) {
	t.Helper()
	fh, err := os.Open(l.file)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	tr := tar.NewReader(bufio.NewReader(fh))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg && !f(path.Clean(h.Name), tr, h.Size) {
			return
		}
	}
}

func (l *layout) blobName(digest string) string {
	return "blobs/sha256/" + strings.TrimPrefix(digest, "sha256:")
}

// json reads a small blob, checking its digest.
func (l *layout) json(t *testing.T, digest string, v any) {
	t.Helper()
	b, ok := l.small[l.blobName(digest)]
	if !ok {
		t.Fatalf("no blob %s", digest)
	}
	sum := sha256.Sum256(b)
	if "sha256:"+hex.EncodeToString(sum[:]) != digest {
		t.Fatalf("blob %s has another digest", digest)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// entry is a file of a layer: its type, mode and link target.
type entry struct {
	typ  byte
	mode int64
	link string
	head []byte
}

// files lists a gzip layer's members, its digest checked.
func (l *layout) files(t *testing.T, digest string) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	found := false
	l.walk(t, func(name string, r io.Reader, _ int64) bool {
		if name != l.blobName(digest) {
			return true
		}
		found = true
		h := sha256.New()
		zr, err := gzip.NewReader(io.TeeReader(r, h))
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(zr)
		for {
			m, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			e := entry{typ: m.Typeflag, mode: m.Mode, link: m.Linkname}
			if m.Typeflag == tar.TypeReg {
				e.head = make([]byte, 20)
				n, _ := io.ReadFull(tr, e.head)
				e.head = e.head[:n]
			}
			out["/"+strings.TrimPrefix(path.Clean(m.Name), "./")] = e
		}
		io.Copy(io.Discard, zr)
		io.Copy(io.Discard, r)
		if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != digest {
			t.Fatalf("layer %s has digest %s", digest, got)
		}
		return false
	})
	if !found {
		t.Fatalf("no layer blob %s", digest)
	}
	return out
}

type manifest struct {
	Config struct{ Digest string }
	Layers []struct{ MediaType, Digest string }
}

type config struct {
	Architecture, OS, Created string
	Config                    struct {
		Entrypoint []string
		Env        []string
		Labels     map[string]string
	}
	History []struct {
		Created   string
		CreatedBy string `json:"created_by"`
	}
}

// The tools rdmaform runs on a host, by the provider or probe that runs
// them, and the Debian package that has them (packages.txt).
var tools = map[string]string{
	"mstconfig":       "firmware parameters (mstflint)",
	"mstflint":        "firmware images (mstflint)",
	"mstfwreset":      "activate --by fw-reset (mstflint)",
	"ip":              "netns and names fallbacks (iproute2)",
	"rdma":            "RDMA netlink (iproute2)",
	"dcb":             "qos (iproute2)",
	"ethtool":         "ethtool, qos pause (ethtool)",
	"modprobe":        "modules (kmod)",
	"sminfo":          "subnet manager checks (infiniband-diags)",
	"smpquery":        "subnet manager checks (infiniband-diags)",
	"ibstat":          "subnet manager checks (infiniband-diags)",
	"ibping":          "the ib probe (infiniband-diags)",
	"rping":           "the rdma_cm probe (rdmacm-utils)",
	"ibv_rc_pingpong": "the verbs probe (ibverbs-utils)",
	"ibv_devinfo":     "facts for people (ibverbs-utils)",
	"ping":            "the ping probe (iputils-ping)",
}

// TestImage: the archive's tag, manifest and config; every tool in the
// base on the image's PATH, resolving links in the image; the agent's
// layer; /var/run a directory; the digest file; the SPDX list names what
// the base holds, packages.txt among them.
func TestImage(t *testing.T) {
	file, digestFile, sbomFile := archive(t)
	ver := version(t)
	if want := "rdmaform-agent_" + ver + "_amd64.oci.tar"; filepath.Base(file) != want {
		t.Fatalf("%s: want %s (the Makefile's version)", file, want)
	}
	l := openLayout(t, file)
	var index struct {
		Manifests []struct {
			Digest      string
			Annotations map[string]string
		}
	}
	if err := json.Unmarshal(l.small["index.json"], &index); err != nil {
		t.Fatal(err)
	}
	if len(index.Manifests) != 1 || index.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != ver {
		t.Fatalf("index.json: %+v, want one manifest tagged %s", index.Manifests, ver)
	}
	digest := index.Manifests[0].Digest
	recorded, err := os.ReadFile(digestFile)
	if err != nil || strings.TrimSpace(string(recorded)) != digest {
		t.Errorf("%s: %q (%v), want %s", digestFile, recorded, err, digest)
	}
	var m manifest
	l.json(t, digest, &m)
	var c config
	l.json(t, m.Config.Digest, &c)
	if c.Architecture != "amd64" || c.OS != "linux" || strings.Join(c.Config.Entrypoint, " ") != "/usr/sbin/rdmaform-agent" || c.Config.Labels["org.opencontainers.image.version"] != ver {
		t.Errorf("config: %+v", c)
	}
	// Every time in the image is the build's fixed one.
	for _, h := range c.History {
		if h.Created != c.Created {
			t.Errorf("history %q created %s, config %s", h.CreatedBy, h.Created, c.Created)
		}
	}
	if len(m.Layers) != 2 {
		t.Fatalf("%d layers, want the base and rdmaform's", len(m.Layers))
	}
	base := l.files(t, m.Layers[0].Digest)
	own := l.files(t, m.Layers[1].Digest)

	if e := base["/var/run"]; e.typ != tar.TypeDir {
		t.Errorf("/var/run is of type %q, want a directory (the service account token is mounted under it, /run is the host's)", e.typ)
	}
	for _, b := range []string{"/usr/sbin/rdmaform-agent", "/usr/sbin/rdmaform"} {
		e, ok := own[b]
		if !ok || e.typ != tar.TypeReg || e.mode&0o111 == 0 || string(e.head[:4]) != "\x7fELF" {
			t.Errorf("%s: %+v, want an executable ELF file", b, e)
		}
	}
	path := []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}
	for tool, why := range tools {
		found := ""
		for _, dir := range path {
			if p, ok := resolve(base, dir+"/"+tool); ok {
				found = p
				break
			}
		}
		if found == "" {
			t.Errorf("%s (%s) is not on the image's PATH", tool, why)
		}
	}

	// The SPDX list: the base's packages, packages.txt's among them.
	data, err := os.ReadFile(sbomFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Packages []struct {
			Name, VersionInfo string
			Checksums         []struct{ ChecksumValue string }
		}
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Packages) < 2 || doc.Packages[0].Name != "rdmaform-agent" || doc.Packages[0].Checksums[0].ChecksumValue != strings.TrimPrefix(digest, "sha256:") {
		t.Fatalf("%s: the first package is not the image with its digest", sbomFile)
	}
	listed := map[string]bool{}
	for _, p := range doc.Packages[1:] {
		listed[p.Name] = true
		if _, ok := base["/usr/share/doc/"+p.Name]; !ok {
			if _, ok := base["/usr/share/doc/"+p.Name+"/copyright"]; !ok {
				t.Errorf("the SBOM lists %s %s; the base has no /usr/share/doc/%s", p.Name, p.VersionInfo, p.Name)
			}
		}
	}
	want, err := os.ReadFile("packages.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(want), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") && !listed[line] {
			t.Errorf("packages.txt's %s is not in the SBOM", line)
		}
	}
}

// resolve follows a path's symbolic links inside the layer (absolute and
// relative, also in its directories: /sbin is a link to usr/sbin in
// bookworm), and says whether it ends at an executable file.
func resolve(files map[string]entry, p string) (string, bool) {
	for hops := 0; hops < 40; hops++ {
		parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
		cur := ""
		relinked := false
		for i, part := range parts {
			cur += "/" + part
			e, ok := files[cur]
			if !ok {
				return "", false
			}
			if e.typ == tar.TypeSymlink {
				target := e.link
				if !strings.HasPrefix(target, "/") {
					target = path.Join(path.Dir(cur), target)
				}
				p = path.Clean(target + "/" + strings.Join(parts[i+1:], "/"))
				relinked = true
				break
			}
		}
		if !relinked {
			e := files[cur]
			return cur, e.typ == tar.TypeReg && e.mode&0o111 != 0
		}
	}
	return "", false
}

// TestDaemonSetNamesTheImage: deploy/kubernetes's DaemonSet runs the image
// make image tags, by its version, not a placeholder.
func TestDaemonSetNamesTheImage(t *testing.T) {
	data, err := os.ReadFile("../../deploy/kubernetes/30-daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ds struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct{ Name, Image string }
				}
			}
		}
	}
	if err := yaml.Unmarshal(data, &ds); err != nil {
		t.Fatal(err)
	}
	cs := ds.Spec.Template.Spec.Containers
	if want := fmt.Sprintf("rdmaform-agent:%s", version(t)); len(cs) != 1 || cs[0].Image != want {
		t.Errorf("the DaemonSet's containers %+v, want one with image %s", cs, want)
	}
}
