package fileio

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// allowed lists the functions outside this package that may create or
// replace a file directly, each with the reason, keyed by "<path from the
// module root> <function>". Everything else goes through fileio. An entry
// that no longer matches a write fails the test too, so the list stays
// exact.
var allowed = map[string]string{
	// git's own files, written by git's rules so that git and memvault can
	// share the repository.
	"vault/gitrepo/repo.go writeLoose":                   "a loose object: git's tmp_obj_ temporary name (git prunes leftovers), created read-only",
	"vault/gitrepo/locks.go createLockFileUntil":         "git's <file>.lock: the exclusive create is the lock, and the lock file becomes the new file",
	"vault/gitrepo/locks.go prepareGitLock":              "a marker in .locks/ whose inode is memvault's git lock: it receives the lock file's content before one link makes it the lock",
	"vault/gitrepo/index/split.go writeSplitOnNewShared": "a shared index: named by the hash of what streams into it; git's sharedindex_ temporary name",
	"vault/gitrepo/locks.go appendReflog":                "a reflog line appended as git appends it, without fsync",
}

// TestOneWayToWrite holds the package's promise: no code outside fileio
// writes a file with os.WriteFile, os.Create, os.CreateTemp, ioutil's
// writers, or os.OpenFile with O_CREATE or O_TRUNC, unless allowed says why.
// Test files are free to: they build fixtures and damage vaults on purpose;
// so are the packages of test helpers.
func TestOneWayToWrite(t *testing.T) {
	checkSources(t, sourceCheck{
		skip:    []string{"vault/vaulttest", "vault/testvault"}, // test helpers
		uses:    directWrites,
		allowed: allowed,
		fix:     "write it through vault/fileio, or add the function to allowed with the reason",
		stale:   "allowed lists %q, which writes no file directly any more: remove the entry",
	})
}

// sourceCheck is one rule over the module's non-test Go files: the calls
// uses finds, each allowed only when its "file function" key is in allowed.
type sourceCheck struct {
	uses    func(t *testing.T, path string) []directWrite
	allowed map[string]string
	skip    []string // folders (from the module root) the rule leaves out
	fix     string   // what to do about a call not allowed
	stale   string   // format for an allowed key no call needs any more
}

// checkSources walks the module, skipping data, other modules and fileio
// itself, and reports every call of c.uses that c.allowed does not name,
// and every entry of c.allowed that names no call.
func checkSources(t *testing.T, c sourceCheck) {
	t.Helper()
	root := moduleRoot(t)
	self, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	var bad []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
				path == self || slices.Contains(c.skip, rel) || exists(filepath.Join(path, "go.mod"))) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		for _, u := range c.uses(t, path) {
			key := rel + " " + u.fn
			if _, ok := c.allowed[key]; ok {
				found[key] = true
				continue
			}
			bad = append(bad, rel+":"+strconv.Itoa(u.line)+": "+u.fn+" calls "+u.call)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Errorf("%s: %s", b, c.fix)
	}
	var stale []string
	for key := range c.allowed {
		if !found[key] {
			stale = append(stale, key)
		}
	}
	sort.Strings(stale)
	for _, key := range stale {
		t.Errorf(c.stale, key)
	}
}

type directWrite struct {
	fn, call string
	line     int
}

// directWrites returns the direct file writes in one source file, with the
// function each is in.
func directWrites(t *testing.T, path string) []directWrite {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	// The names under which the file imports os, io/ioutil and syscall.
	pkgs := map[string]string{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		name := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		switch p {
		case "os", "io/ioutil", "syscall":
			pkgs[name] = p
		}
	}
	if len(pkgs) == 0 {
		return nil
	}
	sel := func(e ast.Expr) (pkg, name string) {
		s, ok := e.(*ast.SelectorExpr)
		if !ok {
			return "", ""
		}
		id, ok := s.X.(*ast.Ident)
		if !ok {
			return "", ""
		}
		return pkgs[id.Name], s.Sel.Name
	}
	var out []directWrite
	for _, decl := range f.Decls {
		fn := "(package level)"
		if fd, ok := decl.(*ast.FuncDecl); ok {
			fn = fd.Name.Name
		}
		ast.Inspect(decl, func(n ast.Node) bool {
			var call string
			switch n := n.(type) {
			case *ast.SelectorExpr:
				// Any mention, called or not: a writer passed as a value
				// writes all the same.
				switch pkg, name := sel(n); {
				case pkg == "os" && (name == "WriteFile" || name == "Create" || name == "CreateTemp"),
					pkg == "io/ioutil" && (name == "WriteFile" || name == "TempFile"):
					call = pkg + "." + name
				}
			case *ast.CallExpr:
				if pkg, name := sel(n.Fun); pkg == "os" && name == "OpenFile" && len(n.Args) > 1 {
					ast.Inspect(n.Args[1], func(m ast.Node) bool {
						if e, ok := m.(ast.Expr); ok {
							if pkg, flag := sel(e); (pkg == "os" || pkg == "syscall") && (flag == "O_CREATE" || flag == "O_TRUNC" || flag == "O_CREAT") {
								call = "os.OpenFile with " + flag
							}
						}
						return call == ""
					})
				}
			}
			if call != "" {
				out = append(out, directWrite{fn: fn, call: call, line: fset.Position(n.Pos()).Line})
			}
			return true
		})
	}
	return out
}

func moduleRoot(t *testing.T) string {
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for !exists(filepath.Join(dir, "go.mod")) {
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
	return dir
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
