package recall

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault/codec"
	"github.com/memvault/memvault/vault/lineage"
	"github.com/memvault/memvault/vault/transcript"

	"github.com/memvault/memvault/index"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/testvault"
)

func recallIDs(t *testing.T, v *vault.Vault, q string) []string {
	t.Helper()
	res, err := Recall(v, RecallOptions{Query: q, Agent: v.Config.Agent, AllThreads: true, Tier: TierTranscripts, Limit: 500, Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, h := range res.Hits {
		// Only messages found by their own words or their context, not
		// the neighbours a hit lifts.
		if h.Why.Text > 0 {
			out = append(out, h.Text)
		}
	}
	return out
}

// Appends after the index was built are found through the journal alone:
// the reader stats only the parts it names from the index's mark on, and a
// catch-up moves the mark past the lines it covered.
func TestTranscriptJournal(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	testvault.AppendMessage(t, v, "s1", "the wombat ledger was reconciled")
	if _, err := Reindex(v, nil); err != nil {
		t.Fatal(err)
	}
	journal := v.JournalPath()
	if _, err := os.Stat(journal); !os.IsNotExist(err) {
		t.Fatalf("journal after a reindex: %v", err)
	}

	testvault.AppendMessage(t, v, "s2", "a wombat crossed the parking lot")
	part := "transcripts/" + v.Config.Agent + "/s2.jsonl"
	info, err := os.Stat(filepath.Join(v.Root, part))
	if err != nil {
		t.Fatal(err)
	}
	j := readJournal(v, index.JournalMark{})
	if len(j.lines) != 1 || j.lines[0].Rel != part || j.lines[0].Before != 0 || j.lines[0].After != info.Size() {
		t.Fatalf("journal lines = %+v, want %s from 0 to %d", j.lines, part, info.Size())
	}
	if got := recallIDs(t, v, "wombat"); len(got) != 2 {
		t.Fatalf("recall found %d of 2 messages: %q", len(got), got)
	}

	// A part the journal does not name is not looked at: the index trusts
	// its watermarks for it (files that arrive outside memvault, by git
	// pull or a copy, are indexed by reindex).
	data, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(data), "\n") // the journal's magic and generation
	os.WriteFile(journal, []byte(first+"-emptied\n"), 0o600)
	if got := recallIDs(t, v, "wombat"); len(got) != 1 {
		t.Fatalf("with the journal emptied by hand, recall found %q; want only the indexed message", got)
	}
	if _, err := Reindex(v, nil); err != nil {
		t.Fatal(err)
	}

	// Past catchUpBytes the reader brings the index up to date under the
	// index lock and moves the mark past every line.
	long := strings.Repeat("filler words about nothing in particular ", 40)
	n := 0
	for ; int64(n*len(long)) <= catchUpBytes; n++ {
		testvault.AppendMessage(t, v, fmt.Sprintf("bulk-%d", n%7), long+fmt.Sprintf("wombat %d", n))
	}
	if got := recallIDs(t, v, "wombat"); len(got) != n+2 {
		t.Fatalf("after a catch-up recall found %d messages, want %d", len(got), n+2)
	}
	meta, err := index.ReadMeta(partDir(v, transcriptPart))
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(journal); meta.Journal.Off != info.Size() || meta.Journal.Seen != info.Size() {
		t.Fatalf("after a catch-up the mark is %+v; the journal has %d bytes", meta.Journal, info.Size())
	}
	res, err := Recall(v, RecallOptions{Query: "wombat", Agent: v.Config.Agent, AllThreads: true, Tier: TierTranscripts, Limit: 500})
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

// A node written after the index was built is found at once, from its
// month folder's changed mtime; once the index holds it, the folder's mark
// keeps recall from listing the folder again.
func TestNodeFolderMarks(t *testing.T) {
	v := testvault.New(t)
	testvault.AppendMessage(t, v, "s1", "we chose the capybara queue for billing")
	if _, err := Reindex(v, nil); err != nil {
		t.Fatal(err)
	}
	testvault.AppendMessage(t, v, "s2", "the axolotl cache is warm now")
	_, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		_, _, err := lineage.Summarize(tx, transcript.Ref{Agent: v.Config.Agent, Session: "s2"}, lineage.SummaryOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Recall(v, RecallOptions{Query: "axolotl", Agent: v.Config.Agent, AllThreads: true, Tier: TierHeads})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) == 0 || res.Hits[0].Kind != "session-summary" {
		t.Fatalf("the new node was not found: %+v", res.Hits)
	}
	if done, err := catchUpPart(v, lineagePart, 0, false); !done || err != nil {
		t.Fatalf("catch-up: %v", err)
	}
	ix, err := openLineage(v)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	nodes, err := nodeSources(v, ix.Meta.Watermarks)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 0 {
		t.Fatalf("after a catch-up, %d node sources listed; want none", len(nodes))
	}
	all, _ := nodeSources(v, nil)
	if len(all) != 2 { // the node and its folder's mark
		t.Fatalf("full listing: %+v", all)
	}
}

func openLineage(v *vault.Vault) (*index.Index, error) {
	return index.Open(partDir(v, lineagePart), true, time.Second)
}

// The statuses recall gives rows, from the cached corrections, match a
// fold of the whole ledger (State.Status) after every kind of correction,
// with the cache fresh, stale or gone.
func TestRowStatusesFromCache(t *testing.T) {
	v := testvault.New(t)
	update := func(fn func(tx *vault.Tx) error) {
		t.Helper()
		if _, err := v.Update(vault.TxOptions{}, fn); err != nil {
			t.Fatal(err)
		}
	}
	want := func() string {
		st, err := v.LoadState()
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range st.Rows {
			if s := st.Status(r); !vault.CorrectionKinds[r.EffectiveKind()] && s != vault.StatusActive {
				ids = append(ids, r.ID+"="+s)
			}
		}
		sort.Strings(ids)
		return fmt.Sprint(ids)
	}
	got := func() string {
		gone, err := rowStatuses(v)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := v.LoadState()
		var ids []string
		for id, g := range gone {
			if r := st.Get(id); r != nil && !vault.CorrectionKinds[r.EffectiveKind()] {
				ids = append(ids, id+"="+g.status)
			}
		}
		sort.Strings(ids)
		return fmt.Sprint(ids)
	}
	a := testvault.Remember(t, v, "the cache lives on the shared disk")
	b := testvault.Remember(t, v, "deploys happen on Tuesdays")
	c := testvault.Remember(t, v, "the api answers in json")
	if got() != "[]" {
		t.Fatalf("dead rows before any correction: %s", got())
	}
	update(func(tx *vault.Tx) error { _, err := memory.Retract(tx, a.ID, "wrong"); return err })
	var sup *vault.Event
	update(func(tx *vault.Tx) error {
		var err error
		sup, err = memory.Supersede(tx, b.ID, "deploys happen on Thursdays")
		return err
	})
	if g, w := got(), want(); g != w {
		t.Fatalf("dead rows %s, want %s", g, w)
	}
	// Retracting the supersede brings b back.
	update(func(tx *vault.Tx) error { _, err := memory.Retract(tx, sup.ID, "it was right"); return err })
	update(func(tx *vault.Tx) error {
		_, err := memory.Supersede(tx, c.ID, "the api answers in json or xml")
		return err
	})
	if g, w := got(), want(); g != w {
		t.Fatalf("after more corrections: dead rows %s, want %s", g, w)
	}
	// Closing: a done next action, an invalidated learning, a closed
	// commitment, and a done that is retracted again (the row holds).
	var undo *vault.Event
	update(func(tx *vault.Tx) error {
		n, _ := memory.Remember(tx, memory.Input{Kind: "next", Text: "write the migration"})
		tx.Append(&vault.Event{Kind: vault.KindDone, Text: "wrote it", Links: []string{n.ID}})
		l, _ := memory.Remember(tx, memory.Input{Kind: "learning", Text: "retries hide bugs"})
		tx.Append(&vault.Event{Kind: vault.KindLearningInvalid, Text: "it did not", Links: []string{l.ID}})
		cm, _ := memory.OpenCommitment(tx, memory.Input{Text: "review the PR"})
		_, err := memory.CloseCommitment(tx, cm.ID, "")
		n2, _ := memory.Remember(tx, memory.Input{Kind: "next", Text: "tag the release"})
		undo = tx.Append(&vault.Event{Kind: vault.KindDone, Links: []string{n2.ID}})
		return err
	})
	update(func(tx *vault.Tx) error { _, err := memory.Retract(tx, undo.ID, "not yet"); return err })
	if g, w := got(), want(); g != w {
		t.Fatalf("after closing rows: %s, want %s", g, w)
	}
	if !strings.Contains(want(), "=invalidated") || !strings.Contains(want(), "=closed") {
		t.Fatalf("the fold marks no invalidated or closed row: %s", want())
	}
	os.WriteFile(codec.FilePath(v.Root, vault.CorrectionFile), []byte("garbage"), 0o600)
	os.WriteFile(codec.FilePath(v.Root, vault.AllCorrectionsFile), []byte("garbage"), 0o600)
	if g, w := got(), want(); g != w {
		t.Fatalf("with a damaged cache: dead rows %s, want %s", g, w)
	}
}

// The heads index follows every change of a head file: a word saved a
// moment ago is found, a word removed is not.
func TestHeadsIndexFollowsEdits(t *testing.T) {
	v := testvault.New(t)
	testvault.Remember(t, v, "something to index")
	if _, err := Reindex(v, nil); err != nil {
		t.Fatal(err)
	}
	heads := func(q string) int {
		t.Helper()
		res, err := Recall(v, RecallOptions{Query: q, Agent: v.Config.Agent, AllThreads: true, Tier: TierHeads})
		if err != nil {
			t.Fatal(err)
		}
		return len(res.Hits)
	}
	p := filepath.Join(v.Root, vault.MemoryHead)
	if err := os.WriteFile(p, []byte("# Memory\n\n## Notes\n\n- the pelican release is frozen\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n := heads("pelican"); n != 1 {
		t.Fatalf("pelican: %d hits, want 1", n)
	}
	later := time.Now().Add(time.Second) // an mtime that surely differs
	os.WriteFile(p, []byte("# Memory\n\n## Notes\n\n- the walrus release ships\n"), 0o600)
	os.Chtimes(p, later, later)
	if n := heads("pelican"); n != 0 {
		t.Fatalf("pelican after the edit: %d hits, want 0", n)
	}
	if n := heads("walrus"); n != 1 {
		t.Fatalf("walrus: %d hits, want 1", n)
	}
	if _, err := os.Stat(filepath.Join(partDir(v, headsPart), "meta.gob")); err != nil {
		t.Fatalf("no heads index: %v", err)
	}
}
