package main

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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
	layers, documented := documentedLayers(t, filepath.Join(root, "docs", "ARCHITECTURE.md"))
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
		got := slices.Sorted(slices.Values(imports[p]))
		if want := documented[p]; !slices.Equal(got, want) {
			t.Errorf("%s imports %v; docs/ARCHITECTURE.md's package map says %v", p, got, want)
		}
	}
	for p := range layers {
		if _, ok := imports[p]; !ok {
			t.Errorf("docs/ARCHITECTURE.md lists %s, which has no Go code", p)
		}
	}
}

// documentedLayers reads the package map: table rows of the form
// "| `path` | layer | what it owns | `import`, `import` |" (or "none"),
// giving each package's layer and its documented imports, sorted.
func documentedLayers(t *testing.T, doc string) (map[string]int, map[string][]string) {
	f, err := os.Open(doc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile("^\\| `([a-z0-9/]+)/?` \\| ([0-9]+) \\|")
	name := regexp.MustCompile("`([a-z0-9/]+)`")
	layers := map[string]int{}
	deps := map[string][]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		layers[m[1]] = n
		cells := strings.Split(strings.TrimSuffix(line, "|"), "|")
		last := strings.TrimSpace(cells[len(cells)-1])
		var ds []string
		for _, d := range name.FindAllStringSubmatch(last, -1) {
			ds = append(ds, d[1])
		}
		slices.Sort(ds)
		deps[m[1]] = ds
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(layers) == 0 {
		t.Fatal("docs/ARCHITECTURE.md: no package map found")
	}
	return layers, deps
}

// moduleImports maps each package of the module (folder relative to the
// root) that has non-test Go files to the module packages those files
// import. Nested modules and testdata are not the module's code.
func moduleImports(t *testing.T, root string) map[string][]string {
	out := map[string][]string{}
	fset := token.NewFileSet()
	for _, p := range moduleFiles(t, root) {
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		rel = filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := out[rel]; !ok {
			out[rel] = nil
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if dep, ok := strings.CutPrefix(path, modulePath+"/"); ok && !slices.Contains(out[rel], dep) {
				out[rel] = append(out[rel], dep)
			}
		}
	}
	return out
}

// TestImportDirection holds the folders to the direction docs/
// ARCHITECTURE.md draws: the engine and the features under vault/ never
// reach into the hooks or the command line, the engine never into the
// search index, and the leaf folders (merge/, render/, index/) into none
// of the folders above them. The layer table orders packages one by one;
// this says the same of whole folders, so that a package moved between
// layers cannot make two folders depend on each other again.
func TestImportDirection(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	under := func(p, folder string) bool { return p == folder || strings.HasPrefix(p, folder+"/") }
	rules := []struct {
		from      func(string) bool
		forbidden []string
		why       string
	}{
		{func(p string) bool { return under(p, "vault") }, []string{"hooks", "cmd"},
			"the engine and its features know no harness and no front end"},
		{func(p string) bool { return p == "vault" }, []string{"index"},
			"the engine writes the journal of transcript appends, never the index: recall reads the journal and tells the engine what the index covers"},
		{func(p string) bool { return under(p, "merge") || under(p, "render") || under(p, "index") },
			[]string{"hooks", "cmd", "vault/heads", "vault/continuity", "vault/lineage", "vault/recall"},
			"the leaf folders are pure libraries the features build on"},
		{func(p string) bool { return under(p, "hooks") }, []string{"cmd"},
			"the hooks' runtime is a library the command line calls"},
	}
	for p, deps := range moduleImports(t, root) {
		for _, r := range rules {
			if !r.from(p) {
				continue
			}
			for _, dep := range deps {
				for _, f := range r.forbidden {
					if under(dep, f) {
						t.Errorf("%s imports %s: %s", p, dep, r.why)
					}
				}
			}
		}
	}
}

// Limits of the code's shape (docs/ARCHITECTURE.md, "Sizes"): a file a
// person can read in one sitting, a function that does one thing.
const (
	maxFileLines = 600
	maxFuncLines = 100
)

// TestCodeShape fails on a non-test Go file over maxFileLines lines or a
// function over maxFuncLines, anywhere in the module.
func TestCodeShape(t *testing.T) {
	t.Parallel()
	eachModuleFile(t, func(fset *token.FileSet, f *ast.File, rel string) {
		if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
			t.Errorf("%s: %d lines, more than %d: split it by concern", rel, n, maxFileLines)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxFuncLines {
				t.Errorf("%s: %s is %d lines, more than %d: split it into steps", rel, fd.Name.Name, n, maxFuncLines)
			}
		}
	})
}

// eachModuleFile parses each non-test Go file of the module (moduleFiles)
// and calls fn with it and its slash-separated path from the module's root.
func eachModuleFile(t *testing.T, fn func(fset *token.FileSet, f *ast.File, rel string)) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, p := range moduleFiles(t, root) {
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		fn(fset, f, filepath.ToSlash(rel))
	}
}

// TestArchitectureSizes holds docs/ARCHITECTURE.md's figures for the
// engine to the code: the line "The engine, package `vault`, is N
// non-test lines in M files" must give M exactly and N within 5 %, so the
// page cannot go stale as the engine changes, and the engine stays within
// the budget the page sets.
func TestArchitectureSizes(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("The engine, package `vault`, is ([0-9,]+) non-test lines in ([0-9]+) files")
	m := re.FindSubmatch(doc)
	if m == nil {
		t.Fatalf("docs/ARCHITECTURE.md: no line matching %q", re)
	}
	statedLines, _ := strconv.Atoi(strings.ReplaceAll(string(m[1]), ",", ""))
	statedFiles, _ := strconv.Atoi(string(m[2]))
	lines, files := 0, 0
	for _, p := range moduleFiles(t, root) {
		if filepath.Dir(p) != filepath.Join(root, "vault") {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files++
		lines += strings.Count(string(data), "\n")
	}
	// The engine's budget (issue 32): it holds the transaction, the ledger,
	// the fold and verify; a feature that needs more goes into a package
	// above or below it.
	if lines > 9000 || files > 25 {
		t.Errorf("the engine is %d lines in %d files; its budget is 9,000 lines in 25 files (docs/ARCHITECTURE.md, \"The engine\")", lines, files)
	}
	if files != statedFiles {
		t.Errorf("docs/ARCHITECTURE.md says the engine is %d files; it is %d", statedFiles, files)
	}
	if d := lines - statedLines; d*20 > statedLines || -d*20 > statedLines {
		t.Errorf("docs/ARCHITECTURE.md says the engine is %d lines; it is %d (more than 5 %% off)", statedLines, lines)
	}
	// PERFORMANCE.md is a specification (budgets, method, one table of
	// current results), not a diary: the runs one by one live in git.
	perf, err := os.ReadFile(filepath.Join(root, "docs", "PERFORMANCE.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(perf), "\n"); n > 300 {
		t.Errorf("docs/PERFORMANCE.md is %d lines, more than 300: keep budgets, method and the current figures; history is git's", n)
	}
}

// moduleFiles lists the module's non-test Go files, as moduleImports walks
// them.
func moduleFiles(t *testing.T, root string) []string {
	var out []string
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
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
