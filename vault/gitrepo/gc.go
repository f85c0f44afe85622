package gitrepo

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
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	gogitindex "github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/gitrepo/index"
)

// GitGC runs `git gc` in the repository, pruning unreachable loose objects
// older than expire (any age when expire is not positive). git takes
// gc.pid itself and keeps what refs, reflogs and the index reach; its packs
// are about half the size of go-git's (see Pack).
func (r *Repo) GitGC(expire time.Duration) error {
	defer r.reopen()
	if _, err := exec.LookPath("git"); err != nil {
		return fault.New(fault.ErrInvalid, "gc: git is not installed").WithHint("use --engine go-git, which needs nothing installed")
	}
	prune := "now"
	if expire > 0 {
		prune = fmt.Sprintf("%d.seconds.ago", int64(expire/time.Second))
	}
	run, err := r.startGCRun()
	if err != nil {
		return err
	}
	defer run.end()
	cmd := exec.Command("git", "-C", r.root, "-c", "gc.autoDetach=false", "gc", "--quiet", "--prune="+prune)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return fault.Wrap("gc: start git gc", err)
	}
	if err := run.child(cmd.Process.Pid); err != nil {
		cmd.Wait() //nolint:errcheck // the mark's failure is the one to report
		return err
	}
	if err := cmd.Wait(); err != nil {
		msg := strings.TrimSpace(out.String())
		if strings.Contains(msg, "already running") {
			return fault.New(fault.ErrBusy, "gc: git gc is already running in the vault")
		}
		return fmt.Errorf("gc: git gc: %v: %s", err, strings.Join(strings.Fields(msg), " "))
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
		alive := pid > 0 && procAlive(pid, "") // a zombie, killed and not reaped, is gone
		if other != "" && (other != host || alive) && pid != os.Getpid() {
			e := fault.New(fault.ErrBusy, "gc: git gc is already running in the vault (pid %d on %s)", pid, other)
			return nil, e.WithHint("wait for it, or remove %s if no gc is running", pidPath)
		}
	}
	if _, err := fmt.Fprintf(lock, "%d %s", os.Getpid(), host); err != nil {
		return nil, fault.Wrap("gc: write gc.pid", err)
	}
	if err := lock.Close(); err != nil {
		return nil, fault.Wrap("gc: write gc.pid", err)
	}
	if err := os.Rename(pidPath+".lock", pidPath); err != nil {
		os.Remove(pidPath + ".lock")
		return nil, fault.Wrap("gc: write gc.pid", err)
	}
	ok = true
	return func() { os.Remove(pidPath) }, nil
}

// gcWindow is the delta window of the in-process pack: git's default.
const gcWindow = 10

// PackStats is what Pack did, for gc's report.
type PackStats struct {
	Packed       int `json:"packed"`        // reachable objects in the new pack
	RemovedLoose int `json:"removed_loose"` // loose objects removed because they are packed
	RemovedPacks int `json:"removed_packs"` // packs replaced by the new one
	Pruned       int `json:"pruned"`        // unreachable loose objects removed
	KeptPacks    int `json:"kept_packs"`    // old packs kept: .keep, or objects not in the new pack
}

// Pack is gc in process, for machines without git: under git's gc lock
// (.git/gc.pid, taken as git takes it, so that a `git gc` stays out), it
// writes one pack of every reachable object, then removes what the pack
// made redundant and the unreachable loose objects older than expire (any
// age when expire is negative).
//
// It never loses a reachable object: the roots are every ref, every reflog
// entry, the pseudo-refs (ORIG_HEAD, MERGE_HEAD, …) and git's index
// (staged blobs and its cached trees); the new pack is fsynced before any
// loose object or old pack is removed; an old pack is removed only when
// every object in it is in the new pack, and never when it has a .keep
// file.
//
// progress, when not nil, hears how far it has got.
func (r *Repo) Pack(expire time.Duration, progress Progress) (PackStats, error) {
	defer r.reopen()
	var stats PackStats
	run, err := r.startGCRun()
	if err != nil {
		return stats, err
	}
	defer run.end()
	host, _ := os.Hostname()
	unlock, err := lockGitGC(r.gitDir, host)
	if err != nil {
		return stats, err
	}
	defer unlock()
	err = pack(r.gitDir, expire, progress, &stats)
	return stats, err
}

// Progress receives the steps of a long operation: what it is doing, how
// many units of it are done out of total (0 when not known in advance).
// It is called from the goroutine doing the work, often; it must be cheap.
type Progress func(phase, unit string, done, total int64)

// report calls p when it is set.
func (p Progress) report(phase, unit string, done, total int64) {
	if p != nil {
		p(phase, unit, done, total)
	}
}

