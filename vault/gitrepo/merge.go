package gitrepo

// Merging a fetched commit into the vault's branch: with the git binary,
// `git merge` and the merge drivers registered in .git/config; without it,
// a three-way merge of the trees done here, whose files both sides changed
// go through the caller's merge function (the same drivers, in process).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// MergeFunc merges one file that both sides changed since their common
// ancestor; base is nil when the file is new on both sides. conflict
// reports that the sides cannot be reconciled.
type MergeFunc func(path string, base, ours, theirs []byte) (merged []byte, conflict bool, err error)

// MergeOutcome is what a merge did to the branch.
type MergeOutcome struct {
	Commit      plumbing.Hash // the branch's new commit; the old one when nothing changed
	FastForward bool
	Merged      bool     // a merge commit with both parents was made
	Paths       []string // the files the merge changed in the work tree
}

// MergeConflict lists the files a merge could not reconcile; the vault is
// left as it was.
type MergeConflict struct{ Paths []string }

func (e *MergeConflict) Error() string {
	return "cannot merge " + strings.Join(e.Paths, ", ")
}

// conflictErr classifies a failed merge as a conflict (exit 4).
func conflictErr(paths []string) error {
	sort.Strings(paths)
	e := &fault.Error{Class: fault.ErrConflict, Err: &MergeConflict{Paths: paths},
		Msg: fmt.Sprintf("sync: the remote diverged and %d files cannot be merged: %s; the vault is as it was", len(paths), strings.Join(paths, ", "))}
	e.Hint = "merge by hand with git merge, then sync again"
	return e
}

// localChangesErr is a merge that would overwrite files changed on disk
// and not committed.
func localChangesErr(root string, paths []string) error {
	sort.Strings(paths)
	e := fault.New(fault.ErrConflict, "sync: uncommitted changes to %s would be overwritten by the merge; the vault is as it was", strings.Join(paths, ", "))
	return e.WithHint("commit them (git -C %s commit -a) or discard them, then sync again", root)
}

// unrelatedErr is a remote whose history shares no commit with the vault's.
func unrelatedErr() error {
	e := fault.New(fault.ErrConflict, "sync: the remote's history and the vault's have no commit in common; the vault is as it was")
	return e.WithHint("a vault made by memvault init on each machine cannot be joined: clone the remote's vault instead (git clone URL .memory)")
}

// MergeGit merges theirs into the branch with the git binary: a
// fast-forward when possible, else a merge commit whose files git merges
// with the drivers .git/config names. The vault's own git hooks do not
// run: post-merge would re-render and reindex under the vault lock, which
// the caller holds and does itself afterwards. A merge that leaves
// conflicts is aborted, so the vault is as it was.
func (r *Repo) MergeGit(ctx context.Context, theirs plumbing.Hash, msg string, who Signature) (*MergeOutcome, error) {
	ours, err := r.Head()
	if err != nil {
		return nil, err
	}
	d, done, err := r.toMerge(ours, theirs)
	if done != nil || err != nil {
		return done, err
	}
	args := []string{"-c", "core.hooksPath=" + os.DevNull, "merge", "--no-edit", "--no-stat", "--quiet", "-m", msg, theirs.String()}
	out, err := r.runGit(ctx, who, args...)
	if err != nil {
		return nil, r.failedGitMerge(ctx, out, err)
	}
	now, err := r.Head()
	if err != nil {
		return nil, err
	}
	paths, err := r.changedPaths(ours, now)
	if err != nil {
		return nil, err
	}
	return &MergeOutcome{Commit: now, FastForward: d.OnlyA == 0, Merged: d.OnlyA > 0, Paths: paths}, nil
}

