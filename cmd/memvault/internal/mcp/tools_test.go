package mcp

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/continuity"
	"github.com/memvault/memvault/vault/lineage"
	"github.com/memvault/memvault/vault/node"
	"github.com/memvault/memvault/vault/recall"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/transcript"
	"github.com/memvault/memvault/vault/vaulttest"
)

// allTools is every tool the server must offer (issue 18).
var allTools = []string{"audit", "budget", "commitment_close", "commitment_open", "context", "continuity_index",
	"continuity_status", "decide", "done", "expand", "learn", "ledger", "next", "recall", "remember", "status", "timeline"}

func TestToolsList(t *testing.T) {
	t.Parallel()
	f := setup(t, Options{}, "")
	res, err := f.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || strings.Contains(tool.Description, "\n") {
			t.Errorf("%s: description %q is not one line", tool.Name, tool.Description)
		}
		in, _ := json.Marshal(tool.InputSchema)
		out, _ := json.Marshal(tool.OutputSchema)
		if !strings.Contains(string(in), `"type":"object"`) || tool.OutputSchema == nil || !strings.Contains(string(out), `"properties"`) {
			t.Errorf("%s: schemas in=%s out=%s", tool.Name, in, out)
		}
		if tool.Annotations == nil {
			t.Errorf("%s: no annotations", tool.Name)
		} else if writes := !tool.Annotations.ReadOnlyHint; writes != slices.Contains([]string{"remember",
			"commitment_open", "commitment_close", "decide", "learn", "next", "done", "audit", "continuity_index"}, tool.Name) {
			t.Errorf("%s: readOnlyHint %v", tool.Name, tool.Annotations.ReadOnlyHint)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, allTools) {
		t.Errorf("tools %v, want %v", names, allTools)
	}
	// The closed sets are in the schemas, taken from the packages that own them.
	for _, tool := range res.Tools {
		in, _ := json.Marshal(tool.InputSchema)
		switch tool.Name {
		case "remember":
			for _, k := range vault.RememberKinds {
				if !strings.Contains(string(in), `"`+k+`"`) {
					t.Errorf("remember's schema lacks kind %s: %s", k, in)
				}
			}
		case "recall":
			for _, k := range recall.Tiers {
				if !strings.Contains(string(in), `"`+k+`"`) {
					t.Errorf("recall's schema lacks tier %s: %s", k, in)
				}
			}
		}
	}
}

func TestRememberWritesLikeTheCommandLine(t *testing.T) {
	t.Parallel()
	f := setup(t, Options{Session: "s1", Harness: "claude-code"}, "")
	var out writeOut
	secret := "ghp_0123456789abcdefghijABCDEFGHIJ012345"
	f.ok("remember", map[string]any{"text": "the deploy token is " + secret, "kind": "decision",
		"thread": "project:shop", "data": map[string]any{"b": 1, "a": "x"}}, &out)
	ev := out.Event
	if ev == nil || !strings.HasPrefix(ev.ID, "e_") || ev.Kind != "decision" || ev.Thread != "project:shop" ||
		ev.Session != "s1" || ev.Harness != "claude-code" || ev.Source != "mcp" || out.Commit == "" {
		t.Fatalf("event %+v commit %q", ev, out.Commit)
	}
	if strings.Contains(ev.Text, secret) {
		t.Errorf("the secret was not redacted: %q", ev.Text)
	}
	if !strings.Contains(string(ev.Data), `"redacted"`) || !strings.HasPrefix(string(ev.Data), `{"a":"x","b":1`) {
		t.Errorf("data %s: want the payload in canonical form and the redaction counted", ev.Data)
	}
	rows := f.state().Select(vault.Filter{Thread: "project:shop"})
	if len(rows) != 1 || rows[0].ID != ev.ID || rows[0].Hash == "" || strings.Contains(rows[0].Text, secret) {
		t.Fatalf("ledger rows %+v", rows)
	}
	testvault.MustVerify(t, f.v)
	vaulttest.Fsck(t, f.v.Root)

	// A link by prefix is stored whole; a kind outside the set is refused
	// by the schema, with nothing written.
	f.ok("remember", map[string]any{"text": "see the constraint", "links": []string{ev.ID[:20]}, "global": true}, &out)
	if len(out.Event.Links) != 1 || out.Event.Links[0] != ev.ID || out.Event.Thread != "" {
		t.Errorf("linked event %+v", out.Event)
	}
	before := vaulttest.Files(t, f.v.Root)
	te, msg := f.fails("remember", map[string]any{"text": "x", "kind": "decisions"})
	if te.Class != "invalid" || te.Code != 2 || te.Retryable || !strings.Contains(msg, "kind") {
		t.Errorf("bad kind: %+v %q", te, msg)
	}
	te, msg = f.fails("remember", map[string]any{"text": "x", "thread": "project:shop", "global": true})
	if te.Class != "invalid" || !strings.Contains(msg, "thread and global") {
		t.Errorf("thread and global: %+v %q", te, msg)
	}
	te, msg = f.fails("remember", map[string]any{"text": "x", "thread": "Not A Thread"})
	if te.Class != "invalid" || !strings.Contains(msg, "thread") {
		t.Errorf("bad thread: %+v %q", te, msg)
	}
	te, _ = f.fails("remember", map[string]any{"text": "x", "links": []string{"e_01zzzzzzzzzzzz"}})
	if te.Class != "not_found" || te.Code != 3 {
		t.Errorf("unknown link: %+v", te)
	}
	te, _ = f.fails("remember", map[string]any{"text": "  "})
	if te.Class != "invalid" {
		t.Errorf("empty text: %+v", te)
	}
	f.unchanged(before)
}