// reopen forgets what the storage knew of the object files: go-git's
// storage keeps the list of packs it found when it opened, and after a gc
// it would look for objects in files that are gone.
func (r *Repo) reopen() { r.st, r.packs = newStorage(r.gitDir), packsChanged(r.gitDir) }

// Refresh reopens the object storage when the packs changed since it was
// opened: go-git reads the packs' indexes once, so a long-lived Repo would
// not find an object that a gc (memvault's automatic one, or a person's
// git gc) moved from a loose file into a new pack. A writer calls it under
// the vault lock, before it reads objects; it costs one stat.
func (r *Repo) Refresh() {
	if !packsChanged(r.gitDir).Equal(r.packs) {
		r.reopen()
	}
}

// packsChanged is the modification time of objects/pack, which every
// added or removed pack changes; zero when there is none.
func packsChanged(gitDir string) time.Time {
	info, err := os.Stat(filepath.Join(gitDir, "objects", "pack"))
	if err != nil {
		return time.Time{}
	}
	return info.ModTime()
}

// pack writes one pack of every reachable object, then removes what it
// made redundant.
func pack(gitDir string, expire time.Duration, progress Progress, rep *PackStats) error {
	st := filesystem.NewStorageWithOptions(gitFS(gitDir), cache.NewObjectLRU(16<<20),
		filesystem.Options{ExclusiveAccess: false})
	defer st.Close()
	reach, err := reachable(st, gitDir, progress)
	if err != nil {
		return err
	}
	oldPacks, err := st.ObjectPacks()
	if err != nil {
		return fault.Wrap("gc: list packs", err)
	}
	var loose []plumbing.Hash
	if err := st.ForEachObjectHash(func(h plumbing.Hash) error { loose = append(loose, h); return nil }); err != nil {
		return fault.Wrap("gc: list loose objects", err)
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
		if packHash, err = writePack(st, gitDir, hashes, progress); err != nil {
			return err
		}
		rep.Packed = len(hashes)
	}

	cutoff := time.Now().Add(-expire)
	for i, h := range loose {
		if i%256 == 0 {
			progress.report("gc: removing loose objects", "objects", int64(i), int64(len(loose)))
		}
		if _, ok := reach[h]; ok {
			if err := st.DeleteLooseObject(h); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fault.Wrap("gc: remove a packed loose object", err)
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
				return fault.Wrap("gc: remove an old pack", err)
			}
		}
		rep.RemovedPacks++
	}
	removeEmptyFanout(filepath.Join(gitDir, "objects"))
	return nil
}

// writePack encodes hashes into a new pack with deltas and makes it durable
// before anything relies on it: go-git's pack writer does not fsync.
func writePack(st *filesystem.Storage, gitDir string, hashes []plumbing.Hash, progress Progress) (plumbing.Hash, error) {
	w, err := st.PackfileWriter()
	if err != nil {
		return plumbing.ZeroHash, fault.Wrap("gc: create pack", err)
	}
	var enc *packfile.Encoder
	if progress == nil {
		enc = packfile.NewEncoder(w, st, false)
	} else {
		pw := &packProgress{Storage: st, w: w, total: int64(len(hashes)), report: progress}
		enc = packfile.NewEncoder(pw, pw, false)
	}
	h, err := enc.Encode(hashes, gcWindow)
	if cerr := w.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return plumbing.ZeroHash, fault.Wrap("gc: write pack", err)
	}
	dir := filepath.Join(gitDir, "objects", "pack")
	for _, ext := range []string{".pack", ".idx"} {
		p := filepath.Join(dir, "pack-"+h.String()+ext)
		f, err := os.Open(p)
		if err != nil {
			return plumbing.ZeroHash, fault.Wrap("gc: sync pack", err)
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return plumbing.ZeroHash, fault.Wrap("gc: sync pack", err)
		}
	}
	if err := fileio.SyncDir(dir); err != nil {
		return plumbing.ZeroHash, err
	}
	return h, nil
}

// packProgress watches go-git's pack encoder, which reports nothing
// itself: it reads every object once (DeltaObject, called in order from
// one goroutine, counted against the total), then searches for deltas (no
// count: the phase is named and its time shown), then writes the pack
// (counted in bytes, whose total is known only at the end).
type packProgress struct {
	*filesystem.Storage
	w               io.Writer
	read, total     int64
	written         int64
	report          Progress
	writing, deltas bool
}

