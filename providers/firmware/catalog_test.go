package firmware_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/firmware"
	"github.com/rdmaform/rdmaform/sim"
)

// The two card models of the catalog tests: the simulated ConnectX-6
// VPI (MFT: flint) and ConnectX-5 (mstflint), each with the version its
// catalog entry asks for.
var (
	cx6 = struct{ profile, pci, psid, pn, from, to string }{"cx6-vpi-ib", "0000:3b:00.0", "MT_0000000222", "MCX653106A-HDAT", "20.35.1012", "20.36.1012"}
	cx5 = struct{ profile, pci, psid, pn, from, to string }{"cx5-roce", "0000:5e:00.0", "MT_0000000008", "MCX516A-CCAT", "16.35.2000", "16.35.3006"}
)

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// imageServer is an HTTPS server of the test's own on loopback serving
// files by path; its CA is what the hosts' ca_file holds.
type imageServer struct {
	*httptest.Server
	files map[string]http.HandlerFunc
}

func newImageServer(t *testing.T) *imageServer {
	t.Helper()
	s := &imageServer{files: map[string]http.HandlerFunc{}}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, ok := s.files[r.URL.Path]; ok {
			h(w, r)
			return
		}
		http.NotFound(w, r)
	}))
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // the TLS refusals the tests provoke
	t.Cleanup(s.Close)
	return s
}

// otherCA is a CA certificate of the test's own, which signed nothing
// the servers show.
func otherCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "another CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func (s *imageServer) serve(name string, body []byte) string {
	s.files[name] = func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) }
	return s.URL + name
}

// caPEM is the server's certificate in PEM, as a CA file holds it.
func caPEM(s *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
}

