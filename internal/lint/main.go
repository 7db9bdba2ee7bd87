// Command lint enforces rdmaform's one door to the OS: outside host/,
// sim/ and the test harnesses, no package may import os/exec, netlink or
// D-Bus, or call os file functions. Tests (_test.go) may use the OS for
// fixtures. It also keeps the simulator and the tool-output parsers apart:
// nothing under sim/ (tests included) imports a provider package, and no
// parser package imports the simulator, so a format one of them gets wrong
// cannot be written wrong and read wrong the same way. And providers read
// no attribute of a change back (Attr.Before, Attr.After): attributes are
// for people, values live in payloads; and no provider imports another
// (stages talk through plan.Facts), each Provider method sits in the
// same file of every provider package, and every plan.Address is made by
// plan.Addr; and only the programs, the front ends and cli's own packages
// import cli (nothing below the command line runs up to it). Run by
// `make lint`;
// prints offending positions and exits 1.
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// allowed are the directories that are the OS boundary: the host's door,
// the simulator, the programs, the test harnesses (the labs, and
// cli/clitest, which writes the spec files it runs the command line on),
// the developer tools that run the go tool on a copy of the tree, and the
// packaging's build programs (packaging/image/sbom reads the image it
// builds; it runs at make image, never on a host).
var allowed = []string{"host", "sim", "internal/testlab", "internal/lint", "internal/mutate", "cmd", "cli/clitest", "packaging"}

// forbiddenImports may only be imported at the boundary.
var forbiddenImports = map[string]bool{
	"os/exec":                               true,
	"syscall/exec":                          true,
	"github.com/vishvananda/netlink":        true,
	"github.com/vishvananda/netns":          true,
	"github.com/coreos/go-systemd/v22/dbus": true,
	"github.com/godbus/dbus/v5":             true,
	"github.com/Mellanox/rdmamap":           true,
}

// module is rdmaform's import path.
const module = "github.com/rdmaform/rdmaform"

// parsers are the packages that read real tools' output.
var parsers = []string{"providers/firmware/mlxfmt", "providers/ipoib/nmcli", "probe"}

// separation reports an import that joins the simulator and the parsers.
func separation(dir, imp string) string {
	if dir == "sim" || strings.HasPrefix(dir, "sim/") {
		if imp == module+"/providers" || strings.HasPrefix(imp, module+"/providers/") || imp == module+"/probe" {
			return "the simulator shares no code with the providers' parsers"
		}
	}
	for _, p := range parsers {
		if dir == p && (imp == module+"/sim" || strings.HasPrefix(imp, module+"/sim/")) {
			return "a parser does not depend on the simulator"
		}
	}
	return ""
}

// crossProvider reports a provider package that imports another provider:
// what one stage tells a later one goes through plan.Facts. The tools'
// output parsers are shared libraries, not providers.
func crossProvider(dir, imp string) string {
	if (dir == "audit" || strings.HasPrefix(dir, "audit/")) && (imp == module+"/providers" || strings.HasPrefix(imp, module+"/providers/")) {
		return "the audit checks what the providers declare (plan.Result.Managed, plan.Facts) and keeps no list of them"
	}
	own, ok := strings.CutPrefix(dir, "providers/")
	if !ok {
		return ""
	}
	other, ok := strings.CutPrefix(imp, module+"/providers/")
	if !ok {
		return ""
	}
	own, _, _ = strings.Cut(own, "/")
	for _, p := range parsers {
		if imp == module+"/"+p {
			return ""
		}
	}
	if first, _, _ := strings.Cut(other, "/"); first == own {
		return ""
	}
	return "a provider does not import another: earlier stages tell later ones through plan.Facts"
}

// cliUsers are the directories whose packages may import cli: the
// programs, the front ends that run rdmaform's commands in process, the
// generator of the command reference (it reads the command tree), and
// cli's own packages (its test helper cli/clitest). Everything else sits
// below the command line: a lab, a provider or the engine that imported
// it would run up the layers (tests may: they drive the whole program).
var cliUsers = []string{"cmd", "cli", "ansible", "bench", "internal/docgen"}

// upLayers reports an import of the command line from below it.
func upLayers(dir, imp string) string {
	if imp != module+"/cli" && !strings.HasPrefix(imp, module+"/cli/") {
		return ""
	}
	for _, u := range cliUsers {
		if dir == u || strings.HasPrefix(dir, u+"/") {
			return ""
		}
	}
	return "only the programs (cmd/), the front ends (ansible/, bench/), the docs generator (internal/docgen/) and cli's own packages import the command line; a lab or a library under it does not"
}

// providerFiles is the file of each Provider method in a provider
// package ("" is the package's own NAME.go).
var providerFiles = map[string]string{
	"Name": "", "Observe": "", "Plan": "diff.go", "Make": "apply.go", "ApplyBatch": "apply.go", "ParallelKey": "apply.go",
	"Revert": "revert.go", "CaptureFrom": "capture.go",
}

// pureCapture says why a provider's capture.go may not import p: show is
// built from what Observe read, so CaptureFrom reads nothing itself.
func pureCapture(dir, file, p string) string {
	if name, ok := strings.CutPrefix(dir, "providers/"); !ok || strings.Contains(name, "/") || file != "capture.go" {
		return ""
	}
	if p == "context" || p == module+"/host" {
		return "CaptureFrom builds show from what Observe read; capture.go reads nothing itself"
	}
	return ""
}