// failedGitMerge works out why git merge failed, aborts a merge it left
// half done, and classifies the failure.
func (r *Repo) failedGitMerge(ctx context.Context, out string, err error) error {
	if _, statErr := os.Stat(filepath.Join(r.gitDir, "MERGE_HEAD")); statErr == nil {
		conflicted, _ := r.runGit(context.Background(), Signature{}, "diff", "--name-only", "--diff-filter=U")
		_, _ = r.runGit(context.Background(), Signature{}, "merge", "--abort")
		paths := strings.Fields(conflicted)
		if len(paths) == 0 {
			paths = []string{"(git: " + gitMessage(out) + ")"}
		}
		return conflictErr(paths)
	}
	if strings.Contains(out, "would be overwritten by merge") || strings.Contains(out, "untracked working tree files would be") {
		var paths []string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "\t") {
				paths = append(paths, strings.TrimSpace(l))
			}
		}
		return localChangesErr(r.root, paths)
	}
	if ctx.Err() != nil {
		return fault.New(fault.ErrBusy, "sync: git merge did not finish in time; the vault is as git left it").
			WithHint("run git -C %s status", r.root)
	}
	return fmt.Errorf("sync: git merge: %s", gitMessage(out))
}

// changedPaths lists the files that differ between two commits' trees.
func (r *Repo) changedPaths(a, b plumbing.Hash) ([]string, error) {
	var changes []*Change
	ta, err := r.treeOf(a)
	if err != nil {
		return nil, err
	}
	tb, err := r.treeOf(b)
	if err != nil {
		return nil, err
	}
	if err := r.diffTrees("", ta, tb, &changes); err != nil {
		return nil, err
	}
	paths := make([]string, len(changes))
	for i, c := range changes {
		paths[i] = c.Path
	}
	return paths, nil
}

// treeOf returns the tree of commit h; zero for the zero commit.
func (r *Repo) treeOf(h plumbing.Hash) (plumbing.Hash, error) {
	if h.IsZero() {
		return plumbing.ZeroHash, nil
	}
	c, err := object.GetCommit(r.st, h)
	if err != nil {
		return plumbing.ZeroHash, &fault.Error{Class: fault.ErrCorrupt, Msg: "git: read commit " + h.String() + ": " + err.Error(), Err: err}
	}
	return c.TreeHash, nil
}

// toMerge says how ours and theirs diverge, or, as done, the outcome when
// there is nothing to merge (theirs is already in ours). Unrelated
// histories are refused.
func (r *Repo) toMerge(ours, theirs plumbing.Hash) (d Divergence, done *MergeOutcome, err error) {
	if d, err = r.Diverge(ours, theirs); err != nil {
		return d, nil, err
	}
	if d.OnlyB == 0 {
		return d, &MergeOutcome{Commit: ours}, nil
	}
	if len(d.Bases) == 0 && !ours.IsZero() {
		return d, nil, unrelatedErr()
	}
	return d, nil, nil
}

// Merge merges theirs into the branch without the git binary: a
// fast-forward when the branch is behind, else a three-way merge of the
// trees against the best common ancestor, where a file one side changed
// takes that side and a file both changed goes through merge. The commit
// has both parents. The work tree's files and git's index follow for the
// paths that changed; a path with uncommitted changes on disk stops the
// merge before anything is written, as git's does. A conflict leaves the
// vault as it was. The caller holds the vault lock.
func (r *Repo) Merge(theirs plumbing.Hash, merge MergeFunc, msg string, who Signature, when time.Time) (*MergeOutcome, error) {
	branch, err := r.Branch()
	if err != nil {
		return nil, err
	}
	ours, err := r.refValue(branch)
	if err != nil {
		return nil, err
	}
	d, done, err := r.toMerge(ours, theirs)
	if done != nil || err != nil {
		return done, err
	}
	oursTree, err := r.treeOf(ours)
	if err != nil {
		return nil, err
	}
	theirsTree, err := r.treeOf(theirs)
	if err != nil {
		return nil, err
	}
	out := &MergeOutcome{Commit: theirs, FastForward: d.OnlyA == 0}
	var changes []*Change
	if out.FastForward {
		if err := r.diffTrees("", oursTree, theirsTree, &changes); err != nil {
			return nil, err
		}
	} else {
		baseTree, err := r.treeOf(d.Bases[0])
		if err != nil {
			return nil, err
		}
		tm := &treeMerge{r: r, merge: merge}
		tree, err := tm.trees("", baseTree, oursTree, theirsTree)
		if err == nil && len(tm.conflicts) > 0 {
			err = conflictErr(tm.conflicts)
		}
		if err == nil && tree.IsZero() {
			tree, err = r.writeObject(plumbing.TreeObject, nil)
		}
		if err != nil {
			r.discardCreated()
			return nil, err
		}
		changes = tm.changes
		sig := object.Signature{Name: who.Name, Email: who.Email, When: when}
		c := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: tree, ParentHashes: []plumbing.Hash{ours, theirs}}
		if out.Commit, err = r.encodeAndWrite(c); err != nil {
			r.discardCreated()
			return nil, fault.Wrap("git: write commit", err)
		}
		out.Merged = true
	}
	if err := r.checkout(branch, ours, out.Commit, changes, msg, who, when); err != nil {
		r.discardCreated()
		return nil, err
	}
	r.created = nil
	for _, c := range changes {
		out.Paths = append(out.Paths, c.Path)
	}
	return out, nil
}

