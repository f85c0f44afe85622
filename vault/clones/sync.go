package clones

// memvault sync: fetch a remote's branch, merge it with the merge drivers,
// check the result, join the ledger's open tips, re-render the heads, and
// push. docs/specs/STORAGE.md ("Sync") is the contract.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/memvault/memvault/vault/continuity"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/gitrepo"
	"github.com/memvault/memvault/vault/heads"
	"github.com/memvault/memvault/vault/recall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Sync engines: auto is the git binary where it is on the PATH, else
// go-git.
const (
	SyncEngineAuto  = "auto"
	SyncEngineGit   = gitrepo.EngineGit
	SyncEngineGoGit = gitrepo.EngineGoGit
)

// DefaultSyncTimeout bounds each network operation of a sync (one fetch,
// one push): a remote that hangs must not hold a sync forever.
const DefaultSyncTimeout = 60 * time.Second

// syncRounds is how many times a sync fetches and merges again when its
// push is rejected because the remote moved meanwhile.
const syncRounds = 3

// SyncOptions say where and how to sync.
type SyncOptions struct {
	// Remote is a configured remote, a URL or a path; "" is the branch's
	// upstream remote, else origin.
	Remote string
	// Engine is SyncEngineAuto (also when empty), SyncEngineGit or
	// SyncEngineGoGit.
	Engine string
	// NoPush fetches and merges only.
	NoPush bool
	// DryRun fetches, then reports what a sync would merge and push
	// without changing the branch, the files or the remote.
	DryRun bool
	// Timeout bounds each fetch and push; 0 is DefaultSyncTimeout.
	Timeout time.Duration
	// Agent writes the join event and the heads' renders; "" is the
	// vault's.
	Agent string
	// Bin is the memvault binary git's merge drivers run (the git engine);
	// "" is this process's executable.
	Bin string
	// beforePush, set by a test, runs just before a push: the test moves
	// the remote there, as another clone's sync would.
	beforePush func()
}

// SyncReport is what a sync did, step by step.
type SyncReport struct {
	Remote gitrepo.Remote `json:"remote"`
	Branch string         `json:"branch"`
	Engine string         `json:"engine"`
	DryRun bool           `json:"dry_run,omitempty"`
	// Fetched counts the commits the remote had that the vault did not.
	Fetched int `json:"fetched"`
	// Merge is what the merge did: "up-to-date", "fast-forward", "merged",
	// or "none" for a remote without the branch.
	Merge string `json:"merge"`
	// Files lists the files the merge changed.
	Files []string `json:"files,omitempty"`
	// Joined is the commit of the ledger.merged event that joined the
	// ledger's open tips, when one was needed.
	Joined string `json:"joined,omitempty"`
	// Rendered lists the heads the sync re-rendered.
	Rendered []string `json:"rendered,omitempty"`
	// Reindexed says the search index was rebuilt: the merge changed
	// segments, transcripts or nodes.
	Reindexed bool `json:"reindexed,omitempty"`
	// Pushed counts the commits the remote got; 0 with NoPush.
	Pushed int `json:"pushed"`
	// Rounds counts fetch-and-merge rounds: more than 1 when a push was
	// rejected because the remote moved.
	Rounds   int      `json:"rounds"`
	Commit   string   `json:"commit"`
	Warnings []string `json:"warnings,omitempty"`
}

