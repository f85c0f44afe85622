package continuity

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/memvault/memvault/vault"
)

// SUSPECT (docs/CONTINUITY.md, "SUSPECT: a prevention that names what is
// gone"): a live learning whose prevention names a file, a function or a
// command the project no longer has is flagged for the reader to verify
// before applying it. The checks are cheap and deterministic for a given
// project tree and PATH: a file path is looked up in the project folder, a
// function is searched for by a bounded grep of the project's text files
// (one walk for every name of the audit), a command on PATH. What a bound
// or a missing project folder leaves unchecked is never flagged: SUSPECT
// says a name is gone, never that it could not be looked for.

// FlagSuspect marks a learning whose prevention names what is gone.
const FlagSuspect = "SUSPECT"

// The grep's bounds: the files and bytes it reads before it gives up on
// the names it has not found (which are then not flagged), and the size
// past which a file is not read.
const (
	grepMaxBytes    = 32 << 20
	grepMaxFileSize = 1 << 20
)

// grepMaxFiles is a variable for the test of the bound.
var grepMaxFiles = 5000

// mention is a name a prevention gives: a file (a path), a function or a
// command.
type mention struct{ kind, name string }

var (
	backtickRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("`([^`\n]+)`") })
	funcRE     = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?:^|[^A-Za-z0-9_.])((?:[A-Za-z_][A-Za-z0-9_]*\.)*([A-Za-z_][A-Za-z0-9_]*))\([^()\s]*\)`)
	})
	extRE     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[^./\s][^/\s]*\.[A-Za-z][A-Za-z0-9]{0,5}$`) })
	cmdNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`) })
	runVerbRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(run|runs|running|ran|invoke|invoking|execute|executing|exec)\s*$`)
	})
)

// shellWords are a shell's own: not looked for on PATH.
var shellWords = map[string]bool{"cd": true, "export": true, "source": true, ".": true, "set": true, "unset": true,
	"alias": true, "eval": true, "exit": true, "if": true, "for": true, "while": true, "sudo": false}

// mentions lists the files, functions and commands a prevention names,
// each once, in the order given. A file is a backquoted span that is a
// path (holds a slash or ends in an extension: `go.sum`, `src/app.ts`) or
// a bare word with a slash whose last part has an extension or that
// starts with ./ or ../ (src/app.ts, ./build.sh); a function is a name
// followed by a call with at most one plain argument, `parseConfig()`,
// pkg.Load(path); a command is the first word of a backquoted span that
// starts with "$ " or follows run, invoke or execute ("run `make lint`");
// one that starts with ./ runs a file of the project.
// URLs, globs, placeholders and home paths are not names.
func mentions(prevention string) []mention {
	var out []mention
	seen := map[mention]bool{}
	add := func(m mention) {
		if m.name != "" && !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	for _, m := range funcRE().FindAllStringSubmatch(prevention, -1) {
		add(mention{"function", m[2]})
	}
	spans := backtickRE().FindAllStringSubmatchIndex(prevention, -1)
	for _, ix := range spans {
		span := strings.TrimSpace(prevention[ix[2]:ix[3]])
		before := prevention[:ix[0]]
		switch {
		case funcRE().MatchString(span):
			// a call, listed above
		case isPath(span, true):
			add(mention{"file", cleanPath(span)})
		case strings.HasPrefix(span, "$ ") || strings.HasPrefix(span, "./") || runVerbRE().MatchString(before):
			add(commandOf(strings.TrimPrefix(span, "$ ")))
		}
	}
	rest := backtickRE().ReplaceAllString(prevention, " ")
	for _, w := range strings.Fields(rest) {
		w = strings.Trim(w, "\"'()[]{}<>,;:!?")
		w = strings.TrimRight(w, ".")
		if strings.Contains(w, "(") {
			continue
		}
		if isPath(w, false) {
			add(mention{"file", cleanPath(w)})
		}
	}
	return out
}

// isPath reports whether s names a file: quoted, a slash or an extension
// is enough; bare, a slash and an extension, or a leading ./ or ../.
func isPath(s string, quoted bool) bool {
	if s == "" || strings.ContainsAny(s, " \t*?[]{}<>$~|;&=\"'") || strings.Contains(s, "://") ||
		strings.HasPrefix(s, "@") || strings.HasPrefix(s, "-") {
		return false
	}
	last := s[strings.LastIndex(s, "/")+1:]
	hasExt := extRE().MatchString(last) && !isNumber(strings.ReplaceAll(last, ".", ""))
	if strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../") {
		return true
	}
	if quoted {
		return strings.Contains(s, "/") && s != "/" || hasExt
	}
	return strings.Contains(s, "/") && hasExt && !strings.HasPrefix(s, "/")
}

func isNumber(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

func cleanPath(s string) string { return filepath.ToSlash(filepath.Clean(strings.TrimSuffix(s, "/"))) }

// commandOf is the command a command line runs: its first word past
// variable assignments; a path (./build.sh) is a file of the project.
func commandOf(line string) mention {
	for _, w := range strings.Fields(line) {
		if strings.Contains(w, "=") && !strings.HasPrefix(w, "=") {
			continue // FOO=1 make
		}
		if strings.Contains(w, "/") {
			if isPath(w, true) {
				return mention{"file", cleanPath(w)}
			}
			return mention{}
		}
		if !cmdNameRE().MatchString(w) || shellWords[w] {
			return mention{}
		}
		return mention{"command", w}
	}
	return mention{}
}

// suspectCheck looks names up: the project folder ("" when the vault is in
// no project: files and functions are then not checked) and PATH.
type suspectCheck struct {
	project string
	vault   string // the vault's own folder, never searched
	look    func(string) (string, error)
}

// newSuspectCheck is the check for v: its project is the git work tree the
// vault's folder lies in (the nearest folder upwards from the vault's
// parent that holds a .git), so that a vault kept outside any project
// (a MEMVAULT_DIR in the home folder) flags no file as gone.
func newSuspectCheck(v *vault.Vault) *suspectCheck {
	return &suspectCheck{project: projectOfVault(v.Root), vault: v.Root, look: exec.LookPath}
}

func projectOfVault(root string) string {
	dir := filepath.Dir(filepath.Clean(root))
	for {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			return ""
		}
		dir = up
	}
}

