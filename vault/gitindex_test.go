package vault

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// The index patch must leave git's own view consistent: for every index
// version git can write, after committing memvault's paths `git status`
// is clean for them and untouched for everything else.
func TestPatchIndexAgreesWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	for _, version := range []string{"2", "3", "4"} {
		t.Run("v"+version, func(t *testing.T) {
			dir := t.TempDir()
			git := func(args ...string) string {
				cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=P", "-c", "user.email=p@x"}, args...)...)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
				return string(out)
			}
			git("init", "-q", "-b", "main")
			write := func(name, text string) {
				p := filepath.Join(dir, name)
				os.MkdirAll(filepath.Dir(p), 0o700)
				if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range []string{"a.md", "b/c.md", "b/d.md", "z.md", strings.Repeat("long/", 20) + "x.md"} {
				write(f, "original "+f+"\n")
			}
			git("add", ".")
			git("commit", "-q", "-m", "base")
			git("update-index", "--index-version", version)
			// a person's own staged and unstaged work
			write("staged.md", "staged\n")
			git("add", "staged.md")
			write("z.md", "edited, not staged\n")
			// intent-to-add sets the extended flags that version 3 adds
			write("intent.md", "intent\n")
			git("add", "-N", "intent.md")

			r, err := openRepo(dir)
			if err != nil {
				t.Fatal(err)
			}
			// memvault changes one file, adds two (one sorting first, one
			// inside an existing folder) and deletes one
			write("b/c.md", "changed by memvault\n")
			write("0first.md", "new\n")
			write("b/cc.md", "new in b\n")
			os.Remove(filepath.Join(dir, "a.md"))
			var changes []*fileChange
			for _, p := range []string{"b/c.md", "0first.md", "b/cc.md"} {
				data, _ := os.ReadFile(filepath.Join(dir, p))
				info, _ := os.Stat(filepath.Join(dir, p))
				changes = append(changes, &fileChange{path: p, content: data, stat: info})
			}
			changes = append(changes, &fileChange{path: "a.md", deleted: true})
			if _, err := r.commit(changes, "memvault: change\n", signature{"m", "m@x"}, fixedTime); err != nil {
				t.Fatal(err)
			}
			if err := r.updateIndex(changes); err != nil {
				t.Fatal(err)
			}
			got := git("status", "--porcelain")
			want := " A intent.md\nA  staged.md\n M z.md\n"
			if got != want {
				t.Fatalf("git status after commit:\n%s\nwant:\n%s", got, want)
			}
			git("fsck", "--strict")
			// the entry for a memvault path names the committed blob
			ls := git("ls-files", "-s", "b/c.md")
			if !strings.Contains(ls, plumbing.ComputeHash(plumbing.BlobObject, []byte("changed by memvault\n")).String()) {
				t.Fatalf("ls-files: %s", ls)
			}
		})
	}
}

var fixedTime = mustTime("2026-11-22T10:00:00Z")

func mustTime(s string) (t time.Time) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}
