package vault

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
	gitindex "github.com/memvault/memvault/vault/gitrepo/index"
)

// GC engines. git runs `git gc`, which is only possible where git is on
// the PATH; go-git packs in-process and needs nothing installed; auto is git
// where it is installed, else go-git. git is preferred because, measured on
// the suite's vaults (docs/PERFORMANCE.md), go-git's packs are about twice
// the size of git's, take longer to write, and go-git holds every object it
// packs in memory.
const (
	GCEngineAuto  = "auto"
	GCEngineGoGit = "go-git"
	GCEngineGit   = "git"
)

// DefaultGCExpire is how old an unreachable loose object must be before gc
// removes it: git's own default (gc.pruneExpire, two weeks). A person's git
// command writes its objects before the ref that makes them reachable, so
// an object written a moment ago may be reachable a moment later.
const DefaultGCExpire = 14 * 24 * time.Hour

// gcWindow is the delta window of the in-process pack: git's default.
const gcWindow = 10

// GCOptions say how to compact the vault's git objects.
type GCOptions struct {
	// Engine is GCEngineAuto (also when empty), GCEngineGit or GCEngineGoGit.
	Engine string
	// Expire is the age past which an unreachable loose object is pruned;
	// zero means DefaultGCExpire, a negative value prunes at any age.
	Expire time.Duration
	// LockTimeout overrides how long to wait for the vault lock.
	LockTimeout time.Duration
}

// GitSize measures a vault's .git folder.
type GitSize struct {
	LooseObjects int   `json:"loose_objects"`
	LooseBytes   int64 `json:"loose_bytes"`
	Packs        int   `json:"packs"`
	PackBytes    int64 `json:"pack_bytes"` // .pack, .idx and their companions
	GitBytes     int64 `json:"git_bytes"`  // all of .git
}

// FormatBytes prints a byte count in binary units (B, KiB, MiB, GiB).
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// GCReport is what a gc did.
type GCReport struct {
	Engine string `json:"engine"`
	// ContentBytes is the size of the work tree's files, derived caches and
	// .git excluded: what the repository stores the history of.
	ContentBytes int64         `json:"content_bytes"`
	Before       GitSize       `json:"before"`
	After        GitSize       `json:"after"`
	Packed       int           `json:"packed"`        // reachable objects in the new pack (go-git)
	RemovedLoose int           `json:"removed_loose"` // loose objects removed because they are packed
	RemovedPacks int           `json:"removed_packs"` // packs replaced by the new one
	Pruned       int           `json:"pruned"`        // unreachable loose objects removed
	KeptPacks    int           `json:"kept_packs"`    // old packs kept: .keep, or objects not in the new pack
	Duration     time.Duration `json:"duration_ns"`
}