// Sync fetches the remote's branch (the vault's own branch name), merges it,
// verifies the result, joins the ledger's open tips, re-renders the heads
// the merge touched, and pushes. The merge runs under the vault lock, so no
// hook writes in the middle of it; the fetch and the push do not hold it,
// so a slow remote never makes a hook wait: they write only objects and
// the remote-tracking ref, which no writer reads. A push rejected because
// the remote moved meanwhile is retried after a new fetch and merge, up to
// three rounds.
func Sync(v *vault.Vault, opts SyncOptions) (*SyncReport, error) {
	if opts.Agent == "" {
		opts.Agent = v.Config.Agent
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultSyncTimeout
	}
	switch opts.Engine {
	case "", SyncEngineAuto:
		opts.Engine = SyncEngineGoGit
		if gitrepo.HasGitBinary() {
			opts.Engine = SyncEngineGit
		}
	case SyncEngineGit:
		if !gitrepo.HasGitBinary() {
			return nil, fault.New(vault.ErrInvalid, "sync: git is not installed").WithHint("use --engine go-git, which needs nothing installed")
		}
	case SyncEngineGoGit:
	default:
		return nil, fault.New(vault.ErrInvalid, "sync: engine %q: want auto, git or go-git", opts.Engine)
	}
	ref, err := v.Repo.Branch()
	if err != nil {
		return nil, err
	}
	branch := ref.Short()
	rm, err := v.Repo.ResolveRemote(opts.Remote, branch)
	if err != nil {
		return nil, err
	}
	rep := &SyncReport{Remote: rm, Branch: branch, Engine: opts.Engine, DryRun: opts.DryRun}
	if !opts.DryRun && opts.Engine == SyncEngineGit {
		// git merges with memvault's driver only where .gitattributes
		// names it and .git/config defines it: a vault made before the
		// driver existed gets both first.
		bin := opts.Bin
		if bin == "" {
			bin = v.Binary
		}
		if bin != "" {
			if _, err := EnsureMergeSetup(v, bin); err != nil {
				return nil, err
			}
		}
	}
	if !opts.DryRun {
		// What deferred transactions wrote is committed first: the merge
		// and the push move commits, and bookkeeping waiting on disk would
		// neither travel nor merge (vault.Flush).
		if _, err := v.Flush(vault.TxOptions{Command: "sync", Agent: opts.Agent}); err != nil {
			return nil, err
		}
	}
	rejected := false
	for rep.Rounds < syncRounds {
		rep.Rounds++
		tip, err := syncFetch(v, opts, rm, branch, rep)
		if err != nil {
			return nil, err
		}
		if opts.DryRun {
			return rep, syncPlan(v, opts, tip, rep)
		}
		if tip.IsZero() {
			rep.Merge = "none"
		} else if err := syncMerge(v, opts, rm, branch, tip, rep); err != nil {
			return nil, err
		}
		if opts.NoPush {
			break
		}
		// A vault that fails verification is never pushed: the remote
		// would spread the damage to every clone.
		if err := syncVerify(v); err != nil {
			return nil, err
		}
		err = syncPush(v, opts, rm, branch, tip, rep)
		if rejected = errors.Is(err, gitrepo.ErrPushRejected); rejected {
			continue
		}
		if err != nil {
			return nil, err
		}
		break
	}
	if rejected {
		e := fault.New(vault.ErrConflict, "sync: the remote %s kept moving: the push was rejected %d times; what was merged stays here", rm, syncRounds)
		return nil, e.WithHint("sync again")
	}
	if rep.Commit, err = v.Head(); err != nil {
		return nil, err
	}
	return rep, nil
}

// who is the identity memvault commits as.
func who(v *vault.Vault) gitrepo.Signature {
	return gitrepo.Signature{Name: v.Config.Git.Name, Email: v.Config.Git.Email}
}

// syncFetch fetches the remote's branch, checks that it holds a vault, and
// counts the commits it brings; the zero hash is a remote without the
// branch.
func syncFetch(v *vault.Vault, opts SyncOptions, rm gitrepo.Remote, branch string, rep *SyncReport) (plumbing.Hash, error) {
	v.Progress.Step("sync: fetching from "+rm.String(), "", 0, 0)
	ctx, cancel := context.WithTimeout(context.Background(), opts.Timeout)
	defer cancel()
	tip, err := v.Repo.Fetch(ctx, opts.Engine, rm, branch, who(v))
	if err != nil || tip.IsZero() {
		return tip, err
	}
	if _, ok, err := v.Repo.FileAt(tip, vault.ConfigFile); err != nil {
		return plumbing.ZeroHash, err
	} else if !ok {
		e := fault.New(vault.ErrRemote, "sync: remote %s is not a memvault vault: its branch %s has no %s; nothing was changed", rm, branch, vault.ConfigFile)
		return plumbing.ZeroHash, e.WithHint("sync with another vault's repository (its .memory folder, or a bare clone of one)")
	}
	// A link git would check out is refused before either engine merges:
	// memvault never follows one, so a vault holding one stops working.
	tree, err := v.Repo.TreeAt(tip.String())
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if err := refuseTreeLinks(tree, fmt.Sprintf("remote %s's branch %s", rm, branch)); err != nil {
		return plumbing.ZeroHash, err
	}
	head, err := v.Repo.Head()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if head.IsZero() {
		return tip, nil
	}
	d, err := v.Repo.Diverge(head, tip)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	rep.Fetched += d.OnlyB
	return tip, nil
}

