package modules

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.Capturer = (*Provider)(nil)

// Capture implements plan.Capturer: the modules ConfFile lists, sorted.
// Modules merely loaded are not captured: most are loaded by udev for the
// hardware and are not rdmaform's to manage, and listing them would plan
// adding each to ConfFile. Without ConfFile the section is left out.
//
// Equivalent to: cat /etc/modules-load.d/rdmaform.conf
func (p *Provider) Capture(_ context.Context, h *host.Host, _ *plan.Request, spec *schema.Spec, _ plan.CaptureOptions) error {
	b, err := h.FS.ReadFile(ConfFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", ConfFile, err)
	}
	spec.Modules = sortedKeys(parseConf(string(b)))
	return nil
}
