// Package gitrepo is the vault's git repository, written through go-git's
// object layer: loose objects, the trees on the changed paths, a commit
// with an explicit parent, the branch moved by compare-and-swap under git's
// own lock files, the reflog, and git's index brought level with the
// commit. It also packs the repository (gc) and reads what the vault needs
// back: blobs, trees at a revision, the first-parent log.
//
// It is a package of its own so that the rules git imposes (lock files a
// person's git command respects, the index it trusts, objects it can
// prune) live in one place with their tests against the real git binary,
// under a vault that only says what to commit. It knows one thing of the
// vault: its .locks/ folder, where it keeps the markers of its lock files
// and the list of paths whose index update is pending.
package gitrepo

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// Repo is the vault's git repository, driven through go-git's object layer
// only. go-git's worktree API stages by scanning the whole tree and ignores
// git's lock files; writing objects, trees and the ref ourselves costs time
// proportional to the paths a transaction touched, and lets us take git's
// own lock files so that a git command run by a person at the same moment
// is never clobbered.
type Repo struct {
	root   string // the work tree: the vault root
	gitDir string
	st     *objectStore
	// packs is when objects/pack last changed as st saw it (Refresh).
	packs time.Time
	// created lists the loose objects this process wrote in the current
	// transaction, so that a failed transaction can take them back.
	created []plumbing.Hash
	// zw and zbuf compress loose objects: one zlib writer reset for each
	// object, since a new one allocates and clears the compressor's
	// tables (hundreds of KiB) every time, which cost a commit of a few
	// objects more than the rest of its object writing.
	zw   *zlib.Writer
	zbuf bytes.Buffer
	// splitFrom overrides the index size from which git's index is split
	// (index.DefaultSplitFrom); tests set it small.
	splitFrom int
	// lockHeld, when set, is told how long each of git's lock files was
	// held, from its creation to its rename: what a benchmark measures.
	lockHeld func(name string, held time.Duration)
	// beforeIndexLock, when set, runs after the new index is made and
	// before index.lock is taken: where a test plays a git command that
	// replaces the index in between.
	beforeIndexLock func()
}

// Open opens the repository whose work tree is root (the vault root, with
// its .git folder). It reads nothing but HEAD's presence: objects are read
// as they are needed, through a small cache.
func Open(root string) (*Repo, error) {
	gitDir := filepath.Join(root, ".git")
	if _, err := os.Stat(filepath.Join(gitDir, "HEAD")); err != nil {
		return nil, &fault.Error{Class: fault.ErrCorrupt, Msg: "git: " + root + " is not a git repository", Err: err,
			Hint: "run memvault init to repair the vault"}
	}
	return &Repo{root: root, gitDir: gitDir, st: newStorage(gitDir), packs: packsChanged(gitDir)}, nil
}

// newStorage opens go-git's object storage on gitDir, not exclusive: git
// and other memvault processes write there too.
func newStorage(gitDir string) *objectStore {
	st := filesystem.NewStorageWithOptions(gitFS(gitDir), cache.NewObjectLRU(4<<20),
		filesystem.Options{ExclusiveAccess: false})
	return &objectStore{Storage: st, gitDir: gitDir, packs: packNames(gitDir)}
}

// objectStore is go-git's storage with one correction. go-git reads the
// list of packs once, at its first read from a pack, and keeps it; a gc
// run meanwhile by git (a person's, or the detached automatic one, which
// may run beside a sync's fetch, outside the vault lock) moves loose
// objects into a new pack and deletes them, or replaces the packs, and the
// storage would no longer find objects that are there. So a read that
// misses looks at the pack folder, and when its packs are not the ones it
// last saw, reads their list again and tries once more: one directory
// read per miss, and the packs' indexes again only when they changed.
type objectStore struct {
	*filesystem.Storage
	gitDir string
	packs  string // the pack folder's .idx names when the list was last read
}

// EncodedObject reads object h of type t.
func (s *objectStore) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	o, err := s.Storage.EncodedObject(t, h)
	if err != nil && s.repacked(err) {
		o, err = s.Storage.EncodedObject(t, h)
	}
	return o, err
}

// HasEncodedObject says whether object h is there: nil when it is.
func (s *objectStore) HasEncodedObject(h plumbing.Hash) error {
	err := s.Storage.HasEncodedObject(h)
	if err != nil && s.repacked(err) {
		err = s.Storage.HasEncodedObject(h)
	}
	return err
}

// EncodedObjectSize is the size of object h.
func (s *objectStore) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	n, err := s.Storage.EncodedObjectSize(h)
	if err != nil && s.repacked(err) {
		n, err = s.Storage.EncodedObjectSize(h)
	}
	return n, err
}

