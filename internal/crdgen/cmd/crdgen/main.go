// Command crdgen writes what make manifests makes (internal/crdgen):
// the CRDs in deploy/kubernetes/crds, api/v1alpha1's deep copies, and
// the Helm chart's files made from deploy/kubernetes.
// Run it from the repository's root.
package main

import (
	"fmt"
	"os"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/crdgen"
)

func main() {
	files, err := crdgen.Generate(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "crdgen:", err)
		os.Exit(1)
	}
	for _, name := range crdgen.Names(files) {
		if err := host.WriteLocalFile(name, files[name], 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "crdgen:", err)
			os.Exit(1)
		}
		fmt.Println(name)
	}
}