func (p *packProgress) DeltaObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if !p.writing {
		p.read++
		if p.read%256 == 0 || p.read == p.total {
			p.report("gc: reading objects", "objects", p.read, p.total)
		}
		if p.read == p.total && !p.deltas {
			p.deltas = true
			p.report("gc: finding deltas", "", 0, 0)
		}
	}
	return p.Storage.DeltaObject(t, h)
}

func (p *packProgress) Write(b []byte) (int, error) {
	p.writing = true
	n, err := p.w.Write(b)
	p.written += int64(n)
	p.report("gc: writing the pack", "bytes", p.written, 0)
	return n, err
}

// packCovered reports whether every object of the pack whose index is at
// idxPath is in set.
func packCovered(idxPath string, set map[plumbing.Hash]struct{}) (bool, error) {
	f, err := os.Open(idxPath)
	if err != nil {
		return false, fault.Wrap("gc: read pack index", err)
	}
	defer f.Close()
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(bufio.NewReader(f)).Decode(idx); err != nil {
		return false, &fault.Error{Class: fault.ErrCorrupt, Msg: "gc: read " + filepath.Base(idxPath) + ": " + err.Error(), Err: err}
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
			return false, &fault.Error{Class: fault.ErrCorrupt, Msg: "gc: read " + filepath.Base(idxPath) + ": " + err.Error(), Err: err}
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
func reachable(st *filesystem.Storage, gitDir string, progress Progress) (map[plumbing.Hash]struct{}, error) {
	seen := map[plumbing.Hash]struct{}{}
	tick := func() {
		if len(seen)%256 == 0 {
			progress.report("gc: finding reachable objects", "objects", int64(len(seen)), 0)
		}
	}
	var strict, lenient []plumbing.Hash
	refs, err := st.IterReferences()
	if err != nil {
		return nil, fault.Wrap("gc: list refs", err)
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
		idx := &gogitindex.Index{}
		data, err := index.Join(gitDir, data)
		if err == nil {
			err = gogitindex.NewDecoder(bytes.NewReader(data)).Decode(idx)
		}
		if err != nil {
			e := &fault.Error{Class: fault.ErrCorrupt, Msg: "gc: read .git/index: " + err.Error(), Err: err}
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
		if err := walkObjects(st, h, seen, tick); err != nil {
			return nil, &fault.Error{Class: fault.ErrCorrupt, Msg: "gc: " + err.Error(), Err: err,
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
		if err := walkObjects(st, h, seen, tick); err != nil {
			return nil, &fault.Error{Class: fault.ErrCorrupt, Msg: "gc: " + err.Error(), Err: err,
				Hint: "nothing was removed; run git fsck in the vault"}
		}
	}
	progress.report("gc: finding reachable objects", "objects", int64(len(seen)), 0)
	return seen, nil
}

// walkObjects adds h and everything it reaches to seen. Blobs are checked
// to exist but never read.
func walkObjects(st *filesystem.Storage, root plumbing.Hash, seen map[plumbing.Hash]struct{}, tick func()) error {
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
		tick()
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
					tick()
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

// StartAutoGC starts `git gc --auto` in the repository, detached: in a
// session of its own, its standard streams on /dev/null, not waited for
// by the caller, so that the write that started it returns at once and a
// harness waiting on a hook's output is not held. git decides by itself
// whether there is work (loose objects past gc.auto, set to threshold, or
// too many packs) and then packs the loose objects into one new pack
// (repack -d -l), which costs what the loose objects cost, not what the
// whole history does; it prunes nothing.
//
// held is the caller's descriptor of the vault lock, locked: the child
// inherits it, and with it the lock, which is released when git and every
// process it started are done. The caller closes its own descriptor after
// StartAutoGC returns without unlocking it. git gc.autoDetach is off, so
// git does not fork away from the lock. A goroutine reaps the child in a
// process that outlives it.
func (r *Repo) StartAutoGC(held *os.File, threshold int) error {
	// gc.pruneExpire=never: git's prune walks every reachable object to
	// find the unreachable ones, work in proportion to the whole history,
	// while the vault lock is held. memvault leaves next to none (a failed
	// transaction removes the objects it wrote); memvault gc prunes them.
	cmd := exec.Command("git", "-C", r.root, "-c", "gc.autoDetach=false", "-c", fmt.Sprintf("gc.auto=%d", threshold),
		"-c", "gc.pruneExpire=never", "gc", "--auto", "--quiet")
	cmd.Env = gitEnv(Signature{Name: "memvault", Email: "memvault@localhost"})
	cmd.ExtraFiles = []*os.File{held}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fault.Wrap("gc: start git gc --auto", err)
	}
	go cmd.Wait() //nolint:errcheck // nothing to report to: the write is done
	return nil
}
