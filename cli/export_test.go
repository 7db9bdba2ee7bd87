package cli

// SetParamDBPath points validate's default parameter database at p for a
// test; the returned func puts it back.
func SetParamDBPath(p string) func() {
	was := paramDBPath
	paramDBPath = p
	return func() { paramDBPath = was }
}
