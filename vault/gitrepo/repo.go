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
	"bufio"
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/gitrepo/index"
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
	st     *filesystem.Storage
	// created lists the loose objects this process wrote in the current
	// transaction, so that a failed transaction can take them back.
	created []plumbing.Hash
	// splitFrom overrides the index size from which git's index is split
	// (index.DefaultSplitFrom); tests set it small.
	splitFrom int
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
	return &Repo{root: root, gitDir: gitDir, st: newStorage(gitDir)}, nil
}

// newStorage opens go-git's object storage on gitDir, not exclusive: git
// and other memvault processes write there too.
func newStorage(gitDir string) *filesystem.Storage {
	return filesystem.NewStorageWithOptions(osfs.New(gitDir), cache.NewObjectLRU(4<<20),
		filesystem.Options{ExclusiveAccess: false})
}

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
	// fan-out folder, made read-only, then renamed into place. The folder
	// is private from the start, the object only readable by its owner.
	// Not through fileio: the temporary file carries git's tmp_obj_ name,
	// so that git's own prune removes one a killed process left, the bytes
	// stream through zlib, and the object is read-only.
	dir := filepath.Dir(p)
	if err := os.Mkdir(dir, fileio.DirPerm); err != nil && !errors.Is(err, fs.ErrExist) {
		return plumbing.ZeroHash, err
	}
	f, err := os.CreateTemp(dir, "tmp_obj_")
	if err != nil {
		return plumbing.ZeroHash, err
	}
	tmp := f.Name()
	zw, _ := zlib.NewWriterLevel(f, zlib.BestSpeed)
	_, err = fmt.Fprintf(zw, "%s %d\x00", typ, len(data))
	if err == nil {
		_, err = zw.Write(data)
	}
	if err == nil {
		err = zw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o400)
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return plumbing.ZeroHash, err
	}
	r.created = append(r.created, h)
	return h, nil
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
			return plumbing.ZeroHash, gitIOErr("git: write blob for "+c.Path, err)
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
			return plumbing.ZeroHash, gitIOErr("git: write tree", err)
		}
		if !parent.IsZero() && tree == baseTree {
			return plumbing.ZeroHash, nil // nothing changed: no empty commit
		}
		if tree.IsZero() {
			tree, err = r.writeObject(plumbing.TreeObject, nil)
			if err != nil {
				return plumbing.ZeroHash, gitIOErr("git: write tree", err)
			}
		}
		sig := object.Signature{Name: who.Name, Email: who.Email, When: when}
		c := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: tree}
		if !parent.IsZero() {
			c.ParentHashes = []plumbing.Hash{parent}
		}
		h, err := r.encodeAndWrite(c)
		if err != nil {
			return plumbing.ZeroHash, gitIOErr("git: write commit", err)
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

// casRef moves branch from old to new the way git does: take <ref>.lock,
// check the current value, write, rename. A git command holding the same
// lock makes us wait briefly, then fail.
func (r *Repo) casRef(branch plumbing.ReferenceName, old, new plumbing.Hash, subject string, sig object.Signature) error {
	refPath := filepath.Join(r.gitDir, filepath.FromSlash(branch.String()))
	if err := os.MkdirAll(filepath.Dir(refPath), fileio.DirPerm); err != nil {
		return gitIOErr("git: update "+branch.String(), err)
	}
	lock, err := r.takeGitLock(refPath)
	if err != nil {
		return err
	}
	defer lock.release()
	cur, err := r.refValue(branch)
	if err != nil {
		return err
	}
	if cur != old {
		return errRefMoved
	}
	if _, err := fmt.Fprintf(lock.f, "%s\n", new); err != nil {
		return gitIOErr("git: update "+branch.String(), err)
	}
	if err := lock.f.Sync(); err != nil {
		return gitIOErr("git: update "+branch.String(), err)
	}
	if err := lock.commit(); err != nil {
		return gitIOErr("git: update "+branch.String(), err)
	}
	r.appendReflog(branch, old, new, subject, sig)
	return nil
}

// appendReflog records the move in the branch's and HEAD's reflogs, as git
// does, so `git reflog` shows memvault's commits. Best effort: a reflog is a
// convenience, and git itself tolerates it missing.
func (r *Repo) appendReflog(branch plumbing.ReferenceName, old, new plumbing.Hash, subject string, sig object.Signature) {
	_, offset := sig.When.Zone()
	sign := '+'
	if offset < 0 {
		sign, offset = '-', -offset
	}
	kind := "commit"
	if old.IsZero() {
		kind = "commit (initial)"
	}
	line := fmt.Sprintf("%s %s %s <%s> %d %c%02d%02d\t%s: %s\n", old, new, sig.Name, sig.Email,
		sig.When.Unix(), sign, offset/3600, offset%3600/60, kind, subject)
	for _, p := range []string{filepath.Join("logs", filepath.FromSlash(branch.String())), filepath.Join("logs", "HEAD")} {
		full := filepath.Join(r.gitDir, p)
		if err := os.MkdirAll(filepath.Dir(full), fileio.DirPerm); err != nil {
			return
		}
		// An append as git makes it, without fsync: the reflog is a
		// convenience, not worth fileio.Append's sync on every commit.
		f, err := os.OpenFile(full, os.O_WRONLY|os.O_APPEND|os.O_CREATE, fileio.FilePerm)
		if err != nil {
			return
		}
		f.WriteString(line)
		f.Close()
	}
}

// gitLock is one of git's lock files (<file>.lock) held by memvault.
//
// git never breaks a lock file: one left by a killed process blocks every
// later writer until a person removes it. memvault is killed too (a harness
// ends a hook that runs late), so it marks the lock files it takes as its
// own: the lock file is created as a hard link to a marker in .locks/, and
// both are removed on release. A later transaction, which holds the vault
// lock and so knows that no other memvault process is inside a
// transaction, removes a lock file that is still the same inode as a
// leftover marker: its owner died. A lock file a git command holds is never
// the same inode as a marker, so it is waited for, never broken.
type gitLock struct {
	path   string   // <file>.lock
	target string   // <file>
	mark   string   // the marker in .locks/; "" when the file system has no hard links
	f      *os.File // open on the lock file, for writing its content
}

const gitLockMarkPrefix = "git-"

// takeGitLock creates target's lock file, retrying for a short while when
// git holds it. Callers hold the vault lock (only transactions touch git).
func (r *Repo) takeGitLock(target string) (*gitLock, error) {
	p := target + ".lock"
	locks := filepath.Join(r.root, ".locks")
	base := filepath.Base(p)
	r.removeStaleGitLocks(locks, p, base)
	if err := os.MkdirAll(locks, fileio.DirPerm); err != nil {
		return nil, fault.IO("create .locks", err)
	}
	// The marker is an empty file whose inode is the lock, not content:
	// it is created directly, not through fileio.
	f, err := os.CreateTemp(locks, gitLockMarkPrefix+base+".*")
	if err != nil {
		return nil, fault.IO("git: lock "+base, err)
	}
	l := &gitLock{path: p, target: target, mark: f.Name(), f: f}
	deadline := time.Now().Add(2 * time.Second)
	for {
		err := os.Link(l.mark, p)
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			// No hard links here: an exclusive create, which a killed
			// process leaves for a person to remove, as git does.
			f.Close()
			os.Remove(l.mark)
			l.mark = ""
			if l.f, err = createLockFileUntil(p, deadline); err != nil {
				return nil, err
			}
			return l, nil
		}
		if time.Now().After(deadline) {
			f.Close()
			os.Remove(l.mark)
			return nil, lockBusyErr(p)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// removeStaleGitLocks removes markers left by killed memvault processes,
// and lock file p when one of them still owns it.
func (r *Repo) removeStaleGitLocks(locks, p, base string) {
	entries, err := os.ReadDir(locks)
	if err != nil {
		return
	}
	var lockInfo os.FileInfo
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), gitLockMarkPrefix+base+".") {
			continue
		}
		mark := filepath.Join(locks, e.Name())
		if lockInfo == nil {
			if lockInfo, err = os.Lstat(p); err != nil {
				lockInfo = nil
			}
		}
		if mi, err := os.Lstat(mark); err == nil && lockInfo != nil && os.SameFile(mi, lockInfo) {
			os.Remove(p)
			lockInfo = nil
		}
		os.Remove(mark)
	}
}

