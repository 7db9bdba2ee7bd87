package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDownloadLimits: a download's bounds at the limit and one past it:
// MaxRedirects redirects on the same server are followed, one more is
// refused; a body of exactly MaxBytes is kept, one byte more is cut,
// whether the server announces its length or not; the file appears only
// under its name when its digest is the one asked for.
func TestDownloadLimits(t *testing.T) {
	body := []byte(strings.Repeat("firmware", 128)) // 1024 bytes
	sum := sha256.Sum256(body)
	want := hex.EncodeToString(sum[:])
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/r/"):
			n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/r/"))
			if n == 0 {
				_, _ = w.Write(body)
				return
			}
			http.Redirect(w, r, fmt.Sprintf("/r/%d", n-1), http.StatusFound)
		case r.URL.Path == "/chunked":
			// No Content-Length: the bound is found while reading.
			_, _ = w.Write(body[:512])
			w.(http.Flusher).Flush()
			_, _ = w.Write(body[512:])
		default:
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			_, _ = w.Write(body)
		}
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	root := t.TempDir()
	fsys, err := NewRootFS(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path string
		max        int64
		ok         bool
		msg        string
	}{
		{"5 redirects", fmt.Sprintf("/r/%d", MaxRedirects), 1 << 20, true, ""},
		{"6 redirects", fmt.Sprintf("/r/%d", MaxRedirects+1), 1 << 20, false, "more than 5 redirects"},
		{"exactly max, announced", "/plain", int64(len(body)), true, ""},
		{"one past max, announced", "/plain", int64(len(body)) - 1, false, "the server announces 1024 bytes; at most 1023"},
		{"exactly max, not announced", "/chunked", int64(len(body)), true, ""},
		{"one past max, not announced", "/chunked", int64(len(body)) - 1, false, "more than 1023 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dest := "/var/cache/rdmaform/firmware/" + strings.ReplaceAll(c.name, " ", "-") + ".bin"
			err := Download(context.Background(), fsys, srv.URL+c.path, dest, want, DownloadOptions{CAPEM: ca, MaxBytes: c.max, Timeout: 10 * time.Second})
			got, rerr := os.ReadFile(filepath.Join(root, dest))
			switch {
			case c.ok && (err != nil || rerr != nil || string(got) != string(body)):
				t.Errorf("err %v, file %v (%d bytes)", err, rerr, len(got))
			case !c.ok && (err == nil || !strings.Contains(err.Error(), c.msg)):
				t.Errorf("err %v, want %q", err, c.msg)
			case !c.ok && rerr == nil:
				t.Errorf("a failed download left %s", dest)
			}
			if strings.Contains(c.name, "one past max") && !errors.Is(err, ErrTooLarge) {
				t.Errorf("err %v is not ErrTooLarge", err)
			}
		})
	}
	// A wrong digest: the error names the URL and both digests, and no
	// file is left, not even the temporary one.
	other := strings.Repeat("0", 64)
	err = Download(context.Background(), fsys, srv.URL+"/plain", "/var/cache/rdmaform/firmware/x.bin", other, DownloadOptions{CAPEM: ca, MaxBytes: 1 << 20, Timeout: 10 * time.Second})
	var de *DigestError
	if !errors.As(err, &de) || de.URL != srv.URL+"/plain" || de.Got != want || de.Want != other || de.Size != int64(len(body)) {
		t.Errorf("wrong digest: %v", err)
	}
	ents, _ := os.ReadDir(filepath.Join(root, "var/cache/rdmaform/firmware"))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".x.bin") || e.Name() == "x.bin" {
			t.Errorf("left %s", e.Name())
		}
	}
}
