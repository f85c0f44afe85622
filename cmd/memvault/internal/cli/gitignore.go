package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/memvault/memvault/vault/fileio"
)

// ignoreVault keeps the vault out of the project's own repository: the
// vault is a git repository of its own, synced with its own remote, and
// without this `git status` in the project shows `?? .memory/` and `git
// add -A` adds it as an embedded repository. The project is the git work
// tree around wd; a vault outside it (--vault elsewhere) is left alone,
// and so is a wd in no work tree. When git does not ignore the vault
// already (any .gitignore, info/exclude, a global excludes file), the line
// `/<vault path>/` is appended to the .gitignore at the top of the work
// tree: shared with the team, so nobody's `git status` shows it, and
// visible in review (docs/specs/STORAGE.md, "The vault inside a project").
// The file keeps every byte and its mode; a missing final newline is added
// first. It returns what it did, for the person, or "" for nothing.
func ignoreVault(wd, vaultRoot string, asUser func(func() error) error) (string, error) {
	top := workTree(wd)
	if top == "" {
		return "", nil
	}
	root := vaultRoot
	if r, err := filepath.EvalSymlinks(vaultRoot); err == nil {
		root = r
	}
	if t, err := filepath.EvalSymlinks(top); err == nil {
		top = t
	}
	rel, err := filepath.Rel(top, root)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", nil // not inside the project's work tree
	}
	rel = filepath.ToSlash(rel)
	if strings.HasPrefix(rel, ".git/") {
		return "", nil // inside the project's git folder: git never looks there
	}
	if ignoredByGit(top, rel) {
		return "", nil
	}
	path := filepath.Join(top, ".gitignore")
	if info, err := os.Lstat(path); err == nil && !info.Mode().IsRegular() {
		return fmt.Sprintf("note: %s is not a regular file; add %s to it by hand to keep the vault out of the project's repository", path, ignoreLine(rel)), nil
	}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	eol := "\n"
	if bytes.HasSuffix(old, []byte("\r\n")) || (!bytes.HasSuffix(old, []byte("\n")) && bytes.Contains(old, []byte("\r\n"))) {
		eol = "\r\n" // the file's own line ends
	}
	add := ignoreLine(rel) + eol
	if len(old) > 0 && !bytes.HasSuffix(old, []byte("\n")) {
		add = eol + add
	}
	write := func() error { return fileio.WriteKeepMode(path, append(old, add...), 0o644) }
	if asUser != nil {
		err = asUser(write)
	} else {
		err = write()
	}
	if err != nil {
		return "", err
	}
	shown := path
	if r, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(r, "..") {
		shown = r
	}
	return fmt.Sprintf("added %s to %s: the vault is a git repository of its own", ignoreLine(rel), shown), nil
}

// workTree is the top of the git work tree around dir: the nearest folder
// upwards holding a .git (a folder, or a file as in a linked worktree or a
// submodule), or "".
func workTree(dir string) string {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// ignoreLine is the .gitignore line for the folder rel (slash-separated,
// from the top of the work tree): anchored, a folder only, with the
// characters a pattern gives meaning to escaped.
func ignoreLine(rel string) string {
	var b strings.Builder
	b.WriteByte('/')
	for i, r := range rel {
		switch {
		case strings.ContainsRune(`*?[]\`, r):
			b.WriteByte('\\')
		case r == ' ' && i == len(rel)-1:
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('/')
	return b.String()
}

// ignoredByGit reports whether the project's repository ignores the folder
// rel already. git itself answers when it is installed (every rule: each
// .gitignore, info/exclude, the global excludes file, negations); without
// it, or when it cannot answer, the patterns of the .gitignore files from
// the top down to the vault's folder and of info/exclude are matched in
// process (a global excludes file is then not read, and the line is added).
func ignoredByGit(top, rel string) bool {
	if _, err := exec.LookPath("git"); err == nil {
		cmd := exec.Command("git", "-C", top, "check-ignore", "-q", "--", rel+"/")
		cmd.Env = gitEnv()
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case err == nil:
			return true
		case errors.As(err, &exit) && exit.ExitCode() == 1:
			return false
		}
	}
	return ignoredByPatterns(top, rel)
}

// gitEnv is the environment without the variables that would point git
// at another repository than the one -C names (set when memvault runs
// from a git hook).
func gitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// ignoredByPatterns is git's answer without git: rel, or a folder above
// it, excluded by the patterns of info/exclude and of the .gitignore of
// each folder from the top down to rel's parent.
func ignoredByPatterns(top, rel string) bool {
	parts := strings.Split(rel, "/")
	var ps []gitignore.Pattern
	read := func(path string, domain []string) {
		data, err := os.ReadFile(path)
		if err != nil {
			return
		}
		for _, line := range strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n") {
			if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
				ps = append(ps, gitignore.ParsePattern(line, domain))
			}
		}
	}
	read(filepath.Join(gitDir(top), "info", "exclude"), nil)
	for i := range parts {
		read(filepath.Join(top, filepath.FromSlash(strings.Join(parts[:i], "/")), ".gitignore"), parts[:i])
	}
	m := gitignore.NewMatcher(ps)
	for i := 1; i <= len(parts); i++ {
		if m.Match(parts[:i], true) {
			return true // git does not look inside an ignored folder
		}
	}
	return false
}

// gitDir is the git folder of the work tree top: its .git, or where a
// .git file points (a linked worktree's info/exclude is its common
// folder's).
func gitDir(top string) string {
	dot := filepath.Join(top, ".git")
	data, err := os.ReadFile(dot)
	if err != nil {
		return dot
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
	if !ok {
		return dot
	}
	dir = strings.TrimSpace(dir)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(top, dir)
	}
	if common, err := os.ReadFile(filepath.Join(dir, "commondir")); err == nil {
		c := strings.TrimSpace(string(common))
		if !filepath.IsAbs(c) {
			c = filepath.Join(dir, c)
		}
		return c
	}
	return dir
}
