// Package gc is `memvault gc` and what tells a person when it would help:
// the vault's git objects packed and the unreachable loose ones pruned,
// under the vault lock and git's own gc lock (Run, its Report), and the
// estimate of the loose objects a vault holds, with the hint that a gc
// would pay (EstimateLoose, Advice). It is an operation built on the
// engine, not part of it; the engine keeps only the automatic pack after a
// write (vault.AutoPacks), which runs where the transaction ends.
package gc

import (
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/memvault/memvault/vault"
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
	EngineAuto  = "auto"
	EngineGoGit = "go-git"
	EngineGit   = "git"
)

// DefaultExpire is how old an unreachable loose object must be before gc
// removes it: git's own default (gc.pruneExpire, two weeks). A person's git
// command writes its objects before the ref that makes them reachable, so
// an object written a moment ago may be reachable a moment later.
const DefaultExpire = 14 * 24 * time.Hour

// Options say how to compact the vault's git objects.
type Options struct {
	// Engine is EngineAuto (also when empty), EngineGit or EngineGoGit.
	Engine string
	// Expire is the age past which an unreachable loose object is pruned;
	// zero means DefaultExpire, a negative value prunes at any age.
	Expire time.Duration
	// LockTimeout overrides how long to wait for the vault lock.
	LockTimeout time.Duration
}

// Report is what a gc did.
type Report struct {
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

// Run packs the vault's git objects and prunes unreachable loose ones,
// under the vault lock and under git's own gc lock (.git/gc.pid, which git
// gc takes itself and the go-git engine takes the way git does), so that
// neither a memvault writer nor `git gc` run by a person can interleave
// with it. git gc keeps what refs, reflogs and the index reach.
//
// The go-git engine never loses a reachable object (gitrepo.Repo.Pack says
// how); an unreachable loose object is pruned only past Expire.
func Run(v *vault.Vault, opts Options) (*Report, error) {
	switch opts.Engine {
	case "", EngineAuto:
		opts.Engine = EngineGoGit
		if _, err := exec.LookPath("git"); err == nil {
			opts.Engine = EngineGit
		}
	case EngineGoGit, EngineGit:
	default:
		return nil, fault.New(vault.ErrInvalid, "gc: engine %q: want auto, git or go-git", opts.Engine)
	}
	if opts.Expire == 0 {
		opts.Expire = DefaultExpire
	}
	release, err := v.Lock(vault.Lease{Agent: v.Config.Agent, Command: "gc"}, opts.LockTimeout)
	if err != nil {
		return nil, err
	}
	defer release()

	start := time.Now()
	removeRetiredCaches(v.Root)
	gitDir := filepath.Join(v.Root, ".git")
	rep := &Report{Engine: opts.Engine}
	v.Progress.Step("gc: measuring .git", "", 0, 0)
	if rep.ContentBytes, err = contentBytes(v.Root); err != nil {
		return nil, err
	}
	if rep.Before, err = gitrepo.Measure(gitDir); err != nil {
		return nil, err
	}
	if opts.Engine == EngineGit {
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
// one format (vault/derived.go). They cost only disk; gc removes them.
func retiredCaches() []string {
	return []string{"scope.gob", "scope-folded.bin", "corrections-v2.gob", "corrections-all.gob", "ledger-verified.json"}
}

// removeRetiredCaches deletes retiredCaches; a failure leaves a file that
// nothing reads, so it is not one to report.
func removeRetiredCaches(root string) {
	for _, name := range retiredCaches() {
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
