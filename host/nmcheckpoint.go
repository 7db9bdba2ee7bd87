package host

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/godbus/dbus/v5"
)

// NetworkManager's checkpoint API (org.freedesktop.NetworkManager): the
// daemon snapshots its devices and their active connections and rolls
// them back itself when the timeout passes, whatever happens to the
// client. A checkpoint does not cover inactive profiles (measured on NM
// 1.42): rdmaform's rollback journal does.
const (
	nmService = "org.freedesktop.NetworkManager"
	nmPath    = dbus.ObjectPath("/org/freedesktop/NetworkManager")
	nmIface   = "org.freedesktop.NetworkManager"
	// NMCheckpointDeleteNew: connections added after the checkpoint are
	// deleted by its rollback (NM_CHECKPOINT_CREATE_FLAG_DELETE_NEW_CONNECTIONS).
	NMCheckpointDeleteNew = 0x02
	// NMCheckpointDisconnectNew: devices that appear after it are
	// disconnected (NM_CHECKPOINT_CREATE_FLAG_DISCONNECT_NEW_DEVICES).
	NMCheckpointDisconnectNew = 0x04
)

// ErrCheckpointPending is wrapped when NetworkManager already holds a
// checkpoint: an apply waits for confirmation (or another tool's does).
var ErrCheckpointPending = errors.New("a NetworkManager checkpoint is pending")

// NM is a connection to NetworkManager's D-Bus API.
type NM struct{ conn *dbus.Conn }

// DialNM connects to the system bus named by DBUS_SYSTEM_BUS_ADDRESS in
// environ (the default system bus without it).
func DialNM(ctx context.Context, environ []string) (*NM, error) {
	return dialNM(ctx, ctx, environ)
}

// dialNM dials within ctx a connection that lives as long as life.
func dialNM(ctx, life context.Context, environ []string) (*NM, error) {
	addr := "unix:path=/run/dbus/system_bus_socket"
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "DBUS_SYSTEM_BUS_ADDRESS="); ok && v != "" {
			addr = v
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	conn, err := dbus.Dial(addr, dbus.WithContext(life))
	if err != nil {
		return nil, fmt.Errorf("connecting to the system bus (%s): %w", addr, err)
	}
	if err := conn.Auth(nil); err != nil {
		conn.Close()
		return nil, fmt.Errorf("authenticating on the system bus (%s): %w", addr, err)
	}
	if err := conn.Hello(); err != nil {
		conn.Close()
		return nil, fmt.Errorf("joining the system bus (%s): %w", addr, err)
	}
	return &NM{conn: conn}, nil
}

// Close closes the connection. A checkpoint outlives it: the daemon owns
// its timer.
func (n *NM) Close() { n.conn.Close() }

func (n *NM) obj() dbus.BusObject { return n.conn.Object(nmService, nmPath) }

// CheckpointCreate snapshots every device with a rollback after timeout
// (whole seconds, at least 1). Equivalent to the D-Bus call
// CheckpointCreate([], TIMEOUT, DELETE_NEW_CONNECTIONS|DISCONNECT_NEW_DEVICES).
func (n *NM) CheckpointCreate(ctx context.Context, timeout time.Duration) (string, error) {
	secs := uint32((timeout + time.Second - 1) / time.Second)
	if secs == 0 {
		secs = 1
	}
	var cp dbus.ObjectPath
	err := n.obj().CallWithContext(ctx, nmIface+".CheckpointCreate", 0, []dbus.ObjectPath{}, secs, uint32(NMCheckpointDeleteNew|NMCheckpointDisconnectNew)).Store(&cp)
	if err != nil {
		if strings.Contains(err.Error(), "already included in checkpoint") {
			return "", fmt.Errorf("%w: %v", ErrCheckpointPending, err)
		}
		return "", fmt.Errorf("NetworkManager CheckpointCreate: %w", err)
	}
	return string(cp), nil
}

// CheckpointDestroy commits a checkpoint: its rollback is cancelled.
// A checkpoint that is gone (rolled back, or the daemon restarted) is not
// an error. Equivalent to the D-Bus call CheckpointDestroy(CP).
func (n *NM) CheckpointDestroy(ctx context.Context, cp string) error {
	err := n.obj().CallWithContext(ctx, nmIface+".CheckpointDestroy", 0, dbus.ObjectPath(cp)).Err
	if err != nil && !n.gone(ctx, cp) {
		return fmt.Errorf("NetworkManager CheckpointDestroy %s: %w", cp, err)
	}
	return nil
}

// CheckpointAdjust sets a checkpoint's rollback to timeout from now
// (whole seconds, at least 1): an apply that took longer than planned
// gives its operator the whole confirm timeout from the question on.
// Equivalent to the D-Bus call CheckpointAdjustRollbackTimeout(CP,
// TIMEOUT) (NetworkManager 1.12 and later).
func (n *NM) CheckpointAdjust(ctx context.Context, cp string, timeout time.Duration) error {
	secs := uint32((timeout + time.Second - 1) / time.Second)
	if secs == 0 {
		secs = 1
	}
	if err := n.obj().CallWithContext(ctx, nmIface+".CheckpointAdjustRollbackTimeout", 0, dbus.ObjectPath(cp), secs).Err; err != nil {
		return fmt.Errorf("NetworkManager CheckpointAdjustRollbackTimeout %s: %w", cp, err)
	}
	return nil
}

// CheckpointRollback rolls a checkpoint back now. Equivalent to the D-Bus
// call CheckpointRollback(CP).
func (n *NM) CheckpointRollback(ctx context.Context, cp string) error {
	var res map[string]uint32
	err := n.obj().CallWithContext(ctx, nmIface+".CheckpointRollback", 0, dbus.ObjectPath(cp)).Store(&res)
	if err != nil && !n.gone(ctx, cp) {
		return fmt.Errorf("NetworkManager CheckpointRollback %s: %w", cp, err)
	}
	return nil
}

// Checkpoints lists the pending checkpoints (property Checkpoints).
func (n *NM) Checkpoints(ctx context.Context) ([]string, error) {
	v, err := n.obj().GetProperty(nmIface + ".Checkpoints")
	if err != nil {
		return nil, fmt.Errorf("NetworkManager Checkpoints: %w", err)
	}
	paths, _ := v.Value().([]dbus.ObjectPath)
	out := []string{}
	for _, p := range paths {
		out = append(out, string(p))
	}
	return out, nil
}

func (n *NM) gone(ctx context.Context, cp string) bool {
	cps, err := n.Checkpoints(ctx)
	if err != nil {
		return false
	}
	for _, c := range cps {
		if c == cp {
			return false
		}
	}
	return true
}
