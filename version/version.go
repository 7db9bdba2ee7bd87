// Package version says which rdmaform this is: the release, the commit it
// was built from, the Go toolchain and the platform. The Makefile sets
// Version and Commit with -ldflags -X; a plain `go build` or `go install`
// falls back to what the Go toolchain records (runtime/debug.ReadBuildInfo).
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Set at link time:
//
//	-X github.com/rdmaform/rdmaform/version.Version=0.1.0
//	-X github.com/rdmaform/rdmaform/version.Commit=1f9887d2962a
var (
	Version = ""
	Commit  = ""
)

// Info is the build's identity, as `rdmaform version -o json` prints it
// and saved plans, audit reports and Ansible results record it.
type Info struct {
	Version  string `json:"version" yaml:"version"`
	Commit   string `json:"commit" yaml:"commit"`
	Go       string `json:"go" yaml:"go"`
	Platform string `json:"platform" yaml:"platform"`
}

// Get returns this binary's identity. Version and Commit are "unknown"
// when neither the linker nor the toolchain recorded them.
func Get() Info {
	var bi *debug.BuildInfo
	if b, ok := debug.ReadBuildInfo(); ok {
		bi = b
	}
	return get(Version, Commit, bi)
}

func get(ver, commit string, bi *debug.BuildInfo) Info {
	info := Info{Version: strings.TrimPrefix(ver, "v"), Commit: commit, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		if bi.GoVersion != "" {
			info.Go = bi.GoVersion
		}
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = strings.TrimPrefix(bi.Main.Version, "v")
		}
		if info.Commit == "" {
			var rev string
			dirty := false
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					dirty = s.Value == "true"
				}
			}
			if len(rev) > 12 {
				rev = rev[:12]
			}
			if rev != "" && dirty {
				rev += "-dirty"
			}
			info.Commit = rev
		}
	}
	if info.Version == "" {
		info.Version = "unknown"
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	return info
}

// String is the one-line form: rdmaform 0.1.0 (commit 1f9887d2962a, go1.26.8, linux/amd64).
func (i Info) String() string {
	return fmt.Sprintf("rdmaform %s (commit %s, %s, %s)", i.Version, i.Commit, i.Go, i.Platform)
}

// Short is version and commit, for the footers of reports.
func (i Info) Short() string {
	return fmt.Sprintf("%s (commit %s)", i.Version, i.Commit)
}
