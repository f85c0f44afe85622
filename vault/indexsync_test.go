package vault

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memvault/memvault/transcript"
)

func appendMessage(t *testing.T, v *Vault, session, text string) {
	t.Helper()
	_, err := v.Update(TxOptions{NoCommit: true}, func(tx *Tx) error {
		_, _, err := tx.AppendText(TranscriptRef{Agent: v.Config.Agent, Session: session},
			[]transcript.Message{{Role: transcript.RoleUser, Text: text}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func recallIDs(t *testing.T, v *Vault, q string) []string {
	t.Helper()
	res, err := v.Recall(RecallOptions{Query: q, Agent: v.Config.Agent, AllThreads: true, Tier: TierTranscripts, Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, h := range res.Hits {
		out = append(out, h.Text)
	}
	return out
}

// Appends after the index was built are found through the journal alone:
// the reader stats only the parts it names, and a catch-up empties it.
func TestTranscriptJournal(t *testing.T) {
	v := newVault(t)
	appendMessage(t, v, "s1", "the wombat ledger was reconciled")
	if _, err := v.Reindex(nil); err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(v.partDir(transcriptPart), journalFile)
	if data, _ := os.ReadFile(journal); len(data) != 0 {
		t.Fatalf("journal after a reindex: %q", data)
	}

	appendMessage(t, v, "s2", "a wombat crossed the parking lot")
	data, _ := os.ReadFile(journal)
	if want := "transcripts/" + v.Config.Agent + "/s2.jsonl\n"; string(data) != want {
		t.Fatalf("journal = %q, want %q", data, want)
	}
	if got := recallIDs(t, v, "wombat"); len(got) != 2 {
		t.Fatalf("recall found %d of 2 messages: %q", len(got), got)
	}

	// A part the journal does not name is not looked at: the index trusts
	// its watermarks for it (files that arrive outside memvault, by git
	// pull or a copy, are indexed by reindex).
	os.WriteFile(journal, nil, 0o600)
	if got := recallIDs(t, v, "wombat"); len(got) != 1 {
		t.Fatalf("with the journal emptied by hand, recall found %q; want only the indexed message", got)
	}
	if _, err := v.Reindex(nil); err != nil {
		t.Fatal(err)
	}

	// Past catchUpBytes the reader brings the index up to date under the
	// lock and empties the journal.
	long := strings.Repeat("filler words about nothing in particular ", 40)
	n := 0
	for ; int64(n*len(long)) <= catchUpBytes; n++ {
		appendMessage(t, v, fmt.Sprintf("bulk-%d", n%7), long+fmt.Sprintf("wombat %d", n))
	}
	if got := recallIDs(t, v, "wombat"); len(got) != n+2 {
		t.Fatalf("after a catch-up recall found %d messages, want %d", len(got), n+2)
	}
	if data, _ := os.ReadFile(journal); len(data) != 0 {
		t.Fatalf("journal after a catch-up: %d bytes", len(data))
	}
	res, err := v.Recall(RecallOptions{Query: "wombat", Agent: v.Config.Agent, AllThreads: true, Tier: TierTranscripts, Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, h := range res.Hits {
		if seen[h.ID] {
			t.Fatalf("message %s returned twice", h.ID)
		}
		seen[h.ID] = true
	}
}
