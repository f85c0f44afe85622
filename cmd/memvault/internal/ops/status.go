package ops

import (
	"fmt"
	"path/filepath"

	"github.com/memvault/memvault/hooks/hookstate"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/gc"
	"github.com/memvault/memvault/vault/gitrepo"
	"github.com/memvault/memvault/vault/heads"
)

// Status is the vault summarised: its health, head commit, events, threads,
// open commitments, who holds the lock, the heads' pending work and the
// loose git objects (`memvault status --json`, the MCP status tool).
type Status struct {
	Health      Health         `json:"health"`
	Vault       string         `json:"vault"`
	Agent       string         `json:"agent"`
	Head        string         `json:"head"`
	HeadSubject string         `json:"head_subject,omitempty"`
	Events      int            `json:"events"`
	Kinds       map[string]int `json:"kinds"`
	LastEvent   string         `json:"last_event,omitempty"`
	Threads     []string       `json:"threads"`
	Commitments []*vault.Row   `json:"open_commitments"`
	Lock        *vault.Lease   `json:"lock_holder,omitempty"`
	// GitObjects estimates the loose git objects and says whether a gc
	// is advised (gc.EstimateLoose).
	GitObjects gc.LooseObjects `json:"git_objects"`
	// Jobs is the hooks' job queue: how many, the oldest, whether a
	// worker runs (docs/HOOKS.md, "Jobs"); the folder is listed, no job
	// read.
	Jobs hookstate.JobQueue `json:"jobs"`
	HeadStatus
}

// HeadStatus is the heads' part of the status: the heads behind their
// rows, refreshes waiting for a retry, conflicts waiting for a person, and
// leases held now.
type HeadStatus struct {
	Stale     []string          `json:"stale_heads"` // rendered, and their rows changed since (heads.StaleHeads)
	Deferred  []heads.HeadEvent `json:"deferred_refreshes"`
	Conflicts []heads.HeadEvent `json:"head_conflicts"`
	Leases    []heads.HeadLease `json:"head_leases"`
}

// NewStatus reports on v for agent. A vault that refuses writes is a state
// to report (Health), not a failure.
func NewStatus(v *vault.Vault, agent string) (*Status, error) {
	st, err := v.LoadState()
	if err != nil {
		return nil, err
	}
	return StatusOf(v, agent, st)
}

// StatusOf is NewStatus from rows already folded: the web view passes the
// cached fold every head renders from (heads.FoldedState), which a large
// vault reads in a fraction of the time of a fold of every segment.
func StatusOf(v *vault.Vault, agent string, st *vault.State) (*Status, error) {
	rep := &Status{Health: NewHealth(v), Vault: v.Root, Agent: agent, Kinds: st.KindCounts(),
		Events: len(st.Rows), Threads: st.Threads(), Commitments: st.OpenCommitments()}
	if rep.Threads == nil {
		rep.Threads = []string{}
	}
	if rep.Commitments == nil {
		rep.Commitments = []*vault.Row{}
	}
	if n := len(st.Rows); n > 0 {
		rep.LastEvent = st.Rows[n-1].TS
	}
	err := v.Log(func(ci gitrepo.CommitInfo) bool {
		rep.Head, rep.HeadSubject = ci.Hash, ci.Subject
		return false
	})
	if err != nil {
		return nil, err
	}
	if l, held := vault.ReadLease(v.Root); held {
		rep.Lock = &l
	}
	rep.HeadStatus = newHeadStatus(v, st)
	rep.GitObjects = gc.EstimateLoose(v)
	if rep.Jobs, err = hookstate.JobQueueStatus(v); err != nil {
		return nil, err
	}
	return rep, nil
}

func newHeadStatus(v *vault.Vault, st *vault.State) HeadStatus {
	hs := HeadStatus{Deferred: []heads.HeadEvent{}, Conflicts: []heads.HeadEvent{}, Leases: heads.HeadLeases(v)}
	// A view that cannot be read leaves the list empty: the status still
	// reports the rest, and `threads` says why.
	if hs.Stale, _ = heads.StaleHeads(v); hs.Stale == nil {
		hs.Stale = []string{}
	}
	if hs.Leases == nil {
		hs.Leases = []heads.HeadLease{}
	}
	for _, h := range heads.HeadStatesOf(v, st) {
		hs.Deferred = append(hs.Deferred, h.Deferred...)
		hs.Conflicts = append(hs.Conflicts, h.Conflicts...)
	}
	return hs
}

// Health is the vault's health as status and doctor report it: what
// vault.Health found, and the one line that says what to do.
type Health struct {
	OK       bool            `json:"ok"`
	Summary  string          `json:"summary,omitempty"` // what is wrong and what to do
	Problems []vault.Problem `json:"problems"`          // the ledger's, first first
	Config   string          `json:"config,omitempty"`  // why memvault.toml does not parse
	Fix      string          `json:"fix,omitempty"`     // the command or the edit that fixes it
	// Class is the class of the error a write is refused with: the exit
	// code doctor fails with.
	Class error `json:"-"`
}

// NewHealth checks what a writer would refuse in v.
func NewHealth(v *vault.Vault) Health {
	h, err := v.Health()
	rep := Health{OK: h.OK(), Summary: h.Summary(), Problems: h.Chain}
	if rep.Problems == nil {
		rep.Problems = []vault.Problem{}
	}
	switch {
	case err != nil:
		rep.OK, rep.Summary, rep.Class = false, fmt.Sprintf("the ledger could not be checked: %v", err), err
	case h.Config != nil:
		rep.Config = h.Config.Error()
		rep.Fix = "edit " + filepath.Join(v.Root, "memvault.toml") + " by hand (memvault init writes a fresh one if you delete it)"
		rep.Class = vault.ErrInvalid
	case len(h.Chain) > 0:
		rep.Fix = "memvault repair (memvault verify names every problem)"
		rep.Class = vault.ErrCorrupt
	}
	return rep
}

// Line is the health in one line: "ok", or what structured writes are
// refused for and what to do.
func (h Health) Line() string {
	if h.OK {
		return "ok"
	}
	return "WRITES REFUSED: " + h.Summary
}
