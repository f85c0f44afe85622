package mcp

import (
	"context"
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/continuity"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/memory"
)

// The tools that write. Each is one transaction through the library call
// the matching command makes: vault.Update for rows and commitments,
// continuity.UpdateContinuity for the protocol's verbs (which refresh
// CONTINUITY.md in the same commit). A write waits for the server's
// earlier writes (queueWrite), then for the vault lock Options.LockWait at
// most.

// rowScope is the thread arguments of a tool that files new rows.
type rowScope struct {
	Thread string `json:"thread,omitempty" jsonschema:"file it under this thread (kind:slug, e.g. project:shop) instead of the current one"`
	Global bool   `json:"global,omitempty" jsonschema:"file it under no thread, whatever the current one"`
}

type rememberIn struct {
	Text  string          `json:"text" jsonschema:"the memory, one self-contained statement"`
	Kind  string          `json:"kind,omitempty" jsonschema:"what it is"`
	Links []string        `json:"links,omitempty" jsonschema:"ids (or unique prefixes) of related events (e_…) or nodes (n_…)"`
	Data  json.RawMessage `json:"data,omitempty" jsonschema:"structured data as a JSON object, e.g. the typed payload of a claim"`
	rowScope
}

type commitmentOpenIn struct {
	Text  string   `json:"text" jsonschema:"what you promise to do"`
	Links []string `json:"links,omitempty" jsonschema:"ids (or unique prefixes) of related events (e_…) or nodes (n_…)"`
	rowScope
}

type commitmentCloseIn struct {
	ID   string `json:"id" jsonschema:"the commitment's event id (e_…) or any unique prefix of it"`
	Note string `json:"note,omitempty" jsonschema:"how it was settled"`
}

// writeOut is what a one-transaction write recorded.
type writeOut struct {
	Event    *vault.Event `json:"event" jsonschema:"the event recorded; its id is what other tools take"`
	Commit   string       `json:"commit" jsonschema:"the vault's git commit that holds it"`
	Warnings []string     `json:"warnings,omitempty" jsonschema:"problems after the commit landed"`
}

type decideIn struct {
	Decision   string `json:"decision" jsonschema:"what was decided"`
	Rationale  string `json:"rationale" jsonschema:"why"`
	Scope      string `json:"scope,omitempty" jsonschema:"where it applies: global, module:NAME or file:PATH (default global)"`
	Supersedes string `json:"supersedes,omitempty" jsonschema:"the decision this one replaces: its short id (D3) or event id"`
	rowScope
}

type learnIn struct {
	Error      string `json:"error" jsonschema:"what went wrong"`
	Cause      string `json:"cause,omitempty" jsonschema:"why it went wrong"`
	Prevention string `json:"prevention" jsonschema:"how to prevent it next time"`
	Scope      string `json:"scope,omitempty" jsonschema:"where it applies: global, module:NAME or file:PATH (default global)"`
	TTL        int    `json:"ttl,omitempty" jsonschema:"days it lives unless reinforced (default 30)"`
	rowScope
}

type nextIn struct {
	Text  string `json:"text" jsonschema:"the next action"`
	First bool   `json:"first,omitempty" jsonschema:"put it on top: it becomes the current task"`
	rowScope
}

type doneIn struct {
	Text string `json:"text" jsonschema:"what was done; or the event id (e_…, any unique prefix), number or exact text of the next action, blocker or commitment it finishes"`
	rowScope
}

func (s *Server) addWriteTools() {
	addTool(s, toolSpec{name: "remember", title: "Remember", writes: true,
		description: "Record one durable memory row — a fact, decision, learning, constraint, blocker, next step, claim " +
			"or reflection — in the current thread; returns the event with its id. The vault's policy decides which kinds " +
			"MCP may write: by default a constraint is the user's to record, and is refused here.",
		tune: func(in *jsonschema.Schema) {
			setEnum(in, "kind", vault.RememberKinds)
			setDefault(in, "kind", "fact")
			in.Properties["data"].Type = "object"
		}}, s.remember)
	addTool(s, toolSpec{name: "commitment_open", title: "Open a commitment", writes: true,
		description: "Record a promise you are making to the user, in the current thread; returns the event whose id " +
			"commitment_close takes."}, s.commitmentOpen)
	addTool(s, toolSpec{name: "commitment_close", title: "Close a commitment", writes: true,
		description: "Close an open commitment by its id (or a unique prefix), with a note on how it was settled."}, s.commitmentClose)
	addTool(s, toolSpec{name: "decide", title: "Record a decision", writes: true,
		description: "Record a decision and its rationale, optionally superseding an earlier one; CONTINUITY.md is " +
			"updated in the same commit."}, s.decide)
	addTool(s, toolSpec{name: "learn", title: "Record a learning", writes: true,
		description: "Record a mistake, its cause and how to prevent it (repeating one reinforces it); CONTINUITY.md is " +
			"updated in the same commit.",
		tune: func(in *jsonschema.Schema) { setMinimum(in, "ttl", 0) }}, s.learn)
	addTool(s, toolSpec{name: "next", title: "Add a next action", writes: true,
		description: "Add a next action to the working memory (CONTINUITY.md); first=true makes it the current task."}, s.next)
	addTool(s, toolSpec{name: "done", title: "Record what was done", writes: true,
		description: "Record what you finished; naming a next action, blocker or commitment (its id, number or exact " +
			"text) takes it off the queue."}, s.done)
}

