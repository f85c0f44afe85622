package continuity

import (
	"path"
	"strings"
	"unicode"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
)

// Scopes of learnings and decisions (global, a module, a path): how they
// are written, and which of them a filter for a folder lets through.

// LearningScope says where a learning or decision applies. Its text form is one of
// "global", "module:NAME" or "file:PATH" (PATH relative to the project
// root, slash-separated).
type LearningScope struct {
	Kind string // global, module, file
	Name string // module name or file path
}

// ScopeGlobal is the scope of a learning or decision that names none.
const ScopeGlobal = "global"

func (s LearningScope) String() string {
	if s.Kind == "global" {
		return "global"
	}
	return s.Kind + ":" + s.Name
}

// ParseScope checks a scope given by a person or an agent. The empty
// string is global.
func ParseScope(s string) (LearningScope, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "global" {
		return LearningScope{Kind: "global"}, nil
	}
	bad := func(problem string) (LearningScope, error) {
		e := fault.New(vault.ErrInvalid, "scope %q: %s", s, problem)
		return LearningScope{}, e.WithHint("use global, module:NAME or file:PATH (a path relative to the project root)")
	}
	kind, name, ok := strings.Cut(s, ":")
	if !ok {
		return bad("unknown form")
	}
	name = strings.TrimSpace(name)
	if name == "" {
		return bad("empty " + kind + " name")
	}
	for _, r := range name {
		if r == 0 || unicode.IsControl(r) {
			return bad("contains a control character")
		}
	}
	switch kind {
	case "module":
		if strings.ContainsAny(name, " \t") {
			return bad("a module name has no spaces")
		}
		return LearningScope{Kind: "module", Name: strings.Trim(name, "/")}, nil
	case "file":
		p := path.Clean(strings.ReplaceAll(name, "\\", "/"))
		if path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") || p == "." {
			return bad("the path must be relative to the project root and stay inside it")
		}
		return LearningScope{Kind: "file", Name: p}, nil
	}
	return bad("unknown form")
}

// rank orders scopes smallest first: a file, then a module, then global.
func (s LearningScope) rank() int {
	switch s.Kind {
	case "file":
		return 0
	case "module":
		return 1
	}
	return 2
}

// ScopeFilter selects the learnings and decisions in play. The zero value
// selects everything.
type ScopeFilter struct {
	scope LearningScope
	dir   string // a directory in play, relative to the project root
	set   bool
}

// FilterFor selects what applies to scope: global always; a module scope
// also takes file scopes under a directory of that name; a file scope also
// takes the modules named by the directories on its path.
func FilterFor(s LearningScope) ScopeFilter { return ScopeFilter{scope: s, set: true} }

// FilterForDir selects what applies to work in dir (relative to the project
// root, slash-separated): global, the modules named by its directories, and
// the files under it. The project root itself selects everything.
func FilterForDir(dir string) ScopeFilter {
	dir = strings.Trim(path.Clean("/"+dir), "/")
	if dir == "" {
		return ScopeFilter{}
	}
	return ScopeFilter{dir: dir, set: true}
}

// Match reports whether a learning or decision of scope s is in play.
func (f ScopeFilter) Match(s string) bool {
	if !f.set {
		return true
	}
	sc, err := ParseScope(s)
	if err != nil {
		return false
	}
	if sc.Kind == "global" {
		return true
	}
	segs := func(p string) []string { return strings.Split(p, "/") }
	hasSeg := func(p, name string) bool {
		for _, s := range segs(p) {
			if s == name {
				return true
			}
		}
		return p == name
	}
	if f.dir != "" {
		switch sc.Kind {
		case "module":
			return hasSeg(f.dir, sc.Name)
		case "file":
			return strings.HasPrefix(sc.Name, f.dir+"/")
		}
		return false
	}
	switch f.scope.Kind {
	case "global":
		return false
	case "module":
		switch sc.Kind {
		case "module":
			return sc.Name == f.scope.Name
		case "file":
			return hasSeg(path.Dir(sc.Name), f.scope.Name) || strings.HasPrefix(sc.Name, f.scope.Name+"/")
		}
	case "file":
		switch sc.Kind {
		case "file":
			return sc.Name == f.scope.Name
		case "module":
			return hasSeg(path.Dir(f.scope.Name), sc.Name) || strings.HasPrefix(f.scope.Name, sc.Name+"/")
		}
	}
	return false
}

func scopeRank(s string) int {
	sc, err := ParseScope(s)
	if err != nil {
		return 3
	}
	return sc.rank()
}
