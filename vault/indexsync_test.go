package vault

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/index"

	"github.com/memvault/memvault/hooks/transcript"
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
	res, err := v.Recall(RecallOptions{Query: q, Agent: v.Config.Agent, AllThreads: true, Tier: TierTranscripts, Limit: 500, Explain: true})
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
	v := newVault(t)
	appendMessage(t, v, "s1", "the wombat ledger was reconciled")
	if _, err := v.Reindex(nil); err != nil {
		t.Fatal(err)
	}
	journal := v.journalPath()
	if _, err := os.Stat(journal); !os.IsNotExist(err) {
		t.Fatalf("journal after a reindex: %v", err)
	}

	appendMessage(t, v, "s2", "a wombat crossed the parking lot")
	part := "transcripts/" + v.Config.Agent + "/s2.jsonl"
	info, err := os.Stat(filepath.Join(v.Root, part))
	if err != nil {
		t.Fatal(err)
	}
	j := v.readJournal(index.JournalMark{})
	if len(j.lines) != 1 || j.lines[0].rel != part || j.lines[0].before != 0 || j.lines[0].after != info.Size() {
		t.Fatalf("journal lines = %+v, want %s from 0 to %d", j.lines, part, info.Size())
	}
	if got := recallIDs(t, v, "wombat"); len(got) != 2 {
		t.Fatalf("recall found %d of 2 messages: %q", len(got), got)
	}

	// A part the journal does not name is not looked at: the index trusts
	// its watermarks for it (files that arrive outside memvault, by git
	// pull or a copy, are indexed by reindex).
	os.WriteFile(journal, []byte(journalMagic+"emptied\n"), 0o600)
	if got := recallIDs(t, v, "wombat"); len(got) != 1 {
		t.Fatalf("with the journal emptied by hand, recall found %q; want only the indexed message", got)
	}
	if _, err := v.Reindex(nil); err != nil {
		t.Fatal(err)
	}

	// Past catchUpBytes the reader brings the index up to date under the
	// index lock and moves the mark past every line.
	long := strings.Repeat("filler words about nothing in particular ", 40)
	n := 0
	for ; int64(n*len(long)) <= catchUpBytes; n++ {
		appendMessage(t, v, fmt.Sprintf("bulk-%d", n%7), long+fmt.Sprintf("wombat %d", n))
	}
	if got := recallIDs(t, v, "wombat"); len(got) != n+2 {
		t.Fatalf("after a catch-up recall found %d messages, want %d", len(got), n+2)
	}
	meta, err := index.ReadMeta(v.partDir(transcriptPart))
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(journal); meta.Journal.Off != info.Size() || meta.Journal.Seen != info.Size() {
		t.Fatalf("after a catch-up the mark is %+v; the journal has %d bytes", meta.Journal, info.Size())
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

// The folded scope is brought up to date from the events appended since it
// was saved, and gives what a full fold gives.
func TestScopeFoldsAppendedEvents(t *testing.T) {
	v := newVault(t)
	bind := func(session, thread string) {
		t.Helper()
		_, err := v.Update(TxOptions{}, func(tx *Tx) error {
			return tx.BindSession(TranscriptRef{Agent: v.Config.Agent, Session: session}, thread)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	bind("s1", "project:shop")
	if _, err := v.loadScope(); err != nil {
		t.Fatal(err)
	}
	bind("s2", "person:alice")
	remember(t, v, "a fact with no thread")
	bind("s1", "topic:billing")
	// Without the per-segment facts, only the incremental path can answer
	// without writing them again.
	os.Remove(stateFilePath(v.Root, scopeFactsFile))
	sc, err := v.loadScope()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stateFilePath(v.Root, scopeFactsFile)); err == nil {
		t.Fatal("the scope was folded from every segment, not from the appended events")
	}
	os.Remove(scopeView.path(v.Root))
	os.Remove(stateFilePath(v.Root, scopeFactsFile))
	full, err := v.loadScope()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"s1", "s2"} {
		got, want := sc.SessionThreads(v.Config.Agent, s), full.SessionThreads(v.Config.Agent, s)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("session %s: incremental %v, full %v", s, got, want)
		}
	}
	if got, want := sc.Threads(), full.Threads(); fmt.Sprint(got) != fmt.Sprint(want) || len(got) != 3 {
		t.Fatalf("threads: incremental %v, full %v", got, want)
	}
}

// A node written after the index was built is found at once, from its
// month folder's changed mtime; once the index holds it, the folder's mark
// keeps recall from listing the folder again.
func TestNodeFolderMarks(t *testing.T) {
	v := newVault(t)
	appendMessage(t, v, "s1", "we chose the capybara queue for billing")
	if _, err := v.Reindex(nil); err != nil {
		t.Fatal(err)
	}
	appendMessage(t, v, "s2", "the axolotl cache is warm now")
	_, err := v.Update(TxOptions{}, func(tx *Tx) error {
		_, _, err := tx.Summarize(TranscriptRef{Agent: v.Config.Agent, Session: "s2"}, SummaryOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := v.Recall(RecallOptions{Query: "axolotl", Agent: v.Config.Agent, AllThreads: true, Tier: TierHeads})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) == 0 || res.Hits[0].Kind != "session-summary" {
		t.Fatalf("the new node was not found: %+v", res.Hits)
	}
	if done, err := v.catchUpPart(lineagePart, 0, false); !done || err != nil {
		t.Fatalf("catch-up: %v", err)
	}
	ix, err := openLineage(v)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	nodes, err := v.nodeSources(ix.Meta.Watermarks)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 0 {
		t.Fatalf("after a catch-up, %d node sources listed; want none", len(nodes))
	}
	all, _ := v.nodeSources(nil)
	if len(all) != 2 { // the node and its folder's mark
		t.Fatalf("full listing: %+v", all)
	}
}

func openLineage(v *Vault) (*index.Index, error) {
	return index.Open(v.partDir(lineagePart), true, time.Second)
}

// The statuses recall gives rows, from the cached corrections, match a
// fold of the whole ledger (State.Status) after every kind of correction,
// with the cache fresh, stale or gone.
func TestRowStatusesFromCache(t *testing.T) {
	v := newVault(t)
	update := func(fn func(tx *Tx) error) {
		t.Helper()
		if _, err := v.Update(TxOptions{}, fn); err != nil {
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
			if s := st.Status(r); !correctionKinds[r.EffectiveKind()] && s != StatusActive {
				ids = append(ids, r.ID+"="+s)
			}
		}
		sort.Strings(ids)
		return fmt.Sprint(ids)
	}
	got := func() string {
		gone, err := v.rowStatuses()
		if err != nil {
			t.Fatal(err)
		}
		st, _ := v.LoadState()
		var ids []string
		for id, g := range gone {
			if r := st.Get(id); r != nil && !correctionKinds[r.EffectiveKind()] {
				ids = append(ids, id+"="+g.status)
			}
		}
		sort.Strings(ids)
		return fmt.Sprint(ids)
	}
	a := remember(t, v, "the cache lives on the shared disk")
	b := remember(t, v, "deploys happen on Tuesdays")
	c := remember(t, v, "the api answers in json")
	if got() != "[]" {
		t.Fatalf("dead rows before any correction: %s", got())
	}
	update(func(tx *Tx) error { _, err := tx.Retract(a.ID, "wrong"); return err })
	var sup *Event
	update(func(tx *Tx) error {
		var err error
		sup, err = tx.Supersede(b.ID, "deploys happen on Thursdays")
		return err
	})
	if g, w := got(), want(); g != w {
		t.Fatalf("dead rows %s, want %s", g, w)
	}
	// Retracting the supersede brings b back.
	update(func(tx *Tx) error { _, err := tx.Retract(sup.ID, "it was right"); return err })
	update(func(tx *Tx) error { _, err := tx.Supersede(c.ID, "the api answers in json or xml"); return err })
	if g, w := got(), want(); g != w {
		t.Fatalf("after more corrections: dead rows %s, want %s", g, w)
	}
	// Closing: a done next action, an invalidated learning, a closed
	// commitment, and a done that is retracted again (the row holds).
	var undo *Event
	update(func(tx *Tx) error {
		n, _ := tx.Remember(Input{Kind: "next", Text: "write the migration"})
		tx.Append(&Event{Kind: KindDone, Text: "wrote it", Links: []string{n.ID}})
		l, _ := tx.Remember(Input{Kind: "learning", Text: "retries hide bugs"})
		tx.Append(&Event{Kind: KindLearningInvalid, Text: "it did not", Links: []string{l.ID}})
		cm, _ := tx.OpenCommitment(Input{Text: "review the PR"})
		_, err := tx.CloseCommitment(cm.ID, "")
		n2, _ := tx.Remember(Input{Kind: "next", Text: "tag the release"})
		undo = tx.Append(&Event{Kind: KindDone, Links: []string{n2.ID}})
		return err
	})
	update(func(tx *Tx) error { _, err := tx.Retract(undo.ID, "not yet"); return err })
	if g, w := got(), want(); g != w {
		t.Fatalf("after closing rows: %s, want %s", g, w)
	}
	if !strings.Contains(want(), "=invalidated") || !strings.Contains(want(), "=closed") {
		t.Fatalf("the fold marks no invalidated or closed row: %s", want())
	}
	os.WriteFile(stateFilePath(v.Root, correctionFile), []byte("garbage"), 0o600)
	os.WriteFile(stateFilePath(v.Root, allCorrectionsFile), []byte("garbage"), 0o600)
	if g, w := got(), want(); g != w {
		t.Fatalf("with a damaged cache: dead rows %s, want %s", g, w)
	}
}

// The heads index follows every change of a head file: a word saved a
// moment ago is found, a word removed is not.
func TestHeadsIndexFollowsEdits(t *testing.T) {
	v := newVault(t)
	remember(t, v, "something to index")
	if _, err := v.Reindex(nil); err != nil {
		t.Fatal(err)
	}
	heads := func(q string) int {
		t.Helper()
		res, err := v.Recall(RecallOptions{Query: q, Agent: v.Config.Agent, AllThreads: true, Tier: TierHeads})
		if err != nil {
			t.Fatal(err)
		}
		return len(res.Hits)
	}
	p := filepath.Join(v.Root, MemoryHead)
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
	if _, err := os.Stat(filepath.Join(v.partDir(headsPart), "meta.gob")); err != nil {
		t.Fatalf("no heads index: %v", err)
	}
}

func TestSegmentSessionsAndLinks(t *testing.T) {
	data := []byte(`{"id":"e_1","links":["n_a","e_\"q"],"session":"s-1"}` + "\n" +
		`{"id":"e_2","links":[],"session":"s\\2"}` + "\n" + `{"id":"e_3","links":["n_a"]}` + "\n")
	if got := fmt.Sprint(stringsAfter(data, `"session":`)); got != `[s-1 s\2]` {
		t.Errorf("sessions %s", got)
	}
	if got := fmt.Sprint(linksIn(data)); got != `[e_"q n_a]` {
		t.Errorf("links %s", got)
	}
}

func TestScopeCodecRoundTrip(t *testing.T) {
	sc := &Scope{folded: [][3]string{{"", "", ""}, {"a", "s\t2", "person:é"}, {"a", "s1", "project:x"}},
		sessionThreads: map[[2]string]map[string]bool{{"b", "s3"}: {"topic:y": true}},
		pairs:          [][2]string{{"project:x", "person:é"}}, known: map[string]bool{"project:x": true}}
	var e encoder
	encodeScope(&e, sc)
	got, ok := decodeScope(newDecoder(e.b))
	want := &Scope{folded: sc.sessions(), sessionThreads: map[[2]string]map[string]bool{}, pairs: sc.pairs, known: sc.known}
	if !ok || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("round trip: %v %+v", ok, got)
	}
	for i := range len(e.b) {
		if d := newDecoder(e.b[:i:i]); func() bool { _, ok := decodeScope(d); return ok && d.done() }() {
			t.Fatalf("a cut at %d of %d bytes decoded", i, len(e.b))
		}
	}
}

// A filtered load marks each row it returns exactly as the full fold does,
// though it reads only the corrections of those rows (and theirs), and
// they sit in other segments than their targets.
func TestFilteredLoadMarksLikeFull(t *testing.T) {
	t.Parallel()
	v := newVault(t)
	v.Config.Ledger.SegmentBytes = 1024
	update := func(fn func(tx *Tx) error) {
		t.Helper()
		if _, err := v.Update(TxOptions{}, fn); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	for i := range 12 {
		ids = append(ids, remember(t, v, fmt.Sprintf("fact number %d, padded to fill segments quickly", i)).ID)
	}
	var open *Event
	update(func(tx *Tx) error {
		var err error
		open, err = tx.OpenCommitment(Input{Text: "ship the release notes"})
		return err
	})
	var sup, cl *Event
	update(func(tx *Tx) error { _, err := tx.Retract(ids[1], "wrong"); return err })
	update(func(tx *Tx) error {
		var err error
		sup, err = tx.Supersede(ids[2], "fact number 2, corrected")
		return err
	})
	update(func(tx *Tx) error { _, err := tx.Retract(sup.ID, "the first version was right"); return err })
	update(func(tx *Tx) error {
		var err error
		cl, err = tx.CloseCommitment(open.ID, "done")
		return err
	})
	update(func(tx *Tx) error { _, err := tx.Retract(cl.ID, "not done after all"); return err })
	update(func(tx *Tx) error { _, err := tx.Supersede(ids[5], "fact number 5, corrected"); return err })
	for i := range 6 {
		remember(t, v, fmt.Sprintf("later fact %d, padded to fill segments quickly", i))
	}
	if segs, _, _ := listSegments(v.Root); len(segs) < 3 {
		t.Fatalf("want the corrections spread over segments, got %v", segs)
	}

	full, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	marks := func(r *Row) string { return r.RetractedBy + "/" + r.SupersededBy + "/" + r.ClosedBy }
	order := map[string]int{}
	for i, r := range full.Rows {
		order[r.ID] = i
	}
	for _, want := range full.Rows {
		for round := range 2 { // with the caches cold, then warm
			st, err := v.loadState([][]byte{[]byte(`"id":"` + want.ID + `"`)})
			if err != nil {
				t.Fatal(err)
			}
			got := st.Get(want.ID)
			if got == nil {
				t.Fatalf("round %d: filtered load lost %s", round, want.ID)
			}
			if marks(got) != marks(want) || got.File != want.File || got.Line != want.Line {
				t.Errorf("round %d: %s (%s) is %s at %s:%d, want %s at %s:%d", round, want.ID, want.Kind,
					marks(got), got.File, got.Line, marks(want), want.File, want.Line)
			}
			for i := 1; i < len(st.Rows); i++ {
				if a, b := st.Rows[i-1], st.Rows[i]; order[a.ID] > order[b.ID] {
					t.Fatalf("rows out of ledger order: %s:%d before %s:%d", a.File, a.Line, b.File, b.Line)
				}
			}
		}
		os.Remove(stateFilePath(v.Root, allCorrectionsFile))
	}
	if r := full.Get(ids[2]); !r.Current() {
		t.Fatalf("a retracted supersede should leave its target current: %+v", r)
	}
	if r := full.Get(open.ID); r.ClosedBy != "" {
		t.Fatalf("a retracted close should reopen: %+v", r)
	}
}