// commit closes the lock file and renames it over its target.
func (l *gitLock) commit() error {
	f := l.f
	l.f = nil
	if err := f.Close(); err != nil {
		os.Remove(l.path)
		return err
	}
	if err := os.Rename(l.path, l.target); err != nil {
		os.Remove(l.path)
		return err
	}
	l.path = "" // renamed: nothing left to remove but the marker
	return nil
}

// release gives the lock up without changing the target, if commit was not
// called, and removes the marker; the marker goes last, so that a process
// killed in between leaves a lock file the next writer recognises.
func (l *gitLock) release() {
	if l.f != nil {
		l.f.Close()
	}
	if l.path != "" {
		os.Remove(l.path)
	}
	if l.mark != "" {
		os.Remove(l.mark)
	}
}

// createLockFile takes one of git's lock files by exclusive creation,
// retrying for a short while when git holds it.
func createLockFile(p string) (*os.File, error) {
	return createLockFileUntil(p, time.Now().Add(2*time.Second))
}

func createLockFileUntil(p string, deadline time.Time) (*os.File, error) {
	for {
		// git's protocol, not fileio's: the exclusive create is the lock,
		// and the lock file itself receives the new content and is renamed
		// over its target (gitLock.commit).
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileio.FilePerm)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, gitIOErr("git: lock "+filepath.Base(p), err)
		}
		if time.Now().After(deadline) {
			return nil, lockBusyErr(p)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func lockBusyErr(p string) error {
	e := fault.New(fault.ErrBusy, "git: %s exists: another git command is running in the vault", filepath.Base(p))
	return e.WithHint("if no git command is running, remove %s", p)
}

// updateIndex makes git's index agree with the commit for the paths it
// touched, so that `git status` shows nothing memvault wrote. Entries for
// other paths, including whatever a person staged, are left alone. The
// index is written through git's index.lock.
func (r *Repo) updateIndex(changes []*Change) error {
	idxPath := filepath.Join(r.gitDir, "index")
	lock, err := r.takeGitLock(idxPath)
	if err != nil {
		return err
	}
	defer lock.release()
	data, err := os.ReadFile(idxPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return gitIOErr("git: read index", err)
	}
	entries := make([]index.Change, len(changes))
	for i, c := range changes {
		entries[i] = index.Change{Path: c.Path, Blob: c.blob, Deleted: c.Deleted, Stat: c.Stat}
	}
	opts := index.Options{Split: r.splitIndexConfig(), SplitFrom: r.splitFrom, SharedDir: r.gitDir}
	bw := bufio.NewWriterSize(lock.f, 64<<10)
	if err := index.Write(bw, data, entries, opts); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return gitIOErr("git: write index", err)
	}
	if err := lock.commit(); err != nil {
		return gitIOErr("git: write index", err)
	}
	return nil
}

