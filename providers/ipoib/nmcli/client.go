package nmcli

import (
	"context"
	"fmt"
	"strings"
)

// Result is what one nmcli run printed and its exit status.
type Result struct {
	Stdout []byte
	Stderr []byte
	Exit   int
}

// Runner runs an argument vector (argv[0] is "nmcli") with LC_ALL=C and the
// environment that finds NetworkManager's bus. It returns an error only
// when nmcli could not run at all (not installed, timed out); a non-zero
// exit is reported in Result.Exit.
type Runner func(ctx context.Context, argv []string) (Result, error)

// Client issues nmcli commands through a Runner.
type Client struct {
	Run Runner
}

// run runs argv and turns a non-zero exit into an *Error.
func (c *Client) run(ctx context.Context, argv []string) (Result, error) {
	r, err := c.Run(ctx, argv)
	if err != nil {
		return r, fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	if r.Exit != 0 {
		return r, newError(argv, r.Exit, r.Stderr)
	}
	return r, nil
}

// List reads every infiniband profile in at most two nmcli runs, whatever
// their number: ListArgs, then ShowArgs for all infiniband UUIDs at once.
// Profiles are sorted by name, then UUID.
func (c *Client) List(ctx context.Context) ([]Profile, error) {
	r, err := c.run(ctx, ListArgs())
	if err != nil {
		return nil, err
	}
	entries, err := ParseList(r.Stdout)
	if err != nil {
		return nil, err
	}
	byUUID := map[string]ListEntry{}
	var uuids []string
	for _, e := range entries {
		if e.Type == "infiniband" {
			byUUID[e.UUID] = e
			uuids = append(uuids, e.UUID)
		}
	}
	if len(uuids) == 0 {
		return nil, nil
	}
	r, err = c.run(ctx, ShowArgs(uuids))
	// A profile deleted between the two runs makes nmcli exit 10 after
	// printing the others: keep those.
	if err != nil && !IsNoSuchConnection(err) {
		return nil, err
	}
	ps, perr := ParseProfiles(r.Stdout)
	if perr != nil {
		return nil, perr
	}
	for i := range ps {
		e := byUUID[ps[i].UUID]
		ps[i].Active = ps[i].Active || e.Active
		ps[i].Device = e.Device
	}
	return ps, nil
}

// Add creates p and returns its UUID.
func (c *Client) Add(ctx context.Context, p Profile) (string, error) {
	r, err := c.run(ctx, AddArgs(p))
	if err != nil {
		return "", err
	}
	return ParseAdded(r.Stdout)
}

// Modify sets the given properties of one profile; no settings, no run.
func (c *Client) Modify(ctx context.Context, uuid string, settings []Setting) error {
	if len(settings) == 0 {
		return nil
	}
	_, err := c.run(ctx, ModifyArgs(uuid, settings))
	return err
}

// Up activates a profile.
func (c *Client) Up(ctx context.Context, uuid string) error {
	_, err := c.run(ctx, UpArgs(uuid))
	return err
}

// Down deactivates a profile.
func (c *Client) Down(ctx context.Context, uuid string) error {
	_, err := c.run(ctx, DownArgs(uuid))
	return err
}

// Delete deletes a profile.
func (c *Client) Delete(ctx context.Context, uuid string) error {
	_, err := c.run(ctx, DeleteArgs(uuid))
	return err
}

// Running reports whether NetworkManager answers on the bus.
func (c *Client) Running(ctx context.Context) (bool, error) {
	r, err := c.run(ctx, RunningArgs())
	if IsNotRunning(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(string(r.Stdout)) == "running", nil
}
