package version

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestGet(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tt := range []struct {
		name        string
		ver, commit string
		bi          *debug.BuildInfo
		want        Info
	}{
		{"linker flags win", "v0.1.0", "abc123", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.9"}, Settings: vcs("ffffffffffffffffffff", "false")},
			Info{Version: "0.1.0", Commit: "abc123", Go: "go1.26.8", Platform: platform}},
		{"go install of a tag", "", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.1.0"}},
			Info{Version: "0.1.0", Commit: "unknown", Go: "go1.26.8", Platform: platform}},
		{"go build in a dirty checkout", "", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261122043118-1f9887d2962a+dirty"}, Settings: vcs("1f9887d2962a1f9887d2962a", "true")},
			Info{Version: "0.0.0-20261122043118-1f9887d2962a+dirty", Commit: "1f9887d2962a-dirty", Go: "go1.26.8", Platform: platform}},
		{"nothing recorded", "", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			Info{Version: "unknown", Commit: "unknown", Go: "go1.26.8", Platform: platform}},
		{"no build info", "", "", nil,
			Info{Version: "unknown", Commit: "unknown", Go: runtime.Version(), Platform: platform}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := get(tt.ver, tt.commit, tt.bi); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestString(t *testing.T) {
	i := Info{Version: "0.1.0", Commit: "1f9887d2962a", Go: "go1.26.8", Platform: "linux/arm64"}
	if got, want := i.String(), "rdmaform 0.1.0 (commit 1f9887d2962a, go1.26.8, linux/arm64)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
