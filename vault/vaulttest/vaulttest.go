// Package vaulttest holds what memvault's tests share: running the git
// binary on a vault the way a person would, in an environment no user or
// system git configuration reaches, and reading a vault's files to compare
// them before and after a command.
//
// It imports no memvault package, so package vault's own tests can use it
// as well as the end-to-end tests of the command line and the hooks.
package vaulttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// HasGit reports whether the git binary is on the PATH. Tests that check
// memvault's repository with git skip without it: git is optional for
// memvault itself (DESIGN §2).
func HasGit() bool {
	_, err := exec.LookPath("git")
	return err == nil
}

// Git runs the git binary in one folder.
type Git struct {
	Dir string
	// Env is the whole environment of every run; nil means Sandbox("").
	Env []string
}

// Sandbox is the environment a test runs git in: the test's own, with no
// system configuration, and HOME moved to home when it is set so that the
// user's ~/.gitconfig does not reach the test either. A committer identity
// is given so a commit made as "a person" works on any machine.
func Sandbox(home string) []string {
	env := append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Person", "GIT_AUTHOR_EMAIL=person@example.com",
		"GIT_COMMITTER_NAME=Person", "GIT_COMMITTER_EMAIL=person@example.com")
	if home != "" {
		env = append(env, "HOME="+home)
	}
	return env
}

// Try runs git with args and returns its combined output and whether it
// exited 0.
func (g Git) Try(args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = g.Dir
	cmd.Env = g.Env
	if cmd.Env == nil {
		cmd.Env = Sandbox("")
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Run runs git with args and fails the test, with git's output, unless it
// exits 0.
func (g Git) Run(tb testing.TB, args ...string) string {
	tb.Helper()
	out, err := g.Try(args...)
	if err != nil {
		tb.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// Fsck fails the test if `git fsck --strict` finds anything wrong in the
// repository at dir; without git it checks nothing.
func Fsck(tb testing.TB, dir string) {
	tb.Helper()
	if HasGit() {
		Git{Dir: dir}.Run(tb, "fsck", "--strict", "--no-progress")
	}
}

// Files reads every file under root but the derived and private ones
// (.state, .locks, .logs, .index) and git's object store, keyed by
// slash-separated relative path: what a person would see change.
func Files(tb testing.TB, root string) map[string][]byte {
	tb.Helper()
	skip := map[string]bool{".state": true, ".locks": true, ".logs": true, ".index": true, ".git/objects": true}
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if skip[rel] {
				return filepath.SkipDir
			}
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[rel] = data
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return files
}

// Mixes calls f with every string of up to n pieces, stopping once the test
// failed: the short mixes of a parser's tricky pieces, for checking it
// against a reference implementation.
func Mixes(tb testing.TB, pieces []string, n int, f func(string)) {
	tb.Helper()
	var walk func(prefix string, left int)
	walk = func(prefix string, left int) {
		f(prefix)
		if left == 0 || tb.Failed() {
			return
		}
		for _, p := range pieces {
			walk(prefix+p, left-1)
		}
	}
	walk("", n)
}

// Symlink makes a symbolic link at link pointing at target, with the
// folders it needs.
func Symlink(t testing.TB, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// OutsideDir makes a folder beside the vault at root with one file in it, and
// returns the folder and a check that the file is still there, unchanged,
// and alone.
func OutsideDir(t testing.TB, root string) (string, func()) {
	t.Helper()
	dir := filepath.Join(filepath.Dir(root), "outside")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keep"), []byte("outside\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, func() {
		t.Helper()
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 || entries[0].Name() != "keep" {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Errorf("the outside folder now holds %v", names)
		}
		if data, err := os.ReadFile(filepath.Join(dir, "keep")); err != nil || string(data) != "outside\n" {
			t.Errorf("the outside file: %q, %v", data, err)
		}
	}
}

// OldTranscript is a transcript as memvault wrote it before the compact
// shape: HTML characters escaped, the source an object, a tool result's
// output stored twice. Its bytes must stay readable forever.
const OldTranscript = `{"n":1,"id":"u1","ts":"2025-01-07T21:23:00Z","role":"user","speaker":"user","text":"why does a \u003c b \u0026\u0026 OLDZEBRA fail?","src":{"format":"claude-code","line":1,"offset":0}}
{"n":2,"id":"a1","ts":"2025-01-07T21:23:05.5+01:00","role":"tool","speaker":"Bash","text":"go test ./...","tool":{"name":"Bash","call_id":"c1","input":{"command":"go test ./..."}},"src":{"format":"claude-code","line":2,"offset":310,"type":"assistant/tool_use"}}
{"n":3,"id":"r1","role":"tool","text":"FAIL OLDQUOKKA","tool":{"call_id":"c1","output":"FAIL OLDQUOKKA","error":true},"src":{"format":"claude-code","line":3,"offset":702,"type":"user/tool_result"}}
`