func TestBadArguments(t *testing.T) {
	t.Parallel()
	f := setup(t, Options{}, "")
	cases := []struct {
		tool string
		args map[string]any
		want string // in the message
	}{
		{"recall", map[string]any{}, "query"},
		{"recall", map[string]any{"query": 3}, "query"},
		{"recall", map[string]any{"query": "x", "limit": 0}, "limit"},
		{"recall", map[string]any{"query": "x", "tiers": []string{"structured", "nodes"}}, "tiers"},
		{"recall", map[string]any{"query": "x", "bogus": true}, "bogus"},
		{"recall", map[string]any{"query": "x", "thread": "project:a", "all_threads": true}, "all_threads"},
		{"recall", map[string]any{"query": "x", "since": "last tuesdayish"}, "since"},
		{"remember", map[string]any{"kind": "fact"}, "text"},
		{"remember", map[string]any{"text": "x", "data": []int{1}}, "data"},
		{"expand", map[string]any{"id": "n_!!"}, "n_!!"},
		{"commitment_close", map[string]any{}, "id"},
		{"decide", map[string]any{"decision": "use WAL"}, "rationale"},
		{"learn", map[string]any{"error": "e", "prevention": "p", "ttl": -1}, "ttl"},
		{"next", map[string]any{"text": ""}, "empty"},
		{"context", map[string]any{"limit": 10}, "limit"},
		{"ledger", map[string]any{"kind": "decisions"}, "decisions"},
		{"ledger", map[string]any{"limit": -1}, "limit"},
		{"ledger", map[string]any{"ids": []string{"e_"}}, "e_"},
		{"timeline", map[string]any{}, "session or a thread"},
		{"status", map[string]any{"verbose": true}, "verbose"},
	}
	for _, c := range cases {
		te, msg := f.fails(c.tool, c.args)
		if te.Class != "invalid" || te.Code != 2 || te.Retryable || te.Hint == "" {
			t.Errorf("%s %v: %+v %q, want an invalid error with a hint", c.tool, c.args, te, msg)
		}
		if !strings.Contains(msg, c.want) {
			t.Errorf("%s %v: %q does not name %q", c.tool, c.args, msg, c.want)
		}
	}
	if rows := f.state().Rows; len(rows) != 0 {
		t.Errorf("bad arguments wrote %d events", len(rows))
	}
}

func TestCommitments(t *testing.T) {
	t.Parallel()
	f := setup(t, Options{Thread: "project:shop"}, "")
	var opened, closed writeOut
	f.ok("commitment_open", map[string]any{"text": "ship the fix by friday"}, &opened)
	if opened.Event.Kind != "commitment.open" || opened.Event.Thread != "project:shop" {
		t.Fatalf("opened %+v: want the session's thread", opened.Event)
	}
	var st ops.Status
	f.ok("status", nil, &st)
	if len(st.Commitments) != 1 || st.Commitments[0].ID != opened.Event.ID || !st.Health.OK || st.Events != 1 {
		t.Fatalf("status %+v", st)
	}
	f.ok("commitment_close", map[string]any{"id": opened.Event.ID[2:20], "note": "shipped"}, &closed)
	if closed.Event.Kind != "commitment.close" || closed.Event.Links[0] != opened.Event.ID || closed.Event.Text != "shipped" {
		t.Fatalf("closed %+v", closed.Event)
	}
	if opened.Event.Source != "mcp" || closed.Event.Source != "mcp" {
		t.Errorf("sources %q, %q: the server's writes are the MCP server's", opened.Event.Source, closed.Event.Source)
	}
	te, msg := f.fails("commitment_close", map[string]any{"id": opened.Event.ID})
	if te.Class != "conflict" || te.Code != 4 || !strings.Contains(msg, "already closed") {
		t.Errorf("second close: %+v %q", te, msg)
	}
	te, _ = f.fails("commitment_close", map[string]any{"id": "e_01zzzzzzzz"})
	if te.Class != "not_found" {
		t.Errorf("unknown id: %+v", te)
	}
	te, _ = f.fails("commitment_close", map[string]any{"id": "n_01zzzzzzzz"})
	if te.Class != "invalid" {
		t.Errorf("a node id: %+v", te)
	}
	f.ok("status", nil, &st)
	if len(st.Commitments) != 0 || st.Events != 2 {
		t.Errorf("status after close %+v", st)
	}
}

