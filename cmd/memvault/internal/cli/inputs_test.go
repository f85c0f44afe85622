package cli

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	ucli "github.com/urfave/cli/v2"
)

// fileArgs are the commands' arguments and flags that name a file, each
// with what memvault does with it. "read bounded" ones read through
// fileio.OpenInput / ReadInput (ReadBounded for "-") and are tried with a
// named pipe, /dev/zero, a folder and an oversized file by
// cmd/memvault/inputs_test.go (TestPathInputsBounded), whose pathInputs
// must name them; "written outside the vault" ones refuse a path inside
// it (outsideVault; TestExportRefusesTheVault).
var fileArgs = map[string]string{
	"import FILE | -":                         "read bounded",
	"transcript import FILE":                  "read bounded",
	"delegate --file":                         "read bounded",
	"compact --file":                          "read bounded",
	"export --output":                         "written outside the vault",
	"merge-driver KIND BASE OURS THEIRS PATH": "git's temporary copies, read and checked by clones.ReadMergeVersions",
	"--vault":                                 "the vault's folder",
	"decide --scope":                          "a scope's name (file:PATH), never opened",
	"learn --scope":                           "a scope's name (file:PATH), never opened",
	"continuity decisions --scope":            "a scope's name (file:PATH), never opened",
	"continuity learnings --scope":            "a scope's name (file:PATH), never opened",
}

// TestEveryPathInputIsListed walks the command tree for arguments and
// flags that name a file (an upper-case FILE or PATH in the arguments, a
// flag whose name or usage says file) and fails on one fileArgs does not
// list, and on a "read bounded" one that TestPathInputsBounded does not
// try.
func TestEveryPathInputIsListed(t *testing.T) {
	found := map[string]bool{}
	fileWord := regexp.MustCompile(`\b(FILE|PATH)\b`)
	var walk func(prefix string, cs []*ucli.Command)
	walk = func(prefix string, cs []*ucli.Command) {
		for _, c := range cs {
			name := prefix + c.Name
			if fileWord.MatchString(c.ArgsUsage) {
				// A placeholder after a flag ("--file PATH") is the
				// flag's, found below.
				args := strings.Fields(c.ArgsUsage)
				var keep []string
				for i, a := range args {
					if fileWord.MatchString(a) && (i == 0 || !strings.HasPrefix(args[i-1], "--")) {
						keep = append(keep, a)
					}
				}
				if len(keep) > 0 {
					found[name+" "+c.ArgsUsage] = true
				}
			}
			for _, f := range c.Flags {
				if sf, ok := f.(*ucli.StringFlag); ok && isFileFlag(sf) {
					found[name+" --"+sf.Name] = true
				}
			}
			walk(name+" ", c.Subcommands)
		}
	}
	app := newApp(nil, io.Discard, io.Discard)
	for _, f := range app.Flags {
		if sf, ok := f.(*ucli.StringFlag); ok && (isFileFlag(sf) || sf.Name == "vault") {
			found["--"+sf.Name] = true
		}
	}
	walk("", app.Commands)
	var names []string
	for n := range found {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, ok := fileArgs[n]; !ok {
			t.Errorf("%s names a file and fileArgs does not say how it is read or written (bounded: fileio.OpenInput; written: outsideVault)", n)
		}
	}
	for n := range fileArgs {
		if !found[n] {
			t.Errorf("fileArgs lists %q, which no command has", n)
		}
	}
	src, err := os.ReadFile(filepath.Join("..", "..", "inputs_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	for n, how := range fileArgs {
		var words []string
		for _, w := range strings.Fields(n) {
			if strings.ToUpper(w) == w {
				break
			}
			words = append(words, w)
		}
		cmd := strings.Join(words, " ")
		if how == "read bounded" && !strings.Contains(string(src), `{"`+cmd+`"`) {
			t.Errorf("%s reads a file, and cmd/memvault/inputs_test.go's pathInputs does not try it", n)
		}
	}
}

// isFileFlag: a flag whose name or usage says it names a file.
func isFileFlag(f *ucli.StringFlag) bool {
	return f.Name == "file" || f.Name == "output" || fileUsage.MatchString(f.Usage)
}

var fileUsage = regexp.MustCompile(`\b(FILE|PATH)\b|(?i)\bfile(\s|$|\))`)
