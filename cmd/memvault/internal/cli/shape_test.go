package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// contextReaders are the files that may read urfave/cli's context: the
// root, which builds a command's env (envOf) and gives its options the
// positional arguments (actionFunc). Every other file gets what the
// context holds through options its flags fill and through the env.
var contextReaders = map[string]bool{"actions.go": true}

// TestOnlyTheRootReadsTheContext keeps the commands in restic's shape: a
// command's flags bind to its options and its run function takes no
// urfave/cli type, so a test runs it without urfave/cli. It parses every
// file of the package that is not a test and fails on any use of a
// *cli.Context value (a flag read by name, its arguments, its App's
// streams, its Command) outside contextReaders.
func TestOnlyTheRootReadsTheContext(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	rootReads := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, use := range contextUses(f) {
			if contextReaders[name] {
				rootReads++
				continue
			}
			t.Errorf("%s: %s reads urfave/cli's context: bind the flag to the command's options, or take it from the env (actions.go builds both)",
				fset.Position(use.Pos()), exprText(use))
		}
	}
	if rootReads == 0 {
		t.Error("no read of urfave/cli's context found in the root either: the check no longer sees them")
	}
}

// contextUses are the selector expressions (c.String, c.Args, c.App…) on
// a variable of type *cli.Context in f, urfave/cli/v2 imported under any
// name.
func contextUses(f *ast.File) []*ast.SelectorExpr {
	pkg := ""
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "github.com/urfave/cli/v2" {
			pkg = "cli"
			if imp.Name != nil {
				pkg = imp.Name.Name
			}
		}
	}
	if pkg == "" {
		return nil
	}
	var uses []*ast.SelectorExpr
	var walk func(n ast.Node, inScope map[string]bool)
	walk = func(n ast.Node, inScope map[string]bool) {
		ast.Inspect(n, func(n ast.Node) bool {
			var typ *ast.FuncType
			var body *ast.BlockStmt
			switch n := n.(type) {
			case *ast.FuncDecl:
				typ, body = n.Type, n.Body
				if n.Recv != nil {
					typ = &ast.FuncType{Params: &ast.FieldList{List: append(n.Recv.List, n.Type.Params.List...)}}
				}
			case *ast.FuncLit:
				typ, body = n.Type, n.Body
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && inScope[id.Name] {
					uses = append(uses, n)
				}
				return true
			default:
				return true
			}
			if body == nil {
				return false
			}
			// A function's parameters shadow the names around it.
			scope := map[string]bool{}
			for name, isCtx := range inScope {
				scope[name] = isCtx
			}
			for _, field := range typ.Params.List {
				for _, id := range field.Names {
					scope[id.Name] = isContextType(field.Type, pkg)
				}
			}
			walk(body, scope)
			return false
		})
	}
	walk(f, map[string]bool{})
	return uses
}

// isContextType reports whether t is *pkg.Context.
func isContextType(t ast.Expr, pkg string) bool {
	star, ok := t.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg && sel.Sel.Name == "Context"
}

// exprText is a selector as the source spells it: "c.String".
func exprText(sel *ast.SelectorExpr) string {
	if id, ok := sel.X.(*ast.Ident); ok {
		return id.Name + "." + sel.Sel.Name
	}
	return sel.Sel.Name
}

// TestContextUsesSeesEveryForm checks the check: a flag read by name, the
// arguments, the streams, in a function, a method and a closure, under
// the import's alias; a parameter of another type that shadows the name
// is no read.
func TestContextUsesSeesEveryForm(t *testing.T) {
	src := `package cli

import (
	"io"

	urf "github.com/urfave/cli/v2"
)

func a(c *urf.Context) string { return c.String("kind") }

type o struct{}

func (o) b(x int, ctx *urf.Context) bool { return ctx.Bool("json") && x > 0 }

func d() func(*urf.Context) error {
	return func(c *urf.Context) error {
		_ = c.Args().Slice()
		_ = func(c io.Writer) { c.Write(nil) }
		return nil
	}
}

func e(c *urf.Context) io.Writer { return c.App.Writer }

func f(c io.Writer) { c.Write(nil) }
`
	file, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, use := range contextUses(file) {
		got = append(got, exprText(use))
	}
	want := "c.String ctx.Bool c.Args c.App"
	if strings.Join(got, " ") != want {
		t.Errorf("found %q, want %q", strings.Join(got, " "), want)
	}
}
