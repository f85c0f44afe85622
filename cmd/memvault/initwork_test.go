package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Every memvault process, whatever its command, runs the package init of
// everything its one binary links (docs/PERFORMANCE.md, "Start-up"): a
// hook that never matches a regular expression still pays for compiling
// every package-level one. So what memvault owns builds its compiled
// things on first use (sync.OnceValue), and this test holds the code to
// it, by structure rather than by timing: no package-level variable of
// memvault's is computed by a call into a package whose results are costly
// to build (regular expressions, templates, Markdown engines, JSON
// schemas), no package-level map literal is large enough to matter, and a
// func init is allowed only where it is listed with its reason.

// costlyInitPackages are the import paths whose calls must not run at
// package init (their compiled forms cost tens of microseconds to
// milliseconds each).
var costlyInitPackages = map[string]bool{
	"regexp":                                     true,
	"text/template":                              true,
	"html/template":                              true,
	"encoding/json":                              true,
	"github.com/yuin/goldmark":                   true,
	"github.com/yuin/goldmark/parser":            true,
	"github.com/yuin/goldmark/renderer":          true,
	"github.com/google/jsonschema-go/jsonschema": true,
	"github.com/modelcontextprotocol/go-sdk/mcp": true,
	"github.com/blevesearch/bleve/v2":            true,
	"github.com/blevesearch/bleve/v2/mapping":    true,
}

// allowedInits are the func init memvault keeps, each cheap and with its
// reason.
var allowedInits = map[string]string{
	// Points each default rule at an empty needle mask: a loop over a
	// dozen structs, no compiling (the patterns are lazy).
	"vault/redact/needles.go": "masks of the default rules",
}

// maxInitMapEntries bounds a package-level map literal: each entry is an
// insert at init (about 50 ns), so the largest today (125) costs a few
// microseconds; a table of thousands belongs behind sync.OnceValue.
const maxInitMapEntries = 256

func TestNoWorkAtInit(t *testing.T) {
	t.Parallel()
	eachModuleFile(t, func(fset *token.FileSet, f *ast.File, rel string) {
		for _, msg := range initWork(fset, f, rel) {
			t.Errorf("%s", msg)
		}
	})
}

// initWork lists what f computes at package init beyond the allowed.
func initWork(fset *token.FileSet, f *ast.File, rel string) []string {
	imports := map[string]string{} // local name → import path
	for _, im := range f.Imports {
		path, _ := strconv.Unquote(im.Path.Value)
		name := path[strings.LastIndex(path, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		imports[name] = path
	}
	var out []string
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "init" {
			if _, ok := allowedInits[rel]; !ok {
				out = append(out, fset.Position(fd.Pos()).String()+": a func init runs in every process: do its work on first use (sync.OnceValue), or list it in allowedInits with its reason")
			}
			continue
		}
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.VAR {
			continue
		}
		for _, s := range gd.Specs {
			for _, v := range s.(*ast.ValueSpec).Values {
				ast.Inspect(v, func(n ast.Node) bool {
					switch n := n.(type) {
					case *ast.FuncLit:
						return false // runs when called, not at init
					case *ast.CallExpr:
						if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
							if x, ok := sel.X.(*ast.Ident); ok && costlyInitPackages[imports[x.Name]] {
								out = append(out, fset.Position(n.Pos()).String()+": "+x.Name+"."+sel.Sel.Name+
									" at package init runs in every process: build it on first use (sync.OnceValue)")
							}
						}
					case *ast.CompositeLit:
						if _, ok := n.Type.(*ast.MapType); ok && len(n.Elts) > maxInitMapEntries {
							out = append(out, fset.Position(n.Pos()).String()+": a map of "+strconv.Itoa(len(n.Elts))+
								" entries is built at package init in every process: build it on first use")
						}
					}
					return true
				})
			}
		}
	}
	return out
}

// TestInitWorkCaught is initWork against the forms it must catch, so that
// TestNoWorkAtInit cannot pass by catching nothing.
func TestInitWorkCaught(t *testing.T) {
	src := `package p
import (
	"regexp"
	"sync"
	tpl "html/template"
)
var a = regexp.MustCompile("x")
var (
	b, c = 1, tpl.Must(tpl.New("t").Parse(""))
	d = []*regexp.Regexp{regexp.MustCompile("y")}
	ok = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("z") })
)
func init() {}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := initWork(fset, f, "p.go")
	// a; c's Must and New; d; init. ok is lazy.
	if len(got) != 5 {
		t.Fatalf("caught %d, want 5:\n%s", len(got), strings.Join(got, "\n"))
	}
}

// TestBinaryLinksNoGoldmarkExtensions: goldmark's extension package
// compiles its linkify and table regular expressions at init (about
// 0.6 ms of every process's start, docs/PERFORMANCE.md "Start-up");
// memvault needs only task lists, which the web package renders itself.
func TestBinaryLinksNoGoldmarkExtensions(t *testing.T) {
	if testing.Short() && !hasGo() {
		t.Skip("no go command")
	}
	out, err := exec.Command("go", "list", "-tags", "urfave_cli_no_docs", "-deps", "github.com/memvault/memvault/cmd/memvault").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "github.com/yuin/goldmark/extension" {
			t.Errorf("the binary links %s, whose init every process pays", p)
		}
	}
}

func hasGo() bool {
	_, err := exec.LookPath("go")
	return err == nil
}
