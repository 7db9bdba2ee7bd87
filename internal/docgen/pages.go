package docgen

import "fmt"

// Page is one generated page of docs/reference.
type Page struct {
	Name string // file name in docs/reference
	Data []byte
}

// Sources are the files, besides the code, that pages are made from: the
// committed docs/reference/json.md (its prose) and OutputSchema.
type Sources struct {
	JSONPage     []byte
	OutputSchema []byte
}

// Files are the Sources' paths in the repository.
const (
	JSONPageFile     = "docs/reference/json.md"
	OutputSchemaFile = "docs/json/output.schema.json"
)

// Pages generates every page of docs/reference.
func Pages(src Sources) ([]Page, error) {
	gens := []struct {
		name string
		gen  func() ([]byte, error)
	}{
		{"spec.md", SpecPage},
		{"commands.md", CommandsPage},
		{"exit-codes.md", ExitCodesPage},
		{"metrics.md", MetricsPage},
		{"json.md", func() ([]byte, error) { return jsonPage(src.JSONPage, src.OutputSchema) }},
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