// catalogHost makes a simulated host of profile with the CA file
// /etc/rdmaform/fw-ca.pem (ca, when not nil) and writes spec.
func catalogHost(t *testing.T, profile string, ca []byte, spec string) (hostDir, specFile string) {
	t.Helper()
	dir := t.TempDir()
	hostDir = filepath.Join(dir, "host")
	step(t, 0, nil, "sim", "new", hostDir, "--profile", profile)
	if ca != nil {
		if err := os.MkdirAll(filepath.Join(hostDir, "etc/rdmaform"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(hostDir, "etc/rdmaform/fw-ca.pem"), ca, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	specFile = filepath.Join(dir, "host.yaml")
	if err := os.WriteFile(specFile, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return hostDir, specFile
}

type entry struct{ psid, pn, version, image, sha, activation string }

// catalogSpec is one spec for every card model: every adapter (match:
// {}) takes its catalog entry.
func catalogSpec(extra string, es ...entry) string {
	var b strings.Builder
	b.WriteString("version: 1\ndevices:\n  - match: {}\n    firmware:\n      catalog:\n" + extra + "        entries:\n")
	for _, e := range es {
		fmt.Fprintf(&b, "          - psid: %s\n", e.psid)
		if e.pn != "" {
			fmt.Fprintf(&b, "            part_number: %s\n", e.pn)
		}
		act := e.activation
		if act == "" {
			act = "fw-reset"
		}
		fmt.Fprintf(&b, "            version: %q\n            image: %s\n            sha256: %s\n            activation: %s\n", e.version, e.image, e.sha, act)
	}
	return b.String()
}

const withCA = "        ca_file: /etc/rdmaform/fw-ca.pem\n"

// runCalls runs rdmaform with the simulated tools' command lines
// recorded in a file, and returns its exit code, output and those lines.
func runCalls(t *testing.T, args ...string) (int, string, []string) {
	t.Helper()
	calls := filepath.Join(t.TempDir(), "calls")
	var out, errOut bytes.Buffer
	code := cli.Run(args, cli.Env{Stdout: &out, Stderr: &errOut, Environ: []string{"RDMAFORM_SIM_CALLS=" + calls}})
	b, _ := os.ReadFile(calls)
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return code, out.String() + errOut.String(), lines
}

// flintCalls are the calls of a burning tool that read or burn an image.
func flintCalls(calls []string) []string {
	var out []string
	for _, c := range calls {
		if (strings.HasPrefix(c, "flint ") || strings.HasPrefix(c, "mstflint ")) && strings.Contains(c, " -i ") {
			out = append(out, c)
		}
	}
	return out
}

// TestCatalogScenario: one spec, its catalog with an entry per card
// model, serves a ConnectX-6 host and a ConnectX-5 host: each adapter
// takes its entry; the ConnectX-6's image comes from the operator's
// HTTPS server (trusted through ca_file) into the cache, the
// ConnectX-5's from a path on the host; each is checked (digest, then
// PSID and version), burned once per card, pending until the reboot;
// after it, apply, then plan is empty, and the cache still holds the
// download.
func TestCatalogScenario(t *testing.T) {
	srv := newImageServer(t)
	img6 := sim.ImageFile(cx6.psid, cx6.to)
	img5 := sim.ImageFile(cx5.psid, cx5.to)
	url6 := srv.serve("/fw/cx6.bin", img6)
	spec := catalogSpec(withCA,
		entry{psid: cx6.psid, pn: cx6.pn, version: cx6.to, image: url6, sha: digest(img6)},
		entry{psid: cx5.psid, version: cx5.to, image: "/srv/fw/cx5.bin", sha: digest(img5), activation: "reboot"})
	for _, c := range []struct {
		card           struct{ profile, pci, psid, pn, from, to string }
		tool, activate string
	}{{cx6, "flint", "fw-reset"}, {cx5, "mstflint", "reboot"}} {
		t.Run(c.card.profile, func(t *testing.T) {
			hostDir, specFile := catalogHost(t, c.card.profile, caPEM(srv.Server), spec)
			if err := os.MkdirAll(filepath.Join(hostDir, "srv/fw"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(hostDir, "srv/fw/cx5.bin"), img5, 0o644); err != nil {
				t.Fatal(err)
			}
			sd := "--sim=" + hostDir
			addr := "firmware_image[" + c.card.pci + "]"
			out := step(t, plan.ExitChanges, []string{addr, c.card.from, c.card.to}, sd, "plan", "-f", specFile)
			if strings.Count(out, "firmware_image[") != 1 {
				t.Errorf("plan burns a card once (both functions take the entry):\n%s", out)
			}
			code, out, calls := runCalls(t, sd, "apply", "-f", specFile, "--yes")
			if code != plan.ExitReboot {
				t.Fatalf("apply: exit %d, want %d\n%s", code, plan.ExitReboot, out)
			}
			if n := countPrefix(calls, c.tool+" -d "+c.card.pci+" -i "); n != 1 {
				t.Errorf("apply burned %d times, want once: %q", n, calls)
			}
			if st := readState(t, hostDir); strings.Count(st, "flash_fw: "+c.card.to) != 2 {
				t.Errorf("after the burn the card's flash lacks %s:\n%s", c.card.to, st)
			}
			if c.card == cx6 {
				got, err := os.ReadFile(filepath.Join(hostDir, "var/cache/rdmaform/firmware", digest(img6)+".bin"))
				if err != nil || !bytes.Equal(got, img6) {
					t.Errorf("the cache lacks the downloaded image: %v", err)
				}
			}
			// Pending, by the way the entry says (the ConnectX-5's entry
			// asks for a reboot although the card could be reset).
			step(t, plan.ExitReboot, []string{addr, c.card.from, c.card.to, "after " + c.activate}, sd, "plan", "-f", specFile)
			rebootThenPlanIsEmpty(t, hostDir, specFile)
		})
	}
}

func countPrefix(calls []string, prefix string) int {
	n := 0
	for _, c := range calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

// TestCatalogMissingEntry: an adapter no entry lists is a finding at the
// catalog naming its PSID and part number, unless the catalog is
// optional: then the adapter is left alone and plan is empty. An entry
// of part number and PSID wins over one of the PSID alone.
func TestCatalogMissingEntry(t *testing.T) {
	img := sim.ImageFile(cx5.psid, cx5.to)
	other := entry{psid: "MT_0000000999", version: "1.2.3", image: "/srv/fw/x.bin", sha: digest(img)}
	hostDir, specFile := catalogHost(t, cx5.profile, nil, catalogSpec("", other))
	sd := "--sim=" + hostDir
	step(t, plan.ExitError, []string{"host.yaml:6:9", "has PSID MT_0000000008, part number MCX516A-CCAT: no catalog entry lists it", "optional: true"}, sd, "plan", "-f", specFile)
	if err := os.WriteFile(specFile, []byte(catalogSpec("        optional: true\n", other)), 0o644); err != nil {
		t.Fatal(err)
	}
	step(t, plan.ExitOK, []string{"No changes."}, sd, "plan", "-f", specFile)
	// Running what the entry of its part number says: nothing to do,
	// although the entry of its PSID alone asks for another version.
	both := catalogSpec("",
		entry{psid: cx5.psid, version: "16.99.1000", image: "/srv/fw/none.bin", sha: digest(img)},
		entry{psid: cx5.psid, pn: cx5.pn, version: cx5.from, image: "/srv/fw/none.bin", sha: digest(img)})
	if err := os.WriteFile(specFile, []byte(both), 0o644); err != nil {
		t.Fatal(err)
	}
	step(t, plan.ExitOK, []string{"No changes."}, sd, "plan", "-f", specFile)
}

// TestCatalogRefused: every way a catalog image can fail to be what the
// catalog says, from the test's own HTTPS server on loopback. Each apply
// fails naming the URL (and, for a digest, both digests); no burning
// tool reads or burns an image (the simulator's call log), the flash is
// as it was, and nothing is left in the cache under the digest's name.
func TestCatalogRefused(t *testing.T) {
	good := sim.ImageFile(cx6.psid, cx6.to)
	sha := digest(good)
	srv := newImageServer(t)
	other := newImageServer(t) // another server, with a CA of its own
	other.serve("/fw/cx6.bin", good)
	// An image of exactly 1 MiB (the simulated tools read the padding).
	mib := append(append([]byte(nil), good...), bytes.Repeat([]byte("\n"), 1<<20-len(good))...)
	srv.serve("/mib.bin", mib)
	srv.serve("/mib-plus-one.bin", append(append([]byte(nil), mib...), '\n'))
	srv.serve("/fw/cx6.bin", good)
	srv.serve("/bad.bin", sim.ImageFile(cx6.psid, "20.37.1000"))
	srv.serve("/other-psid.bin", sim.ImageFile("MT_0000000999", cx6.to))
	srv.files["/truncated.bin"] = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(good)))
		_, _ = w.Write(good[:len(good)/2])
	}
	srv.files["/slow.bin"] = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(good)))
		for i := range good {
			_, _ = w.Write(good[i : i+1])
			w.(http.Flusher).Flush()
			time.Sleep(1500 * time.Millisecond / time.Duration(len(good)))
		}
	}
	srv.files["/to-http"] = func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+r.Host+"/fw/cx6.bin", http.StatusFound)
	}
	srv.files["/to-other"] = func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/fw/cx6.bin", http.StatusFound)
	}
	srv.files["/loop"] = func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) }
	srv.files["/gone.bin"] = func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }
	wrongName := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	for _, c := range []struct {
		name, url, sha, extra string
		ca                    []byte
		want                  []string
	}{
		{name: "bad digest", url: srv.URL + "/bad.bin", sha: sha, want: []string{srv.URL + "/bad.bin", "SHA-256 " + digest(sim.ImageFile(cx6.psid, "20.37.1000")), "the catalog says " + sha}},
		{name: "truncated body", url: srv.URL + "/truncated.bin", want: []string{srv.URL + "/truncated.bin", "unexpected EOF"}},
		{name: "redirect to http", url: srv.URL + "/to-http", want: []string{"redirected to http://", "follows redirects on the catalog's server only"}},
		{name: "redirect to another server", url: srv.URL + "/to-other", want: []string{"redirected to " + other.URL, "follows redirects on the catalog's server only"}},
		{name: "redirect loop", url: srv.URL + "/loop", want: []string{"more than 5 redirects"}},
		{name: "not found", url: srv.URL + "/gone.bin", want: []string{srv.URL + "/gone.bin", "404 Not Found"}},
		{name: "slow server", url: srv.URL + "/slow.bin", extra: "        timeout: 1\n", want: []string{srv.URL + "/slow.bin", "not done within 1s"}},
		{name: "one byte past max_mib", url: srv.URL + "/mib-plus-one.bin", sha: digest(append(append([]byte(nil), mib...), '\n')), extra: "        max_mib: 1\n", want: []string{"over the size bound", "1048576"}},
		{name: "unknown CA", url: srv.URL + "/fw/cx6.bin", ca: otherCA(t), want: []string{srv.URL + "/fw/cx6.bin", "certificate signed by unknown authority"}},
		{name: "no CA file: the system's roots", url: srv.URL + "/fw/cx6.bin", ca: []byte{}, want: []string{"certificate signed by unknown authority"}},
		{name: "wrong name", url: wrongName + "/fw/cx6.bin", want: []string{wrongName + "/fw/cx6.bin", "not localhost"}},
		{name: "image of another PSID", url: srv.URL + "/other-psid.bin", sha: digest(sim.ImageFile("MT_0000000999", cx6.to)), want: []string{"is for PSID MT_0000000999"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ca, extra := caPEM(srv.Server), withCA+c.extra
			if c.ca != nil {
				ca = c.ca
			}
			if c.ca != nil && len(c.ca) == 0 {
				extra, ca = c.extra, nil
			}
			want := c.sha
			if want == "" {
				want = sha
			}
			hostDir, specFile := catalogHost(t, cx6.profile, ca, catalogSpec(extra, entry{psid: cx6.psid, version: cx6.to, image: c.url, sha: want}))
			sd := "--sim=" + hostDir
			before := readState(t, hostDir)
			step(t, plan.ExitChanges, []string{"firmware_image[" + cx6.pci + "]", c.url}, sd, "plan", "-f", specFile)
			code, out, calls := runCalls(t, sd, "apply", "-f", specFile, "--yes")
			if code != plan.ExitError {
				t.Fatalf("apply: exit %d, want %d\n%s", code, plan.ExitError, out)
			}
			for _, w := range append(c.want, "burned nothing") {
				if !strings.Contains(out, w) {
					t.Errorf("apply's output lacks %q:\n%s", w, out)
				}
			}
			fl := flintCalls(calls)
			if c.name == "image of another PSID" {
				// The digest matches: the tool reads the image (apply, and
				// its plan again), and burns nothing.
				for _, f := range fl {
					if strings.Contains(f, "burn") {
						t.Errorf("flint burned: %q", fl)
					}
				}
			} else if len(fl) != 0 {
				t.Errorf("a burning tool read or burned an image: %q", fl)
			}
			if after := readState(t, hostDir); after != before {
				t.Errorf("the host changed:\n%s", after)
			}
			if c.name != "image of another PSID" {
				if _, err := os.Stat(filepath.Join(hostDir, "var/cache/rdmaform/firmware", want+".bin")); err == nil {
					t.Errorf("the cache holds a file under the digest's name after a failed download")
				}
			}
		})
	}
	// At the bounds: exactly max_mib, and within the timeout, download
	// and burn.
	for _, c := range []struct{ name, url, sha, extra string }{
		{"exactly max_mib", srv.URL + "/mib.bin", digest(mib), "        max_mib: 1\n"},
		{"redirect on the same server", srv.URL + "/hop", sha, ""},
		{"slow server within the timeout", srv.URL + "/slow.bin", sha, "        timeout: 5\n"},
	} {
		srv.files["/hop"] = func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/fw/cx6.bin", http.StatusMovedPermanently)
		}
		t.Run(c.name, func(t *testing.T) {
			hostDir, specFile := catalogHost(t, cx6.profile, caPEM(srv.Server), catalogSpec(withCA+c.extra, entry{psid: cx6.psid, version: cx6.to, image: c.url, sha: c.sha}))
			sd := "--sim=" + hostDir
			code, out, calls := runCalls(t, sd, "apply", "-f", specFile, "--yes")
			if code != plan.ExitReboot {
				t.Fatalf("apply: exit %d, want %d\n%s", code, plan.ExitReboot, out)
			}
			if n := countPrefix(calls, "flint -d "+cx6.pci+" -i "); n != 1 {
				t.Errorf("burned %d times, want once: %q", n, calls)
			}
			rebootThenPlanIsEmpty(t, hostDir, specFile)
		})
	}
}

