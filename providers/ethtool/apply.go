package ethtool

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// Make implements plan.TypedProvider: one `ethtool -G` and one
// `ethtool -L` with the values that still differ, then both read back:
// a driver may round a ring size (mlx5 to a power of two) or refuse one
// (virtio_net: "Cannot allocate memory" for a size that is not a power
// of two), and only the read back proves the change.
//
// Equivalent to: ethtool -G NAME rx N tx N; ethtool -L NAME combined N; ethtool -g NAME; ethtool -l NAME
func (p *Provider) Make(ctx context.Context, h *host.Host, _ *plan.Change, pl *payload) error {
	have, err := read(ctx, h, pl.netdev, pl.rings != nil, pl.channels != nil)
	if err != nil {
		return err
	}
	for _, part := range []struct {
		flag string
		want map[string]int
		have *Params
	}{{"-G", pl.rings, have.Rings}, {"-L", pl.channels, have.Channels}} {
		if part.want == nil {
			continue
		}
		if part.have == nil {
			return fmt.Errorf("%s: the driver has no such settings any more", pl.netdev)
		}
		args := []string{"ethtool", part.flag, pl.netdev}
		for _, k := range sortedKeys(part.want) {
			if part.have.Cur[k] != part.want[k] {
				args = append(args, k, strconv.Itoa(part.want[k]))
			}
		}
		if len(args) == 3 {
			continue
		}
		if _, err := h.Run(ctx, args...); err != nil {
			var ee *host.ExitError
			if errors.As(err, &ee) {
				return fmt.Errorf("%s: %s", strings.Join(args, " "), strings.TrimSpace(string(ee.Stderr)))
			}
			return err
		}
	}
	got, err := read(ctx, h, pl.netdev, pl.rings != nil, pl.channels != nil)
	if err != nil {
		return fmt.Errorf("reading %s back: %w", pl.netdev, err)
	}
	var left []string
	for _, part := range []struct {
		name string
		want map[string]int
		have *Params
	}{{"rings", pl.rings, got.Rings}, {"channels", pl.channels, got.Channels}} {
		for _, k := range sortedKeys(part.want) {
			if part.have == nil || part.have.Cur[k] != part.want[k] {
				cur := "unreadable"
				if part.have != nil {
					cur = strconv.Itoa(part.have.Cur[k])
				}
				left = append(left, fmt.Sprintf("%s.%s is %s, not %d", part.name, k, cur, part.want[k]))
			}
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("%s after ethtool: %s", pl.netdev, strings.Join(left, "; "))
	}
	return nil
}