// checkout moves the branch from ours to commit and brings the work tree
// and git's index along for changes. Files are written first, so that a
// crash before the branch moves leaves files that hold both sides (the
// next merge settles them) rather than a branch whose files on disk are
// older than it; if the branch moved meanwhile, the files are put back.
func (r *Repo) checkout(branch plumbing.ReferenceName, ours, commit plumbing.Hash, changes []*Change, msg string, who Signature, when time.Time) error {
	oursTree, err := r.treeOf(ours)
	if err != nil {
		return err
	}
	type saved struct {
		abs     string
		data    []byte
		existed bool
	}
	var dirty []string
	var undo []saved
	// The work tree's files are the vault's: none is read or written
	// through a symbolic link.
	fsys := fileio.At(r.root)
	for _, c := range changes {
		abs := filepath.Join(r.root, filepath.FromSlash(c.Path))
		was, existedInOurs, err := r.blobAt(oursTree, c.Path)
		if err != nil {
			return err
		}
		disk, err := fsys.ReadFile(abs)
		if fileio.IsLink(err) {
			return err
		}
		onDisk := err == nil
		if onDisk != existedInOurs || !bytes.Equal(disk, was) {
			if !(onDisk && !c.Deleted && bytes.Equal(disk, c.Content)) {
				dirty = append(dirty, c.Path)
			}
		}
		undo = append(undo, saved{abs: abs, data: disk, existed: onDisk})
	}
	if len(dirty) > 0 {
		return localChangesErr(r.root, dirty)
	}
	restore := func() {
		for _, u := range undo {
			if u.existed {
				_ = fsys.WriteAtomic(u.abs, u.data)
			} else {
				fsys.Remove(u.abs)
			}
		}
	}
	for _, c := range changes {
		abs := filepath.Join(r.root, filepath.FromSlash(c.Path))
		if c.Deleted {
			if err := fsys.Remove(abs); err != nil && !os.IsNotExist(err) {
				restore()
				return fault.IO("remove "+c.Path, err)
			}
			continue
		}
		if err := fsys.MkdirAll(filepath.Dir(abs)); err != nil {
			restore()
			return fault.IO("create "+filepath.Dir(c.Path), err)
		}
		if err := fsys.WriteAtomic(abs, c.Content); err != nil {
			restore()
			return err
		}
		if info, err := fsys.Stat(abs); err == nil {
			c.Stat = info
		}
	}
	if err := r.markPending(r.pendingIndex(), changes); err != nil {
		restore()
		return err
	}
	sig := object.Signature{Name: who.Name, Email: who.Email, When: when}
	if err := r.casRef(branch, ours, commit, firstLine(msg), sig); err != nil {
		restore()
		if errors.Is(err, errRefMoved) {
			return fault.New(fault.ErrBusy, "sync: the branch moved while the merge was written (a git command?); the vault is as it was").
				WithHint("sync again")
		}
		return err
	}
	// The merge stands from here; an index that cannot follow only makes
	// git status show the files as changed until the next write.
	_ = r.UpdateIndex(commit, changes)
	return nil
}

