package continuity

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/heads"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/transcript"
)

// protoWrite runs fn in one protocol transaction as of day (--now).
func protoWrite(t *testing.T, v *vault.Vault, day string, fn func(ct *ContinuityTx) error) {
	t.Helper()
	now, err := ParseDate(day)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := UpdateContinuity(v, ContinuityOptions{Now: now}, fn); err != nil {
		t.Fatal(err)
	}
}

// TestSessionStartAppliesTheAudit: what a session starts with never holds
// a learning past its ttl, a reworded duplicate, an invalidated learning
// or a decision a newer one contradicts, though no audit was written; and
// MEMORY.md as a session is shown it (AgentHeads) leaves them out too,
// while the file still lists them. On the day a learning runs out, the
// cached injection is recomputed.
func TestSessionStartAppliesTheAudit(t *testing.T) {
	v := testvault.New(t)
	clock := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	v.Clock = func() time.Time { return clock }
	protoWrite(t, v, "2025-01-01", func(ct *ContinuityTx) error {
		_, err := ct.Learn(LearnInput{Error: "npm ci fails on node 16", Prevention: "pin node 20 in CI"})
		return err
	})
	protoWrite(t, v, "2026-11-28", func(ct *ContinuityTx) error {
		if _, err := ct.Learn(LearnInput{Error: "Build failed: missing go.sum", Prevention: "run go mod tidy before commit"}); err != nil {
			return err
		}
		_, err := ct.Decide(DecideInput{Decision: "use React Hook Form over Formik", Rationale: "performance"})
		return err
	})
	// Runs out after 2026-12-20: shown today, gone three weeks on.
	protoWrite(t, v, "2026-11-20", func(ct *ContinuityTx) error {
		_, err := ct.Learn(LearnInput{Error: "staging deploy needs the VPN", Prevention: "connect the VPN first"})
		return err
	})
	// A rewording recorded as a plain row, the way `remember --kind
	// learning` does: no comparison on the way in.
	if _, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		tx.Append(&vault.Event{Kind: "learning", Text: "the build fails because go.sum is missing"})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	protoWrite(t, v, "2026-11-29", func(ct *ContinuityTx) error {
		if _, err := ct.Decide(DecideInput{Decision: "use Formik over React Hook Form", Rationale: "the team knows it"}); err != nil {
			return err
		}
		_, err := ct.Decide(DecideInput{Decision: "use postgres for the queue"})
		return err
	})
	if _, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := heads.Refresh(v, heads.RefreshOptions{Trigger: "render", Memory: true, Protocol: RefreshHead}); err != nil {
		t.Fatal(err) // MEMORY.md rendered with every row
	}
	inj, err := ContinuityAtSessionStartFor(v, "", "")
	if err != nil {
		t.Fatal(err)
	}
	texts, err := AgentHeads(v, "", vault.MemoryHead)
	if err != nil {
		t.Fatal(err)
	}
	file := testvault.ReadHead(t, v, vault.MemoryHead)
	if !strings.Contains(string(texts[0]), "use Formik over React Hook Form") || !strings.Contains(file, "use React Hook Form over Formik") {
		t.Fatalf("MEMORY.md as shown:\n%s\nas the file holds it:\n%s", texts[0], file)
	}
	shown := inj.Text + string(texts[0])
	for _, gone := range []string{"npm ci fails on node 16", "the build fails because go.sum is missing", "use React Hook Form over Formik"} {
		if strings.Contains(shown, gone) {
			t.Errorf("session start shows %q, which the audit takes away:\n%s", gone, shown)
		}
	}
	for _, kept := range []string{"Build failed: missing go.sum", "use Formik over React Hook Form", "use postgres for the queue", "staging deploy needs the VPN"} {
		if !strings.Contains(inj.Text, kept) {
			t.Errorf("session start lacks %q:\n%s", kept, inj.Text)
		}
	}
	// Nothing was written: the ledger still holds them as they were.
	if n := testvault.Kinds(t, v)[vault.KindLearningArchived]; n != 0 {
		t.Fatalf("session start wrote %d learning.archived", n)
	}
	// Three weeks on: the VPN learning has run out; the cache knows it.
	clock = clock.AddDate(0, 0, 22)
	inj, err = ContinuityAtSessionStartFor(v, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(inj.Text, "staging deploy needs the VPN") {
		t.Fatalf("a learning past its ttl is shown from the cache:\n%s", inj.Text)
	}
	// The audit itself, written, agrees with what was shown.
	protoWrite(t, v, clock.Format(dateLayout), func(ct *ContinuityTx) error { ct.Audit(false); return nil })
	c, err := LoadContinuity(v)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"L1": vault.StatusArchived, "L3": vault.StatusArchived, "L4": vault.StatusArchived, "L2": vault.StatusActive} {
		if got := c.Learning(id).Status; got != want {
			t.Errorf("%s is %s after the audit, want %s", id, got, want)
		}
	}
	if c.Learning("L2").ReinforceCount != 1 {
		t.Errorf("L2 not reinforced by its rewording: %+v", c.Learning("L2"))
	}
	if d := c.Decision("D1"); d.Status != vault.StatusSuperseded || d.SupersededBy != "D2" {
		t.Errorf("D1 after the audit: %+v", d)
	}
}

