package host

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type recordRunner struct{ got []time.Duration }

func (r *recordRunner) Run(_ context.Context, c Cmd) (Result, error) {
	r.got = append(r.got, c.Timeout)
	return Result{}, nil
}

// TestCapTimeout: RDMAFORM_COMMAND_TIMEOUT lowers every longer timeout
// (the default, and a tool's own) and leaves shorter ones alone.
func TestCapTimeout(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		timeout time.Duration
		want    time.Duration
		wantErr bool
	}{
		{name: "unset keeps the default", timeout: 0, want: 0},
		{name: "caps the default", environ: []string{TimeoutEnv + "=300ms"}, timeout: 0, want: 300 * time.Millisecond},
		{name: "caps a longer own timeout", environ: []string{TimeoutEnv + "=2s"}, timeout: 100 * time.Second, want: 2 * time.Second},
		{name: "keeps a shorter own timeout", environ: []string{TimeoutEnv + "=2s"}, timeout: time.Second, want: time.Second},
		{name: "not a duration", environ: []string{TimeoutEnv + "=soon"}, wantErr: true},
		{name: "not positive", environ: []string{TimeoutEnv + "=0s"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			max, err := TimeoutFromEnv(tt.environ)
			if (err != nil) != tt.wantErr {
				t.Fatalf("TimeoutFromEnv: %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			rec := &recordRunner{}
			if _, err := CapTimeout(rec, max).Run(context.Background(), Cmd{Args: []string{"true"}, Timeout: tt.timeout}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]time.Duration{tt.want}, rec.got); diff != "" {
				t.Errorf("timeout passed on (-want +got):\n%s", diff)
			}
		})
	}
}
