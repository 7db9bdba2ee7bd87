package firmware

import (
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// noBurn is what a version finding says of the way out: without an image
// rdmaform compares the running firmware with the spec, it installs none.
const noBurn = "Give firmware.image (a firmware image of that version for the adapter's PSID) for rdmaform to burn it, or update it with the vendor's tools and reboot or reset the adapter"

// hasVersion reports whether a spec device asks for a firmware version.
func hasVersion(fw *schema.Firmware) bool {
	return fw != nil && (fw.Version != "" || fw.MinVersion != "")
}

// versionFindings compares the running firmware of spec device i (the
// RDMA device's fw_ver, read by the inventory) with the version or
// min_version the spec asks for. A mismatch is a finding at the spec
// line naming both versions: the plan cannot make it right.
func versionFindings(req *plan.Request, i int, fw *schema.Firmware, dev *inventory.Device) []schema.Finding {
	key, want, lo := "version", fw.Version, 3
	if fw.Version == "" {
		key, want, lo = "min_version", fw.MinVersion, 1
	}
	path := schema.Path("devices", i, "firmware", key)
	asked, err := schema.ParseFirmwareVersion(want, lo, 3)
	if err != nil {
		return nil // Validate reported it
	}
	if dev.FWVer == "" {
		return []schema.Finding{req.Finding(path, "%s reports no firmware version (its fw_ver is empty: a software device such as Soft-RoCE has no firmware), so %s %s cannot be checked", dev.Name, key, want)}
	}
	running, ok := parseRunning(dev.FWVer)
	if !ok {
		return []schema.Finding{req.Finding(path, "%s reports firmware version %q, which is not dotted decimal numbers; %s %s cannot be checked", dev.Name, dev.FWVer, key, want)}
	}
	name := deviceName(dev)
	if fw.Version != "" {
		if compareVersions(running, asked) != 0 || len(running) != len(asked) {
			return []schema.Finding{req.Finding(path, "%s runs firmware %s; the spec asks for version %s. %s", name, dev.FWVer, want, noBurn)}
		}
		return nil
	}
	if compareVersions(running, asked) < 0 {
		return []schema.Finding{req.Finding(path, "%s runs firmware %s, older than min_version %s. %s", name, dev.FWVer, want, noBurn)}
	}
	return nil
}

// parseRunning reads a device's fw_ver: dot-separated decimal numbers
// (mlx5: 28.39.1002; mlx4: 2.42.5000).
func parseRunning(s string) ([]int, bool) {
	var out []int
	for _, p := range strings.Split(s, ".") {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || strings.Trim(p, "0123456789") != "" {
			return nil, false
		}
		out = append(out, n)
	}
	return out, true
}

// compareVersions compares two versions number by number, a missing
// number counting as 0: -1, 0 or 1.
func compareVersions(a, b []int) int {
	for k := 0; k < max(len(a), len(b)); k++ {
		x, y := 0, 0
		if k < len(a) {
			x = a[k]
		}
		if k < len(b) {
			y = b[k]
		}
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
	}
	return 0
}
