package gitrepo

// git's index kept level with memvault's commits, and caught up after a
// process died between its commit and the index update.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
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
func (r *Repo) updateIndex(changes []*Change) error {
	idxPath := filepath.Join(r.gitDir, "index")
	lock, err := r.takeGitLock(idxPath)
	if err != nil {
		return err
	}
	defer lock.release()
	data, err := os.ReadFile(idxPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fault.Wrap("git: read index", err)
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
		return fault.Wrap("git: write index", err)
	}
	if err := lock.commit(); err != nil {
		return fault.Wrap("git: write index", err)
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
	data, err := fileio.At(r.root).ReadFile(filepath.Join(r.root, indexPending))
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
	return fileio.At(r.root).WriteCache(filepath.Join(r.root, indexPending), []byte(strings.Join(paths, "\n")+"\n"))
}

func (r *Repo) clearPending() { fileio.At(r.root).Remove(filepath.Join(r.root, indexPending)) }

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
