package cli

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/hooks"
	"github.com/memvault/memvault/render"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/lineage"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/transcript"
)

// TestTokenEfficiencyCountsTranscripts: token_efficiency's numerator is
// the held rows' tokens plus the tokens of the transcripts the nodes in
// the session's scope summarise (docs/API.md). The numbers are chosen so
// they can be counted by hand (render.Tokens: a word of n ASCII bytes is
// ceil(n/4) tokens):
//
//   - session t1 of thread alpha: "ship the new code" (4) and "done:
//     code is live now" (2+1+1+1+1 = 6), plus memvault's injected context
//     (left out); summarised (10), then resumed with "also tag it" (3)
//     and summarised again: its transcript counts once, 13, not 10+13;
//   - session t2 of thread alpha: "fix the flaky test" (1+1+2+1 = 5),
//     compacted: 5;
//   - session t3 of thread beta: "our work here" (3): not in scope;
//   - a node.created of thread alpha recorded the old way, without its
//     transcript's size: unsized, left out;
//   - a decision of thread alpha, "keep the exports" (1+1+2 = 4);
//   - a session t4 of thread alpha, "late work" (2), summarised after
//     the start: not in scope.
//
// So held_tokens 4, transcripts 2, transcript_tokens 18, stands_for 22,
// unsized_nodes 1, and token_efficiency 22 ÷ the injected tokens.
func TestTokenEfficiencyCountsTranscripts(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	const alpha, beta = "project:alpha", "project:beta"
	update := func(session string, f func(tx *vault.Tx) error) {
		t.Helper()
		if _, err := v.Update(vault.TxOptions{Agent: "alice", Session: session, Command: "test"}, f); err != nil {
			t.Fatal(err)
		}
	}
	say := func(session string, msgs ...transcript.Message) {
		update(session, func(tx *vault.Tx) error {
			_, _, err := tx.AppendText(transcript.Ref{Agent: "alice", Session: session}, msgs)
			return err
		})
	}
	summarise := func(session, thread string) {
		update(session, func(tx *vault.Tx) error {
			_, _, err := lineage.Summarize(tx, transcript.Ref{Agent: "alice", Session: session}, lineage.SummaryOptions{Thread: thread})
			return err
		})
	}
	user := func(text string) transcript.Message { return transcript.Message{Role: transcript.RoleUser, Text: text} }
	say("t1", user("ship the new code"),
		transcript.Message{Role: transcript.RoleSystem, Kind: transcript.KindContext, Text: "a long injected context that stands for itself and must not count"},
		transcript.Message{Role: transcript.RoleAssistant, Text: "done: code is live now"})
	summarise("t1", alpha)
	say("t1", user("also tag it"))
	summarise("t1", alpha)
	say("t2", user("fix the flaky test"))
	update("t2", func(tx *vault.Tx) error {
		_, _, err := lineage.Compact(tx, transcript.Ref{Agent: "alice", Session: "t2"}, lineage.CompactOptions{Summary: "we fixed it", Thread: alpha})
		return err
	})
	say("t3", user("our work here"))
	summarise("t3", beta)
	update("old", func(tx *vault.Tx) error {
		tx.Append(&vault.Event{Kind: "node.created", Thread: alpha, Text: "a node recorded before its size was",
			Links: []string{"n_old"}, Data: json.RawMessage(`{"kind":"session-summary","path":"transcripts/alice/old.jsonl","span":{"path":"transcripts/alice/old.jsonl","from":1,"to":40},"children":[]}`)})
		return nil
	})
	update("", func(tx *vault.Tx) error {
		_, err := ops.Remember(tx, memory.Input{Kind: "decision", Thread: alpha, Text: "keep the exports"})
		return err
	})

	h, ok := hooks.Lookup("claude-code")
	if !ok {
		t.Fatal("no claude-code harness")
	}
	r := &hooks.Runner{V: v, Harness: h, Agent: "alice", Thread: alpha, Start: time.Now(), Refresh: hooks.RefreshInline}
	text, err := r.Run(hooks.SessionStart, hooks.Payload{SessionID: "s9", Source: "startup", CWD: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	say("t4", user("late work"))
	summarise("t4", alpha)

	st, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	c := ops.ComputeMetrics(st, v.Config.Agent).Context
	if c.Measured != 1 || len(c.Sessions) != 1 {
		t.Fatalf("context metrics: %+v", c)
	}
	s := c.Sessions[0]
	injected := render.Tokens(text)
	if s.HeldTokens != 4 || s.Transcripts != 2 || s.TranscriptTokens != 18 || s.UnsizedNodes != 1 ||
		s.StandsFor != 22 || s.InjectedTokens != injected {
		t.Errorf("s9: held_tokens %d transcripts %d transcript_tokens %d unsized %d stands_for %d injected %d; want 4 2 18 1 22 %d",
			s.HeldTokens, s.Transcripts, s.TranscriptTokens, s.UnsizedNodes, s.StandsFor, s.InjectedTokens, injected)
	}
	want := float64(int64(22.0/float64(injected)*10000+0.5)) / 10000
	if s.Efficiency == nil || *s.Efficiency != want || c.Efficiency == nil || *c.Efficiency != want {
		t.Errorf("token_efficiency %v, total %v; want 22/%d = %v", s.Efficiency, c.Efficiency, injected, want)
	}
	// What the nodes recorded: the second summary of t1 its 13 tokens.
	var sizes []int
	for _, r := range st.Rows {
		var d struct {
			Tokens *int `json:"transcript_tokens"`
		}
		if r.Kind == "node.created" && json.Unmarshal(r.Data, &d) == nil && d.Tokens != nil {
			sizes = append(sizes, *d.Tokens)
		}
	}
	if len(sizes) != 5 || sizes[0] != 10 || sizes[1] != 13 || sizes[2] != 5 || sizes[3] != 3 || sizes[4] != 2 {
		t.Errorf("node.created transcript_tokens %v; want [10 13 5 3 2]", sizes)
	}
}
