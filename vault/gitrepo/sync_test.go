package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/vaulttest"
)

var testWho = Signature{Name: "memvault", Email: "memvault@localhost"}

// newTestRepo makes a repository on branch main, bare or with a work tree.
func newSyncRepo(t *testing.T, bare bool) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{Bare: bare,
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")}}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func openTest(t *testing.T, dir string) *Repo {
	t.Helper()
	r, err := openLikeAVault(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// commitFiles writes files to the work tree and commits them as memvault
// does, git's index included.
func commitFiles(t *testing.T, r *Repo, msg string, files map[string]string) plumbing.Hash {
	t.Helper()
	var changes []*Change
	for name, text := range files {
		p := filepath.Join(r.root, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		info, _ := os.Stat(p)
		changes = append(changes, &Change{Path: name, Content: []byte(text), Stat: info})
	}
	h, err := r.Commit(changes, msg, testWho, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.UpdateIndex(h, changes); err != nil {
		t.Fatal(err)
	}
	return h
}

// sideCommit makes a commit on parent with files changed, without moving
// the branch: what another clone committed.
func sideCommit(t *testing.T, r *Repo, parent plumbing.Hash, msg string, files map[string]string) plumbing.Hash {
	t.Helper()
	base, err := r.treeOf(parent)
	if err != nil {
		t.Fatal(err)
	}
	var changes []*Change
	for name, text := range files {
		h, err := r.writeObject(plumbing.BlobObject, []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		changes = append(changes, &Change{Path: name, Content: []byte(text), blob: h})
	}
	tree, err := r.buildTree(base, changes)
	if err != nil {
		t.Fatal(err)
	}
	sig := object.Signature{Name: "other", Email: "other@localhost", When: time.Now()}
	h, err := r.encodeAndWrite(&object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: tree, ParentHashes: []plumbing.Hash{parent}})
	if err != nil {
		t.Fatal(err)
	}
	r.created = nil
	return h
}

// unionLines merges by keeping ours, then the lines of theirs ours lacks;
// a file named *.conflict cannot be merged.
func unionLines(path string, base, ours, theirs []byte) ([]byte, bool, error) {
	if strings.HasSuffix(path, ".conflict") {
		return nil, true, nil
	}
	out := append([]byte(nil), ours...)
	for _, l := range bytes.SplitAfter(theirs, []byte("\n")) {
		if len(l) > 0 && !bytes.Contains(ours, l) {
			out = append(out, l...)
		}
	}
	return out, false, nil
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func gitStatusClean(t *testing.T, dir string) {
	t.Helper()
	if !vaulttest.HasGit() {
		return
	}
	if out := (vaulttest.Git{Dir: dir}).Run(t, "status", "--porcelain"); out != "" {
		t.Errorf("git status is not clean:\n%s", out)
	}
	vaulttest.Fsck(t, dir)
}

func TestMergeWithoutGit(t *testing.T) {
	dir := newSyncRepo(t, false)
	r := openTest(t, dir)
	base := commitFiles(t, r, "base", map[string]string{"ledger/a.jsonl": "1\n", "MEMORY.md": "# m\n", "x.conflict": "x\n"})
	theirs := sideCommit(t, r, base, "theirs", map[string]string{"ledger/a.jsonl": "1\n3\n", "threads/t/new.md": "new\n"})
	ours := commitFiles(t, r, "ours", map[string]string{"ledger/a.jsonl": "1\n2\n", "MEMORY.md": "# m\nours\n"})

	d, err := r.Diverge(ours, theirs)
	if err != nil || d.OnlyA != 1 || d.OnlyB != 1 || len(d.Bases) != 1 || d.Bases[0] != base {
		t.Fatalf("Diverge = %+v, %v; want 1 and 1 from base %s", d, err, base)
	}
	out, err := r.Merge(theirs, unionLines, "sync: merge", testWho, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !out.Merged || out.FastForward {
		t.Fatalf("outcome %+v: want a merge commit", out)
	}
	c, err := object.GetCommit(r.st, out.Commit)
	if err != nil || len(c.ParentHashes) != 2 || c.ParentHashes[0] != ours || c.ParentHashes[1] != theirs {
		t.Fatalf("merge commit parents %v, %v", c.ParentHashes, err)
	}
	if got := readFile(t, dir, "ledger/a.jsonl"); got != "1\n2\n3\n" {
		t.Errorf("merged segment %q", got)
	}
	if got := readFile(t, dir, "threads/t/new.md"); got != "new\n" {
		t.Errorf("their new file %q", got)
	}
	if got := readFile(t, dir, "MEMORY.md"); got != "# m\nours\n" {
		t.Errorf("our file %q", got)
	}
	if head, _ := r.Head(); head != out.Commit {
		t.Errorf("HEAD %s, want the merge %s", head, out.Commit)
	}
	gitStatusClean(t, dir)

	// Merging again changes nothing.
	again, err := r.Merge(theirs, unionLines, "sync: merge", testWho, time.Now())
	if err != nil || again.Merged || again.FastForward || again.Commit != out.Commit {
		t.Fatalf("second merge %+v, %v", again, err)
	}
}

func TestMergeConflictLeavesTheRepoAsItWas(t *testing.T) {
	dir := newSyncRepo(t, false)
	r := openTest(t, dir)
	base := commitFiles(t, r, "base", map[string]string{"a.conflict": "x\n", "b.txt": "b\n"})
	theirs := sideCommit(t, r, base, "theirs", map[string]string{"a.conflict": "theirs\n", "b.txt": "b\nt\n"})
	ours := commitFiles(t, r, "ours", map[string]string{"a.conflict": "ours\n"})
	before := vaulttest.Files(t, dir)
	_, err := r.Merge(theirs, unionLines, "sync: merge", testWho, time.Now())
	var mc *MergeConflict
	if !errors.Is(err, fault.ErrConflict) || !errors.As(err, &mc) || len(mc.Paths) != 1 || mc.Paths[0] != "a.conflict" {
		t.Fatalf("err = %v; want a conflict on a.conflict", err)
	}
	if head, _ := r.Head(); head != ours {
		t.Errorf("HEAD moved to %s", head)
	}
	after := vaulttest.Files(t, dir)
	for name, data := range before {
		if !bytes.Equal(after[name], data) {
			t.Errorf("%s changed", name)
		}
	}
	if len(after) != len(before) {
		t.Errorf("%d files before, %d after", len(before), len(after))
	}
	gitStatusClean(t, dir)
}

func TestMergeRefusesToOverwriteLocalChanges(t *testing.T) {
	dir := newSyncRepo(t, false)
	r := openTest(t, dir)
	base := commitFiles(t, r, "base", map[string]string{"MEMORY.md": "m\n"})
	theirs := sideCommit(t, r, base, "theirs", map[string]string{"MEMORY.md": "m\ntheirs\n"})
	if err := os.WriteFile(filepath.Join(dir, "MEMORY.md"), []byte("m\nmy edit\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := r.Merge(theirs, unionLines, "sync: merge", testWho, time.Now())
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "uncommitted changes to MEMORY.md") {
		t.Fatalf("err = %v", err)
	}
	if got := readFile(t, dir, "MEMORY.md"); got != "m\nmy edit\n" {
		t.Errorf("the person's edit became %q", got)
	}
	if head, _ := r.Head(); head != base {
		t.Errorf("HEAD moved")
	}
}

func TestFastForwardWithoutGit(t *testing.T) {
	dir := newSyncRepo(t, false)
	r := openTest(t, dir)
	base := commitFiles(t, r, "base", map[string]string{"a.txt": "a\n", "gone/x.txt": "x\n"})
	next := sideCommit(t, r, base, "next", map[string]string{"a.txt": "a\nb\n", "new/n.txt": "n\n"})
	// a deletion too
	tree, _ := r.treeOf(next)
	tree2, err := r.buildTree(tree, []*Change{{Path: "gone/x.txt", Deleted: true}})
	if err != nil {
		t.Fatal(err)
	}
	sig := object.Signature{Name: "o", Email: "o@x", When: time.Now()}
	next2, _ := r.encodeAndWrite(&object.Commit{Author: sig, Committer: sig, Message: "rm", TreeHash: tree2, ParentHashes: []plumbing.Hash{next}})
	out, err := r.Merge(next2, unionLines, "sync", testWho, time.Now())
	if err != nil || !out.FastForward || out.Commit != next2 {
		t.Fatalf("Merge = %+v, %v; want a fast-forward", out, err)
	}
	if got := readFile(t, dir, "a.txt"); got != "a\nb\n" {
		t.Errorf("a.txt %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "gone", "x.txt")); !os.IsNotExist(err) {
		t.Errorf("gone/x.txt still there: %v", err)
	}
	gitStatusClean(t, dir)
}

// Fetch and push without the git binary, over the in-process file
// transport: a path and a file:// URL; a push after the remote moved is
// rejected, never forced.
func TestFetchPushWithoutGit(t *testing.T) {
	hub := newSyncRepo(t, true)
	a := openTest(t, newSyncRepo(t, false))
	b := openTest(t, newSyncRepo(t, false))
	ctx := context.Background()
	for _, rm := range []Remote{{URL: hub}, {URL: "file://" + hub}} {
		tip, err := a.Fetch(ctx, EngineGoGit, rm, "main", testWho)
		if err != nil || !tip.IsZero() {
			t.Fatalf("fetch of an empty remote: %s, %v", tip, err)
		}
	}
	c1 := commitFiles(t, a, "one", map[string]string{"memvault.toml": "", "a.txt": "a\n"})
	if err := a.Push(ctx, EngineGoGit, Remote{URL: hub}, "main", testWho); err != nil {
		t.Fatal(err)
	}
	tip, err := b.Fetch(ctx, EngineGoGit, Remote{URL: "file://" + hub}, "main", testWho)
	if err != nil || tip != c1 {
		t.Fatalf("b fetched %s, %v; want %s", tip, err, c1)
	}
	if _, err := b.Merge(tip, unionLines, "sync", testWho, time.Now()); err != nil {
		t.Fatal(err)
	}
	// b moves on with a commit of its own, so a's next push is behind.
	commitFiles(t, a, "two", map[string]string{"a.txt": "a\nfrom a\n"})
	commitFiles(t, b, "three", map[string]string{"b.txt": "from b\n"})
	if err := b.Push(ctx, EngineGoGit, Remote{URL: hub}, "main", testWho); err != nil {
		t.Fatal(err)
	}
	if err := a.Push(ctx, EngineGoGit, Remote{URL: hub}, "main", testWho); !errors.Is(err, ErrPushRejected) {
		t.Fatalf("push over a moved remote: %v; want ErrPushRejected", err)
	}
	// After a fetch and merge the push goes through, and the remote
	// holds both sides.
	tip, err = a.Fetch(ctx, EngineGoGit, Remote{URL: hub}, "main", testWho)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Merge(tip, unionLines, "sync", testWho, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := a.Push(ctx, EngineGoGit, Remote{URL: hub}, "main", testWho); err != nil {
		t.Fatal(err)
	}
	ref, err := newStorage(hub).Reference("refs/heads/main")
	if err != nil {
		t.Fatal(err)
	}
	head, _ := a.Head()
	if got := ref.Hash(); got != head {
		t.Fatalf("hub at %s, a at %s", got, head)
	}
	if vaulttest.HasGit() {
		vaulttest.Git{Dir: hub}.Run(t, "fsck", "--strict", "--no-progress")
	}
}

func TestResolveRemote(t *testing.T) {
	dir := newSyncRepo(t, false)
	r := openTest(t, dir)
	if _, err := r.ResolveRemote("", "main"); !errors.Is(err, fault.ErrRemote) || !strings.Contains(fault.HintOf(err), "remote add origin") {
		t.Fatalf("no remote: %v (hint %q)", err, fault.HintOf(err))
	}
	cfg := filepath.Join(dir, ".git", "config")
	data, _ := os.ReadFile(cfg)
	data = append(data, "[remote \"origin\"]\n\turl = ../hub.git\n[remote \"up\"]\n\turl = https://example.com/v.git\n[branch \"main\"]\n\tremote = up\n"...)
	os.WriteFile(cfg, data, 0o600)
	r = openTest(t, dir)
	rm, err := r.ResolveRemote("", "main")
	if err != nil || rm.Name != "up" || rm.URL != "https://example.com/v.git" {
		t.Fatalf("upstream: %+v, %v", rm, err)
	}
	rm, err = r.ResolveRemote("origin", "main")
	if err != nil || rm.URL != filepath.Join(filepath.Dir(dir), "hub.git") || rm.TrackingRef("main") != "refs/remotes/origin/main" {
		t.Fatalf("origin: %+v, %v", rm, err)
	}
	if _, err := r.ResolveRemote("nowhere", "main"); !errors.Is(err, fault.ErrRemote) {
		t.Fatalf("unknown remote: %v", err)
	}
	rm, err = r.ResolveRemote("git@example.com:v.git", "main")
	if err != nil || rm.LocalPath() != "" || rm.TrackingRef("main") != "refs/memvault/sync/main" {
		t.Fatalf("scp-like URL: %+v, %v", rm, err)
	}
}

// openLikeAVault opens the repository at dir after making git ignore
// .locks/, as a vault's .gitignore does: the folder where the repository
// keeps its lock markers and the list of pending index paths.
func openLikeAVault(dir string) (*Repo, error) {
	gitDir := filepath.Join(dir, ".git")
	if _, err := os.Stat(gitDir); err != nil {
		return Open(dir)
	}
	if err := os.MkdirAll(filepath.Join(gitDir, "info"), 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(gitDir, "info", "exclude"), []byte("/.locks/\n"), 0o600); err != nil {
		return nil, err
	}
	return Open(dir)
}