// blobAt reads the file at path in tree; ok is false when there is none.
func (r *Repo) blobAt(tree plumbing.Hash, path string) ([]byte, bool, error) {
	if tree.IsZero() {
		return nil, false, nil
	}
	t, err := object.GetTree(r.st, tree)
	if err != nil {
		return nil, false, err
	}
	e, err := t.FindEntry(path)
	if err != nil || !e.Mode.IsFile() {
		return nil, false, nil
	}
	data, err := r.readBlob(e.Hash)
	return data, err == nil, err
}

func (r *Repo) readBlob(h plumbing.Hash) ([]byte, error) {
	b, err := object.GetBlob(r.st, h)
	if err != nil {
		return nil, fmt.Errorf("git: read blob %s: %w", h, err)
	}
	rd, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

// treeEntries returns a tree's entries in st by name; none for the zero
// hash. The merge reads through the repository's store, the history walk
// through its own (history.go).
func treeEntries(st storer.EncodedObjectStorer, tree plumbing.Hash) (map[string]object.TreeEntry, error) {
	m := map[string]object.TreeEntry{}
	if tree.IsZero() {
		return m, nil
	}
	t, err := object.GetTree(st, tree)
	if err != nil {
		return nil, fmt.Errorf("git: read tree %s: %w", tree, err)
	}
	for _, e := range t.Entries {
		m[e.Name] = e
	}
	return m, nil
}

// diffTrees appends to changes, file by file, what turns tree a into tree b.
func (r *Repo) diffTrees(prefix string, a, b plumbing.Hash, changes *[]*Change) error {
	if a == b {
		return nil
	}
	ea, err := treeEntries(r.st, a)
	if err != nil {
		return err
	}
	eb, err := treeEntries(r.st, b)
	if err != nil {
		return err
	}
	for _, name := range unionNames(ea, eb) {
		x, inA := ea[name]
		y, inB := eb[name]
		if err := r.diffEntry(prefix+name, x, inA, y, inB, changes); err != nil {
			return err
		}
	}
	return nil
}

// diffEntry appends what turns entry x (when inA) into entry y (when inB).
func (r *Repo) diffEntry(path string, x object.TreeEntry, inA bool, y object.TreeEntry, inB bool, changes *[]*Change) error {
	if inA && inB && x.Hash == y.Hash && x.Mode == y.Mode {
		return nil
	}
	dirA, dirB := inA && x.Mode == filemode.Dir, inB && y.Mode == filemode.Dir
	var subA, subB plumbing.Hash
	if dirA {
		subA = x.Hash
	}
	if dirB {
		subB = y.Hash
	}
	if dirA || dirB {
		if err := r.diffTrees(path+"/", subA, subB, changes); err != nil {
			return err
		}
	}
	switch {
	case inB && !dirB:
		data, err := r.readBlob(y.Hash)
		if err != nil {
			return err
		}
		*changes = append(*changes, &Change{Path: path, Content: data, blob: y.Hash})
	case inA && !dirA:
		*changes = append(*changes, &Change{Path: path, Deleted: true})
	}
	return nil
}

func unionNames(maps ...map[string]object.TreeEntry) []string {
	seen := map[string]bool{}
	var names []string
	for _, m := range maps {
		for n := range m {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	return names
}

// treeMerge is one three-way merge of trees: the changes it makes to ours
// and the paths it could not merge.
type treeMerge struct {
	r         *Repo
	merge     MergeFunc
	changes   []*Change
	conflicts []string
}

func sameEntry(x object.TreeEntry, inX bool, y object.TreeEntry, inY bool) bool {
	if !inX || !inY {
		return inX == inY
	}
	return x.Hash == y.Hash && x.Mode == y.Mode
}

// trees merges three trees (zero: absent) and returns the merged tree,
// zero when it is empty.
func (tm *treeMerge) trees(prefix string, base, ours, theirs plumbing.Hash) (plumbing.Hash, error) {
	r := tm.r
	eb, err := treeEntries(r.st, base)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	eo, err := treeEntries(r.st, ours)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	et, err := treeEntries(r.st, theirs)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	var out []object.TreeEntry
	for _, name := range unionNames(eb, eo, et) {
		b, inB := eb[name]
		o, inO := eo[name]
		t, inT := et[name]
		path := prefix + name
		switch {
		case sameEntry(o, inO, t, inT), sameEntry(b, inB, t, inT):
			if inO {
				out = append(out, o) // both sides agree, or only ours changed
			}
		case sameEntry(b, inB, o, inO):
			// Only theirs changed: take it, and bring the work tree along.
			if err := r.diffEntry(path, o, inO, t, inT, &tm.changes); err != nil {
				return plumbing.ZeroHash, err
			}
			if inT {
				out = append(out, t)
			}
		default:
			e, keep, err := tm.both(path, b, inB, o, inO, t, inT)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			if keep {
				out = append(out, e)
			}
		}
	}
	if len(out) == 0 {
		return plumbing.ZeroHash, nil
	}
	sort.Sort(object.TreeEntrySorter(out))
	return r.encodeAndWrite(&object.Tree{Entries: out})
}

// both merges an entry both sides changed: folders entry by entry, files
// through the merge function. Anything else (a file against a folder, a
// deletion against a change, a change of mode) is a conflict.
func (tm *treeMerge) both(path string, b object.TreeEntry, inB bool, o object.TreeEntry, inO bool, t object.TreeEntry, inT bool) (object.TreeEntry, bool, error) {
	r := tm.r
	isDir := func(e object.TreeEntry, in bool) bool { return in && e.Mode == filemode.Dir }
	isFile := func(e object.TreeEntry, in bool) bool { return in && e.Mode.IsFile() }
	switch {
	case isDir(o, inO) && isDir(t, inT) && (!inB || isDir(b, inB)):
		var base plumbing.Hash
		if inB {
			base = b.Hash
		}
		h, err := tm.trees(path+"/", base, o.Hash, t.Hash)
		if err != nil || h.IsZero() {
			return object.TreeEntry{}, false, err
		}
		return object.TreeEntry{Name: o.Name, Mode: filemode.Dir, Hash: h}, true, nil
	case isFile(o, inO) && isFile(t, inT) && o.Mode == t.Mode && (!inB || isFile(b, inB)):
		var base []byte
		if inB {
			data, err := r.readBlob(b.Hash)
			if err != nil {
				return object.TreeEntry{}, false, err
			}
			base = data
		}
		ours, err := r.readBlob(o.Hash)
		if err != nil {
			return object.TreeEntry{}, false, err
		}
		theirs, err := r.readBlob(t.Hash)
		if err != nil {
			return object.TreeEntry{}, false, err
		}
		merged, conflict, err := tm.merge(path, base, ours, theirs)
		if err != nil {
			return object.TreeEntry{}, false, fmt.Errorf("merge %s: %w", path, err)
		}
		if conflict {
			tm.conflicts = append(tm.conflicts, path)
			return o, true, nil
		}
		h, err := r.writeObject(plumbing.BlobObject, merged)
		if err != nil {
			return object.TreeEntry{}, false, fault.Wrap("git: write blob for "+path, err)
		}
		if h != o.Hash {
			tm.changes = append(tm.changes, &Change{Path: path, Content: merged, blob: h})
		}
		return object.TreeEntry{Name: o.Name, Mode: o.Mode, Hash: h}, true, nil
	}
	tm.conflicts = append(tm.conflicts, path)
	return o, inO, nil
}

// FileAt reads the file at path in commit h; ok is false when there is
// none.
func (r *Repo) FileAt(h plumbing.Hash, path string) (data []byte, ok bool, err error) {
	tree, err := r.treeOf(h)
	if err != nil {
		return nil, false, err
	}
	return r.blobAt(tree, path)
}