// recvName is the type name of a method receiver (Provider for *Provider).
func recvName(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// osFuncs are the os package's file-system and process functions.
var osFuncs = map[string]bool{
	"Open": true, "OpenFile": true, "Create": true, "CreateTemp": true, "ReadFile": true, "WriteFile": true,
	"ReadDir": true, "Mkdir": true, "MkdirAll": true, "MkdirTemp": true, "Remove": true, "RemoveAll": true,
	"Rename": true, "Stat": true, "Lstat": true, "Readlink": true, "Symlink": true, "Link": true,
	"Chmod": true, "Chown": true, "Lchown": true, "Truncate": true, "Chdir": true, "DirFS": true,
	"StartProcess": true, "Chtimes": true,
}

func isAllowed(dir string) bool {
	for _, a := range allowed {
		if dir == a || strings.HasPrefix(dir, a+"/") {
			return true
		}
	}
	return false
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run checks the tree args[0] names (".", without one), prints every
// problem to stdout and returns the exit code: 1 when there is a problem
// or the tree cannot be read, 0 when it is clean.
func run(args []string, stdout, stderr io.Writer) int {
	root := "."
	if len(args) > 0 {
		root = args[0]
	}
	problems, err := check(root)
	if err != nil {
		fmt.Fprintln(stderr, "lint:", err)
		return 1
	}
	for _, p := range problems {
		fmt.Fprintln(stdout, p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(stdout, "lint: %d calls past the OS boundary\n", len(problems))
		return 1
	}
	return 0
}

// check returns every boundary violation below root, sorted.
func check(root string) ([]string, error) {
	var problems []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		dir := filepath.ToSlash(filepath.Dir(rel))
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution|parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if why := separation(dir, p); why != "" {
				problems = append(problems, fmt.Sprintf("%s: imports %s; %s", fset.Position(imp.Pos()), p, why))
			}
			if why := crossProvider(dir, p); why != "" && !strings.HasSuffix(path, "_test.go") {
				problems = append(problems, fmt.Sprintf("%s: imports %s; %s", fset.Position(imp.Pos()), p, why))
			}
			if why := upLayers(dir, p); why != "" && !strings.HasSuffix(path, "_test.go") {
				problems = append(problems, fmt.Sprintf("%s: imports %s; %s", fset.Position(imp.Pos()), p, why))
			}
			if why := pureCapture(dir, filepath.Base(path), p); why != "" {
				problems = append(problems, fmt.Sprintf("%s: imports %s; %s", fset.Position(imp.Pos()), p, why))
			}
		}
		if strings.HasSuffix(path, "_test.go") || isAllowed(dir) {
			return nil
		}
		f, err = parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if name, ok := strings.CutPrefix(dir, "providers/"); ok && !strings.Contains(name, "/") {
			// One layout in every provider package: find one, find all.
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Recv == nil || len(fd.Recv.List) != 1 || recvName(fd.Recv.List[0].Type) != "Provider" {
					continue
				}
				want, ok := providerFiles[fd.Name.Name]
				if !ok {
					continue
				}
				if want == "" {
					want = name + ".go"
				}
				if got := filepath.Base(path); got != want {
					problems = append(problems, fmt.Sprintf("%s: Provider.%s belongs in %s (every provider: NAME.go Observe, diff.go Plan, apply.go Make, revert.go Revert, capture.go CaptureFrom)", fset.Position(fd.Pos()), fd.Name.Name, want))
				}
			}
		}
		if strings.HasPrefix(dir, "providers/") {
			// Observations and payloads come as the provider's own types
			// through plan.Observation and plan.PayloadOf, never asserted
			// by hand.
			ast.Inspect(f, func(n ast.Node) bool {
				ta, ok := n.(*ast.TypeAssertExpr)
				if !ok || ta.Type == nil {
					return true
				}
				if sel, ok := ta.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "Payload" {
					problems = append(problems, fmt.Sprintf("%s: asserts a payload; use plan.PayloadOf", fset.Position(ta.Pos())))
				}
				if id, ok := ta.X.(*ast.Ident); ok && id.Name == "observed" {
					problems = append(problems, fmt.Sprintf("%s: asserts an observation; use plan.Observation", fset.Position(ta.Pos())))
				}
				return true
			})
			// A change's attributes are for people: code keeps the values
			// it needs in its payload, and never reads them back.
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok || (sel.Sel.Name != "Before" && sel.Sel.Name != "After") {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "time" {
					return true
				}
				problems = append(problems, fmt.Sprintf("%s: reads .%s; an attribute is for people: keep the value in the payload (plan.Reversed swaps attributes for a revert)", fset.Position(sel.Pos()), sel.Sel.Name))
				return true
			})
		}
		if dir != "plan" {
			// Every address is made by plan.Addr (the zero Address, no
			// address, excepted).
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.CompositeLit)
				if !ok || len(lit.Elts) == 0 {
					return true
				}
				if sel, ok := lit.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Address" {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == "plan" {
						problems = append(problems, fmt.Sprintf("%s: builds a plan.Address by hand; make it with plan.Addr(kind, key)", fset.Position(lit.Pos())))
					}
				}
				return true
			})
		}
		osName := ""
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if forbiddenImports[p] {
				problems = append(problems, fmt.Sprintf("%s: imports %s; only host/ and sim/ touch the OS", fset.Position(imp.Pos()), p))
			}
			if p == "os" {
				osName = "os"
				if imp.Name != nil {
					osName = imp.Name.Name
				}
			}
		}
		if osName == "" {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == osName && osFuncs[sel.Sel.Name] {
				problems = append(problems, fmt.Sprintf("%s: os.%s; file access goes through host.FS", fset.Position(sel.Pos()), sel.Sel.Name))
			}
			return true
		})
		return nil
	})
	sort.Strings(problems)
	return problems, err
}
