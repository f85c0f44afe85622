package mcp

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/hooks"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/continuity"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/lineage"
	"github.com/memvault/memvault/vault/recall"
)

// The tools that read. None takes the vault lock: recall catches the index
// up under the index's own lock, the rest read files that are replaced
// atomically. Each shows what its agent may see (continuity.SeesAgent):
// the vault's own agent every row, another agent its own rows and the
// vault's agent's, never a third agent's (TestEveryToolIsScopedToItsAgent).

type recallIn struct {
	Query      string   `json:"query" jsonschema:"what to look for, in plain words (a question, names, a date such as last week)"`
	Thread     string   `json:"thread,omitempty" jsonschema:"search this thread (kind:slug, e.g. project:shop) instead of the current one"`
	AllThreads bool     `json:"all_threads,omitempty" jsonschema:"search every thread, not only the current one and global rows"`
	Tiers      []string `json:"tiers,omitempty" jsonschema:"only these tiers, searched in this order: structured (ledger rows), heads (thread heads and session nodes), transcripts; default all three"`
	Limit      int      `json:"limit,omitempty" jsonschema:"at most this many hits per tier"`
	History    bool     `json:"history,omitempty" jsonschema:"also rows that no longer hold (superseded, retracted, closed, invalidated, archived), marked with their status"`
	Since      string   `json:"since,omitempty" jsonschema:"only what was written at or after this date (2026-11-22), RFC 3339 time or age (7d, 12h)"`
	Until      string   `json:"until,omitempty" jsonschema:"only what was written before this date, time or age"`
}

type recallOut struct {
	Hits []recall.Hit `json:"hits" jsonschema:"ranked hits, tier by tier: structured rows first, then heads and nodes, then transcripts"`
	// Scope lists the threads searched; "" stands for the global rows.
	Scope    []string `json:"scope" jsonschema:"threads searched; the empty string stands for global rows"`
	Excluded int      `json:"excluded,omitempty" jsonschema:"hits in other threads left out by the scope; all_threads or thread includes them"`
	Notes    []string `json:"notes,omitempty" jsonschema:"what to know about how the hits were found"`
}

type expandIn struct {
	ID      string `json:"id" jsonschema:"a node id (n_…) or any unique prefix of one, from recall, MEMORY.md or a thread head"`
	Agent   string `json:"agent,omitempty" jsonschema:"the agent whose node it is, to read another agent's node (default: this session's agent)"`
	Context int    `json:"context,omitempty" jsonschema:"transcript messages to add before and after the node's span"`
}

type contextIn struct {
	Thread string `json:"thread,omitempty" jsonschema:"the thread (kind:slug) whose head to include (default: the current thread)"`
	Global bool   `json:"global,omitempty" jsonschema:"no thread: MEMORY.md, CONTINUITY.md and global rows only"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many characters"`
}

type contextOut struct {
	Agent   string `json:"agent"`
	Thread  string `json:"thread" jsonschema:"the thread the context was read in; empty for none"`
	Limit   int    `json:"limit" jsonschema:"the character budget"`
	Context string `json:"context" jsonschema:"what a session starting here is shown"`
}

type statusIn struct{}

type ledgerIn struct {
	IDs     []string `json:"ids,omitempty" jsonschema:"only these events, each an id (e_…) or any unique prefix of one"`
	Kind    string   `json:"kind,omitempty" jsonschema:"only this kind (decision, fact, commitment.open, …); a supersede counts as the kind it replaces"`
	Thread  string   `json:"thread,omitempty" jsonschema:"only this thread (kind:slug)"`
	Session string   `json:"session,omitempty" jsonschema:"only this session"`
	Since   string   `json:"since,omitempty" jsonschema:"only events at or after this date (2026-11-22), RFC 3339 time or age (7d, 12h)"`
	Until   string   `json:"until,omitempty" jsonschema:"only events before this date (its local midnight), time or age"`
	Current bool     `json:"current,omitempty" jsonschema:"only what holds now: no retracted, superseded, closed, invalidated or archived rows, no corrections"`
	Limit   int      `json:"limit,omitempty" jsonschema:"at most this many events, the newest (0: all)"`
}

type ledgerOut struct {
	Rows    []*vault.Row `json:"rows" jsonschema:"the events, oldest first, each with its file, line and status"`
	Matched int          `json:"matched" jsonschema:"how many events matched before the limit"`
}

type timelineIn struct {
	Session string `json:"session,omitempty" jsonschema:"the session whose events to list"`
	Thread  string `json:"thread,omitempty" jsonschema:"the thread (kind:slug) whose events to list (default, without a session: the current thread)"`
	Since   string `json:"since,omitempty" jsonschema:"only events at or after this date (2026-11-22), RFC 3339 time or age (7d, 12h)"`
	Limit   int    `json:"limit,omitempty" jsonschema:"at most this many events, the newest (0: all)"`
}

