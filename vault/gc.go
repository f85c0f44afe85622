package vault

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/gitrepo"
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
	ContentBytes int64        `json:"content_bytes"`
	Before       gitrepo.Size `json:"before"`
	After        gitrepo.Size `json:"after"`
	// PackStats is what the go-git engine did; zero with git's.
	gitrepo.PackStats
	Duration time.Duration `json:"duration_ns"`
}

// GC packs the vault's git objects and prunes unreachable loose ones, under
// the vault lock and under git's own gc lock (.git/gc.pid, which git gc
// takes itself and the go-git engine takes the way git does), so that
// neither a memvault writer nor `git gc` run by a person can interleave
// with it. git gc keeps what refs, reflogs and the index reach.
//
// The go-git engine never loses a reachable object (gitrepo.Repo.Pack says
// how); an unreachable loose object is pruned only past Expire.
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
	release, err := v.Lock(Lease{Agent: v.Config.Agent, Command: "gc"}, opts.LockTimeout)
	if err != nil {
		return nil, err
	}
	defer release()

	start := time.Now()
	removeRetiredCaches(v.Root)
	gitDir := filepath.Join(v.Root, ".git")
	rep := &GCReport{Engine: opts.Engine}
	v.Progress.Step("gc: measuring .git", "", 0, 0)
	if rep.ContentBytes, err = contentBytes(v.Root); err != nil {
		return nil, err
	}
	if rep.Before, err = gitrepo.Measure(gitDir); err != nil {
		return nil, err
	}
	if opts.Engine == GCEngineGit {
		// git reports nothing to a pipe: the phase is named, with the
		// objects it packs, and the renderer shows the time it takes.
		v.Progress.Step(fmt.Sprintf("gc: git gc packing %d loose objects", rep.Before.LooseObjects), "", 0, 0)
		err = v.Repo.GitGC(opts.Expire)
	} else {
		var progress gitrepo.Progress
		if v.Progress != nil {
			progress = func(phase, unit string, done, total int64) { v.Progress.Step(phase, unit, done, total) }
		}
		rep.PackStats, err = v.Repo.Pack(opts.Expire, progress)
	}
	if err != nil {
		return nil, err
	}
	v.Progress.Step("gc: measuring .git", "", 0, 0)
	if rep.After, err = gitrepo.Measure(gitDir); err != nil {
		return nil, err
	}
	rep.Duration = time.Since(start)
	return rep, nil
}

// retiredCaches are derived files that earlier versions wrote under .state/
// and this one neither reads nor writes: its caches are Derived views in
// one format (derived.go). They cost only disk; gc removes them.
var retiredCaches = []string{"scope.gob", "scope-folded.bin", "corrections-v2.gob", "corrections-all.gob", "ledger-verified.json"}

// removeRetiredCaches deletes retiredCaches; a failure leaves a file that
// nothing reads, so it is not one to report.
func removeRetiredCaches(root string) {
	for _, name := range retiredCaches {
		fileio.At(root).Remove(filepath.Join(root, ".state", name))
	}
}

