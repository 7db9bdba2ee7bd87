package firmware

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// CacheDir is where rdmaform keeps the images it downloaded, each under
// its SHA-256 (CachePath): a file there is used only once its digest is
// checked again.
const CacheDir = "/var/cache/rdmaform/firmware"

// CachePath is the cache file of an image of digest sha (64 hex digits,
// checked by the spec's validation).
func CachePath(sha string) string { return CacheDir + "/" + sha + ".bin" }

// wantImage is what the spec asks of one device's firmware image: its
// version and image, from firmware.version and firmware.image or from
// the catalog entry of the device's adapter (then with its digest, its
// activation and the catalog's bounds).
type wantImage struct {
	version string
	image   string // a path on the host, or an https URL (catalog)
	// path is the spec path of the image ($.devices[i].firmware.image,
	// or the catalog entry's image).
	path string
	// The catalog's: the entry (nil without a catalog), its digest, and
	// the download's bounds and CA file.
	entry    *schema.CatalogEntry
	sha256   string
	caFile   string
	maxBytes int64
	timeout  time.Duration
}

// url tells whether the image is downloaded.
func (w *wantImage) url() bool { return strings.HasPrefix(w.image, "https://") }

// local is the file the tool reads: the image itself, or its cache file.
func (w *wantImage) local() string {
	if w.url() {
		return CachePath(w.sha256)
	}
	return w.image
}

// wantOf is what spec device i asks of its image (nil: nothing, or its
// adapter has no catalog entry: catalogFinding says so).
func wantOf(req *plan.Request, i int) *wantImage {
	fw := req.Spec.Devices[i].Firmware
	switch {
	case fw == nil:
		return nil
	case fw.Catalog == nil:
		if fw.Image == "" || fw.Version == "" {
			return nil
		}
		return &wantImage{version: fw.Version, image: fw.Image, path: schema.Path("devices", i, "firmware", "image")}
	}
	dev := req.Devices[i]
	if dev == nil {
		return nil
	}
	k := fw.Catalog.Entry(dev.PSID, dev.PartNumber)
	if k < 0 {
		return nil
	}
	e := &fw.Catalog.Entries[k]
	w := &wantImage{version: e.Version, image: e.Image, path: schema.Path("devices", i, "firmware", "catalog", "entries", k, "image"),
		entry: e, sha256: e.SHA256, caFile: fw.Catalog.CAFile,
		maxBytes: int64(schema.DefaultCatalogMaxMiB) << 20, timeout: time.Duration(schema.DefaultCatalogTimeout) * time.Second}
	if fw.Catalog.MaxMiB != nil {
		w.maxBytes = int64(*fw.Catalog.MaxMiB) << 20
	}
	if fw.Catalog.Timeout != nil {
		w.timeout = time.Duration(*fw.Catalog.Timeout) * time.Second
	}
	return w
}

// catalogFinding is the finding of spec device i whose adapter no entry
// of its catalog lists (none when the catalog is optional).
func catalogFinding(req *plan.Request, i int) []schema.Finding {
	fw := req.Spec.Devices[i].Firmware
	dev := req.Devices[i]
	if fw == nil || fw.Catalog == nil || dev == nil || fw.Catalog.Optional || fw.Catalog.Entry(dev.PSID, dev.PartNumber) >= 0 {
		return nil
	}
	return []schema.Finding{req.Finding(schema.Path("devices", i, "firmware", "catalog"), "%s has %s: no catalog entry lists it, so rdmaform does not know its firmware; add an entry for it, or set optional: true to leave such adapters alone",
		deviceName(dev), identity(dev))}
}

// identity names what a catalog entry is looked up by.
func identity(dev *inventory.Device) string {
	psid := dev.PSID
	if psid == "" {
		psid = "no PSID (sysfs board_id is empty)"
	} else {
		psid = "PSID " + psid
	}
	if dev.PartNumber == "" {
		return psid + " and no part number"
	}
	return psid + ", part number " + dev.PartNumber
}

// catalogActivation is what a catalog entry says its burned image needs:
// the reset tool's answer when the entry allows a firmware reset, else
// the entry's reboot or power cycle.
func catalogActivation(req *plan.Request, w *wantImage, reset *plan.ActivateBy) *plan.ActivateBy {
	if w.entry == nil {
		return reset
	}
	src := req.Pos(strings.TrimSuffix(w.path, ".image") + ".activation")
	switch w.entry.Activation {
	case plan.ByReboot:
		return &plan.ActivateBy{By: plan.ByReboot, Catalog: src, Why: fmt.Sprintf("the catalog entry (%s) says this model's firmware becomes active by a reboot", src)}
	case plan.ByPowerCycle:
		return &plan.ActivateBy{By: plan.ByPowerCycle, Catalog: src, Why: fmt.Sprintf("the catalog entry (%s) says this model's firmware becomes active by a power cycle only", src)}
	}
	return reset
}

// CatalogError is a catalog image that could not be made ready to burn:
// not downloaded, not its digest, not its PSID or version. Nothing was
// burned.
type CatalogError struct {
	Address plan.Address
	Err     error
}

func (e *CatalogError) Error() string {
	return fmt.Sprintf("%v; rdmaform burned nothing on %s", e.Err, e.Address)
}

func (e *CatalogError) Unwrap() error { return e.Err }

// checkLocal checks the SHA-256 of a catalog image on the host (its
// path, or its cache file) before anything else reads it.
func checkLocal(h *host.Host, w *wantImage) error {
	name := w.local()
	got, n, err := host.HashFile(h.FS, name, w.maxBytes)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("image %s does not exist", name)
		}
		return fmt.Errorf("image %s: %w", name, err)
	}
	if got != w.sha256 {
		de := &host.DigestError{Path: name, Want: w.sha256, Got: got, Size: n}
		if w.url() {
			de.URL = w.image
		}
		return de
	}
	return nil
}

// fetchImage makes a catalog image ready to burn: an https image is
// downloaded into the cache unless the cache holds it (its digest
// checked), a path's digest is checked; nothing reads the file before.
//
// Equivalent to: curl --cacert CA -o /var/cache/rdmaform/firmware/SHA.bin URL; sha256sum -c
func fetchImage(ctx context.Context, h *host.Host, w *wantImage) error {
	if !w.url() {
		return checkLocal(h, w)
	}
	if checkLocal(h, w) == nil {
		return nil
	}
	o := host.DownloadOptions{MaxBytes: w.maxBytes, Timeout: w.timeout}
	if w.caFile != "" {
		pem, err := host.ReadStateFile(h.FS, w.caFile, 1<<20)
		if err != nil {
			return fmt.Errorf("reading the catalog's ca_file: %w", err)
		}
		o.CAPEM = pem
	}
	return host.Download(ctx, h.FS, w.image, w.local(), w.sha256, o)
}
