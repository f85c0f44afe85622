package gitrepo

// git's lock files: the branch moved by compare-and-swap under
// <ref>.lock, the reflog, and the markers that tell memvault's own stale
// locks from a live git process's.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// casRef moves branch from old to new the way git does: take <ref>.lock
// (holding the new value already), check the current value, rename. A git
// command holding the same lock makes us wait briefly, then fail.
func (r *Repo) casRef(branch plumbing.ReferenceName, old, new plumbing.Hash, subject string, sig object.Signature) error {
	refPath := filepath.Join(r.gitDir, filepath.FromSlash(branch.String()))
	if err := os.MkdirAll(filepath.Dir(refPath), fileio.DirPerm); err != nil {
		return fault.Wrap("git: update "+branch.String(), err)
	}
	// The new value is written and synced before the lock is taken; under
	// it, only the compare and the rename. A git command under way goes
	// first (yieldToGit), right before the lock: nothing slow comes after
	// the look.
	lock, err := r.prepareGitLock(refPath, []byte(new.String()+"\n"), true)
	if err != nil {
		return err
	}
	r.yieldToGit()
	if err := lock.take(); err != nil {
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
	if err := lock.commit(); err != nil {
		return fault.Wrap("git: update "+branch.String(), err)
	}
	r.appendReflog(branch, old, new, subject, sig)
	return nil
}

// gitCommandWait is how young git's index lock must be for memvault to
// wait for the git command holding it before it moves the branch (and so
// the longest it waits).
const gitCommandWait = time.Second

// yieldToGit lets a git command that holds git's index lock finish before
// memvault moves the branch. A person's `git commit` holds the lock from
// its start until its own branch update, and memvault's commit in between
// would fail it ("cannot lock ref 'HEAD': is at … but expected …"), after
// its pre-commit hook found the staged ledger behind HEAD. Only a lock
// younger than gitCommandWait is waited for: an older one is a commit
// whose message editor is open, or a lock a killed git left, and memvault
// does not wait minutes for either; nor is a lock with a second link,
// which is a killed memvault's (see gitLock), removed by the index update
// to come. Nothing is taken here; the command may still start just after
// the look.
func (r *Repo) yieldToGit() {
	p := filepath.Join(r.gitDir, "index.lock")
	for {
		info, err := os.Lstat(p)
		if err != nil || time.Since(info.ModTime()) >= gitCommandWait {
			return
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
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
		// convenience, not worth Root.Append's sync on every commit.
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
	taken  time.Time
	held   func(name string, held time.Duration) // Repo.lockHeld
	// content (synced when sync) is what the lock file holds when taken.
	content []byte
	sync    bool
}

const gitLockMarkPrefix = "git-"

// takeGitLock creates target's lock file holding content, retrying for a
// short while when git holds it. Callers hold the vault lock (only
// transactions touch git).
//
// The lock is held for as short a time as possible, since a person's git
// command that finds it fails at once: content is written (with sync,
// synced too) into the marker before the lock exists, and one link makes
// the marker the lock file, already complete. What the caller does under
// the lock is its last check, then gitLock.commit's rename.
func (r *Repo) takeGitLock(target string, content []byte, sync bool) (*gitLock, error) {
	l, err := r.prepareGitLock(target, content, sync)
	if err != nil {
		return nil, err
	}
	return l, l.take()
}

// prepareGitLock is takeGitLock up to the lock: the marker, holding
// content. take takes the lock.
func (r *Repo) prepareGitLock(target string, content []byte, sync bool) (*gitLock, error) {
	p := target + ".lock"
	locks := filepath.Join(r.root, ".locks")
	base := filepath.Base(p)
	// .locks is the vault's folder: a link there is refused before
	// anything in it is listed, removed or created.
	if err := fileio.At(r.root).MkdirAll(locks); err != nil {
		return nil, err
	}
	r.removeStaleGitLocks(locks, p, base)
	if err := os.MkdirAll(locks, fileio.DirPerm); err != nil {
		return nil, fault.IO("create .locks", err)
	}
	// The marker's inode is the lock, and its content the lock file's:
	// git's protocol, not a file of the vault, so not through fileio.
	f, err := os.CreateTemp(locks, gitLockMarkPrefix+base+".*")
	if err != nil {
		return nil, fault.IO("git: lock "+base, err)
	}
	l := &gitLock{path: p, target: target, mark: f.Name(), f: f, held: r.lockHeld, content: content, sync: sync}
	if err := l.fill(content, sync); err != nil {
		f.Close()
		os.Remove(l.mark)
		return nil, fault.Wrap("git: lock "+base, err)
	}
	return l, nil
}

// take makes the prepared marker the lock file, retrying for a short while
// when git holds it. On error nothing is left, the marker included.
func (l *gitLock) take() error {
	deadline := time.Now().Add(2 * time.Second)
	for {
		err := os.Link(l.mark, l.path)
		if err == nil {
			l.taken = time.Now()
			return nil
		}
		if !errors.Is(err, fs.ErrExist) {
			// No hard links here: an exclusive create, which a killed
			// process leaves for a person to remove, as git does; the
			// content is written with the lock held.
			l.f.Close()
			os.Remove(l.mark)
			l.mark = ""
			if l.f, err = createLockFileUntil(l.path, deadline); err != nil {
				return err
			}
			l.taken = time.Now()
			if err := l.fill(l.content, l.sync); err != nil {
				l.release()
				return fault.Wrap("git: lock "+filepath.Base(l.path), err)
			}
			return nil
		}
		if time.Now().After(deadline) {
			l.f.Close()
			os.Remove(l.mark)
			return lockBusyErr(l.path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fill makes content the whole of the lock file (or of its marker, before
// the lock is taken), synced when sync is set.
func (l *gitLock) fill(content []byte, sync bool) error {
	if err := l.f.Truncate(0); err != nil {
		return err
	}
	if _, err := l.f.WriteAt(content, 0); err != nil {
		return err
	}
	if sync {
		return l.f.Sync()
	}
	return nil
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
		if e.Name() == filepath.Base(gcRunMark) {
			// A gc was killed: the lock files it left go first
			// (gcrun.go), so that this write is not the one blocked.
			r.ClearStaleGCLocks() //nolint:errcheck // what stays is reported by the lock it blocks
			continue
		}
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
	if l.held != nil {
		l.held(filepath.Base(l.path), time.Since(l.taken))
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
			return nil, fault.Wrap("git: lock "+filepath.Base(p), err)
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