// syncPlan fills in what a sync would do, for a dry run.
func syncPlan(v *vault.Vault, opts SyncOptions, tip plumbing.Hash, rep *SyncReport) error {
	head, err := v.Repo.Head()
	if err != nil {
		return err
	}
	rep.Commit = head.String()
	if tip.IsZero() {
		rep.Merge = "none"
		if !opts.NoPush {
			rep.Pushed, err = v.Repo.CountCommits(head)
		}
		return err
	}
	d, err := v.Repo.Diverge(head, tip)
	if err != nil {
		return err
	}
	rep.Merge = mergeKind(d.OnlyA, d.OnlyB)
	if !opts.NoPush {
		rep.Pushed = d.OnlyA
		if d.OnlyB > 0 && d.OnlyA > 0 {
			rep.Pushed++ // the merge commit
		}
	}
	return nil
}

func mergeKind(onlyOurs, onlyTheirs int) string {
	switch {
	case onlyTheirs == 0:
		return "up-to-date"
	case onlyOurs == 0:
		return "fast-forward"
	}
	return "merged"
}

// syncMerge merges tip into the branch under the vault lock, then, when the
// merge changed anything, verifies the vault, joins the ledger's open tips
// and re-renders the heads.
func syncMerge(v *vault.Vault, opts SyncOptions, rm gitrepo.Remote, branch string, tip plumbing.Hash, rep *SyncReport) error {
	v.Progress.Step("sync: merging "+rm.String()+"'s "+branch, "", 0, 0)
	out, err := mergeLocked(v, opts, rm, branch, tip)
	if err != nil {
		return err
	}
	kind := "up-to-date"
	switch {
	case out.Merged:
		kind = "merged"
	case out.FastForward:
		kind = "fast-forward"
	}
	if rep.Merge == "" || kind != "up-to-date" {
		rep.Merge = kind
	}
	rep.Files = append(rep.Files, out.Paths...)
	if kind == "up-to-date" {
		return nil
	}
	if err := syncVerify(v); err != nil {
		return err
	}
	v.Progress.Step("sync: joining the ledger's tips", "", 0, 0)
	joined, err := v.Join()
	if err != nil {
		return err
	}
	if joined != nil && joined.Commit != "" {
		rep.Joined = joined.Commit
		rep.Warnings = append(rep.Warnings, joined.Warnings...)
	}
	if slices.Contains(out.Paths, vault.ConfigFile) {
		// the heads render with the merged budgets and aliases
		if err := v.ReloadConfig(); err != nil {
			return err
		}
	}
	if err := syncRender(v, opts, rep); err != nil {
		return err
	}
	return syncReindex(v, out.Paths, rep)
}

// syncReindex rebuilds the search index when the merge changed what it is
// built from. The index follows appends by watermarks and a journal; a
// merge inserts lines inside segments and brings transcript parts no
// journal names, so only a rebuild is sure to hold them. A vault with no
// index yet is left to build one at its first recall.
func syncReindex(v *vault.Vault, paths []string, rep *SyncReport) error {
	if _, err := v.Files().Stat(filepath.Join(v.Root, vault.IndexDir)); err != nil {
		return nil
	}
	for _, p := range paths {
		if strings.HasPrefix(p, "ledger/") || strings.HasPrefix(p, "transcripts/") || strings.HasPrefix(p, "nodes/") {
			if _, err := recall.Reindex(v, nil); err != nil {
				return err
			}
			rep.Reindexed = true
			return nil
		}
	}
	return nil
}

// mergeLocked is the merge itself, under the vault lock: the git binary's
// merge with the drivers registered, or the tree merge in process.
func mergeLocked(v *vault.Vault, opts SyncOptions, rm gitrepo.Remote, branch string, tip plumbing.Hash) (*gitrepo.MergeOutcome, error) {
	release, err := v.Lock(vault.Lease{Agent: opts.Agent, Command: "sync"}, 0)
	if err != nil {
		return nil, err
	}
	defer release()
	head, err := v.Repo.Head()
	if err != nil {
		return nil, err
	}
	d, err := v.Repo.Diverge(head, tip)
	if err != nil {
		return nil, err
	}
	n := fmt.Sprintf("%d commits", d.OnlyB)
	if d.OnlyB == 1 {
		n = "1 commit"
	}
	msg := fmt.Sprintf("sync: merge %s of %s (%s)", branch, rm, n)
	if opts.Engine == SyncEngineGit {
		bin := opts.Bin
		if bin == "" {
			if bin, err = os.Executable(); err != nil {
				return nil, fmt.Errorf("sync: where is memvault? %w", err)
			}
		}
		if _, err := gitrepo.RegisterMergeDrivers(v.Root, bin); err != nil {
			return nil, err
		}
		// A local merge: bounded only so that a wedged merge driver
		// cannot hold the vault lock for ever.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		return v.Repo.MergeGit(ctx, tip, msg, who(v))
	}
	now := time.Now()
	if v.Clock != nil {
		now = v.Clock()
	}
	return v.Repo.Merge(tip, MergeFile, msg, who(v), now)
}

