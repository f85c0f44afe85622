package gitrepo

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memvault/memvault/vault/vaulttest"
)

// The index patch must leave git's own view consistent: for every index
// version git can write, after committing memvault's paths `git status`
// is clean for them and untouched for everything else.
func TestPatchIndexAgreesWithGit(t *testing.T) {
	if !vaulttest.HasGit() {
		t.Skip("needs git")
	}
	for _, version := range []string{"2", "3", "4"} {
		t.Run("v"+version, func(t *testing.T) {
			dir := t.TempDir()
			git := func(args ...string) string {
				t.Helper()
				return vaulttest.Git{Dir: dir}.Run(t, args...)
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

			r, err := openLikeAVault(dir)
			if err != nil {
				t.Fatal(err)
			}
			// memvault changes one file, adds two (one sorting first, one
			// inside an existing folder) and deletes one
			write("b/c.md", "changed by memvault\n")
			write("0first.md", "new\n")
			write("b/cc.md", "new in b\n")
			os.Remove(filepath.Join(dir, "a.md"))
			var changes []*Change
			for _, p := range []string{"b/c.md", "0first.md", "b/cc.md"} {
				data, _ := os.ReadFile(filepath.Join(dir, p))
				info, _ := os.Stat(filepath.Join(dir, p))
				changes = append(changes, &Change{Path: p, Content: data, Stat: info})
			}
			changes = append(changes, &Change{Path: "a.md", Deleted: true})
			h, err := r.Commit(changes, "memvault: change\n", Signature{"m", "m@x"}, fixedTime)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.UpdateIndex(h, changes); err != nil {
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

// A vault's index is split once it is large (index/split.go). Every step git
// must read as the index it expects: memvault's split, a patch of it, git's
// own write of it, a new shared index when the changes pile up, and back to
// one file when core.splitIndex=false.
func TestSplitIndexAgreesWithGit(t *testing.T) {
	if !vaulttest.HasGit() {
		t.Skip("needs git")
	}
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		return vaulttest.Git{Dir: dir}.Run(t, args...)
	}
	write := func(name, text string) {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q", "-b", "main")
	for i := range 40 {
		write(fmt.Sprintf("f/%02d.md", i), fmt.Sprintf("file %d\n", i))
	}
	git("add", ".")
	git("commit", "-q", "-m", "base")
	r, err := openLikeAVault(dir)
	if err != nil {
		t.Fatal(err)
	}
	r.splitFrom = 20
	// memvault's commit of edits, new files and deletions
	commit := func(edits map[string]string, deletes ...string) {
		t.Helper()
		var changes []*Change
		for p, text := range edits {
			write(p, text)
			info, _ := os.Stat(filepath.Join(dir, p))
			changes = append(changes, &Change{Path: p, Content: []byte(text), Stat: info})
		}
		for _, p := range deletes {
			os.Remove(filepath.Join(dir, p))
			changes = append(changes, &Change{Path: p, Deleted: true})
		}
		h, err := r.Commit(changes, "memvault: change\n", Signature{"m", "m@x"}, fixedTime)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.UpdateIndex(h, changes); err != nil {
			t.Fatal(err)
		}
	}
	shared := func() []string {
		m, _ := filepath.Glob(filepath.Join(dir, ".git", "sharedindex.*"))
		return m
	}
	// git names the shared index the index links to, and nothing when it
	// is one file.
	split := func() bool { return strings.TrimSpace(git("rev-parse", "--shared-index-path")) != "" }
	// The index matches HEAD but for what the person staged, the work tree
	// matches the index but for what the person left unstaged, and every
	// path is in it once.
	check := func(step, wantStatus string, files int) {
		t.Helper()
		if got := git("status", "--porcelain", "--untracked-files=no"); got != wantStatus {
			t.Fatalf("%s: git status:\n%s\nwant:\n%s", step, got, wantStatus)
		}
		if n := strings.Count(git("ls-files"), "\n"); n != files {
			t.Fatalf("%s: %d files in the index, want %d", step, n, files)
		}
		git("fsck", "--strict")
	}

	commit(map[string]string{"f/03.md": "edited\n", "a-new.md": "new\n", "f/zz.md": "new at the end\n"}, "f/07.md")
	if !split() || len(shared()) != 1 {
		t.Fatalf("a large index should be split: split=%v shared=%v", split(), shared())
	}
	check("first split", "", 41)
	first := shared()[0]

	// Patches on the same shared index, with entries replaced, deleted,
	// restored and added.
	commit(map[string]string{"f/03.md": "edited again\n", "f/11.md": "edited\n", "f/07.md": "back\n"}, "f/12.md")
	commit(map[string]string{"b-new.md": "new\n"}, "a-new.md")
	if !split() || len(shared()) != 1 || shared()[0] != first {
		t.Fatalf("small changes should keep the shared index: %v", shared())
	}
	check("patched split", "", 41)
	if got := git("show", ":f/03.md"); got != "edited again\n" {
		t.Fatalf("index entry of f/03.md: %q", got)
	}

	// The person stages work; git writes the split index its own way.
	write("person.md", "staged by hand\n")
	git("add", "person.md")
	if !split() {
		t.Fatal("git should keep the index split when core.splitIndex is unset")
	}
	write("f/20.md", "edited, not staged\n")
	commit(map[string]string{"f/21.md": "memvault edit\n"})
	check("after git's own write", " M f/20.md\nA  person.md\n", 42)

	// Enough changes for a new shared index. A shared index nothing has
	// used for three weeks, and a temporary file a killed writer left, go
	// with it.
	stale := filepath.Join(dir, ".git", "sharedindex."+strings.Repeat("0", 40))
	orphan := filepath.Join(dir, ".git", "sharedindex_123")
	long := time.Now().Add(-21 * 24 * time.Hour)
	for _, p := range []string{stale, orphan} {
		write(filepath.Join(".git", filepath.Base(p)), "old")
		os.Chtimes(p, long, long)
	}
	edits := map[string]string{}
	for i := 22; i < 35; i++ {
		edits[fmt.Sprintf("f/%02d.md", i)] = "bulk edit\n"
	}
	commit(edits)
	if !split() || slices.Contains(shared(), first) && len(shared()) == 1 {
		t.Fatalf("many changes should make a new shared index: %v", shared())
	}
	for _, p := range []string{stale, orphan} {
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("%s should have expired", filepath.Base(p))
		}
	}
	if !slices.Contains(shared(), first) {
		t.Fatal("the shared index used a moment ago must stay for readers that may still need it")
	}
	check("new shared index", " M f/20.md\nA  person.md\n", 42)

	// core.splitIndex=false: one file again.
	git("config", "core.splitIndex", "false")
	commit(map[string]string{"f/36.md": "after the config change\n"})
	if split() {
		t.Fatal("core.splitIndex=false should give one index file")
	}
	check("unsplit", " M f/20.md\nA  person.md\n", 42)
}

func TestCommitMessageTrailers(t *testing.T) {
	subject, body, tr := parseMessage("decision: x\n\nsome body\n\nMemvault-Agent: a\nMemvault-Event: e_1\nMemvault-Event: e_2\n")
	if subject != "decision: x" || body != "some body" || tr["Memvault-Agent"][0] != "a" || len(tr["Memvault-Event"]) != 2 {
		t.Fatalf("%q %q %v", subject, body, tr)
	}
	_, body, tr = parseMessage("subject\n\nnot a trailer paragraph\n")
	if tr != nil || body != "not a trailer paragraph" {
		t.Fatalf("%q %v", body, tr)
	}
}
