package vault

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/memvault/memvault/vault/gitrepo"
	"github.com/memvault/memvault/vault/transcript"
)

const uuid = "3f1c2a9e-5b7d-4c1e-9a2b-6d8e0f1a2b3c"

// The subject names the most important content event, whatever subject a
// caller set, and never the session id.
func TestCommitSubject(t *testing.T) {
	ev := func(kind, text string) *Event { return &Event{Kind: kind, Text: text, Session: uuid} }
	long := strings.Repeat("retry the webhook with exponential backoff ", 4)
	for _, c := range []struct {
		name    string
		events  []*Event
		subject string
		want    string
	}{
		{"decision over a caller's subject", []*Event{ev("transcript.imported", "imported 3 messages from cc.jsonl"),
			ev("learning", "Stripe signs every retry"), ev("decision", "retry Stripe webhooks 5 times"),
			ev("next", "write the retry job"), ev("decision", "keep the dead-letter queue"), ev("fact", "the queue is SQS")},
			"transcript: claude-code session " + uuid, "decision: retry Stripe webhooks 5 times (+4 more)"},
		{"blocker before learning", []*Event{ev("learning", "a"), ev("blocker", "the sandbox is down")}, "",
			"blocker: the sandbox is down (+1 more)"},
		{"commitment before learning", []*Event{ev("learning", "a"), ev("commitment.open", "ship the installer")}, "",
			"commitment.open: ship the installer (+1 more)"},
		{"continuity kinds are content", []*Event{ev("continuity.session", "session end"), ev(KindContinuityDone, "wired the webhook"),
			ev("head.rendered", "CONTINUITY.md: rendered")}, "", "continuity.done: wired the webhook"},
		{"a single event, multi-line", []*Event{ev("decision", "use WAL\nfor the index")}, "", "decision: use WAL for the index"},
		{"a retraction names its target", []*Event{{Kind: "retract", Links: []string{"e_01abc"}}}, "", "retract: e_01abc"},
		{"caller's subject without content", []*Event{ev("node.created", "session "+uuid+": plan")}, "session-summary: plan",
			"session-summary: plan"},
		{"first event without the session id", []*Event{ev("session.started", "claude-code session "+uuid+" (startup)")}, "",
			"session.started: claude-code session (startup)"},
		{"long text keeps the count", []*Event{ev("decision", long), ev("decision", "b")}, "",
			"decision: " + string([]rune(long)[:51]) + "… (+1 more)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tx := &Tx{events: c.events, subject: c.subject}
			got := tx.commitSubject()
			if got != c.want {
				t.Errorf("subject %q, want %q", got, c.want)
			}
			if n := utf8.RuneCountInString(got); n > maxSubject {
				t.Errorf("subject has %d runes", n)
			}
			if strings.Contains(got, uuid) {
				t.Errorf("subject %q names the session", got)
			}
		})
	}
}

func lastSubject(t *testing.T, v *Vault) string {
	t.Helper()
	var s string
	v.Log(func(c gitrepo.CommitInfo) bool { s = c.Subject; return false })
	return s
}

// A hook's turn stores its lines without a commit; the commit at the
// session's lineage event carries them under a subject that names the
// harness and the size of the transcript, not the session.
func TestTranscriptCommitSubject(t *testing.T) {
	v := newVault(t)
	ref := transcript.Ref{Agent: "default", Session: uuid}
	opts := TxOptions{Session: uuid, Harness: "claude-code"}
	nc := opts
	nc.NoCommit = true
	for _, text := range []string{"how should webhooks retry?", "five times"} {
		if _, err := v.Update(nc, func(tx *Tx) error {
			_, _, err := tx.AppendText(ref, []transcript.Message{{Role: transcript.RoleUser, Text: text}})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := v.Update(opts, func(tx *Tx) error { return tx.CommitTranscript(ref) })
	if err != nil || res.Commit == "" {
		t.Fatalf("commit: %v %+v", err, res)
	}
	if got := lastSubject(t, v); got != "transcript: claude-code, 2 messages" {
		t.Fatalf("subject %q", got)
	}
}