// splitIndexConfig reads core.splitIndex from the vault's git config, which
// decides whether git's index is kept in one file or split.
func (r *Repo) splitIndexConfig() index.SplitMode {
	data, err := os.ReadFile(filepath.Join(r.gitDir, "config"))
	if err != nil || !bytes.Contains(bytes.ToLower(data), []byte("splitindex")) {
		return index.SplitAuto
	}
	cfg := config.NewConfig()
	if cfg.Unmarshal(data) != nil {
		return index.SplitAuto
	}
	switch v := strings.ToLower(cfg.Raw.Section("core").Options.Get("splitIndex")); v {
	case "true", "yes", "on", "1":
		return index.SplitOn
	case "false", "no", "off", "0":
		return index.SplitOff
	}
	return index.SplitAuto
}

// indexPending lists, one per line, the paths of commits whose index
// update may not have happened: written before the branch moves, removed
// once git's index has followed. A process killed in between leaves it for
// the next transaction, which sets those paths' entries to what the
// commit holds; without it, git status would show the commit's files as
// staged back to their old versions, and a person's git commit would
// revert them.
const indexPending = ".locks/index-pending"

// pendingIndex returns the paths a killed transaction left in indexPending.
func (r *Repo) pendingIndex() []string {
	data, err := os.ReadFile(filepath.Join(r.root, indexPending))
	if err != nil {
		return nil
	}
	return strings.Fields(string(data))
}