// TestCatalogLocalDigest: a catalog image on the host whose digest is
// not the entry's is a plan error naming its path and both digests,
// before any tool reads it; a cache file that is not its digest is
// downloaded again.
func TestCatalogLocalDigest(t *testing.T) {
	img := sim.ImageFile(cx6.psid, cx6.to)
	wrong := sim.ImageFile(cx6.psid, "20.37.1000")
	hostDir, specFile := catalogHost(t, cx6.profile, nil, catalogSpec("", entry{psid: cx6.psid, version: cx6.to, image: "/srv/fw/cx6.bin", sha: digest(img)}))
	if err := os.MkdirAll(filepath.Join(hostDir, "srv/fw"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hostDir, "srv/fw/cx6.bin"), wrong, 0o644); err != nil {
		t.Fatal(err)
	}
	sd := "--sim=" + hostDir
	code, out, calls := runCalls(t, sd, "plan", "-f", specFile)
	if code != plan.ExitError || !strings.Contains(out, "/srv/fw/cx6.bin: its "+fmt.Sprint(len(wrong))+" bytes have SHA-256 "+digest(wrong)+"; the catalog says "+digest(img)) {
		t.Errorf("plan: exit %d, want %d naming the path and both digests:\n%s", code, plan.ExitError, out)
	}
	if fl := flintCalls(calls); len(fl) != 0 {
		t.Errorf("a tool read the image before its digest was checked: %q", fl)
	}

	// A cache file of another content: downloaded again, then burned.
	srv := newImageServer(t)
	url := srv.serve("/fw/cx6.bin", img)
	hostDir, specFile = catalogHost(t, cx6.profile, caPEM(srv.Server), catalogSpec(withCA, entry{psid: cx6.psid, version: cx6.to, image: url, sha: digest(img)}))
	cache := filepath.Join(hostDir, "var/cache/rdmaform/firmware", digest(img)+".bin")
	if err := os.MkdirAll(filepath.Dir(cache), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cache, wrong, 0o644); err != nil {
		t.Fatal(err)
	}
	sd = "--sim=" + hostDir
	step(t, plan.ExitReboot, []string{"firmware_image[" + cx6.pci + "]"}, sd, "apply", "-f", specFile, "--yes")
	if got, _ := os.ReadFile(cache); !bytes.Equal(got, img) {
		t.Errorf("the cache file was not replaced by the download")
	}
	rebootThenPlanIsEmpty(t, hostDir, specFile)
	_ = firmware.CacheDir
}

