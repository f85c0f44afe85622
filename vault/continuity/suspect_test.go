package continuity

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMentions: what a prevention names, and what it only seems to.
func TestMentions(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"call `parseConfig()` from src/app.go first", "function parseConfig; file src/app.go"},
		{"run `make lint` before pushing", "command make"},
		{"Run `FOO=1 go test ./...`", "command go"},
		{"`$ npm ci` then pkg.Load(path)", "function Load; command npm"},
		{"edit `go.sum` and ./build.sh, not ../x/y", "file go.sum; file build.sh; file ../x/y"},
		{"use `WAL` mode, see `README`", ""},
		{"use the client/server model, e.g. node.js and Next.js, version 1.2, and/or 3.14", ""},
		{"see https://example.com/a/b.html and `http://x/y.go`", ""},
		{"never touch `~/.ssh/id_rsa`, `src/*.go` or `<file>.go`", ""},
		{"run `cd src && make` or `./scripts/check.sh --x`", "file scripts/check.sh"},
		{"pin node 20 in CI", ""},
		{"keep `src/parse/` as it is", "file src/parse"},
		{"a f(x, y) call, and (parenthesised) words()", "function words"},
	} {
		var got []string
		for _, m := range mentions(c.in) {
			got = append(got, m.kind+" "+m.name)
		}
		if g := strings.Join(got, "; "); g != c.want {
			t.Errorf("mentions(%q) = %q; want %q", c.in, g, c.want)
		}
	}
}

// TestSuspectCheck: a file, a function and a command looked up, a path
// outside the project never flagged, and a grep that hits its bound
// flags no function.
func TestSuspectCheck(t *testing.T) {
	proj := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(proj, ".git"), 0o700))
	must(os.Mkdir(filepath.Join(proj, ".memory"), 0o700))
	must(os.WriteFile(filepath.Join(proj, ".memory", "x.go"), []byte("func hiddenInVault()"), 0o600))
	must(os.WriteFile(filepath.Join(proj, "a.go"), []byte("func present_fn() {} // presentX"), 0o600))
	must(os.Symlink("/etc/hostname", filepath.Join(proj, "link.go")))
	if got := projectOfVault(filepath.Join(proj, ".memory")); got != proj {
		t.Fatalf("project of the vault: %q", got)
	}
	chk := &suspectCheck{project: proj, vault: filepath.Join(proj, ".memory"), look: func(name string) (string, error) {
		if name == "present" {
			return "/bin/present", nil
		}
		return "", errors.New("not found")
	}}
	found, searched := chk.grep(map[string]bool{"present_fn": true, "present": true, "hiddenInVault": true})
	if !searched || !found["present_fn"] || found["present"] || found["hiddenInVault"] {
		t.Errorf("grep: found %v, searched %v; want present_fn only (whole words, the vault never searched)", found, searched)
	}
	for _, c := range []struct {
		m    mention
		gone bool
	}{
		{mention{"file", "a.go"}, false}, {mention{"file", "b.go"}, true}, {mention{"file", "link.go"}, false},
		{mention{"file", "../outside.go"}, false}, {mention{"file", "/etc/nonexistent-xyz"}, false},
		{mention{"file", filepath.Join(proj, "gone.go")}, true},
		{mention{"command", "present"}, false}, {mention{"command", "absent"}, true},
		{mention{"function", "present_fn"}, false}, {mention{"function", "hiddenInVault"}, true},
	} {
		if got := chk.missing(c.m, found, searched); got != c.gone {
			t.Errorf("missing(%v) = %v; want %v", c.m, got, c.gone)
		}
	}
	// past the bound, a name not found is not known to be gone
	for i := range 30 {
		must(os.WriteFile(filepath.Join(proj, fmt.Sprintf("f%02d.txt", i)), []byte("nothing"), 0o600))
	}
	old := grepMaxFiles
	grepMaxFiles = 5
	defer func() { grepMaxFiles = old }()
	if _, searched := chk.grep(map[string]bool{"neverThere": true}); searched {
		t.Error("a grep cut by its bound says it searched")
	}
	// no project: nothing of the project is known gone
	none := &suspectCheck{look: chk.look}
	if none.missing(mention{"file", "b.go"}, nil, false) {
		t.Error("a file is gone from no project")
	}
}
