package cli

import "github.com/rdmaform/rdmaform/host"

// SetParamDBPath points validate's default parameter database at p for a
// test; the returned func puts it back.
func SetParamDBPath(p string) func() {
	was := paramDBPath
	paramDBPath = p
	return func() { paramDBPath = was }
}

// RunOnHost runs rdmaform as Run does, with wrap applied to the host the
// global flags open: a test's tree whose commands run in a network
// namespace of its own, say.
func RunOnHost(args []string, env Env, wrap func(*host.Host) *host.Host) int {
	code, _ := (&app{env: env, wrapHost: wrap}).run(args)
	return code
}