// markPending records the paths of changes, and those still pending.
func (r *Repo) markPending(pending []string, changes []*Change) error {
	paths := slices.Clone(pending)
	for _, c := range changes {
		paths = append(paths, c.Path)
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	// No fsync: it guards against a killed process, whose writes the
	// kernel keeps; after a power loss git's index is rebuilt by git.
	return fileio.WriteCache(filepath.Join(r.root, indexPending), []byte(strings.Join(paths, "\n")+"\n"))
}

func (r *Repo) clearPending() { os.Remove(filepath.Join(r.root, indexPending)) }

// catchUp returns index changes for the pending paths that changes does not
// cover, as commit h holds them: its blob, with the file's stat data when
// the file on disk still has that content (otherwise none, so that git
// reads the file and sees the difference), or a deletion.
func (r *Repo) catchUp(h plumbing.Hash, pending []string, changes []*Change) ([]*Change, error) {
	var out []*Change
	var tree *object.Tree
	for _, p := range pending {
		if slices.ContainsFunc(changes, func(c *Change) bool { return c.Path == p }) {
			continue
		}
		if tree == nil {
			commit, err := object.GetCommit(r.st, h)
			if err != nil {
				return nil, fmt.Errorf("git: read commit %s: %w", h, err)
			}
			if tree, err = commit.Tree(); err != nil {
				return nil, fmt.Errorf("git: read tree of %s: %w", h, err)
			}
		}
		e, err := tree.FindEntry(p)
		if err != nil || !e.Mode.IsFile() {
			out = append(out, &Change{Path: p, Deleted: true})
			continue
		}
		c := &Change{Path: p, blob: e.Hash}
		abs := filepath.Join(r.root, filepath.FromSlash(p))
		if data, err := os.ReadFile(abs); err == nil && plumbing.ComputeHash(plumbing.BlobObject, data) == e.Hash {
			if info, err := os.Stat(abs); err == nil {
				c.Stat = info
			}
		}
		out = append(out, c)
	}
	return out, nil
}

func gitIOErr(op string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EROFS) {
		return fault.IO(op, err)
	}
	var e *fault.Error
	if errors.As(err, &e) {
		return err
	}
	return fmt.Errorf("%s: %w", op, err)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// CommitInfo is one commit of the vault's lineage as `memvault log` shows
// it, its message split so that the trailers (Memvault-Agent, …) can be
// read as data.
type CommitInfo struct {
	Hash     string              `json:"hash"`
	Time     time.Time           `json:"time"`
	Author   string              `json:"author"`
	Subject  string              `json:"subject"`
	Body     string              `json:"body,omitempty"`
	Trailers map[string][]string `json:"trailers,omitempty"`
}

// parseMessage splits a message into subject, body and the trailer
// block (the last paragraph, when every line in it is "Key: value").
func parseMessage(msg string) (subject, body string, trailers map[string][]string) {
	msg = strings.TrimRight(msg, "\n")
	subject, rest, _ := strings.Cut(msg, "\n")
	rest = strings.Trim(rest, "\n")
	paras := strings.Split(rest, "\n\n")
	last := paras[len(paras)-1]
	t := make(map[string][]string)
	isTrailers := last != ""
	for _, line := range strings.Split(last, "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			isTrailers = false
			break
		}
		t[k] = append(t[k], v)
	}
	if isTrailers {
		paras = paras[:len(paras)-1]
		trailers = t
	}
	return subject, strings.Join(paras, "\n\n"), trailers
}

// Log walks first parents from HEAD, yielding commits until fn returns
// false: the vault's lineage, newest first, as `memvault log` shows it.
func (r *Repo) Log(fn func(CommitInfo) bool) error {
	h, err := r.Head()
	if err != nil || h.IsZero() {
		return err
	}
	for !h.IsZero() {
		c, err := object.GetCommit(r.st, h)
		if err != nil {
			return &fault.Error{Class: fault.ErrCorrupt, Msg: "git: read commit " + h.String() + ": " + err.Error(), Err: err}
		}
		subject, body, trailers := parseMessage(c.Message)
		info := CommitInfo{Hash: h.String(), Time: c.Author.When, Author: c.Author.Name,
			Subject: subject, Body: body, Trailers: trailers}
		if !fn(info) {
			return nil
		}
		if len(c.ParentHashes) == 0 {
			break
		}
		h = c.ParentHashes[0]
	}
	return nil
}
