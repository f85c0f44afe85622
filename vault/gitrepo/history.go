package gitrepo

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Append-only history. The files under a folder (the vault's ledger) may
// only grow from commit to commit: a commit made with `git commit
// --no-verify` skips the vault's pre-commit hook, so what it did is judged
// afterwards, along the branch's first-parent line, by FollowGrowth. The
// walk is generic: the caller's holds decides whether a file's new bytes
// keep its old ones (for the ledger: line by line, in order, or in any
// order at a merge); the walk finds which files changed, reads them, and
// keeps the last commit that held as the one later commits are held to.

// GrowthCommit is one commit as FollowGrowth holds it: the files whose
// content differs from the versions they are held to.
type GrowthCommit struct {
	Hash string // full hash
	// AnyOrder says the commit merges (it has a second parent, whose
	// version is in each file's Was too), or is not a descendant of the
	// trusted commit along the first-parent line: its lines may come in
	// any order.
	AnyOrder bool
	Files    []GrowthFile
}

// GrowthFile is one file of a GrowthCommit.
type GrowthFile struct {
	Path string   // slash-separated, from the repository's root
	Was  [][]byte // the trusted commit's version, then (at a merge) the second parent's; nil: no such file there
	Now  []byte   // the commit's version; nil: the file is gone
}

// HeldHistory is what FollowGrowth found.
type HeldHistory struct {
	// Trusted is the last commit whose files held ("" when none did, or
	// there is no commit): the one the next walk starts after.
	Trusted string
	Head    string   // the commit walked to ("" when there is none)
	Failed  []string // the commits whose files did not hold, oldest first
	Commits int      // the commits judged
}

// FollowGrowth holds the files under dir along HEAD's first-parent line,
// from after the commit base ("": from the first commit) to HEAD, oldest
// first. Each commit is held to the last one that held (at first base, or
// an empty folder): holds is given the files whose blob differs from that
// commit's, or, at a merge, from the second parent's, and says whether
// the commit holds. A commit that changes nothing under dir holds without
// a call. A commit that does not hold is listed in Failed and later
// commits are still held to the last one that did, so a commit that
// undoes the damage (git revert) holds again. When base is not on the
// first-parent line, the walk starts at the first commit of the line that
// has base in its history (a fast-forward onto a clone that had merged
// this one), whose own version then stands as the other side of a merge;
// when none has (an amend, a reset, a rebase), HEAD alone is held to base,
// its lines in any order. When base is unknown to git, the walk starts at
// the first commit.
func (r *Repo) FollowGrowth(base, dir string, holds func(GrowthCommit) bool) (HeldHistory, error) {
	var out HeldHistory
	head, err := r.Head()
	if err != nil || head.IsZero() {
		return out, err
	}
	out.Head = head.String()
	if base == out.Head {
		out.Trusted = base
		return out, nil
	}
	w, done := r.walker()
	defer done()
	line, found, err := w.firstParentsAfter(head, base)
	if err != nil {
		return out, err
	}
	var trusted *object.Commit
	first := inLine // how line[0] descends from trusted
	if base != "" {
		if c, err := object.GetCommit(w.st, plumbing.NewHash(base)); err == nil {
			trusted = c
			if !found {
				var i int
				if i, first, err = w.firstWith(c.Hash, line); err != nil {
					return out, err
				}
				line = line[i:]
			}
		} else {
			line, _, err = w.firstParentsAfter(head, "")
			if err != nil {
				return out, err
			}
		}
	}
	var blobs blobCache
	for i, c := range line {
		how := inLine
		if i == 0 {
			how = first
		}
		ok, err := w.holdCommit(trusted, c, how, dir, &blobs, holds)
		if err != nil {
			return out, err
		}
		out.Commits++
		if ok {
			trusted = c
		} else {
			out.Failed = append(out.Failed, c.Hash.String())
		}
	}
	if trusted != nil {
		out.Trusted = trusted.Hash.String()
	}
	return out, nil
}

// firstParentsAfter lists the commits on head's first-parent line after
// base, oldest first; found is false when base is not on the line (the
// whole line is then listed).
func (w *walker) firstParentsAfter(head plumbing.Hash, base string) (line []*object.Commit, found bool, err error) {
	for h := head; !h.IsZero(); {
		if h.String() == base {
			found = true
			break
		}
		c, err := object.GetCommit(w.st, h)
		if err != nil {
			return nil, false, fmt.Errorf("git: read commit %s: %w", h, err)
		}
		line = append(line, c)
		h = plumbing.ZeroHash
		if len(c.ParentHashes) > 0 {
			h = c.ParentHashes[0]
		}
	}
	for i, j := 0, len(line)-1; i < j; i, j = i+1, j-1 {
		line[i], line[j] = line[j], line[i]
	}
	return line, found || base == "", nil
}

// walker reads the objects of one walk. A walk of many commits reads
// through a storage of its own that keeps the pack files open: go-git's
// shared one opens the pack again for every object, which was most of a
// first walk's time.
type walker struct{ st storer.EncodedObjectStorer }

func (r *Repo) walker() (*walker, func()) {
	st := filesystem.NewStorageWithOptions(gitFS(r.gitDir), cache.NewObjectLRU(4<<20),
		filesystem.Options{KeepDescriptors: true})
	return &walker{st: st}, func() { _ = st.Close() }
}

// blob reads blob h.
func (w *walker) blob(h plumbing.Hash) ([]byte, error) {
	b, err := object.GetBlob(w.st, h)
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

// How a commit descends from the trusted one.
const (
	inLine    = iota // along the first-parent line
	viaMerge         // through a merge's second parent: the commit's own version stands as the other side
	unrelated        // not at all (an amend, a reset, a rebase): its lines may come in any order
)

// firstWith finds the first commit of line that has base in its history
// (a pull of a clone that had merged this one), and how it descends;
// HEAD alone, unrelated, when none has. Ancestry only grows along the
// line, so a binary search finds it.
func (w *walker) firstWith(base plumbing.Hash, line []*object.Commit) (int, int, error) {
	var ferr error
	i := sort.Search(len(line), func(i int) bool {
		ok, err := isAncestor(w.st, base, line[i].Hash)
		if err != nil {
			ferr = err
		}
		return ok
	})
	if i == len(line) {
		return len(line) - 1, unrelated, ferr
	}
	return i, viaMerge, ferr
}

// holdCommit holds commit c's files under dir to those of trusted (nil:
// none) and, when c merges, to its second parent's; how says how c
// descends from trusted. Blobs come through blobs, which keeps those of
// the last commit judged: they are the trusted versions of the next.
func (w *walker) holdCommit(trusted, c *object.Commit, how int, dir string, blobs *blobCache, holds func(GrowthCommit) bool) (bool, error) {
	was, err := w.dirTree(trusted, dir)
	if err != nil {
		return false, err
	}
	now, err := w.dirTree(c, dir)
	if err != nil {
		return false, err
	}
	bases := []plumbing.Hash{was}
	merge := len(c.ParentHashes) > 1 || how != inLine
	if len(c.ParentHashes) > 1 {
		p2, err := object.GetCommit(w.st, c.ParentHashes[1])
		if err != nil {
			return false, fmt.Errorf("git: read commit %s: %w", c.ParentHashes[1], err)
		}
		theirs, err := w.dirTree(p2, dir)
		if err != nil {
			return false, err
		}
		bases = append(bases, theirs)
	}
	if how == viaMerge {
		bases = append(bases, now)
	}
	// versions[path][i] is the blob of base i; nowBlob[path], the commit's.
	versions := map[string][]plumbing.Hash{}
	nowBlob := map[string]plumbing.Hash{}
	for i, base := range bases {
		if base == now {
			continue
		}
		var diffs []pathDiff
		if err := w.diffPaths(dir+"/", base, now, &diffs); err != nil {
			return false, err
		}
		for _, d := range diffs {
			if versions[d.path] == nil {
				versions[d.path] = make([]plumbing.Hash, len(bases))
				for j := range bases {
					versions[d.path][j] = unknownBlob
				}
			}
			versions[d.path][i], nowBlob[d.path] = d.a, d.b
		}
	}
	if len(versions) == 0 {
		return true, nil
	}
	gc := GrowthCommit{Hash: c.Hash.String(), AnyOrder: merge}
	for _, p := range sortedKeys(versions) {
		step := GrowthFile{Path: p}
		for _, h := range versions[p] {
			if h == unknownBlob { // the same as the commit's: no difference with that base
				h = nowBlob[p]
			}
			data, err := blobs.read(w, h)
			if err != nil {
				return false, err
			}
			step.Was = append(step.Was, data)
		}
		if step.Now, err = blobs.read(w, nowBlob[p]); err != nil {
			return false, err
		}
		gc.Files = append(gc.Files, step)
	}
	blobs.keep(nowBlob)
	return holds(gc), nil
}

// unknownBlob marks a version not found by a diff yet.
var unknownBlob = plumbing.NewHash("ffffffffffffffffffffffffffffffffffffffff")

// blobCache keeps the blobs of the last commit judged.
type blobCache struct{ m map[plumbing.Hash][]byte }

// read returns blob h (nil for the zero hash: no such file).
func (c *blobCache) read(w *walker, h plumbing.Hash) ([]byte, error) {
	if h.IsZero() {
		return nil, nil
	}
	if data, ok := c.m[h]; ok {
		return data, nil
	}
	data, err := w.blob(h)
	if err != nil {
		return nil, err
	}
	if data == nil {
		data = []byte{} // an empty file is there, unlike a missing one
	}
	if c.m == nil {
		c.m = map[plumbing.Hash][]byte{}
	}
	c.m[h] = data
	return data, nil
}

// keep forgets every blob but those of now.
func (c *blobCache) keep(now map[string]plumbing.Hash) {
	for h := range c.m {
		if !slices.Contains(slices.Collect(maps.Values(now)), h) {
			delete(c.m, h)
		}
	}
}

// dirTree is the hash of the tree of dir in commit c; zero when c is nil
// or holds no such folder.
func (w *walker) dirTree(c *object.Commit, dir string) (plumbing.Hash, error) {
	if c == nil {
		return plumbing.ZeroHash, nil
	}
	t, err := c.Tree()
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("git: read tree of %s: %w", c.Hash, err)
	}
	e, err := t.FindEntry(dir)
	if err != nil || e.Mode != filemode.Dir {
		return plumbing.ZeroHash, nil
	}
	return e.Hash, nil
}

// pathDiff is a file that differs between two trees: its blob in each
// (zero: not there).
type pathDiff struct {
	path string
	a, b plumbing.Hash
}

// diffPaths lists the files that differ between trees a and b, without
// reading a blob.
func (w *walker) diffPaths(prefix string, a, b plumbing.Hash, diffs *[]pathDiff) error {
	if a == b {
		return nil
	}
	ea, err := treeEntries(w.st, a)
	if err != nil {
		return err
	}
	eb, err := treeEntries(w.st, b)
	if err != nil {
		return err
	}
	for _, name := range unionNames(ea, eb) {
		x, inA := ea[name]
		y, inB := eb[name]
		if inA && inB && x.Hash == y.Hash && x.Mode == y.Mode {
			continue
		}
		var subA, subB, blobA, blobB plumbing.Hash
		if inA && x.Mode == filemode.Dir {
			subA = x.Hash
		} else if inA {
			blobA = x.Hash
		}
		if inB && y.Mode == filemode.Dir {
			subB = y.Hash
		} else if inB {
			blobB = y.Hash
		}
		if !subA.IsZero() || !subB.IsZero() {
			if err := w.diffPaths(prefix+name+"/", subA, subB, diffs); err != nil {
				return err
			}
		}
		if !blobA.IsZero() || !blobB.IsZero() {
			*diffs = append(*diffs, pathDiff{prefix + name, blobA, blobB})
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// HeadAndParent returns the branch's commit and its first parent ("" for
// either when there is none).
func (r *Repo) HeadAndParent() (head, parent string) {
	h, err := r.Head()
	if err != nil || h.IsZero() {
		return "", ""
	}
	c, err := object.GetCommit(r.st, h)
	if err != nil || len(c.ParentHashes) == 0 {
		return h.String(), ""
	}
	return h.String(), c.ParentHashes[0].String()
}
