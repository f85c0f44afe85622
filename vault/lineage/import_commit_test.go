package lineage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/testvault"

	"github.com/memvault/memvault/vault/transcript"
)

// sessionUUID is a session id shaped like a harness's.
const sessionUUID = "3f1c2a9e-5b7d-4c1e-9a2b-6d8e0f1a2b3c"

// Imports without a commit keep what they added for the transcript.imported
// event of the transaction that commits; once that has landed the record
// is cleared, so the next commit does not record it again.
func TestImportWithoutCommitIsRecordedAtTheCommit(t *testing.T) {
	v := testvault.New(t)
	ref := transcript.Ref{Agent: "default", Session: sessionUUID}
	src := filepath.Join(t.TempDir(), "cc.jsonl")
	line := func(id, role, text string) string {
		return `{"type":"` + role + `","sessionUUID":"` + id + `","sessionId":"x","timestamp":"2026-11-22T04:00:00Z","message":{"role":"` +
			role + `","content":"` + text + `"}}` + "\n"
	}
	appendSrc := func(s string) {
		f, err := os.OpenFile(src, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(s)
		f.Close()
	}
	opts := vault.TxOptions{Session: sessionUUID, Harness: "claude-code", NoCommit: true}
	head, _ := v.Head()
	appendSrc(line("u1", "user", "first"))
	appendSrc(line("u2", "user", "second"))
	if _, err := Import(v, opts, ref, transcript.ClaudeCode, src, ""); err != nil {
		t.Fatal(err)
	}
	appendSrc(line("u3", "user", "third"))
	if _, err := Import(v, opts, ref, transcript.ClaudeCode, src, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := Import(v, opts, ref, transcript.ClaudeCode, src, "project:shop"); err == nil {
		t.Fatal("a thread bound without a commit")
	}
	if h, _ := v.Head(); h != head {
		t.Fatal("an import without a commit committed")
	}
	commit := func() []*vault.Event {
		t.Helper()
		res, err := v.Update(vault.TxOptions{Session: sessionUUID, Harness: "claude-code"}, func(tx *vault.Tx) error {
			if err := RecordImport(tx, ref, transcript.ClaudeCode, src); err != nil {
				return err
			}
			return tx.CommitTranscript(ref)
		})
		if err != nil {
			t.Fatal(err)
		}
		return res.Events
	}
	evs := commit()
	if len(evs) != 1 || evs[0].Kind != "transcript.imported" ||
		!strings.Contains(string(evs[0].Data), `"from":1`) || !strings.Contains(string(evs[0].Data), `"to":3`) ||
		!strings.Contains(string(evs[0].Data), `"messages":3`) {
		t.Fatalf("events %+v", evs)
	}
	if got := testvault.LastSubject(t, v); got != "transcript: claude-code, 3 messages" {
		t.Fatalf("subject %q", got)
	}
	if evs := commit(); len(evs) != 0 {
		t.Fatalf("recorded again: %+v", evs)
	}
	testvault.MustVerify(t, v)
}
