package hooks

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault/lineage"
	"github.com/memvault/memvault/vault/node"

	"github.com/memvault/memvault/hooks/hookstate"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/transcript"
	"github.com/memvault/memvault/vault/vaulttest"
)

// bigTranscript writes a Claude Code transcript of copies of the captured
// fixture, each with fresh ids: several import windows' worth.
func bigTranscript(t *testing.T, copies int) string {
	t.Helper()
	fixture, err := os.ReadFile(filepath.Join("..", "fixtures", "transcripts", "claude-code", "session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := range copies {
		b.WriteString(strings.ReplaceAll(string(fixture), `"uuid":"`, fmt.Sprintf(`"uuid":"c%d-`, i)))
	}
	p := filepath.Join(t.TempDir(), "big.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func jobKinds(t *testing.T, v *vault.Vault) []string {
	t.Helper()
	jobs, err := hookstate.PendingJobs(v)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, j := range jobs {
		kinds = append(kinds, j.Kind)
	}
	return kinds
}

// TestSessionEndBacklogFinishedByJobs: a session end whose import is cut
// short by its budget (here: spent before it starts, so it reads one
// window) commits what it read, and queues the rest as an import job ahead
// of the session's summary; the jobs later events run finish the import,
// commit it, and only then summarise, so the summary covers the whole
// session and the transcript is what one import stores.
func TestSessionEndBacklogFinishedByJobs(t *testing.T) {
	src := bigTranscript(t, 6)
	root := t.TempDir()
	v, _, err := vault.Init(filepath.Join(root, vault.DirName))
	if err != nil {
		t.Fatal(err)
	}
	h, _ := Lookup("claude-code")
	sess := transcript.Ref{Agent: "default", Session: "big"}
	// A worker that does nothing takes the session end's jobs, so that
	// what the hook's spent budget left is what the queue holds.
	r := &Runner{V: v, Harness: h, Agent: "default", Start: time.Now().Add(-time.Hour), Worker: []string{"true"}}
	if _, err := r.Run(SessionEnd, Payload{SessionID: sess.Session, TranscriptPath: src, CWD: root}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(jobKinds(t, v), " "); got != "import summarize condense refresh" {
		t.Fatalf("queued %q, want the import before the summary", got)
	}

	first := 0
	transcript.Read(v.Files(), sess, 1, 0, func(transcript.Stored) error { first++; return nil })
	if first == 0 {
		t.Fatal("the session end stored nothing")
	}

	// Another session's stops run the queue, a job budget each, until it
	// is empty.
	for i := 0; len(jobKinds(t, v)) > 0; i++ {
		if i > 500 {
			t.Fatalf("the queue is not done: %v", jobKinds(t, v))
		}
		other := &Runner{V: v, Harness: h, Agent: "default", Start: time.Now()}
		if _, err := other.Run(Stop, Payload{SessionID: "other", CWD: root}); err != nil {
			t.Fatal(err)
		}
	}

	// What one import stores, every line committed.
	one, _, err := vault.Init(filepath.Join(t.TempDir(), vault.DirName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lineage.Import(one, vault.TxOptions{}, sess, transcript.ClaudeCode, src, ""); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadDir(filepath.Join(one.Root, "transcripts", "default"))
	last := 0
	transcript.Read(v.Files(), sess, 1, 0, func(m transcript.Stored) error { last = m.N; return nil })
	if last <= first {
		t.Fatalf("%d messages, %d after the session end: not a backlog", last, first)
	}
	for _, e := range want {
		w, _ := os.ReadFile(filepath.Join(one.Root, "transcripts", "default", e.Name()))
		g, err := os.ReadFile(filepath.Join(v.Root, "transcripts", "default", e.Name()))
		if err != nil || string(g) != string(w) {
			t.Fatalf("%s differs from one import's", e.Name())
		}
	}
	if vaulttest.HasGit() {
		home := t.TempDir()
		if out := (vaulttest.Git{Dir: v.Root, Env: vaulttest.Sandbox(home)}).Run(t, "status", "--porcelain"); out != "" {
			t.Fatalf("left uncommitted:\n%s", out)
		}
	}
	ix, err := node.Load(v.Files())
	if err != nil {
		t.Fatal(err)
	}
	var summary *node.Node
	for _, n := range ix.Nodes {
		if n.Kind == node.SessionSummary && n.Session == sess.Session {
			summary = n
		}
	}
	if summary == nil || summary.Span == nil || summary.Span.To != last {
		t.Fatalf("summary %+v, want one up to message %d", summary, last)
	}
	if rep, err := v.Verify(); err != nil || !rep.OK {
		t.Fatalf("verify: %v %+v", err, rep)
	}
}

// TestImportJobYieldsToOtherSessions: an import job of 8 MiB of prose
// (more than a busy machine redacts in a job budget) does not hold up the
// jobs of other sessions queued after it; those of its own session wait
// for it.
func TestImportJobYieldsToOtherSessions(t *testing.T) {
	root := t.TempDir()
	v, _, err := vault.Init(filepath.Join(root, vault.DirName))
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "prose.jsonl")
	var b strings.Builder
	for n := 0; b.Len() < 8<<20; n++ {
		role := [2]string{"user", "assistant"}[n%2]
		fmt.Fprintf(&b, `{"type":%q,"uuid":"p%d","sessionId":"big","message":{"role":%q,"content":%q}}`+"\n",
			role, n, role, strings.Repeat(fmt.Sprintf("turn %d of a long session about the import ", n), 20))
	}
	if err := os.WriteFile(src, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, j := range []hookstate.Job{
		{Kind: "import", Agent: "default", Session: "big", Harness: "claude-code", Source: src, Format: "claude-code"},
		{Kind: "summarize", Agent: "default", Session: "big", Harness: "claude-code"},
		{Kind: "summarize", Agent: "default", Session: "other", Harness: "claude-code"},
	} {
		if err := hookstate.EnqueueJob(v, j); err != nil {
			t.Fatal(err)
		}
	}
	h, _ := Lookup("claude-code")
	r := &Runner{V: v, Harness: h, Agent: "default", Start: time.Now()}
	if _, err := r.Run(Stop, Payload{SessionID: "third", CWD: root}); err != nil {
		t.Fatal(err)
	}
	jobs, _ := hookstate.PendingJobs(v)
	var left []string
	for _, j := range jobs {
		left = append(left, j.Kind+" "+j.Session)
	}
	// The other session's summary ran; the big session's waits for its
	// import, whether or not the import finished within this budget (a
	// quiet, fast machine reads 8 MiB in one: the test does not depend on
	// the machine's speed).
	if got := strings.Join(left, ", "); got != "import big, summarize big" && got != "summarize big" {
		t.Fatalf("after one stop the queue holds %v; want the other session's summary run, and its own session's summary (and the import, if unfinished) waiting", left)
	}
	stored := 0
	transcript.Read(v.Files(), transcript.Ref{Agent: "default", Session: "big"}, 1, 0, func(transcript.Stored) error { stored++; return nil })
	if stored == 0 {
		t.Fatal("the import job made no progress")
	}
}