// contentBytes is the size of the vault's own files: everything in the work
// tree but .git and the derived, ignored folders. A root reached through a
// symbolic link is walked where the link leads (a walk from the link
// itself would see one link and nothing below it).
func contentBytes(root string) (int64, error) {
	var n int64
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
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

// GCAdviceLoose is the estimated number of loose git objects past which
// memvault advises a gc: git's own threshold for `gc --auto` (gc.auto,
// 6,700). memvault's commits are small (a few objects per event), so the
// vault passes it after about a thousand events; by then the loose objects
// take some 30 MiB of disk for a few MiB of data, and a gc packs them into
// a tenth of that.
const GCAdviceLoose = 6700

// LooseObjects is an estimate of the loose objects in the vault's .git and
// whether a gc is advised, for status and for the hint after a write.
type LooseObjects struct {
	// Objects and DiskBytes are estimated from one fan-out folder of 256
	// (gitrepo.EstimateLoose), so they are rough below a few thousand.
	Objects   int   `json:"loose_objects_estimate"`
	DiskBytes int64 `json:"loose_disk_bytes_estimate"`
	Threshold int   `json:"threshold"`
	GCAdvised bool  `json:"gc_advised"`
	// AutoPack says the vault packs itself: the next write past
	// Threshold (then [gc] auto_loose) packs the loose objects, and no gc
	// is advised.
	AutoPack bool `json:"auto_pack"`
}

// EstimateLoose estimates the vault's loose git objects and the disk they
// take the way git's gc --auto does (gitrepo.EstimateLoose), for status. It
// takes no lock and changes nothing.
func (v *Vault) EstimateLoose() LooseObjects {
	n, disk := gitrepo.EstimateLoose(filepath.Join(v.Root, ".git"), true)
	if v.AutoPacks() {
		return LooseObjects{Objects: n, DiskBytes: disk, Threshold: v.autoPackLoose(), AutoPack: true}
	}
	return LooseObjects{Objects: n, DiskBytes: disk, Threshold: GCAdviceLoose, GCAdvised: n > GCAdviceLoose}
}

// autoPackLoose is the estimate of loose objects past which a write packs
// them: [gc] auto_loose, else DefaultAutoPackLoose.
func (v *Vault) autoPackLoose() int {
	if n := v.Config.GC.AutoLoose; n > 0 {
		return n
	}
	return DefaultAutoPackLoose
}

// GCAdvice is the line that says a gc would help, or "" when none would,
// for after every write: below the threshold it costs one directory read
// (BenchmarkGCAdvice); the disk the objects take is estimated only when the
// line is printed. Where the vault packs itself (AutoPacks), there is
// nothing to advise.
func (v *Vault) GCAdvice() string {
	if n, _ := gitrepo.EstimateLoose(filepath.Join(v.Root, ".git"), false); n <= GCAdviceLoose || v.AutoPacks() {
		return ""
	}
	return v.EstimateLoose().Advice()
}

// DefaultAutoPackLoose is the estimate of loose objects past which a
// write packs them, a sixth of git's gc.auto: memvault's loose objects are
// whole ledger segments and transcript parts (2 KiB each on average on the
// suite's week vault, 4 KiB of disk), and the loose ones are what a vault
// as written holds beyond its packs, so waiting for 6,700 leaves some 14
// MiB loose for 3 MiB of content. A pack of a thousand objects takes a
// fraction of a second (docs/PERFORMANCE.md).
const DefaultAutoPackLoose = 1024

// AutoPacks reports whether a write packs the loose git objects itself
// once they pass the threshold: [gc] auto in memvault.toml (on unless
// false) and git on the PATH. Without git the vault does not pack itself
// (the in-process engine packs every object, too slow to run after a
// write) and the gc hint says when memvault gc would help.
func (v *Vault) AutoPacks() bool {
	if a := v.Config.GC.Auto; a != nil && !*a {
		return false
	}
	return gitrepo.HasGitBinary()
}

// autoPack runs after a transaction that committed, once the vault lock is
// released: git's gc --auto for memvault. When the loose objects pass the
// threshold (estimated from one folder of 256, as git does: one directory
// read, BenchmarkGCAdvice), it takes the vault lock again without waiting
// (a writer that holds it will come here after its own commit) and hands
// it to a detached `git gc --auto` (gitrepo.StartAutoGC), which holds it
// while it packs. So a pack never runs beside a memvault writer, as
// memvault gc never does (DESIGN §3); writers that come meanwhile wait for
// the lock, or spool if they are hooks, as they would behind any writer.
// Nothing here fails the write: a pack that does not start is tried again
// by the next one.
func (v *Vault) autoPack() {
	threshold := v.autoPackLoose()
	if !gitrepo.PastAuto(filepath.Join(v.Root, ".git"), threshold) || !v.AutoPacks() {
		return
	}
	mu := procLock(v.Root)
	if !mu.TryLock() {
		return
	}
	defer mu.Unlock()
	path := filepath.Join(v.Root, lockFile)
	f, err := v.Files().Open(path) // flock needs no write access
	if err != nil {
		return
	}
	defer f.Close() // the child keeps its own descriptor, and the lock
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return
	}
	lease := Lease{PID: os.Getpid(), Agent: v.Config.Agent, Command: "gc --auto (git gc)", Since: time.Now()}
	lease.Host, _ = os.Hostname()
	lp := filepath.Join(v.Root, leaseFile)
	if data, err := json.Marshal(lease); err == nil {
		_ = v.Files().WriteCache(lp, append(data, '\n'))
	}
	if v.Repo.StartAutoGC(f, threshold) != nil {
		_ = v.Files().Remove(lp)
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
}

// WaitAutoPack waits, at most timeout, until no automatic pack holds the
// vault lock, by taking the lock and letting it go: for a program that
// measures or copies the vault after its writes.
func (v *Vault) WaitAutoPack(timeout time.Duration) error {
	release, err := v.Lock(Lease{Agent: v.Config.Agent, Command: "wait"}, timeout)
	if err != nil {
		return err
	}
	release()
	return nil
}

// Advice is the one line that says a gc would help, or "" when none would.
func (l LooseObjects) Advice() string {
	if !l.GCAdvised {
		return ""
	}
	return fmt.Sprintf("the vault holds ~%s loose git objects (~%s on disk); memvault gc packs them", FormatCount(int64(l.Objects)), FormatBytes(l.DiskBytes))
}

// FormatCount prints n with a comma between groups of three digits.
func FormatCount(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + FormatCount(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