// auditSuspects flags, in rep, each live learning whose prevention names
// something gone, and returns the flags sorted with the rest.
func auditSuspects(c *Continuity, rep *AuditReport, chk *suspectCheck) {
	if chk == nil {
		return
	}
	gone := map[string]bool{}
	for _, a := range rep.Actions {
		switch a.Action {
		case "archive", "invalidate":
			gone[a.ID] = true
		case "reinforce":
			gone[a.By] = true
		}
	}
	type named struct {
		l  *Learning
		ms []mention
	}
	var list []named
	funcs := map[string]bool{}
	for _, l := range c.Learnings {
		if gone[l.ID] || (l.Status != vault.StatusActive && l.Status != vault.StatusCorrected) {
			continue
		}
		ms := mentions(l.Prevention)
		for _, m := range ms {
			if m.kind == "function" {
				funcs[m.name] = true
			}
		}
		if len(ms) > 0 {
			list = append(list, named{l, ms})
		}
	}
	found, searched := chk.grep(funcs)
	for _, n := range list {
		var missing []string
		for _, m := range n.ms {
			if chk.missing(m, found, searched) {
				missing = append(missing, m.kind+" "+m.name+" ("+whyGone[m.kind]+")")
			}
		}
		if len(missing) > 0 {
			rep.Flags = append(rep.Flags, AuditFlag{ID: n.l.ID, Flag: FlagSuspect,
				Reason: "its prevention names " + strings.Join(missing, ", ") + ": compare with the code before applying"})
		}
	}
	sort.SliceStable(rep.Flags, func(i, j int) bool { return idLess(rep.Flags[i].ID, rep.Flags[j].ID) })
}

// whyGone says, per kind of name, where it was looked for.
var whyGone = map[string]string{"file": "not in the project", "function": "in none of the project's files", "command": "not on PATH"}

// missing reports whether m is known to be gone.
func (chk *suspectCheck) missing(m mention, found map[string]bool, searched bool) bool {
	switch m.kind {
	case "command":
		_, err := chk.look(m.name)
		return err != nil
	case "file":
		if chk.project == "" {
			return false
		}
		p := m.name
		if filepath.IsAbs(p) {
			rel, err := filepath.Rel(chk.project, p)
			if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
				return false // outside the project: not its to say
			}
			p = rel
		}
		if p == ".." || strings.HasPrefix(p, "../") {
			return false
		}
		_, err := os.Lstat(filepath.Join(chk.project, filepath.FromSlash(p)))
		return err != nil && os.IsNotExist(err)
	case "function":
		return searched && !found[m.name]
	}
	return false
}

// grep searches the project's text files for each name as a whole word, in
// the walk's lexical order, until every name is found or a bound is hit.
// searched is false when the search could not finish (no project, a
// bound): a name not found is then not known to be gone.
func (chk *suspectCheck) grep(names map[string]bool) (found map[string]bool, searched bool) {
	found = map[string]bool{}
	if len(names) == 0 || chk.project == "" {
		return found, false
	}
	files, total := 0, 0
	complete := true
	err := filepath.WalkDir(chk.project, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable folder: skipped
		}
		if d.IsDir() {
			if path != chk.project && (strings.HasPrefix(d.Name(), ".") || skipDirs[d.Name()] || path == chk.vault) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil // a link is not followed
		}
		if files >= grepMaxFiles || total >= grepMaxBytes {
			complete = false
			return filepath.SkipAll
		}
		files++
		data := readHead(path, grepMaxFileSize)
		total += len(data)
		if bytes.IndexByte(data[:min(len(data), 8192)], 0) >= 0 {
			return nil // binary
		}
		for name := range names {
			if !found[name] && hasWord(data, name) {
				found[name] = true
			}
		}
		if len(found) == len(names) {
			return filepath.SkipAll
		}
		return nil
	})
	return found, err == nil && (complete || len(found) == len(names))
}

// skipDirs are folders of dependencies and builds, not the project's code.
var skipDirs = map[string]bool{"node_modules": true, "vendor": true, "target": true, "dist": true, "build": true, "__pycache__": true}

// readHead reads at most n bytes of a regular file, without following a
// link at its name (a file swapped for one after the walk saw it is read
// as nothing).
func readHead(path string, n int64) []byte {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	data, _ := io.ReadAll(io.LimitReader(f, n))
	return data
}

// hasWord reports whether name occurs in data as a whole identifier.
func hasWord(data []byte, name string) bool {
	nb := []byte(name)
	for i := 0; ; {
		j := bytes.Index(data[i:], nb)
		if j < 0 {
			return false
		}
		at := i + j
		end := at + len(nb)
		if (at == 0 || !identByte(data[at-1])) && (end == len(data) || !identByte(data[end])) {
			return true
		}
		i = at + 1
	}
}

func identByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}