// timelineEntry is one event of a timeline, without the chain's fields.
type timelineEntry struct {
	ID      string   `json:"id"`
	TS      string   `json:"ts"`
	Kind    string   `json:"kind"`
	Thread  string   `json:"thread,omitempty"`
	Session string   `json:"session,omitempty"`
	Agent   string   `json:"agent"`
	Text    string   `json:"text"`
	Links   []string `json:"links,omitempty"`
	Status  string   `json:"status" jsonschema:"active, or retracted, superseded, closed, invalidated, archived"`
}

type timelineOut struct {
	Session string          `json:"session,omitempty"`
	Thread  string          `json:"thread,omitempty"`
	Events  []timelineEntry `json:"events" jsonschema:"the events in the order they were written"`
	Matched int             `json:"matched" jsonschema:"how many events matched before the limit"`
}

const (
	defaultRecallLimit   = 5
	defaultLedgerLimit   = 50
	defaultTimelineLimit = 100
	minContextLimit      = 200
)

func (s *Server) addReadTools() {
	addTool(s, toolSpec{name: "recall", title: "Search memory", idempotent: true,
		description: "Search this project's memory (decisions, facts, commitments, thread heads, session summaries, " +
			"then transcripts) and get ranked hits with their ids; call it before re-deciding or re-investigating anything.",
		tune: func(in *jsonschema.Schema) {
			setEnum(in, "tiers", recall.Tiers)
			limitArg(defaultRecallLimit, 1)(in)
		}}, s.recall)
	addTool(s, toolSpec{name: "expand", title: "Drill into a node", idempotent: true,
		description: "Drill into a node id (n_…) from recall, MEMORY.md or a thread head: its text, parents, children, " +
			"siblings, the thread heads citing it, its ledger rows and the transcript of its span.",
		tune: func(in *jsonschema.Schema) { setMinimum(in, "context", 0) }}, s.expand)
	addTool(s, toolSpec{name: "context", title: "Session context", idempotent: true,
		description: "What a session starting here is shown: how to use memory, the thread's head, CONTINUITY.md's live " +
			"sections, MEMORY.md, and the learnings and decisions in scope.",
		tune: limitArg(hooks.DefaultContextLimit, minContextLimit)}, s.context)
	addTool(s, toolSpec{name: "status", title: "Vault status", idempotent: true,
		description: "The vault's state: its health (whether writes are refused, and the fix), head commit, events by kind, " +
			"threads, open commitments, who holds the lock, and head refreshes or conflicts pending."}, s.status)
	addTool(s, toolSpec{name: "ledger", title: "List ledger events", idempotent: true,
		description: "List ledger events oldest first, filtered by ids, kind, thread, session, date, or only what holds now; " +
			"the newest `limit` of those that match.",
		tune: limitArg(defaultLedgerLimit, 0)}, s.ledger)
	addTool(s, toolSpec{name: "timeline", title: "Timeline", idempotent: true,
		description: "A session's or a thread's events in the order they happened (decisions, commitments, nodes, " +
			"session starts, corrections), to see what happened when.",
		tune: limitArg(defaultTimelineLimit, 0)}, s.timeline)
}

func (s *Server) recall(ctx context.Context, req *sdk.CallToolRequest, in recallIn) (recallOut, error) {
	if in.AllThreads && in.Thread != "" {
		return recallOut{}, fault.New(vault.ErrInvalid, "recall: thread and all_threads do not go together")
	}
	c, err := s.open(ctx, req.Session, false)
	if err != nil {
		return recallOut{}, err
	}
	opts := recall.RecallOptions{Query: in.Query, Agent: c.agent, Thread: in.Thread, Session: s.opts.Session,
		AllThreads: in.AllThreads, Tiers: in.Tiers, Limit: in.Limit, History: in.History}
	if opts.Thread == "" {
		opts.Thread = s.opts.Thread
	}
	if in.AllThreads {
		opts.Thread = ""
	} else {
		opts.Dir = c.dir
	}
	if opts.Since, err = since(in.Since); err != nil {
		return recallOut{}, err
	}
	if opts.Until, err = since(in.Until); err != nil {
		return recallOut{}, err
	}
	res, err := recall.Recall(c.v, opts)
	if err != nil {
		return recallOut{}, err
	}
	out := recallOut{Hits: res.Hits, Scope: res.Scope, Excluded: res.Excluded, Notes: res.Notes}
	if out.Hits == nil {
		out.Hits = []recall.Hit{}
	}
	if out.Scope == nil {
		out.Scope = []string{}
	}
	return out, nil
}

// since reads an optional date filter.
func since(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return ops.ParseSince(s, time.Now())
}

func (s *Server) expand(ctx context.Context, req *sdk.CallToolRequest, in expandIn) (*lineage.Expansion, error) {
	c, err := s.open(ctx, req.Session, false)
	if err != nil {
		return nil, err
	}
	agent := in.Agent
	if agent == "" {
		agent = c.agent
	}
	id, err := c.v.ResolveNodeID("expand", in.ID)
	if err != nil {
		return nil, err
	}
	return lineage.Expand(c.v, id, lineage.ExpandOptions{Agent: agent, Context: in.Context})
}

