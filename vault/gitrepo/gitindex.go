package gitrepo

// git's index kept level with memvault's commits, and caught up after a
// process died between its commit and the index update.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/gitrepo/index"
)

// updateIndex makes git's index agree with the commit for the paths it
// touched, so that `git status` shows nothing memvault wrote. Entries for
// other paths, including whatever a person staged, are left alone. The
// index is written through git's index.lock.
//
// A person's `git add` or `git commit` that finds index.lock fails at once,
// so the lock is held for as short a time as possible: the index is read
// and the new one made before the lock is taken, and written into the lock
// file as it is created (takeGitLock); under the lock there is only the
// check that the index is still the one read, and the rename. The index
// read is kept open for that check, so that its inode cannot be reused by
// a newer index: the same inode, size and time mean the same file (git,
// like memvault, replaces the index by a rename, never in place). When a
// git command replaced the index in between, the new one is made again,
// under the lock, from the index as it is now.
func (r *Repo) updateIndex(changes []*Change) error {
	idxPath := filepath.Join(r.gitDir, "index")
	entries := make([]index.Change, len(changes))
	for i, c := range changes {
		entries[i] = index.Change{Path: c.Path, Blob: c.blob, Deleted: c.Deleted, Stat: c.Stat}
	}
	opts := index.Options{Split: r.splitIndexConfig(), SplitFrom: r.splitFrom, SharedDir: r.gitDir}
	read, data, err := openIndex(idxPath)
	if err != nil {
		return err
	}
	if read != nil {
		defer read.Close()
	}
	next, err := indexBytes(data, entries, opts)
	if err != nil {
		return err
	}
	if r.beforeIndexLock != nil {
		r.beforeIndexLock()
	}
	lock, err := r.takeGitLock(idxPath, next, false)
	if err != nil {
		return err
	}
	defer lock.release()
	if !sameIndex(read, idxPath) {
		data, err := os.ReadFile(idxPath)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fault.Wrap("git: read index", err)
		}
		if next, err = indexBytes(data, entries, opts); err != nil {
			return err
		}
		if err := lock.fill(next, false); err != nil {
			return fault.Wrap("git: write index", err)
		}
	}
	if err := lock.commit(); err != nil {
		return fault.Wrap("git: write index", err)
	}
	return nil
}

// openIndex opens git's index and reads it, returning the open file with
// its data; nil and no data when there is no index yet.
func openIndex(path string) (*os.File, []byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fault.Wrap("git: read index", err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, nil, fault.Wrap("git: read index", err)
	}
	return f, data, nil
}

// indexBytes is the index data with entries applied, in the form opts ask.
func indexBytes(data []byte, entries []index.Change, opts index.Options) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(data) + 4<<10)
	if err := index.Write(&buf, data, entries, opts); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// sameIndex reports whether the index at path is still read, the file
// openIndex opened (nil: still no index at all).
func sameIndex(read *os.File, path string) bool {
	now, err := os.Stat(path)
	if read == nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	then, rerr := read.Stat()
	return err == nil && rerr == nil && os.SameFile(then, now) &&
		then.Size() == now.Size() && then.ModTime().Equal(now.ModTime())
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
// update may not have happened: written before the branch moves, emptied
// once git's index has followed. A process killed in between leaves it for
// the next transaction, which sets those paths' entries to what the
// commit holds; without it, git status would show the commit's files as
// staged back to their old versions, and a person's git commit would
// revert them.
//
// The file is kept and rewritten in place, not replaced by a rename and
// removed: a commit creates no file for it (on the machine of
// docs/PERFORMANCE.md creating a file costs more than writing one).
const indexPending = ".locks/index-pending"

// pendingIndex returns the paths a killed transaction left in indexPending.
func (r *Repo) pendingIndex() []string {
	data, err := fileio.At(r.root).ReadFile(filepath.Join(r.root, indexPending))
	if err != nil {
		return nil
	}
	return strings.Fields(string(data))
}

// markPending records the paths of changes, and those still pending. No
// fsync: it guards against a killed process, whose writes the kernel
// keeps; after a power loss git's index is rebuilt by git. The list is
// written over the old one from its start and cut to its length: it holds
// every path the old one did (pending), so a process killed between the
// write and the cut leaves the new list whole, whatever follows it.
func (r *Repo) markPending(pending []string, changes []*Change) error {
	paths := slices.Clone(pending)
	for _, c := range changes {
		paths = append(paths, c.Path)
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	return fileio.At(r.root).Overwrite(filepath.Join(r.root, indexPending), []byte(strings.Join(paths, "\n")+"\n"))
}

// clearPending empties the list once git's index has followed.
func (r *Repo) clearPending() {
	fileio.At(r.root).Truncate(filepath.Join(r.root, indexPending), 0) //nolint:errcheck // a list left is caught up again, harmlessly
}

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
		if data, err := fileio.At(r.root).ReadFile(abs); err == nil && plumbing.ComputeHash(plumbing.BlobObject, data) == e.Hash {
			if info, err := fileio.At(r.root).Stat(abs); err == nil {
				c.Stat = info
			}
		}
		out = append(out, c)
	}
	return out, nil
}