// rowThread is the thread a new row is filed under.
func (s *Server) rowThread(c *call, tool string, sc rowScope) (string, error) {
	if sc.Global && sc.Thread != "" {
		return "", fault.New(vault.ErrInvalid, "%s: thread and global do not go together", tool)
	}
	return s.thread(c, sc.Thread, sc.Global)
}

// update runs one transaction for a tool and reports the event it made.
func (s *Server) update(ctx context.Context, c *call, tool string, fn func(tx *vault.Tx) (*vault.Event, error)) (writeOut, error) {
	release, err := s.queueWrite(ctx)
	if err != nil {
		return writeOut{}, err
	}
	defer release()
	var ev *vault.Event
	res, err := c.v.Update(s.txOptions(c, tool), func(tx *vault.Tx) error {
		var err error
		ev, err = fn(tx)
		return err
	})
	if err != nil {
		return writeOut{}, err
	}
	s.opts.Refresh.After(c.v, res.Commit)
	return writeOut{Event: ev, Commit: res.Commit, Warnings: res.Warnings}, nil
}

func (s *Server) remember(ctx context.Context, req *sdk.CallToolRequest, in rememberIn) (writeOut, error) {
	c, err := s.open(ctx, req.Session, false)
	if err != nil {
		return writeOut{}, err
	}
	thread, err := s.rowThread(c, "remember", in.rowScope)
	if err != nil {
		return writeOut{}, err
	}
	row := memory.Input{Kind: in.Kind, Thread: thread, Text: in.Text, Links: in.Links, Data: in.Data, Source: "mcp"}
	return s.update(ctx, c, "remember", func(tx *vault.Tx) (*vault.Event, error) { return ops.Remember(tx, row) })
}

func (s *Server) commitmentOpen(ctx context.Context, req *sdk.CallToolRequest, in commitmentOpenIn) (writeOut, error) {
	c, err := s.open(ctx, req.Session, false)
	if err != nil {
		return writeOut{}, err
	}
	thread, err := s.rowThread(c, "commitment_open", in.rowScope)
	if err != nil {
		return writeOut{}, err
	}
	row := memory.Input{Thread: thread, Text: in.Text, Links: in.Links, Source: "mcp"}
	return s.update(ctx, c, "commitment_open", func(tx *vault.Tx) (*vault.Event, error) { return ops.OpenCommitment(tx, row) })
}

func (s *Server) commitmentClose(ctx context.Context, req *sdk.CallToolRequest, in commitmentCloseIn) (writeOut, error) {
	c, err := s.open(ctx, req.Session, false)
	if err != nil {
		return writeOut{}, err
	}
	return s.update(ctx, c, "commitment_close", func(tx *vault.Tx) (*vault.Event, error) {
		return ops.CloseCommitment(tx, in.ID, in.Note)
	})
}

// continuity runs one of the protocol's verbs in its transaction; sc is
// the thread arguments of a verb that files rows, nil for one that files
// them under no thread (audit, continuity_index), as their commands do.
func (s *Server) continuity(ctx context.Context, ss *sdk.ServerSession, tool string, sc *rowScope,
	fn func(ct *continuity.ContinuityTx) error) (*continuity.ContinuityResult, error) {
	c, err := s.open(ctx, ss, false)
	if err != nil {
		return nil, err
	}
	thread := ""
	if sc != nil {
		if thread, err = s.rowThread(c, tool, *sc); err != nil {
			return nil, err
		}
	}
	opts := continuity.ContinuityOptions{Trigger: "mcp " + tool, TxOptions: s.txOptions(c, tool), Thread: thread}
	release, err := s.queueWrite(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	res, err := continuity.UpdateContinuity(c.v, opts, fn)
	if err == nil {
		s.opts.Refresh.After(c.v, res.Commit)
	}
	return res, err
}

func (s *Server) decide(ctx context.Context, req *sdk.CallToolRequest, in decideIn) (*continuity.ContinuityResult, error) {
	return s.continuity(ctx, req.Session, "decide", &in.rowScope, func(ct *continuity.ContinuityTx) error {
		_, err := ct.Decide(continuity.DecideInput{Decision: in.Decision, Rationale: in.Rationale, Scope: in.Scope,
			Supersedes: in.Supersedes})
		return err
	})
}

func (s *Server) learn(ctx context.Context, req *sdk.CallToolRequest, in learnIn) (*continuity.ContinuityResult, error) {
	return s.continuity(ctx, req.Session, "learn", &in.rowScope, func(ct *continuity.ContinuityTx) error {
		_, err := ct.Learn(continuity.LearnInput{Error: in.Error, Cause: in.Cause, Prevention: in.Prevention,
			Scope: in.Scope, TTL: in.TTL})
		return err
	})
}

func (s *Server) next(ctx context.Context, req *sdk.CallToolRequest, in nextIn) (*continuity.ContinuityResult, error) {
	return s.continuity(ctx, req.Session, "next", &in.rowScope, func(ct *continuity.ContinuityTx) error {
		return ct.Next(in.Text, in.First)
	})
}

func (s *Server) done(ctx context.Context, req *sdk.CallToolRequest, in doneIn) (*continuity.ContinuityResult, error) {
	return s.continuity(ctx, req.Session, "done", &in.rowScope, func(ct *continuity.ContinuityTx) error {
		return ops.Done(ct, in.Text)
	})
}
