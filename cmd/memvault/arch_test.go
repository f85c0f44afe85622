package main

import (
	"bufio"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const modulePath = "github.com/memvault/memvault"

// TestPackageLayers holds the code to docs/ARCHITECTURE.md's package map:
// every package of the module is in the map, and a package imports only
// packages of a lower layer. Go already refuses cycles; the layers refuse
// the subtler drift of an engine package that reaches up into the hooks or
// the command line, and they make a new package say where it belongs.
func TestPackageLayers(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	layers := documentedLayers(t, filepath.Join(root, "docs", "ARCHITECTURE.md"))
	imports := moduleImports(t, root)
	var pkgs []string
	for p := range imports {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		layer, ok := layers[p]
		if !ok {
			t.Errorf("%s: not in docs/ARCHITECTURE.md's package map; add it with its layer", p)
			continue
		}
		for _, dep := range imports[p] {
			dl, ok := layers[dep]
			if ok && dl >= layer {
				t.Errorf("%s (layer %d) imports %s (layer %d): a package may import only lower layers", p, layer, dep, dl)
			}
		}
	}
	for p := range layers {
		if _, ok := imports[p]; !ok {
			t.Errorf("docs/ARCHITECTURE.md lists %s, which has no Go code", p)
		}
	}
}

// documentedLayers reads the package map: table rows of the form
// "| `path` | layer | ... |".
func documentedLayers(t *testing.T, doc string) map[string]int {
	f, err := os.Open(doc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile("^\\| `([a-z0-9/]+)/?` \\| ([0-9]+) \\|")
	layers := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := row.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		layers[m[1]] = n
	}
	if len(layers) == 0 {
		t.Fatal("docs/ARCHITECTURE.md: no package map found")
	}
	return layers
}

// moduleImports maps each package of the module (folder relative to the
// root) that has non-test Go files to the module packages those files
// import. Nested modules and testdata are not the module's code.
func moduleImports(t *testing.T, root string) map[string][]string {
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != root && (name == "testdata" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		rel = filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, dep := range out[rel] {
			seen[dep] = true
		}
		if _, ok := out[rel]; !ok {
			out[rel] = nil
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if dep, ok := strings.CutPrefix(path, modulePath+"/"); ok && !seen[dep] {
				seen[dep] = true
				out[rel] = append(out[rel], dep)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