func TestContinuityVerbs(t *testing.T) {
	t.Parallel()
	f := setup(t, Options{}, "")
	var res continuity.ContinuityResult
	f.ok("decide", map[string]any{"decision": "use WAL for the index", "rationale": "readers never block",
		"thread": "project:shop"}, &res)
	if d := kindOf(res.Events, "decision"); d == nil || d.Thread != "project:shop" || res.Commit == "" ||
		!slices.Contains([]string{"rendered", "recreated", "merged"}, res.Head) {
		t.Fatalf("decide %+v", res)
	} else if d.Source != "mcp" {
		t.Errorf("decide's event has source %q: the server's writes are the MCP server's", d.Source)
	}
	f.ok("learn", map[string]any{"error": "tests hit the real HOME", "cause": "no sandbox",
		"prevention": "set HOME in every test", "global": true}, &res)
	if l := kindOf(res.Events, "learning"); l == nil || l.Thread != "" {
		t.Fatalf("learn %+v", res)
	}
	f.ok("next", map[string]any{"text": "write the MCP docs", "first": true}, &res)
	nextID := kindOf(res.Events, "next").ID
	f.ok("next", map[string]any{"text": "measure the latency"}, &res)
	cont, err := f.read(continuityURI)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cont, "write the MCP docs") || !strings.Contains(cont, "use WAL for the index") {
		t.Fatalf("CONTINUITY.md does not show the verbs:\n%s", cont)
	}
	f.ok("done", map[string]any{"text": nextID[:20]}, &res)
	if d := kindOf(res.Events, "done"); d == nil || len(d.Links) != 1 || d.Links[0] != nextID {
		t.Fatalf("done by prefix %+v", res.Events)
	}
	var ledger ledgerOut
	f.ok("ledger", map[string]any{"kind": "next", "current": true}, &ledger)
	if len(ledger.Rows) != 1 || ledger.Rows[0].Text != "measure the latency" {
		t.Errorf("open next actions after done: %+v", ledger.Rows)
	}
	te, _ := f.fails("done", map[string]any{"text": "e_01zzzzzzzz"})
	if te.Class != "not_found" {
		t.Errorf("done of an unknown id: %+v", te)
	}
	te, _ = f.fails("decide", map[string]any{"decision": "x", "rationale": "y", "supersedes": "D99"})
	if te.Class != "not_found" && te.Class != "invalid" {
		t.Errorf("supersedes an unknown decision: %+v", te)
	}
	testvault.MustVerify(t, f.v)
}

func TestRecallExpandLedgerTimeline(t *testing.T) {
	t.Parallel()
	f := setup(t, Options{Session: "sess-1"}, "")
	var w writeOut
	f.ok("remember", map[string]any{"text": "the billing service retries Stripe webhooks five times", "kind": "decision",
		"thread": "project:shop"}, &w)
	decision := w.Event
	f.ok("remember", map[string]any{"text": "the blog has no webhooks", "thread": "project:blog"}, &w)

	var rec recallOut
	f.ok("recall", map[string]any{"query": "stripe webhooks", "thread": "project:shop"}, &rec)
	if len(rec.Hits) == 0 || rec.Hits[0].ID != decision.ID || rec.Hits[0].Tier != recall.TierStructured {
		t.Fatalf("recall %+v", rec)
	}
	for _, h := range rec.Hits {
		if h.Thread == "project:blog" {
			t.Errorf("another thread's row in scope: %+v", h)
		}
	}
	f.ok("recall", map[string]any{"query": "webhooks", "all_threads": true, "tiers": []string{"structured"}}, &rec)
	if len(rec.Hits) != 2 {
		t.Errorf("all threads: %+v", rec.Hits)
	}

	// A node to drill into: the session's summary.
	summary := summarize(t, f.v, "sess-1", "project:shop", "make the webhooks idempotent", "done: keyed by event id")
	var ex lineage.Expansion
	f.ok("expand", map[string]any{"id": summary.ID[:20]}, &ex)
	if ex.Node == nil || ex.Node.ID != summary.ID || !strings.Contains(ex.Node.Body, "idempotent") || len(ex.Transcript) != 2 {
		t.Fatalf("expand %+v", ex)
	}
	te, _ := f.fails("expand", map[string]any{"id": "n_01zzzzzzzz"})
	if te.Class != "not_found" || te.Code != 3 {
		t.Errorf("unknown node: %+v", te)
	}
	te, msg := f.fails("expand", map[string]any{"id": summary.ID, "agent": "codex"})
	if te.Class != "conflict" || !strings.Contains(msg, "belongs to agent") {
		t.Errorf("another agent's node: %+v %q", te, msg)
	}

	var lg ledgerOut
	f.ok("ledger", map[string]any{"thread": "project:shop", "limit": 1}, &lg)
	if lg.Matched < 2 || len(lg.Rows) != 1 || lg.Rows[0].Status != "active" || lg.Rows[0].File == "" {
		t.Errorf("ledger newest of the thread: %+v", lg)
	}
	f.ok("ledger", map[string]any{"ids": []string{decision.ID[:20]}}, &lg)
	if len(lg.Rows) != 1 || lg.Rows[0].ID != decision.ID {
		t.Errorf("ledger by id prefix: %+v", lg)
	}

	var tl timelineOut
	f.ok("timeline", nil, &tl) // the server's session
	if tl.Session != "sess-1" || len(tl.Events) < 3 || tl.Events[0].ID != decision.ID {
		t.Fatalf("timeline of the session: %+v", tl)
	}
	for i := 1; i < len(tl.Events); i++ {
		if tl.Events[i].TS < tl.Events[i-1].TS {
			t.Errorf("timeline out of order at %d: %+v", i, tl.Events)
		}
	}
	f.ok("timeline", map[string]any{"thread": "project:blog"}, &tl)
	if len(tl.Events) != 1 || tl.Events[0].Text != "the blog has no webhooks" {
		t.Errorf("timeline of a thread: %+v", tl)
	}
}