// GC packs the vault's git objects and prunes unreachable loose ones, under
// the vault lock and under git's own gc lock (.git/gc.pid, which git gc
// takes itself and the go-git engine takes the way git does), so that
// neither a memvault writer nor `git gc` run by a person can interleave
// with it. git gc keeps what refs, reflogs and the index reach.
//
// The go-git engine never loses a reachable object: the roots are every
// ref, every reflog entry, the pseudo-refs (ORIG_HEAD, MERGE_HEAD, …) and
// git's index (staged blobs and its cached trees); the new pack is fsynced
// before any loose object or old pack is removed; an old pack is removed
// only when every object in it is in the new pack, and never when it has a
// .keep file; an unreachable loose object is pruned only past Expire.
func (v *Vault) GC(opts GCOptions) (*GCReport, error) {
	switch opts.Engine {
	case "", GCEngineAuto:
		opts.Engine = GCEngineGoGit
		if _, err := exec.LookPath("git"); err == nil {
			opts.Engine = GCEngineGit
		}
	case GCEngineGoGit, GCEngineGit:
	default:
		return nil, fault.New(ErrInvalid, "gc: engine %q: want auto, git or go-git", opts.Engine)
	}
	if opts.Expire == 0 {
		opts.Expire = DefaultGCExpire
	}
	release, err := v.lock(Lease{Agent: v.Config.Agent, Command: "gc"}, opts.LockTimeout)
	if err != nil {
		return nil, err
	}
	defer release()

	start := time.Now()
	gitDir := filepath.Join(v.Root, ".git")
	rep := &GCReport{Engine: opts.Engine}
	if rep.ContentBytes, err = contentBytes(v.Root); err != nil {
		return nil, err
	}
	if rep.Before, err = MeasureGit(gitDir); err != nil {
		return nil, err
	}
	if opts.Engine == GCEngineGit {
		err = gitGC(v.Root, opts.Expire)
	} else {
		var unlock func()
		host, _ := os.Hostname()
		if unlock, err = lockGitGC(gitDir, host); err != nil {
			return nil, err
		}
		err = goGitGC(gitDir, opts.Expire, rep)
		unlock()
	}
	if err != nil {
		return nil, err
	}
	// go-git's storage keeps the list of packs it found when it opened: a
	// Vault kept open across a gc would look for objects in files that are
	// gone. Open the repository afresh for the rest of this Vault's life.
	if r, err := openRepo(v.Root); err == nil {
		v.repo = r
	}
	if rep.After, err = MeasureGit(gitDir); err != nil {
		return nil, err
	}
	rep.Duration = time.Since(start)
	return rep, nil
}

// gitGC runs `git gc`, which takes gc.pid itself and keeps what reflogs and
// the index reach.
func gitGC(root string, expire time.Duration) error {
	if _, err := exec.LookPath("git"); err != nil {
		return fault.New(ErrInvalid, "gc: git is not installed").WithHint("use --engine go-git, which needs nothing installed")
	}
	prune := "now"
	if expire > 0 {
		prune = fmt.Sprintf("%d.seconds.ago", int64(expire/time.Second))
	}
	cmd := exec.Command("git", "-C", root, "-c", "gc.autoDetach=false", "gc", "--quiet", "--prune="+prune)
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if strings.Contains(msg, "already running") {
			return fault.New(ErrBusy, "gc: git gc is already running in the vault")
		}
		return fmt.Errorf("gc: git gc: %v: %s", err, oneLine(msg))
	}
	return nil
}

// lockGitGC takes .git/gc.pid the way git gc does (a gc.pid.lock file,
// then "PID HOST" renamed into gc.pid, removed when done), so that a `git
// gc`, automatic or by hand, sees memvault's gc running and stays out. A
// gc.pid left by a live git gc on this host, or by any host in the last 12
// hours, is respected as git respects it.
func lockGitGC(gitDir, host string) (func(), error) {
	pidPath := filepath.Join(gitDir, "gc.pid")
	lock, err := createLockFile(pidPath + ".lock")
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			lock.Close()
			os.Remove(pidPath + ".lock")
		}
	}()
	if info, err := os.Stat(pidPath); err == nil && time.Since(info.ModTime()) < 12*time.Hour {
		data, _ := os.ReadFile(pidPath)
		var pid int
		var other string
		fmt.Sscanf(string(data), "%d %s", &pid, &other)
		alive := pid > 0 && syscall.Kill(pid, 0) == nil
		if other != "" && (other != host || alive) && pid != os.Getpid() {
			e := fault.New(ErrBusy, "gc: git gc is already running in the vault (pid %d on %s)", pid, other)
			return nil, e.WithHint("wait for it, or remove %s if no gc is running", pidPath)
		}
	}
	if _, err := fmt.Fprintf(lock, "%d %s", os.Getpid(), host); err != nil {
		return nil, gitIOErr("gc: write gc.pid", err)
	}
	if err := lock.Close(); err != nil {
		return nil, gitIOErr("gc: write gc.pid", err)
	}
	if err := os.Rename(pidPath+".lock", pidPath); err != nil {
		os.Remove(pidPath + ".lock")
		return nil, gitIOErr("gc: write gc.pid", err)
	}
	ok = true
	return func() { os.Remove(pidPath) }, nil
}

