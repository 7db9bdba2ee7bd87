package host

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// MaxRedirects is how many redirects a download follows, each to the
// server the URL names (same scheme, host and port).
const MaxRedirects = 5

// DownloadOptions bound one download and say which CAs it trusts.
type DownloadOptions struct {
	// CAPEM holds the PEM certificates the server's chain must end in;
	// nil: the system's roots.
	CAPEM []byte
	// MaxBytes bounds the body; Timeout the whole download, from the
	// connection to the last byte.
	MaxBytes int64
	Timeout  time.Duration
}

// DigestError is a file whose SHA-256 is not the one asked for: its URL
// (a download) or its path (a file on the host), and both digests.
type DigestError struct {
	URL, Path string
	Want, Got string
	Size      int64
}

func (e *DigestError) Error() string {
	if e.URL != "" {
		return fmt.Sprintf("%s: the %d bytes downloaded have SHA-256 %s; the catalog says %s (nothing was kept)", e.URL, e.Size, e.Got, e.Want)
	}
	return fmt.Sprintf("%s: its %d bytes have SHA-256 %s; the catalog says %s", e.Path, e.Size, e.Got, e.Want)
}

// DownloadError is a download that failed before its digest could be
// checked: the URL and why.
type DownloadError struct {
	URL string
	Err error
}

func (e *DownloadError) Error() string { return fmt.Sprintf("downloading %s: %v", e.URL, e.Err) }
func (e *DownloadError) Unwrap() error { return e.Err }

// ErrTooLarge is wrapped by a file or a download over its bound.
var ErrTooLarge = errors.New("over the size bound")

// Download fetches rawURL (https only) into dest, a path of fsys: the
// body is written to a temporary file beside dest while its SHA-256 is
// computed, and renamed to dest only when the digest is want, so dest
// never holds a partial or a wrong file. A redirect is followed (at most
// MaxRedirects) only to the same scheme, host and port: the catalog
// names the operator's server, and the CAs trusted are that server's. A
// body over o.MaxBytes, shorter than its Content-Length, or not done
// within o.Timeout is cut; an HTTP status other than 200 is an error.
//
// Equivalent to: curl --proto =https --max-redirs 5 --max-filesize MAX --max-time T --cacert CA -o DEST.tmp URL && echo "SHA  DEST.tmp" | sha256sum -c && mv DEST.tmp DEST
func Download(ctx context.Context, fsys FS, rawURL, dest, want string, o DownloadOptions) error {
	fail := func(err error) error { return &DownloadError{URL: rawURL, Err: err} }
	u, err := url.Parse(rawURL)
	if err != nil {
		return fail(err)
	}
	if u.Scheme != "https" {
		return fail(fmt.Errorf("scheme %s: only https", u.Scheme))
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CAPEM != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(o.CAPEM) {
			return fail(errors.New("the CA file holds no PEM certificate"))
		}
		cfg.RootCAs = pool
	}
	tr := &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: cfg, ForceAttemptHTTP2: true,
		TLSHandshakeTimeout: o.Timeout, ResponseHeaderTimeout: o.Timeout}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) > MaxRedirects {
			return fmt.Errorf("more than %d redirects", MaxRedirects)
		}
		if req.URL.Scheme != u.Scheme || req.URL.Host != u.Host {
			return fmt.Errorf("redirected to %s, which is not %s://%s: rdmaform follows redirects on the catalog's server only", req.URL.Redacted(), u.Scheme, u.Host)
		}
		return nil
	}}
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return fail(err)
	}
	req.Header.Set("User-Agent", "rdmaform")
	resp, err := client.Do(req)
	if err != nil {
		return fail(timeoutSays(ctx, err, o.Timeout))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fail(fmt.Errorf("the server answered %s", resp.Status))
	}
	if o.MaxBytes > 0 && resp.ContentLength > o.MaxBytes {
		return fail(fmt.Errorf("%w: the server announces %d bytes; at most %d", ErrTooLarge, resp.ContentLength, o.MaxBytes))
	}
	if err := fsys.MkdirAll(path.Dir(dest), 0o755); err != nil {
		return fail(err)
	}
	dir, err := fsys.Resolve(path.Dir(dest))
	if err != nil {
		return fail(err)
	}
	tmp, err := os.CreateTemp(dir, "."+path.Base(dest)+".rdmaform-*")
	if err != nil {
		return fail(err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	h := sha256.New()
	body := io.Reader(resp.Body)
	if o.MaxBytes > 0 {
		body = io.LimitReader(resp.Body, o.MaxBytes+1)
	}
	n, err := io.Copy(io.MultiWriter(tmp, h), body)
	switch {
	case err != nil:
		return fail(fmt.Errorf("after %d bytes: %w", n, timeoutSays(ctx, err, o.Timeout)))
	case o.MaxBytes > 0 && n > o.MaxBytes:
		return fail(fmt.Errorf("%w: more than %d bytes", ErrTooLarge, o.MaxBytes))
	case resp.ContentLength >= 0 && n != resp.ContentLength:
		return fail(fmt.Errorf("the body ended after %d of its %d bytes", n, resp.ContentLength))
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return &DigestError{URL: rawURL, Want: want, Got: got, Size: n}
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	target, err := fsys.Resolve(dest)
	if err != nil {
		return fail(err)
	}
	if filepath.Dir(target) != filepath.Clean(dir) {
		return fail(fmt.Errorf("%s resolves outside %s", dest, path.Dir(dest)))
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return fail(err)
	}
	return nil
}

// timeoutSays names the bound when the download's deadline cut it.
func timeoutSays(ctx context.Context, err error, d time.Duration) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("not done within %s (the catalog's timeout): %w", d, err)
	}
	return err
}

// HashFile returns the SHA-256 (hex) and size of a regular file of fsys
// of at most max bytes, reading it once. A symlink is followed inside
// the root (Resolve).
//
// Equivalent to: sha256sum NAME
func HashFile(fsys FS, name string, max int64) (string, int64, error) {
	p, err := fsys.Resolve(name)
	if err != nil {
		return "", 0, err
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return "", 0, &os.PathError{Op: "open", Path: name, Err: err}
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return "", 0, err
	case !fi.Mode().IsRegular():
		return "", 0, fmt.Errorf("%s is a %s, not a regular file", name, kindOf(fi.Mode()))
	case max > 0 && fi.Size() > max:
		return "", 0, fmt.Errorf("%s: %w: %d bytes; at most %d", name, ErrTooLarge, fi.Size(), max)
	}
	if max <= 0 {
		max = 1 << 62
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, max+1))
	if err != nil {
		return "", 0, err
	}
	if n > max {
		return "", 0, fmt.Errorf("%s: %w: more than %d bytes", name, ErrTooLarge, max)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
