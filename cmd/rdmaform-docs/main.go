// Command rdmaform-docs writes rdmaform's manual pages (section 8, one
// per command, from the cobra command tree) and its bash, zsh and fish
// completions, for `make install` and `make package`, and the generated
// references in docs/reference for `make docs`:
//
//	rdmaform-docs -man DIR -completions DIR -unit FILE -binary /usr/sbin/rdmaform -version 0.1.0
//
// Each command has its page (rdmaform-plan.8, titled RDMAFORM-PLAN), and
// rdmaform-agent has rdmaform-agent.8; -version is the release the pages'
// footer names (make passes its VERSION; go run records none).
//
// -unit writes the boot unit for the installed binary, as vendor unit
// (/usr/lib/systemd/system): the same service `persistence: boot-unit`
// installs and enables in /etc/systemd/system, where it takes precedence.
//
// -reference DIR writes the generated references (docs/reference: the
// spec, the commands, the JSON documents, the exit codes, the metrics;
// internal/docgen); run in the repository's root, whose
// docs/reference/json.md gives that page's prose and docs/json its schemas.
//
// Pages carry SOURCE_DATE_EPOCH's date when it is set, so packages built
// twice from one commit are identical.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/internal/docgen"
	"github.com/rdmaform/rdmaform/providers/bootunit"
	"github.com/rdmaform/rdmaform/version"
)

func main() {
	man := flag.String("man", "", "write the manual pages to `DIR`")
	comp := flag.String("completions", "", "write rdmaform.bash, _rdmaform (zsh) and rdmaform.fish to `DIR`")
	unitFile := flag.String("unit", "", "write the boot unit to `FILE`")
	binary := flag.String("binary", bootunit.DefaultBinary, "the installed rdmaform the unit runs (`PATH`)")
	ref := flag.String("reference", "", "write the generated references to `DIR` (docs/reference)")
	ver := flag.String("version", version.Get().Version, "the release the manual pages name (`VERSION`)")
	flag.Parse()
	if *ref != "" {
		if err := writeReference(*ref); err != nil {
			fmt.Fprintln(os.Stderr, "rdmaform-docs:", err)
			os.Exit(1)
		}
		if *man == "" && *comp == "" && *unitFile == "" {
			return
		}
	}
	if *unitFile != "" {
		if err := writeUnit(*unitFile, *binary); err != nil {
			fmt.Fprintln(os.Stderr, "rdmaform-docs:", err)
			os.Exit(1)
		}
		if *man == "" && *comp == "" {
			return
		}
	}
	if err := run(*man, *comp, *ver); err != nil {
		fmt.Fprintln(os.Stderr, "rdmaform-docs:", err)
		os.Exit(1)
	}
}

// vendorHeader replaces the unit's first line (bootunit.Marker, which
// says apply rewrites the file) in the packaged copy, which apply never
// touches.
const vendorHeader = "# Installed with rdmaform. persistence: boot-unit in a spec installs and enables a copy in /etc/systemd/system."

func writeUnit(file, binary string) error {
	if !filepath.IsAbs(binary) {
		return fmt.Errorf("-binary %q: the unit needs an absolute path", binary)
	}
	u := bootunit.UnitFile(binary)
	if i := bytes.IndexByte(u, '\n'); i >= 0 {
		u = append([]byte(vendorHeader), u[i:]...)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return os.WriteFile(file, u, 0o644)
}

// writeReference writes docs/reference's generated pages into dir, run
// from the repository's root (make docs).
func writeReference(dir string) error {
	var src docgen.Sources
	var err error
	if src.JSONPage, err = os.ReadFile(docgen.JSONPageFile); err != nil {
		return err
	}
	if src.OutputSchema, err = os.ReadFile(docgen.OutputSchemaFile); err != nil {
		return err
	}
	pages, err := docgen.Pages(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, p := range pages {
		if err := os.WriteFile(filepath.Join(dir, p.Name), p.Data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func run(man, comp, ver string) error {
	if man == "" && comp == "" {
		return fmt.Errorf("nothing to do: give -man DIR and/or -completions DIR")
	}
	root := cli.Command()
	root.DisableAutoGenTag = true
	if man != "" {
		if err := os.MkdirAll(man, 0o755); err != nil {
			return err
		}
		// No Title: each page gets its command's (RDMAFORM-PLAN).
		hdr := &doc.GenManHeader{Section: "8", Source: "rdmaform " + ver, Manual: "rdmaform manual"}
		if err := doc.GenManTree(root, hdr, man); err != nil {
			return fmt.Errorf("manual pages: %w", err)
		}
		if err := doc.GenManTree(docgen.AgentCommand(), hdr, man); err != nil {
			return fmt.Errorf("manual page of rdmaform-agent: %w", err)
		}
	}
	if comp != "" {
		if err := os.MkdirAll(comp, 0o755); err != nil {
			return err
		}
		for name, gen := range map[string]func(*cobra.Command, string) error{
			"rdmaform.bash": func(c *cobra.Command, f string) error { return c.GenBashCompletionFileV2(f, true) },
			"_rdmaform":     func(c *cobra.Command, f string) error { return c.GenZshCompletionFile(f) },
			"rdmaform.fish": func(c *cobra.Command, f string) error { return c.GenFishCompletionFile(f, true) },
		} {
			if err := gen(root, filepath.Join(comp, name)); err != nil {
				return fmt.Errorf("completion %s: %w", name, err)
			}
		}
	}
	return nil
}