func (s *Server) context(ctx context.Context, req *sdk.CallToolRequest, in contextIn) (contextOut, error) {
	if in.Global && in.Thread != "" {
		return contextOut{}, fault.New(vault.ErrInvalid, "context: thread and global do not go together")
	}
	// Opened for capture, as session start opens it: a memvault.toml that
	// does not parse is reported in the context, not a failure.
	c, err := s.open(ctx, req.Session, true)
	if err != nil {
		return contextOut{}, err
	}
	thread, err := s.thread(c, in.Thread, in.Global)
	if err != nil {
		return contextOut{}, err
	}
	text := hooks.StartContext(c.v, c.agent, thread, c.dir, in.Limit)
	return contextOut{Agent: c.agent, Thread: thread, Limit: in.Limit, Context: text}, nil
}

func (s *Server) status(ctx context.Context, req *sdk.CallToolRequest, _ statusIn) (*ops.Status, error) {
	// Opened for capture: a vault that refuses writes is a state to
	// report, as `memvault status` reports it.
	c, err := s.open(ctx, req.Session, true)
	if err != nil {
		return nil, err
	}
	rep, err := ops.NewStatus(c.v, c.agent)
	if err != nil {
		return nil, err
	}
	// The open commitments are rows: the agent's own and those it may see.
	rep.Commitments = slices.DeleteFunc(rep.Commitments, func(r *vault.Row) bool {
		return !continuity.SeesAgent(c.v, c.agent, r.Agent)
	})
	return rep, nil
}

func (s *Server) ledger(ctx context.Context, req *sdk.CallToolRequest, in ledgerIn) (ledgerOut, error) {
	c, err := s.open(ctx, req.Session, false)
	if err != nil {
		return ledgerOut{}, err
	}
	f := vault.Filter{Kind: in.Kind, Session: in.Session, Current: in.Current}
	if in.Thread != "" {
		th, err := vault.ParseThread(in.Thread)
		if err != nil {
			return ledgerOut{}, err
		}
		f.Thread = th.String()
	}
	if f.Since, err = since(in.Since); err != nil {
		return ledgerOut{}, err
	}
	until, err := since(in.Until)
	if err != nil {
		return ledgerOut{}, err
	}
	st, err := c.v.LoadState()
	if err != nil {
		return ledgerOut{}, err
	}
	// The set of kinds is open: any kind this vault holds is a filter.
	if kinds := st.KnownKinds(); in.Kind != "" && !slices.Contains(kinds, in.Kind) {
		e := fault.New(vault.ErrInvalid, "ledger: kind %q: unknown", in.Kind)
		return ledgerOut{}, e.WithHint("use one of: %s", strings.Join(kinds, ", "))
	}
	rows, matched, err := ops.Ledger(st, ops.LedgerQuery{Filter: f, IDs: in.IDs, Limit: in.Limit, Until: until,
		Agents: continuity.VisibleAgents(c.v, c.agent)})
	if err != nil {
		return ledgerOut{}, err
	}
	return ledgerOut{Rows: rows, Matched: matched}, nil
}

func (s *Server) timeline(ctx context.Context, req *sdk.CallToolRequest, in timelineIn) (timelineOut, error) {
	c, err := s.open(ctx, req.Session, false)
	if err != nil {
		return timelineOut{}, err
	}
	out := timelineOut{Session: in.Session, Thread: in.Thread, Events: []timelineEntry{}}
	if out.Session == "" && out.Thread == "" {
		out.Session = s.opts.Session
	}
	if out.Session == "" && out.Thread == "" {
		if out.Thread, err = s.thread(c, "", false); err != nil {
			return timelineOut{}, err
		}
	}
	if out.Session == "" && out.Thread == "" {
		e := fault.New(vault.ErrInvalid, "timeline: no session or thread to list the events of")
		return timelineOut{}, e.WithHint("name a session or a thread (kind:slug); the status tool lists the threads")
	}
	f := vault.Filter{Session: out.Session}
	if out.Thread != "" {
		th, err := vault.ParseThread(out.Thread)
		if err != nil {
			return timelineOut{}, err
		}
		out.Thread, f.Thread = th.String(), th.String()
	}
	if f.Since, err = since(in.Since); err != nil {
		return timelineOut{}, err
	}
	st, err := c.v.LoadState()
	if err != nil {
		return timelineOut{}, err
	}
	rows, matched, err := ops.Ledger(st, ops.LedgerQuery{Filter: f, Limit: in.Limit, Agents: continuity.VisibleAgents(c.v, c.agent)})
	if err != nil {
		return timelineOut{}, err
	}
	out.Matched = matched
	for _, r := range rows {
		out.Events = append(out.Events, timelineEntry{ID: r.ID, TS: r.TS, Kind: r.Kind, Thread: r.Thread,
			Session: r.Session, Agent: r.Agent, Text: r.Text, Links: r.Links, Status: r.Status})
	}
	return out, nil
}