func TestContextIsSessionStart(t *testing.T) {
	t.Parallel()
	f := setup(t, Options{}, "")
	var w writeOut
	f.ok("remember", map[string]any{"text": "never deploy on fridays", "kind": "decision", "thread": "project:shop"}, &w)
	var out contextOut
	f.ok("context", map[string]any{"thread": "project:shop", "limit": 4000}, &out)
	if out.Thread != "project:shop" || out.Limit != 4000 || !strings.Contains(out.Context, "never deploy on fridays") ||
		!strings.HasPrefix(out.Context, "memvault: this project has a memory") || len(out.Context) > 4000 {
		t.Fatalf("context %+v", out)
	}
	f.ok("context", map[string]any{"global": true}, &out)
	if out.Thread != "" || out.Limit != 8000 || strings.Contains(out.Context, "never deploy on fridays") {
		t.Errorf("global context %+v", out)
	}
}

// kindOf is the first event of kind in events.
func kindOf(events []*vault.Event, kind string) *vault.Event {
	for _, ev := range events {
		if ev.Kind == kind {
			return ev
		}
	}
	return nil
}

// summarize stores a session of a prompt and an answer and writes its
// summary node, as a session end does.
func summarize(t *testing.T, v *vault.Vault, session, thread, prompt, answer string) *node.Node {
	t.Helper()
	ref := transcript.Ref{Agent: v.Config.Agent, Session: session}
	_, err := v.Update(vault.TxOptions{Session: session, NoCommit: true}, func(tx *vault.Tx) error {
		_, _, err := tx.AppendText(ref, []transcript.Message{{Role: transcript.RoleUser, Text: prompt},
			{Role: transcript.RoleAssistant, Text: answer}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var made *node.Node
	_, err = v.Update(vault.TxOptions{Session: session}, func(tx *vault.Tx) error {
		var err error
		made, _, err = lineage.Summarize(tx, ref, lineage.SummaryOptions{Thread: thread})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return made
}

// TestLedgerUntil: the ledger tool takes until as the command line does:
// before it, a window with since, and an empty window refused.
func TestLedgerUntil(t *testing.T) {
	t.Parallel()
	f := setup(t, Options{}, "")
	testvault.Remember(t, f.v, "written now")
	var lg ledgerOut
	f.ok("ledger", map[string]any{"kind": "fact", "until": "2000-01-01"}, &lg)
	if len(lg.Rows) != 0 {
		t.Errorf("until 2000: %d rows", len(lg.Rows))
	}
	f.ok("ledger", map[string]any{"kind": "fact", "since": "2000-01-01", "until": "2999-01-01"}, &lg)
	if len(lg.Rows) != 1 || lg.Rows[0].Text != "written now" {
		t.Errorf("[2000, 2999): %+v", lg.Rows)
	}
	if te, msg := f.fails("ledger", map[string]any{"since": "2999-01-01", "until": "2000-01-01"}); te.Class != "invalid" || !strings.Contains(msg, "is not after --since") {
		t.Errorf("an empty window: %+v %s", te, msg)
	}
}