// repacked says whether a read that failed with err is worth trying again
// because the packs changed since the storage listed them, and if so makes
// the storage list them again.
func (s *objectStore) repacked(err error) bool {
	if !errors.Is(err, plumbing.ErrObjectNotFound) && !errors.Is(err, dotgit.ErrPackfileNotFound) && !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	now := packNames(s.gitDir)
	if now == s.packs {
		return false
	}
	s.packs = now
	s.Storage.Reindex()
	return true
}

// packNames lists the packs' indexes in gitDir: a key that changes when a
// pack comes or goes.
func packNames(gitDir string) string {
	d, err := os.Open(filepath.Join(gitDir, "objects", "pack"))
	if err != nil {
		return ""
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		if strings.HasSuffix(n, ".idx") {
			b.WriteString(n)
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// gitFS is a git folder as go-git's storage sees it. go-git makes the
// packs and loose objects it writes (a fetch, the in-process gc, a push to
// a local path through the in-process server) read-only for everyone,
// 0444, with a chmod the umask does not narrow; the vault's are its
// owner's alone, so the chmod drops the bits of the group and others
// (0400): what git's own writes under memvault's umask come out as.
func gitFS(gitDir string) billy.Filesystem { return privateFS{osfs.New(gitDir)} }

type privateFS struct{ billy.Filesystem }

// Chmod sets mode without the group's and others' bits.
func (f privateFS) Chmod(name string, mode os.FileMode) error {
	c, ok := f.Filesystem.(billy.Chmod)
	if !ok {
		return nil
	}
	return c.Chmod(name, mode&^0o077)
}

// Capabilities are those of the file system underneath: go-git asks, to
// choose how it writes refs.
func (f privateFS) Capabilities() billy.Capability { return billy.Capabilities(f.Filesystem) }

// Branch returns the branch HEAD points to. A detached HEAD is refused:
// committing there would leave memvault's commits unreachable, so a
// transaction asks before it writes anything.
func (r *Repo) Branch() (plumbing.ReferenceName, error) {
	data, err := os.ReadFile(filepath.Join(r.gitDir, "HEAD"))
	if err != nil {
		return "", fault.IO("read .git/HEAD", err)
	}
	s := strings.TrimSpace(string(data))
	target, ok := strings.CutPrefix(s, "ref: ")
	if !ok || !strings.HasPrefix(target, "refs/heads/") {
		e := fault.New(fault.ErrConflict, "git: HEAD is detached in the vault")
		return "", e.WithHint("check out a branch: git -C %s switch main", r.root)
	}
	return plumbing.ReferenceName(target), nil
}

// refValue reads a branch's commit, loose or packed; zero hash when unborn.
func (r *Repo) refValue(name plumbing.ReferenceName) (plumbing.Hash, error) {
	ref, err := r.st.Reference(name)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, &fault.Error{Class: fault.ErrCorrupt, Msg: "git: read " + name.String() + ": " + err.Error(), Err: err}
	}
	return ref.Hash(), nil
}

// Head returns the current commit of the vault's branch, zero before the
// first commit; a detached HEAD is an error, as for Branch.
func (r *Repo) Head() (plumbing.Hash, error) {
	branch, err := r.Branch()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return r.refValue(branch)
}

// Change is one path a commit sets or removes. The commit stores Content
// as a blob; git's index gets the blob with Stat, so that git status
// trusts the entry without reading the file again.
type Change struct {
	Path    string // slash-separated, relative to the root
	Content []byte
	Deleted bool
	Stat    os.FileInfo // the file as written; nil makes git re-read it
	blob    plumbing.Hash
}

// writeObject stores an object unless git has it already.
func (r *Repo) writeObject(typ plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	h := plumbing.ComputeHash(typ, data)
	// Only loose objects are checked: asking about packs would load every
	// pack index, which costs more than writing a small duplicate. A loose
	// copy of a packed object is harmless, and so is removing it again.
	p := r.loosePath(h)
	if _, err := os.Stat(p); err == nil {
		return h, nil
	}
	// Written as git writes a loose object: zlib at git's default level
	// for loose objects (1, best speed; go-git's writer uses 6, which costs
	// more than the rest of the object), into a temporary file in the
	// fan-out folder, then renamed into place. Not through fileio: the
	// temporary file carries git's tmp_obj_ name, so that git's own prune
	// removes one a killed process left, the bytes are compressed here, and
	// the object is read-only.
	// Compressed in memory first, so that the file gets one write.
	r.zbuf.Reset()
	if r.zw == nil {
		r.zw, _ = zlib.NewWriterLevel(&r.zbuf, zlib.BestSpeed)
	} else {
		r.zw.Reset(&r.zbuf)
	}
	fmt.Fprintf(r.zw, "%s %d\x00", typ, len(data))
	r.zw.Write(data)
	r.zw.Close() // writing to a bytes.Buffer does not fail
	if err := writeLoose(p, r.zbuf.Bytes()); err != nil {
		return plumbing.ZeroHash, err
	}
	if r.zbuf.Cap() > 1<<20 {
		r.zbuf = bytes.Buffer{} // a large object's buffer is not kept
	}
	r.created = append(r.created, h)
	return h, nil
}

// writeLoose writes a loose object's compressed bytes to p as git does,
// with as few system calls as git: the temporary file is created read-only
// (0400, its owner's alone) in the fan-out folder, which is made only when
// the create finds it missing, and renamed over p without a look at p
// first (a rename never replaces a folder with a file). A file on disk is
// never writable, and a temporary one a killed process leaves is git's
// tmp_obj_*, which git's prune removes.
func writeLoose(p string, z []byte) error {
	dir := filepath.Dir(p)
	var f *os.File
	var tmp string
	for try := 0; ; try++ {
		tmp = filepath.Join(dir, "tmp_obj_"+strconv.FormatUint(uint64(rand.Uint32()), 36))
		var err error
		f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o400)
		if err == nil {
			break
		}
		switch {
		case errors.Is(err, fs.ErrNotExist) && try < 2:
			// The fan-out folder is missing (a new repository, or one
			// git's gc emptied): made private, as git's own under
			// memvault's umask.
			if err := os.Mkdir(dir, fileio.DirPerm); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
		case errors.Is(err, fs.ErrExist) && try < 100:
		default:
			return err
		}
	}
	_, err := f.Write(z)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if err = syscall.Rename(tmp, p); err != nil {
			err = &os.LinkError{Op: "rename", Old: tmp, New: p, Err: err}
		}
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// discardCreated removes the loose objects written since the last call, after
// a transaction failed before its commit became visible. Nothing can refer to
// them: they were created by this transaction and the branch never moved.
func (r *Repo) discardCreated() {
	for _, h := range r.created {
		os.Remove(r.loosePath(h))
	}
	r.created = nil
}

func (r *Repo) loosePath(h plumbing.Hash) string {
	s := h.String()
	return filepath.Join(r.gitDir, "objects", s[:2], s[2:])
}

// buildTree returns the hash of tree base with changes applied. Only the
// trees on the changed paths are read and rewritten; every other subtree is
// reused by hash, so the cost does not grow with the size of the vault.
func (r *Repo) buildTree(base plumbing.Hash, changes []*Change) (plumbing.Hash, error) {
	var entries []object.TreeEntry
	if !base.IsZero() {
		t, err := object.GetTree(r.st, base)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries = append(entries, t.Entries...)
	}
	find := func(name string) int {
		for i := range entries {
			if entries[i].Name == name {
				return i
			}
		}
		return -1
	}
	sub := make(map[string][]*Change)
	var subNames []string
	for _, c := range changes {
		first, rest, nested := strings.Cut(c.Path, "/")
		if nested {
			if _, ok := sub[first]; !ok {
				subNames = append(subNames, first)
			}
			cc := *c
			cc.Path = rest
			sub[first] = append(sub[first], &cc)
			continue
		}
		i := find(first)
		switch {
		case c.Deleted && i >= 0:
			entries = append(entries[:i], entries[i+1:]...)
		case c.Deleted:
		case i >= 0:
			entries[i].Hash, entries[i].Mode = c.blob, filemode.Regular
		default:
			entries = append(entries, object.TreeEntry{Name: first, Mode: filemode.Regular, Hash: c.blob})
		}
	}
	for _, name := range subNames {
		i := find(name)
		var old plumbing.Hash
		if i >= 0 && entries[i].Mode == filemode.Dir {
			old = entries[i].Hash
		}
		h, err := r.buildTree(old, sub[name])
		if err != nil {
			return plumbing.ZeroHash, err
		}
		switch {
		case h.IsZero() && i >= 0:
			entries = append(entries[:i], entries[i+1:]...)
		case h.IsZero():
		case i >= 0:
			entries[i].Hash, entries[i].Mode = h, filemode.Dir
		default:
			entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
		}
	}
	if len(entries) == 0 {
		return plumbing.ZeroHash, nil // git has no empty subtrees
	}
	sort.Sort(object.TreeEntrySorter(entries))
	return r.encodeAndWrite(&object.Tree{Entries: entries})
}

// encodeAndWrite stores a tree or commit through writeObject.
func (r *Repo) encodeAndWrite(o interface {
	Encode(plumbing.EncodedObject) error
}) (plumbing.Hash, error) {
	mem := &plumbing.MemoryObject{}
	if err := o.Encode(mem); err != nil {
		return plumbing.ZeroHash, err
	}
	rd, err := mem.Reader()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer rd.Close()
	data := make([]byte, mem.Size())
	if _, err := io.ReadFull(rd, data); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.writeObject(mem.Type(), data)
}

// Signature is who a commit is by: the vault's configured git identity,
// author and committer alike.
type Signature struct{ Name, Email string }

// Commit writes changes as one commit on the current branch and returns
// it, or the zero hash when the changes leave the tree as it was (no empty
// commit). The parent is read under git's ref lock and compared with the
// one the tree was built on; if a person committed in between, the tree is
// rebuilt on their commit, so their work is never reverted.
//
// The paths go on record (.locks/index-pending) before the branch moves,
// so that if this process dies before UpdateIndex, the next UpdateIndex
// brings git's index up to this commit too. If the commit fails, the
// objects it wrote are removed again: nothing refers to them.
//
// Callers hold the vault lock: go-git does not respect git's index.lock,
// so memvault's writers take turns on their own lock.
func (r *Repo) Commit(changes []*Change, msg string, who Signature, when time.Time) (plumbing.Hash, error) {
	if err := r.markPending(r.pendingIndex(), changes); err != nil {
		return plumbing.ZeroHash, err
	}
	h, err := r.commit(changes, msg, who, when)
	if err != nil {
		r.discardCreated()
		return plumbing.ZeroHash, err
	}
	r.created = nil
	return h, nil
}

// UpdateIndex makes git's index agree with commit h, which Commit returned
// for changes, for the paths changes touched and for those an earlier
// Commit left pending (its process killed before its index update), so
// that git status shows nothing memvault committed. The commit stands
// whatever happens here: an error only means git status may show the
// files as changed until the next update.
func (r *Repo) UpdateIndex(h plumbing.Hash, changes []*Change) error {
	behind, err := r.catchUp(h, r.pendingIndex(), changes)
	if err == nil {
		err = r.updateIndex(append(changes, behind...))
	}
	if err != nil {
		return err
	}
	r.clearPending()
	return nil
}

// commit is Commit without the record of pending paths or the clean-up.
func (r *Repo) commit(changes []*Change, msg string, who Signature, when time.Time) (plumbing.Hash, error) {
	for _, c := range changes {
		if c.Deleted {
			continue
		}
		h, err := r.writeObject(plumbing.BlobObject, c.Content)
		if err != nil {
			return plumbing.ZeroHash, fault.Wrap("git: write blob for "+c.Path, err)
		}
		c.blob = h
	}
	branch, err := r.Branch()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	for attempt := 0; ; attempt++ {
		parent, err := r.refValue(branch)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		var baseTree plumbing.Hash
		if !parent.IsZero() {
			pc, err := object.GetCommit(r.st, parent)
			if err != nil {
				return plumbing.ZeroHash, &fault.Error{Class: fault.ErrCorrupt, Msg: "git: read commit " + parent.String() + ": " + err.Error(), Err: err}
			}
			baseTree = pc.TreeHash
		}
		tree, err := r.buildTree(baseTree, changes)
		if err != nil {
			return plumbing.ZeroHash, fault.Wrap("git: write tree", err)
		}
		if !parent.IsZero() && tree == baseTree {
			return plumbing.ZeroHash, nil // nothing changed: no empty commit
		}
		if tree.IsZero() {
			tree, err = r.writeObject(plumbing.TreeObject, nil)
			if err != nil {
				return plumbing.ZeroHash, fault.Wrap("git: write tree", err)
			}
		}
		sig := object.Signature{Name: who.Name, Email: who.Email, When: when}
		c := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: tree}
		if !parent.IsZero() {
			c.ParentHashes = []plumbing.Hash{parent}
		}
		h, err := r.encodeAndWrite(c)
		if err != nil {
			return plumbing.ZeroHash, fault.Wrap("git: write commit", err)
		}
		err = r.casRef(branch, parent, h, firstLine(msg), sig)
		if errors.Is(err, errRefMoved) && attempt < 5 {
			continue
		}
		if err != nil {
			return plumbing.ZeroHash, err
		}
		return h, nil
	}
}

var errRefMoved = errors.New("ref moved")
