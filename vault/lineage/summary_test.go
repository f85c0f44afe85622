package lineage

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/node"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/transcript"
)

// summarizeSession runs Summarize on ref in a transaction of its own.
func summarizeSession(t *testing.T, v *vault.Vault, ref transcript.Ref) (*node.Node, bool) {
	t.Helper()
	var n *node.Node
	var created bool
	_, err := v.Update(vault.TxOptions{Session: ref.Session}, func(tx *vault.Tx) error {
		var err error
		n, created, err = Summarize(tx, ref, SummaryOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n, created
}

// TestSummaryPerHarness imports, for each harness, a transcript in its
// own format (slash command, hook context, environment blocks, edits, a
// failing command, a filler last reply) and checks what the summary says.
func TestSummaryPerHarness(t *testing.T) {
	for _, f := range []transcript.Format{transcript.ClaudeCode, transcript.Codex, transcript.Gemini,
		transcript.OpenClaw, transcript.Generic} {
		t.Run(string(f), func(t *testing.T) {
			v := testvault.New(t)
			ref := transcript.Ref{Agent: v.Config.Agent, Session: "s-" + string(f)}
			src, _ := filepath.Abs("../transcript/testdata/work/" + string(f) + ".jsonl")
			if _, err := Import(v, vault.TxOptions{Session: ref.Session}, ref, f, src, ""); err != nil {
				t.Fatal(err)
			}
			n, _ := summarizeSession(t, v, ref)
			if n.Title != "Fix the failing parser test in parse.go" {
				t.Errorf("title %q", n.Title)
			}
			want := []string{
				"## Asked\n\n",
				"- Fix the failing parser test in parse.go\n",
				"## Outcome\n\nThe parser test passes now: the tokenizer dropped a trailing comma, fixed in parse.go with a new test.\n",
			}
			if f != transcript.Generic { // OpenCode's hooks store no tool use
				want = append(want,
					"## Files touched\n\n- `/p/parse.go`\n- `/p/parse_test.go`\n",
					"## Commands\n\n2 run, 1 failed.\n\n- `go test ./...` failed (exit 1)\n- `go test ./parse`\n")
			}
			for _, w := range want {
				if !strings.Contains(n.Body, w) {
					t.Errorf("body lacks %q:\n%s", w, n.Body)
				}
			}
			for _, bad := range append(transcript.MarkupTags(), "Working on it", "## Events", "session.started", "<cwd>") {
				if strings.Contains(n.Body, bad) || strings.Contains(n.Title, bad) {
					t.Errorf("summary holds %q:\n%s", bad, n.Body)
				}
			}
		})
	}
}

// TestSummaryRecordsMemoryNotBookkeeping: the rows of the session listed
// are what it recorded, not the hooks' bookkeeping.
func TestSummaryRecordsMemoryNotBookkeeping(t *testing.T) {
	v := testvault.New(t)
	ref := transcript.Ref{Agent: v.Config.Agent, Session: "s1"}
	_, err := v.Update(vault.TxOptions{Session: "s1"}, func(tx *vault.Tx) error {
		tx.Append(&vault.Event{Kind: "session.started", Session: "s1", Text: "session started"})
		tx.Append(&vault.Event{Kind: "continuity.session", Session: "s1", Text: "session end"})
		_, _, err := tx.AppendText(ref, []transcript.Message{
			{Role: transcript.RoleUser, Text: "pick a queue for the jobs"},
			assistant("We keep the jobs in Postgres: one table, SKIP LOCKED.\nDECISION: use Postgres for the job queue | one store\nNEXT: write the migration"),
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	n, _ := summarizeSession(t, v, ref)
	for _, w := range []string{"## Recorded\n\n- decision `e_", ": use Postgres for the job queue", "- next `e_",
		"## Outcome\n\nWe keep the jobs in Postgres: one table, SKIP LOCKED.\n"} {
		if !strings.Contains(n.Body, w) {
			t.Errorf("body lacks %q:\n%s", w, n.Body)
		}
	}
	for _, bad := range []string{"session.started", "continuity.session", "DECISION:"} {
		if strings.Contains(n.Body, bad) {
			t.Errorf("body holds %q:\n%s", bad, n.Body)
		}
	}
}

// TestFillerIsNotTheOutcome: the outcome is the last substantial answer;
// a session of filler only says so.
func TestFillerIsNotTheOutcome(t *testing.T) {
	for _, c := range []struct {
		text   string
		filler bool
	}{
		{"Sure. Working on it.", true},
		{"Done.", true},
		{"OK, let me check the tests.", true},
		{"Let me run the tests first and see what fails.", true},
		{"I'll look at the parser now.", true},
		{"Thanks!", true},
		{"The command printed memvault-tool-ok.", false},
		{"Sure: the bug was an off-by-one in the lexer's rune loop, fixed in lexer.go and covered by TestLexUnicode.", false},
		{"Okaying the release needs two reviewers and a green build on main.", false},
		{"Fixed the migration: the column is now nullable.", false},
	} {
		if got := filler(c.text); got != c.filler {
			t.Errorf("filler(%q) = %v, want %v", c.text, got, c.filler)
		}
	}
	v := testvault.New(t)
	ref := transcript.Ref{Agent: v.Config.Agent, Session: "s1"}
	_, err := v.Update(vault.TxOptions{Session: "s1"}, func(tx *vault.Tx) error {
		_, _, err := tx.AppendText(ref, []transcript.Message{
			{Role: transcript.RoleUser, Text: "hi"},
			assistant("Sure. Working on it."),
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	n, _ := summarizeSession(t, v, ref)
	if !strings.Contains(n.Body, "## Outcome\n\n(no substantial answer; the last reply: \"Sure. Working on it.\")") {
		t.Errorf("body:\n%s", n.Body)
	}
}

// TestOneSummaryPerSession: a retry, a second session end and a resumed
// session leave one summary that counts; the newer says which revision it
// is and what it replaces, and every list of nodes shows it alone.
func TestOneSummaryPerSession(t *testing.T) {
	v := testvault.New(t)
	ref := transcript.Ref{Agent: v.Config.Agent, Session: "s1"}
	add := func(msgs ...transcript.Message) {
		t.Helper()
		if _, err := v.Update(vault.TxOptions{Session: "s1"}, func(tx *vault.Tx) error {
			_, _, err := tx.AppendText(ref, msgs)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	add(transcript.Message{Role: transcript.RoleUser, Text: "add a health endpoint"},
		assistant("The /healthz endpoint answers 200 with the build's version."))
	first, created := summarizeSession(t, v, ref)
	if !created {
		t.Fatal("the first summary was not created")
	}
	// A retry and a second session end with nothing new: the same node.
	for range 2 {
		again, created := summarizeSession(t, v, ref)
		if created || again.ID != first.ID {
			t.Fatalf("a retry made %s (created %v), want %s found", again.ID, created, first.ID)
		}
	}
	// A row recorded in the session by hand, then the session resumed.
	if _, err := v.Update(vault.TxOptions{Session: "s1"}, func(tx *vault.Tx) error {
		tx.Append(&vault.Event{Kind: "next", Session: "s1", Text: "add a readiness probe"})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	second, created := summarizeSession(t, v, ref)
	add(transcript.Message{Role: transcript.RoleUser, Text: "now add a readiness probe"},
		assistant("The /readyz probe checks the database connection before it answers."))
	third, _ := summarizeSession(t, v, ref)
	if !created || second.ID == first.ID || third.ID == second.ID {
		t.Fatalf("summaries %s, %s, %s: want three revisions", first.ID, second.ID, third.ID)
	}
	if len(third.Supersedes) != 2 || !strings.Contains(third.Body, "_Revision 3 of this session's summary: it replaces `") {
		t.Errorf("third supersedes %v:\n%s", third.Supersedes, third.Body)
	}
	again, created := summarizeSession(t, v, ref)
	if created || again.ID != third.ID {
		t.Errorf("a retry after the third made %s (created %v)", again.ID, created)
	}
	ix, err := node.Load(v.Files())
	if err != nil {
		t.Fatal(err)
	}
	got := ix.Select(node.Filter{Agent: ref.Agent, Session: "s1"})
	if len(got) != 1 || got[0].ID != third.ID {
		t.Errorf("nodes of the session: %v, want %s alone", ids(got), third.ID)
	}
	if all := ix.Select(node.Filter{Session: "s1", All: true}); len(all) != 3 {
		t.Errorf("with All: %v, want 3", ids(all))
	}
	for _, old := range []string{first.ID, second.ID} {
		if ix.SupersededBy(old) != third.ID {
			t.Errorf("%s superseded by %q, want %s", old, ix.SupersededBy(old), third.ID)
		}
	}
	testvault.MustVerify(t, v)
}

func ids(ns []*node.Node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.ID
	}
	return out
}

// TestCompactionWithoutMarkup: the compaction summary Claude Code wrote
// (it quotes <system-reminder> blocks) reaches the node without them.
func TestCompactionWithoutMarkup(t *testing.T) {
	v := testvault.New(t)
	ref := transcript.Ref{Agent: v.Config.Agent, Session: "cc"}
	src, _ := filepath.Abs("../../fixtures/transcripts/claude-code/session.jsonl")
	if _, err := Import(v, vault.TxOptions{Session: "cc"}, ref, transcript.ClaudeCode, src, ""); err != nil {
		t.Fatal(err)
	}
	var n *node.Node
	if _, err := v.Update(vault.TxOptions{Session: "cc"}, func(tx *vault.Tx) error {
		var err error
		n, _, err = Compact(tx, ref, CompactOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, tag := range transcript.MarkupTags() {
		if strings.Contains(n.Body, tag) || strings.Contains(n.Title, tag) {
			t.Errorf("compaction node holds %s:\n%s", tag, n.Body)
		}
	}
	s, _ := summarizeSession(t, v, ref)
	if s.Title != "hello, remember that my aws key is [REDACTED:aws-access-key]" || !strings.Contains(s.Body, "- `echo memvault-tool-ok`\n") ||
		!strings.Contains(s.Body, "- /compact\n") {
		t.Errorf("summary of the captured session %q:\n%s", s.Title, s.Body)
	}
}