// TestLearnReinforcesARewording: `learn` (and a LEARNED: line, through
// LearnEvent) reinforces the learning a text rewords, in its scope only,
// and says why; a near miss is a new learning.
func TestLearnReinforcesARewording(t *testing.T) {
	v := testvault.New(t)
	var msgs []string
	protoWrite(t, v, "2026-03-01", func(ct *ContinuityTx) error {
		for _, in := range []LearnInput{
			{Error: "Build failed: missing go.sum", Prevention: "run go mod tidy"},
			{Error: "build fails because go.sum is missing", Prevention: "run go mod tidy"},
			{Error: "build fails because go.sum is missing", Prevention: "run go mod tidy", Scope: "module:api"},
			{Error: "postgres migrations need a lock timeout", Prevention: "set lock_timeout"},
			{Error: "redis migrations need a lock timeout", Prevention: "set a timeout"},
		} {
			l, err := ct.Learn(in)
			if err != nil {
				return err
			}
			msgs = append(msgs, l.ID)
		}
		return nil
	})
	if got := strings.Join(msgs, " "); got != "L1 L1 L2 L3 L4" {
		t.Fatalf("learnings %s, want L1 L1 L2 L3 L4", got)
	}
	c, err := LoadContinuity(v)
	if err != nil {
		t.Fatal(err)
	}
	if c.Learning("L1").ReinforceCount != 1 {
		t.Fatalf("L1: %+v", c.Learning("L1"))
	}
	evs := testvault.Kinds(t, v)
	if evs[vault.KindLearningReinforce] != 1 {
		t.Fatalf("kinds %v", evs)
	}
}

// TestFilesBeingModifiedFromToolUses: the session end lists the files the
// session's edit tools wrote (inside the project, relative to it; the
// vault's own files left out), before those of earlier sessions, which
// age out after a week.
func TestFilesBeingModifiedFromToolUses(t *testing.T) {
	v := testvault.New(t)
	root := filepath.Dir(v.Root)
	tool := func(name string, in map[string]any) transcript.Message {
		raw, _ := json.Marshal(in)
		return transcript.Message{Role: transcript.RoleTool, Tool: &transcript.ToolCall{Name: name, CallID: name, Input: raw}}
	}
	session := func(id string, msgs ...transcript.Message) {
		if _, err := v.Update(vault.TxOptions{NoCommit: true}, func(tx *vault.Tx) error {
			_, _, err := tx.AppendMessages(transcript.Ref{Agent: v.Config.Agent, Session: id}, msgs)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	end := func(id, day string) string {
		now, _ := ParseDate(day)
		v.Clock = func() time.Time { return now }
		// What the hooks call: the files are read from the transcript.
		if _, err := UpdateContinuityAtSessionEnd(v, vault.TxOptions{Session: id}, SessionEndInput{}); err != nil {
			t.Fatal(err)
		}
		c, err := LoadContinuity(v)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(c.Files, " ")
	}
	session("s1",
		tool("Edit", map[string]any{"file_path": filepath.Join(root, "api", "server.go")}),
		tool("Write", map[string]any{"file_path": filepath.Join(v.Root, "MEMORY.md")}),
		tool("apply_patch", map[string]any{"input": "*** Begin Patch\n*** Update File: web/app.ts\n*** End Patch"}),
		tool("Bash", map[string]any{"command": "go test ./..."}),
		tool("Edit", map[string]any{"file_path": filepath.Join(root, "api", "server.go")}))
	if got := end("s1", "2026-03-01"); got != "api/server.go web/app.ts" {
		t.Fatalf("after s1: %q", got)
	}
	session("s2", tool("write_file", map[string]any{"path": "docs/README.md"}))
	if got := end("s2", "2026-03-05"); got != "docs/README.md api/server.go web/app.ts" {
		t.Fatalf("after s2: %q", got)
	}
	session("s3", tool("Edit", map[string]any{"file_path": filepath.Join(root, "web", "app.ts")}))
	if got := end("s3", "2026-03-10"); got != "web/app.ts docs/README.md" {
		t.Fatalf("after s3 (api/server.go is 9 days old): %q", got)
	}
	doc := testvault.ReadHead(t, v, vault.ContinuityHead)
	if !strings.Contains(doc, "## Files Being Modified\n\n- web/app.ts\n- docs/README.md\n") {
		t.Fatalf("CONTINUITY.md:\n%s", doc)
	}
	// Many files: at most filesKept.
	var many []transcript.Message
	for i := 0; i < 25; i++ {
		many = append(many, tool("Write", map[string]any{"file_path": "gen/f" + itoa(i) + ".go"}))
	}
	session("s4", many...)
	if got := strings.Fields(end("s4", "2026-03-11")); len(got) != filesKept || got[0] != "gen/f0.go" {
		t.Fatalf("after s4: %v", got)
	}
}