// syncVerify refuses a vault that fails verification.
func syncVerify(v *vault.Vault) error {
	vr, err := v.Verify()
	if err != nil {
		return err
	}
	if vr.OK {
		return nil
	}
	e := fault.New(vault.ErrCorrupt, "sync: the vault fails verification: %s", vr.Problems[0])
	if n := len(vr.Problems); n > 1 {
		e.Msg += fmt.Sprintf(" (and %d more)", n-1)
	}
	e.Msg += "; nothing was pushed"
	return e.WithHint("memvault verify lists every problem")
}

// syncRender re-renders MEMORY.md and the thread heads whose rows the merge
// changed, so that the heads describe the merged ledger.
func syncRender(v *vault.Vault, opts SyncOptions, rep *SyncReport) error {
	v.Progress.Step("sync: rendering the heads", "", 0, 0)
	rr, err := heads.Refresh(v, heads.RefreshOptions{TxOptions: vault.TxOptions{Command: "sync", Agent: opts.Agent},
		Trigger: "sync", Memory: true, Affected: true, Protocol: continuity.RefreshHead})
	if err != nil {
		return err
	}
	for _, h := range rr.Heads {
		switch h.Status {
		case "unchanged", "deferred":
		default:
			rep.Rendered = append(rep.Rendered, h.Head)
		}
	}
	rep.Warnings = append(rep.Warnings, rr.Warnings...)
	if _, err := v.Files().Stat(v.Abs(vault.MustRel(vault.ContinuityHead))); err != nil {
		return nil // never written here: nothing to merge the render into
	}
	// CONTINUITY.md is refreshed by its own pipeline: a change with no
	// event renders it from the merged ledger, with what people wrote
	// merged in.
	cr, err := continuity.UpdateContinuity(v, continuity.ContinuityOptions{TxOptions: vault.TxOptions{Command: "sync", Agent: opts.Agent}, Trigger: "sync"},
		func(*continuity.ContinuityTx) error { return nil })
	if err != nil {
		return err
	}
	if cr != nil && cr.Commit != "" {
		rep.Rendered = append(rep.Rendered, vault.ContinuityHead)
	}
	return nil
}

// syncPush pushes the branch unless the remote has it all, and counts what
// the remote got.
func syncPush(v *vault.Vault, opts SyncOptions, rm gitrepo.Remote, branch string, tip plumbing.Hash, rep *SyncReport) error {
	head, err := v.Repo.Head()
	if err != nil {
		return err
	}
	var n int
	if tip.IsZero() {
		n, err = v.Repo.CountCommits(head)
	} else {
		var d gitrepo.Divergence
		d, err = v.Repo.Diverge(head, tip)
		n = d.OnlyA
	}
	if err != nil || n == 0 {
		return err
	}
	if opts.beforePush != nil {
		opts.beforePush()
	}
	v.Progress.Step(fmt.Sprintf("sync: pushing %d commits to %s", n, rm), "", 0, 0)
	ctx, cancel := context.WithTimeout(context.Background(), opts.Timeout)
	defer cancel()
	if err := v.Repo.Push(ctx, opts.Engine, rm, branch, who(v)); err != nil {
		return err
	}
	rep.Pushed += n
	return nil
}

// refuseTreeLinks refuses a tree that holds symbolic links: what sync would
// bring into the vault from a remote. what names the tree in the error.
func refuseTreeLinks(tree *object.Tree, what string) error {
	links, err := gitrepo.TreeLinks(tree)
	if err != nil || len(links) == 0 {
		return err
	}
	e := fault.New(vault.ErrCorrupt, "sync: %s holds symbolic links (%s); memvault never brings a link into the vault; nothing was changed", what, strings.Join(links, ", "))
	return e.WithHint("remove the links from the remote's branch (git rm, commit, push), then sync again")
}