// goGitGC writes one pack of every reachable object, then removes what it
// made redundant.
func goGitGC(gitDir string, expire time.Duration, rep *GCReport) error {
	st := filesystem.NewStorageWithOptions(osfs.New(gitDir), cache.NewObjectLRU(16<<20),
		filesystem.Options{ExclusiveAccess: false})
	defer st.Close()
	reach, err := reachable(st, gitDir)
	if err != nil {
		return err
	}
	oldPacks, err := st.ObjectPacks()
	if err != nil {
		return gitIOErr("gc: list packs", err)
	}
	var loose []plumbing.Hash
	if err := st.ForEachObjectHash(func(h plumbing.Hash) error { loose = append(loose, h); return nil }); err != nil {
		return gitIOErr("gc: list loose objects", err)
	}
	if len(loose) == 0 && len(oldPacks) <= 1 {
		return nil // already one pack and nothing loose: nothing to gain
	}

	hashes := make([]plumbing.Hash, 0, len(reach))
	for h := range reach {
		hashes = append(hashes, h)
	}
	sort.Slice(hashes, func(i, j int) bool { return bytes.Compare(hashes[i][:], hashes[j][:]) < 0 })
	var packHash plumbing.Hash
	if len(hashes) > 0 {
		if packHash, err = writePack(st, gitDir, hashes); err != nil {
			return err
		}
		rep.Packed = len(hashes)
	}

	cutoff := time.Now().Add(-expire)
	for _, h := range loose {
		if _, ok := reach[h]; ok {
			if err := st.DeleteLooseObject(h); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return gitIOErr("gc: remove a packed loose object", err)
			}
			rep.RemovedLoose++
			continue
		}
		t, err := st.LooseObjectTime(h)
		if err != nil || (expire > 0 && !t.Before(cutoff)) {
			continue
		}
		if err := st.DeleteLooseObject(h); err == nil {
			rep.Pruned++
		}
	}
	for _, p := range oldPacks {
		if p == packHash {
			continue
		}
		base := filepath.Join(gitDir, "objects", "pack", "pack-"+p.String())
		if _, err := os.Stat(base + ".keep"); err == nil {
			rep.KeptPacks++
			continue
		}
		covered, err := packCovered(base+".idx", reach)
		if err != nil {
			return err
		}
		if !covered {
			rep.KeptPacks++ // holds objects nothing reaches: left as git would leave a cruft pack
			continue
		}
		// The index goes last: git and go-git find packs by their .idx.
		for _, ext := range []string{".pack", ".rev", ".bitmap", ".idx"} {
			if err := os.Remove(base + ext); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return gitIOErr("gc: remove an old pack", err)
			}
		}
		rep.RemovedPacks++
	}
	removeEmptyFanout(filepath.Join(gitDir, "objects"))
	return nil
}

// writePack encodes hashes into a new pack with deltas and makes it durable
// before anything relies on it: go-git's pack writer does not fsync.
func writePack(st *filesystem.Storage, gitDir string, hashes []plumbing.Hash) (plumbing.Hash, error) {
	w, err := st.PackfileWriter()
	if err != nil {
		return plumbing.ZeroHash, gitIOErr("gc: create pack", err)
	}
	h, err := packfile.NewEncoder(w, st, false).Encode(hashes, gcWindow)
	if cerr := w.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return plumbing.ZeroHash, gitIOErr("gc: write pack", err)
	}
	dir := filepath.Join(gitDir, "objects", "pack")
	for _, ext := range []string{".pack", ".idx"} {
		p := filepath.Join(dir, "pack-"+h.String()+ext)
		f, err := os.Open(p)
		if err != nil {
			return plumbing.ZeroHash, gitIOErr("gc: sync pack", err)
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return plumbing.ZeroHash, gitIOErr("gc: sync pack", err)
		}
	}
	if err := fileio.SyncDir(dir); err != nil {
		return plumbing.ZeroHash, err
	}
	return h, nil
}

