package docgen

import (
	"fmt"
	"os"
	"path/filepath"
)

// Page is one generated page of docs/reference.
type Page struct {
	Name string // file name in docs/reference
	Data []byte
}

// Pages generates every page of docs/reference. repo is the repository's
// root: json.md's prose is read from the committed page there, and its
// schemas from docs/json.
func Pages(repo string) ([]Page, error) {
	gens := []struct {
		name string
		gen  func() ([]byte, error)
	}{
		{"spec.md", SpecPage},
		{"commands.md", CommandsPage},
		{"exit-codes.md", ExitCodesPage},
		{"metrics.md", MetricsPage},
		{"json.md", func() ([]byte, error) { return JSONPage(repo) }},
	}
	var out []Page
	for _, g := range gens {
		data, err := g.gen()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", g.name, err)
		}
		out = append(out, Page{Name: g.name, Data: data})
	}
	return out, nil
}

// Write writes the pages into dir.
func Write(dir string, pages []Page) error {
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
