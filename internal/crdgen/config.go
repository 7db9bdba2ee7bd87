package crdgen

import "golang.org/x/tools/go/packages"

// loaderConfig loads the API package from the repository at root.
func loaderConfig(root string) *packages.Config {
	return &packages.Config{Dir: root}
}