// packCovered reports whether every object of the pack whose index is at
// idxPath is in set.
func packCovered(idxPath string, set map[plumbing.Hash]struct{}) (bool, error) {
	f, err := os.Open(idxPath)
	if err != nil {
		return false, gitIOErr("gc: read pack index", err)
	}
	defer f.Close()
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(bufio.NewReader(f)).Decode(idx); err != nil {
		return false, &Error{Class: ErrCorrupt, Msg: "gc: read " + filepath.Base(idxPath) + ": " + err.Error(), Err: err}
	}
	it, err := idx.Entries()
	if err != nil {
		return false, err
	}
	defer it.Close()
	for {
		e, err := it.Next()
		if errors.Is(err, io.EOF) {
			return true, nil
		}
		if err != nil {
			return false, &Error{Class: ErrCorrupt, Msg: "gc: read " + filepath.Base(idxPath) + ": " + err.Error(), Err: err}
		}
		if _, ok := set[e.Hash]; !ok {
			return false, nil
		}
	}
}

// reachable is every object git itself would keep: what refs, reflogs,
// pseudo-refs and the index reach. A ref that names a missing object is
// corruption and stops the gc; a reflog or index entry that does is
// skipped, as git skips it.
func reachable(st *filesystem.Storage, gitDir string) (map[plumbing.Hash]struct{}, error) {
	seen := map[plumbing.Hash]struct{}{}
	var strict, lenient []plumbing.Hash
	refs, err := st.IterReferences()
	if err != nil {
		return nil, gitIOErr("gc: list refs", err)
	}
	_ = refs.ForEach(func(r *plumbing.Reference) error {
		if r.Type() == plumbing.HashReference {
			strict = append(strict, r.Hash())
		}
		return nil
	})
	for _, name := range []string{"HEAD", "ORIG_HEAD", "MERGE_HEAD", "FETCH_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "AUTO_MERGE", "BISECT_HEAD"} {
		data, err := os.ReadFile(filepath.Join(gitDir, name))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) > 0 && plumbing.IsHash(f[0]) {
				lenient = append(lenient, plumbing.NewHash(f[0]))
			}
		}
	}
	_ = filepath.WalkDir(filepath.Join(gitDir, "logs"), func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			for i := 0; i < 2 && i < len(f); i++ {
				if plumbing.IsHash(f[i]) {
					if h := plumbing.NewHash(f[i]); !h.IsZero() {
						lenient = append(lenient, h)
					}
				}
			}
		}
		return nil
	})
	if data, err := os.ReadFile(filepath.Join(gitDir, "index")); err == nil {
		idx := &index.Index{}
		data, err := gitindex.Join(gitDir, data)
		if err == nil {
			err = index.NewDecoder(bytes.NewReader(data)).Decode(idx)
		}
		if err != nil {
			e := &Error{Class: ErrCorrupt, Msg: "gc: read .git/index: " + err.Error(), Err: err}
			return nil, e.WithHint("git status rewrites the index; run it, then gc again")
		}
		for _, e := range idx.Entries {
			if e.Mode != filemode.Submodule {
				lenient = append(lenient, e.Hash)
			}
		}
		if idx.Cache != nil {
			for _, e := range idx.Cache.Entries {
				if e.Entries >= 0 && !e.Hash.IsZero() {
					lenient = append(lenient, e.Hash)
				}
			}
		}
	}
	for _, h := range strict {
		if err := walkObjects(st, h, seen); err != nil {
			return nil, &Error{Class: ErrCorrupt, Msg: "gc: " + err.Error(), Err: err,
				Hint: "nothing was removed; run git fsck in the vault"}
		}
	}
	for _, h := range lenient {
		if _, ok := seen[h]; ok {
			continue
		}
		if err := st.HasEncodedObject(h); err != nil {
			continue
		}
		if err := walkObjects(st, h, seen); err != nil {
			return nil, &Error{Class: ErrCorrupt, Msg: "gc: " + err.Error(), Err: err,
				Hint: "nothing was removed; run git fsck in the vault"}
		}
	}
	return seen, nil
}

