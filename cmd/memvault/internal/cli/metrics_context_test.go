package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/hooks"
	"github.com/memvault/memvault/render"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/testvault"
)

// TestContextRetentionAndEfficiency plays a vault through the hooks'
// session start (hooks.Runner) with a context budget too small for every
// row, and checks the figures `memvault metrics` gives against what the
// hook returned: retention is the share of the rows in scope (the
// session's thread and no thread, of the kinds a head shows, held at the
// start, visible to its agent) whose text the context shows, efficiency
// their tokens ÷ the context's tokens. Rows of another thread, of a third
// agent, retracted before the start or written after it are not in scope;
// a start recorded the old way is unknown, not 0; the figures are the
// same from a fresh read of the ledger.
func TestContextRetentionAndEfficiency(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	write := func(agent, kind, thread, text string) *vault.Event {
		t.Helper()
		var ev *vault.Event
		_, err := v.Update(vault.TxOptions{Agent: agent, Command: "test"}, func(tx *vault.Tx) error {
			var err error
			ev, err = ops.Remember(tx, memory.Input{Kind: kind, Thread: thread, Text: text})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	// A session started before the injection was recorded.
	if _, err := v.Update(vault.TxOptions{Agent: v.Config.Agent, Session: "s0", Command: "test"}, func(tx *vault.Tx) error {
		tx.Append(&vault.Event{Kind: vault.KindSessionStarted, Thread: "project:alpha", Text: "old start",
			Data: json.RawMessage(`{"source":"startup","cwd":"/x"}`)})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	owner := v.Config.Agent
	var inScope []*vault.Event
	for i := range 12 {
		inScope = append(inScope, write(owner, "decision", "project:alpha",
			"alpha decision "+string(rune('a'+i))+": keep the exports in parquet partitioned by day and by customer region"))
	}
	inScope = append(inScope, write(owner, "constraint", "", "global constraint: never run migrations on a Friday afternoon"))
	inScope = append(inScope, write("alice", "fact", "", "alice's own global fact: the staging host is staging-2"))
	write(owner, "decision", "project:beta", "beta decision: out of alpha's scope")
	write("bob", "fact", "", "bob's fact: another agent's row alice may not see")
	gone := write(owner, "decision", "project:alpha", "alpha decision retracted before the start")
	if _, err := v.Update(vault.TxOptions{Agent: owner, Command: "test"}, func(tx *vault.Tx) error {
		_, err := memory.Retract(tx, gone.ID, "wrong")
		return err
	}); err != nil {
		t.Fatal(err)
	}

	h, ok := hooks.Lookup("claude-code")
	if !ok {
		t.Fatal("no claude-code harness")
	}
	small := *h
	small.ContextLimit = 1800
	r := &hooks.Runner{V: v, Harness: &small, Agent: "alice", Thread: "project:alpha", Start: time.Now(),
		Refresh: hooks.RefreshInline}
	text, err := r.Run(hooks.SessionStart, hooks.Payload{SessionID: "s1", Source: "startup", CWD: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	write(owner, "decision", "project:alpha", "alpha decision after the start")

	carried, heldTokens := 0, 0
	for _, ev := range inScope {
		if strings.Contains(text, ev.Text) {
			carried++
		}
		heldTokens += render.Tokens(ev.Text)
	}
	if carried == 0 || carried == len(inScope) {
		t.Fatalf("the context carried %d of %d rows: the budget should cut some, not all\n%s", carried, len(inScope), text)
	}
	st, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	m := ops.ComputeMetrics(st, owner)
	c := m.Context
	if c.Measured != 1 || c.Unknown != 1 || len(c.Sessions) != 2 {
		t.Fatalf("context metrics: %+v", c)
	}
	old, s1 := c.Sessions[0], c.Sessions[1]
	if old.Known || old.Retention != nil || old.Efficiency != nil || old.Note == "" {
		t.Errorf("a start without its injection recorded: %+v (want unknown, not 0)", old)
	}
	if !s1.Known || s1.Session != "s1" || s1.Held != len(inScope) || s1.Carried != carried ||
		s1.HeldTokens != heldTokens || s1.InjectedTokens != render.Tokens(text) || s1.InjectedChars != len([]rune(text)) {
		t.Errorf("s1: %+v; want held %d, carried %d, held tokens %d, injected %d tokens %d chars",
			s1, len(inScope), carried, heldTokens, render.Tokens(text), len([]rune(text)))
	}
	want := func(a, b int) float64 { return float64(int64(float64(a)/float64(b)*10000+0.5)) / 10000 }
	if s1.Retention == nil || *s1.Retention != want(carried, len(inScope)) ||
		s1.Efficiency == nil || *s1.Efficiency != want(heldTokens, render.Tokens(text)) {
		t.Errorf("s1 figures: retention %v efficiency %v", s1.Retention, s1.Efficiency)
	}
	if c.Retention == nil || *c.Retention != *s1.Retention || c.Efficiency == nil || *c.Efficiency != *s1.Efficiency {
		t.Errorf("totals %v %v differ from the one measured start's", c.Retention, c.Efficiency)
	}
	// The same ledger, read again, gives the same figures.
	v2, err := vault.Open(v.Root)
	if err != nil {
		t.Fatal(err)
	}
	st2, err := v2.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(m)
	b, _ := json.Marshal(ops.ComputeMetrics(st2, owner))
	if string(a) != string(b) {
		t.Errorf("metrics differ between two reads of the same ledger")
	}
}
