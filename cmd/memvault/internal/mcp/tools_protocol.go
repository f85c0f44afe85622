package mcp

import (
	"context"
	"errors"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memvault/memvault/render"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/continuity"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/heads"
)

// The working-memory protocol's tools beyond its verbs (docs/MCP.md):
// budget, audit, continuity_status and continuity_index, each the library
// calls of its command (`memvault continuity budget` with `render
// --explain`, `continuity audit [--dry-run]`, `continuity status`,
// `continuity index`), as the session's agent is shown them
// (continuity.StatusFor, AuditReport.ScopedTo).

type budgetIn struct {
	Thread string `json:"thread,omitempty" jsonschema:"the thread (kind:slug) whose head to account for (default: the current thread)"`
	Global bool   `json:"global,omitempty" jsonschema:"no thread: MEMORY.md only"`
}

type budgetOut struct {
	Budget []continuity.BudgetLine `json:"budget" jsonschema:"tokens per category (memory, continuity, learnings, decisions, index, total) against the budgets in memvault.toml"`
	Heads  []render.Report         `json:"heads" jsonschema:"for MEMORY.md and the thread's head: tokens per section, and every row the head's budget left out and why"`
}

type auditIn struct {
	DryRun bool `json:"dry_run,omitempty" jsonschema:"report what the audit would do, and why, without writing anything"`
}

type continuityStatusIn struct{}

type continuityIndexIn struct{}

type continuityIndexOut struct {
	File   string `json:"file" jsonschema:"the index's file in the vault"`
	Text   string `json:"text" jsonschema:"the index: counts, then the strongest learnings within the index budget"`
	Commit string `json:"commit,omitempty" jsonschema:"the vault's git commit that wrote it; empty when it was already current"`
}

func (s *Server) addProtocolTools() {
	addTool(s, toolSpec{name: "budget", title: "Token budget", idempotent: true,
		description: "How many tokens memory costs per category against its budgets, and what the budgets of MEMORY.md " +
			"and the thread's head left out, row by row, and why."}, s.budget)
	addTool(s, toolSpec{name: "audit", title: "Audit learnings and decisions", writes: true,
		description: "Run the protocol's audit as of today: decay of learnings past their ttl, rewordings reinforced, " +
			"contradictions invalidated or superseded, LOW_CONFIDENCE, CONFLICT and SUSPECT flags; dry_run=true reports " +
			"what it would do, and why, without writing."}, s.audit)
	addTool(s, toolSpec{name: "continuity_status", title: "Working memory status", idempotent: true,
		description: "The working memory at a glance: active goal, current task, next actions, blockers, CONTINUITY.md's " +
			"words against its cap, active learnings and decisions, the last audit, and the token budget."}, s.continuityStatus)
	addTool(s, toolSpec{name: "continuity_index", title: "Refresh the learnings index", writes: true, idempotent: true,
		description: "Regenerate learnings-index.md, the cheapest summary of the learnings (counts, then the strongest " +
			"ones), and return it."}, s.continuityIndex)
}

func (s *Server) budget(ctx context.Context, req *sdk.CallToolRequest, in budgetIn) (budgetOut, error) {
	if in.Global && in.Thread != "" {
		return budgetOut{}, fault.New(vault.ErrInvalid, "budget: thread and global do not go together")
	}
	c, err := s.open(ctx, req.Session, false)
	if err != nil {
		return budgetOut{}, err
	}
	thread, err := s.thread(c, in.Thread, in.Global)
	if err != nil {
		return budgetOut{}, err
	}
	out := budgetOut{Heads: []render.Report{}}
	if out.Budget, err = continuity.BudgetFor(c.v, c.agent); err != nil {
		return budgetOut{}, err
	}
	opts := heads.RenderOptions{Memory: true, Explain: true}
	if c.agent != c.v.Config.Agent {
		opts.Keep = func(r *vault.Row) bool { return continuity.SeesAgent(c.v, c.agent, r.Agent) }
	}
	docs, err := heads.RenderHeads(c.v, opts)
	if err != nil {
		return budgetOut{}, err
	}
	if thread != "" {
		th, err := vault.ParseThread(thread)
		if err != nil {
			return budgetOut{}, err
		}
		opts.Memory, opts.Threads = false, []vault.Thread{th}
		more, err := heads.RenderHeads(c.v, opts)
		switch {
		case err == nil:
			docs = append(docs, more...)
		case !errors.Is(err, vault.ErrNotFound) || in.Thread != "":
			// The current thread may have no rows yet: it has no head to
			// account for. A thread named is one the caller expects.
			return budgetOut{}, err
		}
	}
	for _, d := range docs {
		out.Heads = append(out.Heads, d.Report)
	}
	return out, nil
}

func (s *Server) audit(ctx context.Context, req *sdk.CallToolRequest, in auditIn) (*continuity.AuditReport, error) {
	c, err := s.open(ctx, req.Session, false)
	if err != nil {
		return nil, err
	}
	if in.DryRun {
		st, err := continuity.LoadContinuity(c.v)
		if err != nil {
			return nil, err
		}
		rep := st.Audit(c.v.Now().UTC().Format("2006-01-02"), c.v)
		rep.DryRun = true
		return rep.ScopedTo(c.v, c.agent, st), nil
	}
	var rep *continuity.AuditReport
	res, err := s.continuity(ctx, req.Session, "audit", nil, func(ct *continuity.ContinuityTx) error {
		rep = ct.Audit(false)
		return nil
	})
	if err != nil {
		return nil, err
	}
	rep.Commit = res.Commit
	if c.agent == c.v.Config.Agent {
		return rep, nil
	}
	// The audit changes statuses, never who recorded a row: the fold
	// after it says whose each id is.
	st, err := continuity.LoadContinuity(c.v)
	if err != nil {
		return nil, err
	}
	return rep.ScopedTo(c.v, c.agent, st), nil
}

func (s *Server) continuityStatus(ctx context.Context, req *sdk.CallToolRequest, _ continuityStatusIn) (*continuity.ContinuityStatus, error) {
	c, err := s.open(ctx, req.Session, false)
	if err != nil {
		return nil, err
	}
	return continuity.StatusFor(c.v, c.agent)
}

func (s *Server) continuityIndex(ctx context.Context, req *sdk.CallToolRequest, _ continuityIndexIn) (continuityIndexOut, error) {
	res, err := s.continuity(ctx, req.Session, "continuity_index", nil, func(ct *continuity.ContinuityTx) error {
		ct.WriteIndex()
		return nil
	})
	if err != nil {
		return continuityIndexOut{}, err
	}
	c, err := s.open(ctx, req.Session, false)
	if err != nil {
		return continuityIndexOut{}, err
	}
	text, err := continuity.IndexFor(c.v, c.agent)
	if err != nil {
		return continuityIndexOut{}, err
	}
	return continuityIndexOut{File: continuity.LearningsIndexFile, Text: string(text), Commit: res.Commit}, nil
}