// walkObjects adds h and everything it reaches to seen. Blobs are checked
// to exist but never read.
func walkObjects(st *filesystem.Storage, root plumbing.Hash, seen map[plumbing.Hash]struct{}) error {
	stack := []plumbing.Hash{root}
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if _, ok := seen[h]; ok {
			continue
		}
		o, err := st.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return fmt.Errorf("object %s: %v", h, err)
		}
		seen[h] = struct{}{}
		switch o.Type() {
		case plumbing.CommitObject:
			c, err := object.DecodeCommit(st, o)
			if err != nil {
				return fmt.Errorf("commit %s: %v", h, err)
			}
			stack = append(stack, c.TreeHash)
			stack = append(stack, c.ParentHashes...)
		case plumbing.TreeObject:
			t, err := object.DecodeTree(st, o)
			if err != nil {
				return fmt.Errorf("tree %s: %v", h, err)
			}
			for _, e := range t.Entries {
				switch {
				case e.Mode == filemode.Submodule:
				case e.Mode == filemode.Dir:
					stack = append(stack, e.Hash)
				default:
					if _, ok := seen[e.Hash]; ok {
						continue
					}
					if err := st.HasEncodedObject(e.Hash); err != nil {
						return fmt.Errorf("blob %s in tree %s: %v", e.Hash, h, err)
					}
					seen[e.Hash] = struct{}{}
				}
			}
		case plumbing.TagObject:
			t, err := object.DecodeTag(st, o)
			if err != nil {
				return fmt.Errorf("tag %s: %v", h, err)
			}
			stack = append(stack, t.Target)
		}
	}
	return nil
}

// removeEmptyFanout removes the objects/xx folders gc emptied.
func removeEmptyFanout(objects string) {
	entries, err := os.ReadDir(objects)
	if err != nil {
		return
	}
	for _, e := range entries {
		if len(e.Name()) == 2 && e.IsDir() {
			os.Remove(filepath.Join(objects, e.Name())) // fails, harmlessly, unless empty
		}
	}
}

// MeasureGit sizes a .git folder: loose objects, packs, and the whole.
func MeasureGit(gitDir string) (GitSize, error) {
	var s GitSize
	objects := filepath.Join(gitDir, "objects")
	err := filepath.WalkDir(gitDir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked
			}
			return err
		}
		if !e.Type().IsRegular() {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return nil
		}
		s.GitBytes += info.Size()
		rel, _ := filepath.Rel(objects, p)
		dir, name := filepath.Split(rel)
		switch {
		case dir == "pack/":
			s.PackBytes += info.Size()
			if strings.HasSuffix(name, ".pack") {
				s.Packs++
			}
		case len(dir) == 3 && len(name) == 38:
			if _, err := strconv.ParseUint(name[:8], 16, 64); err == nil {
				s.LooseObjects++
				s.LooseBytes += info.Size()
			}
		}
		return nil
	})
	if err != nil {
		return s, fault.IO("gc: measure .git", err)
	}
	return s, nil
}

// contentBytes is the size of the vault's own files: everything in the work
// tree but .git and the derived, ignored folders.
func contentBytes(root string) (int64, error) {
	var n int64
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && p != root {
			switch e.Name() {
			case ".git", ".state", ".index", ".locks", ".logs":
				return filepath.SkipDir
			}
		}
		if e.Type().IsRegular() {
			if info, err := e.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	if err != nil {
		return 0, fault.IO("gc: measure the vault", err)
	}
	return n, nil
}