// TestCatalogAuditAndSummary: audit reports each card a catalog covers
// (the version it runs against its entry's), and firmware-summary groups
// the cards of a fleet's reports by PSID: a ConnectX-6 host with two
// cards, a ConnectX-5 host and a ConnectX-6 Dx host no entry lists. As
// the ConnectX-6 cards are burned (pending) and rebooted (current), the
// summary follows, and its exit code says what is left.
func TestCatalogAuditAndSummary(t *testing.T) {
	img6 := sim.ImageFile(cx6.psid, cx6.to)
	spec := catalogSpec("        optional: true\n",
		entry{psid: cx6.psid, version: cx6.to, image: "/srv/fw/cx6.bin", sha: digest(img6)},
		entry{psid: cx5.psid, version: cx5.from, image: "/srv/fw/cx5.bin", sha: digest(img6), activation: "reboot"})
	dir := t.TempDir()
	reports := filepath.Join(dir, "reports")
	if err := os.Mkdir(reports, 0o755); err != nil {
		t.Fatal(err)
	}
	hosts := map[string]string{}
	var specFile string
	for _, h := range []struct{ name, profile, adapters string }{{"gpu1", cx6.profile, "2"}, {"eth1", cx5.profile, "1"}, {"dx1", "cx6dx-ofed", "1"}} {
		hostDir := filepath.Join(dir, h.name)
		step(t, 0, nil, "sim", "new", hostDir, "--profile", h.profile, "--adapters", h.adapters, "--hostname", h.name)
		if err := os.MkdirAll(filepath.Join(hostDir, "srv/fw"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(hostDir, "srv/fw/cx6.bin"), img6, 0o644); err != nil {
			t.Fatal(err)
		}
		hosts[h.name] = hostDir
	}
	specFile = filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(specFile, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	audit := func() {
		t.Helper()
		for name, hostDir := range hosts {
			out := filepath.Join(reports, name+".json")
			code, text := rdmaform(t, "--sim="+hostDir, "audit", "-f", specFile, "-o", "json", "--report-file", out)
			if code == plan.ExitError {
				t.Fatalf("audit of %s: exit %d\n%s", name, code, text)
			}
		}
	}
	type psid struct {
		PSID                                 string
		Catalog                              []string
		Cards, Hosts                         int
		Current, Pending, Outdated, Unlisted int
		Running                              map[string]int
		NotCurrent                           []string `json:"not_current"`
	}
	summary := func(wantCode int) map[string]psid {
		t.Helper()
		code, out := rdmaform(t, "firmware-summary", reports, "-o", "json")
		if code != wantCode {
			t.Fatalf("firmware-summary: exit %d, want %d\n%s", code, wantCode, out)
		}
		var doc struct {
			Reports int
			PSIDs   []psid
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Reports != 3 {
			t.Fatalf("firmware-summary -o json: %v, %d reports\n%s", err, doc.Reports, out)
		}
		m := map[string]psid{}
		for _, p := range doc.PSIDs {
			m[p.PSID] = p
		}
		return m
	}
	audit()
	// The audit's own report: one entry per card (not per function).
	b, err := os.ReadFile(filepath.Join(reports, "gpu1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Firmware []struct{ Card, PSID, Running, Catalog, Status string }
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Firmware) != 2 || rep.Firmware[0].Card != "0000:3b:00.0" || rep.Firmware[1].Card != "0000:4b:00.0" ||
		rep.Firmware[0].Running != cx6.from || rep.Firmware[0].Catalog != cx6.to || rep.Firmware[0].Status != "outdated" {
		t.Errorf("gpu1's audit firmware: %+v", rep.Firmware)
	}
	s := summary(plan.ExitChanges)
	if g := s[cx6.psid]; g.Cards != 2 || g.Hosts != 1 || g.Outdated != 2 || g.Running[cx6.from] != 2 || len(g.NotCurrent) != 2 {
		t.Errorf("ConnectX-6 before: %+v", g)
	}
	if e := s[cx5.psid]; e.Cards != 1 || e.Current != 1 || len(e.NotCurrent) != 0 {
		t.Errorf("ConnectX-5 before: %+v", e)
	}
	if d := s["DEL0000000027"]; d.Cards != 1 || d.Unlisted != 1 || len(d.Catalog) != 1 || d.Catalog[0] != "" {
		t.Errorf("ConnectX-6 Dx (unlisted): %+v", d)
	}
	step(t, plan.ExitReboot, nil, "--sim="+hosts["gpu1"], "apply", "-f", specFile, "--yes")
	audit()
	if g := summary(plan.ExitChanges)[cx6.psid]; g.Pending != 2 || g.Outdated != 0 {
		t.Errorf("ConnectX-6 burned: %+v", g)
	}
	step(t, 0, nil, "sim", "reboot", hosts["gpu1"])
	step(t, plan.ExitOK, nil, "--sim="+hosts["gpu1"], "apply", "-f", specFile, "--yes")
	step(t, plan.ExitOK, []string{"No changes."}, "--sim="+hosts["gpu1"], "plan", "-f", specFile)
	audit()
	if g := summary(plan.ExitChanges)[cx6.psid]; g.Current != 2 || g.Running[cx6.to] != 2 || len(g.NotCurrent) != 0 {
		t.Errorf("ConnectX-6 after the reboot: %+v", g)
	}
	// Without the unlisted host, every card is current: exit 0.
	if err := os.Remove(filepath.Join(reports, "dx1.json")); err != nil {
		t.Fatal(err)
	}
	code, out := rdmaform(t, "firmware-summary", reports)
	if code != plan.ExitOK || !strings.Contains(out, cx6.psid+" ("+cx6.pn+"): catalog "+cx6.to+"; 2 cards on 1 host: 2 current") {
		t.Errorf("firmware-summary: exit %d\n%s", code, out)
	}
}
