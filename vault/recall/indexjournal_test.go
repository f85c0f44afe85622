package recall

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memvault/memvault/index"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/transcript"
)

// indexedBytes is how many bytes of transcript the transcript index holds.
func indexedBytes(t *testing.T, v *vault.Vault) int64 {
	t.Helper()
	meta, err := index.ReadMeta(partDir(v, transcriptPart))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, m := range meta.Watermarks {
		n += m
	}
	return n
}

// appendMessages appends texts to a session in one transaction.
func appendMessages(t testing.TB, v *vault.Vault, session string, texts ...string) {
	t.Helper()
	var msgs []transcript.Message
	for _, s := range texts {
		msgs = append(msgs, transcript.Message{Role: transcript.RoleUser, Text: s})
	}
	_, err := v.Update(vault.TxOptions{NoCommit: true}, func(tx *vault.Tx) error {
		_, _, err := tx.AppendText(transcript.Ref{Agent: v.Config.Agent, Session: session}, msgs)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A recall while a writer holds the vault lock neither waits for it nor
// misses anything: it answers at once, with the text written just before,
// and catches the index up under the index lock meanwhile.
func TestRecallWhileVaultLocked(t *testing.T) {
	v := testvault.New(t)
	testvault.AppendMessage(t, v, "s1", "the quokka gate opened early")
	if _, err := Reindex(v, nil); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("filler words about nothing in particular ", 40)
	n := 0
	for ; int64(n*len(long)) <= 2*catchUpBytes; n++ {
		testvault.AppendMessage(t, v, fmt.Sprintf("bulk-%d", n%5), long+fmt.Sprintf("quokka %d", n))
	}
	testvault.AppendMessage(t, v, "s9", "one more quokka, written just before the lock was taken")
	before := indexedBytes(t, v)

	held, free := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		_, err := v.Update(vault.TxOptions{Command: "test holds the lock"}, func(*vault.Tx) error {
			close(held)
			<-free
			return nil
		})
		done <- err
	}()
	<-held
	if _, busy := vault.ReadLease(v.Root); !busy {
		t.Fatal("the vault lock is not held")
	}
	start := time.Now()
	got := recallIDs(t, v, "quokka")
	took := time.Since(start)
	if _, busy := vault.ReadLease(v.Root); !busy {
		t.Fatal("the vault lock was released during the recall")
	}
	after := indexedBytes(t, v)
	close(free)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	if len(got) != n+2 {
		t.Fatalf("with the vault locked recall found %d messages, want %d", len(got), n+2)
	}
	if !strings.Contains(strings.Join(got, "\n"), "written just before") {
		t.Fatal("recall missed the text written just before the lock was taken")
	}
	// The vault's lock timeout is seconds; a recall that waited for it
	// would take at least that.
	if limit, _ := v.LockTimeout(); took >= limit {
		t.Fatalf("recall took %s with the vault locked (lock timeout %s)", took, limit)
	}
	if after <= before {
		t.Fatalf("no catch-up under the index lock while the vault was locked: %d bytes indexed before, %d after", before, after)
	}
}

// A recall catches the index up by at most recallCatchUpBytes (and one
// file), searches the rest in memory, and still finds everything. The
// bound is lowered to a quarter, still twice catchUpBytes, so that three
// bounds' worth of transcript is written and indexed in a quarter of the
// time under -race; the code and the checks are those of the real bound.
func TestRecallCatchUpIsBounded(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	if got := recallCatchUp(v); got != recallCatchUpBytes {
		t.Fatalf("a vault's recall catch-up bound is %d, want recallCatchUpBytes (%d)", got, recallCatchUpBytes)
	}
	const bound = recallCatchUpBytes / 4
	if bound <= catchUpBytes {
		t.Fatalf("the lowered bound %d must stay above catchUpBytes (%d)", bound, catchUpBytes)
	}
	v.RecallStep = bound
	testvault.AppendMessage(t, v, "s0", "the numbat started here")
	if _, err := Reindex(v, nil); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("filler words about nothing in particular ", 100) // 4 KiB
	total, n := int64(0), 0
	var largest int64
	for s := 0; total <= 3*bound; s++ {
		var texts []string
		for range 24 {
			texts = append(texts, long+fmt.Sprintf("numbat %d", n))
			n++
		}
		appendMessages(t, v, fmt.Sprintf("bulk-%d", s), texts...)
		info, err := os.Stat(filepath.Join(v.Root, "transcripts", v.Config.Agent, fmt.Sprintf("bulk-%d.jsonl", s)))
		if err != nil {
			t.Fatal(err)
		}
		total += info.Size()
		largest = max(largest, info.Size())
	}
	for round := 1; ; round++ {
		before := indexedBytes(t, v)
		if got := recallIDs(t, v, "numbat"); len(got) != n+1 {
			t.Fatalf("round %d: recall found %d messages, want %d", round, len(got), n+1)
		}
		step := indexedBytes(t, v) - before
		if step > bound+largest {
			t.Fatalf("round %d: a recall indexed %d bytes; the bound is %d and one file (%d)", round, step, bound, largest)
		}
		if step == 0 {
			if round < 3 {
				t.Fatalf("%d bytes behind were caught up in %d recalls: not bounded", total, round-1)
			}
			break
		}
	}
	if done, err := CatchUpIndex(v, 0); !done || err != nil {
		t.Fatalf("catch-up: %v %v", done, err)
	}
	ix, err := index.Open(partDir(v, transcriptPart), true, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if sources, marks, err := pastWatermarks(v, transcriptPart, ix.Meta); err != nil || pending(sources, marks) != 0 {
		t.Fatalf("after CatchUpIndex, %d bytes pending (%v)", pending(sources, marks), err)
	}
}

// The journal promise: catch-ups racing a writer never lose a line it
// appends, so recall finds every message afterwards, and so does the index
// alone once caught up.
func TestJournalRacesCatchUp(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	testvault.AppendMessage(t, v, "s0", "the index starts with one message")
	if _, err := Reindex(v, nil); err != nil {
		t.Fatal(err)
	}
	const writes = 120
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer close(stop)
		for i := range writes {
			_, err := v.Update(vault.TxOptions{NoCommit: true}, func(tx *vault.Tx) error {
				_, _, err := tx.AppendText(transcript.Ref{Agent: v.Config.Agent, Session: fmt.Sprintf("race-%d", i%4)},
					[]transcript.Message{{Role: transcript.RoleUser, Text: fmt.Sprintf("pangolin message %d", i)},
						{Role: transcript.RoleAssistant, Text: fmt.Sprintf("pangolin reply %d", i)}})
				return err
			})
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	catchUps := 0
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			// A budget of one byte: a source at a time, so the mark
			// often stops at a line whose text is not indexed yet.
			if _, err := catchUpPart(v, transcriptPart, 1, false); err != nil && !vault.IsBusy(err) {
				t.Error(err)
				return
			}
			catchUps++
		}
	}()
	wg.Wait()
	if catchUps < 10 {
		t.Logf("only %d catch-ups raced the writer", catchUps)
	}
	want := 2 * writes
	check := func(when string) {
		t.Helper()
		got := recallIDs(t, v, "pangolin")
		if len(got) != want {
			t.Fatalf("%s: recall found %d of %d messages", when, len(got), want)
		}
	}
	check("after the race")
	for range 3 {
		if _, err := catchUpPart(v, transcriptPart, 1, false); err != nil {
			t.Fatal(err)
		}
	}
	check("after more bounded catch-ups")
	if done, err := CatchUpIndex(v, 0); !done || err != nil {
		t.Fatalf("catch-up: %v %v", done, err)
	}
	ix, err := index.Open(partDir(v, transcriptPart), true, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	hits, err := index.Search([]*index.Index{ix}, index.Query{Text: "pangolin", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != want {
		t.Fatalf("the caught-up index alone holds %d of %d messages", len(hits), want)
	}
	if info, _ := os.Stat(v.JournalPath()); ix.Meta.Journal.Off != info.Size() {
		t.Fatalf("caught up, the mark is %+v; the journal has %d bytes", ix.Meta.Journal, info.Size())
	}
}

// A compaction keeps the lines the index does not cover, under a new
// generation, and a reader with the old mark reads the new journal whole.
func TestJournalCompaction(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	testvault.AppendMessage(t, v, "s0", "the okapi opens the index")
	if _, err := Reindex(v, nil); err != nil {
		t.Fatal(err)
	}
	i := 0
	for ; ; i++ {
		testvault.AppendMessage(t, v, fmt.Sprintf("c-%d", i%3), fmt.Sprintf("okapi number %d", i))
		if i%40 == 39 {
			if _, err := catchUpPart(v, transcriptPart, 0, false); err != nil {
				t.Fatal(err)
			}
		}
		if info, _ := os.Stat(v.JournalPath()); info.Size() > vault.JournalCompactBytes {
			break
		}
	}
	meta, _ := index.ReadMeta(partDir(v, transcriptPart))
	old := readJournal(v, index.JournalMark{}).gen
	testvault.AppendMessage(t, v, "c-new", "okapi after the compaction")
	j := readJournal(v, meta.Journal)
	if j.gen == old {
		t.Fatal("the journal was not compacted")
	}
	if info, _ := os.Stat(v.JournalPath()); info.Size() > vault.JournalCompactBytes/2 {
		t.Fatalf("compacted journal of %d bytes", info.Size())
	}
	if got := recallIDs(t, v, "okapi"); len(got) != i+3 {
		t.Fatalf("after a compaction recall found %d of %d messages", len(got), i+3)
	}
}

// A part cut back by a failed transaction after a catch-up indexed its
// text, then written again, is indexed again from where it was cut: the new
// line's size before is below the watermark.
func TestJournalRewrittenPart(t *testing.T) {
	v := testvault.New(t)
	testvault.AppendMessage(t, v, "s0", "first message of the part")
	if _, err := Reindex(v, nil); err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(v.Root, "transcripts", v.Config.Agent, "s0.jsonl")
	info, _ := os.Stat(part)
	cut := info.Size()
	testvault.AppendMessage(t, v, "s0", "the tapir text that a failed transaction takes back")
	if _, err := catchUpPart(v, transcriptPart, 0, false); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(part, cut); err != nil { // what the rollback does
		t.Fatal(err)
	}
	testvault.AppendMessage(t, v, "s0", "a kinkajou: the text written in its place")
	if got := recallIDs(t, v, "kinkajou"); len(got) != 1 {
		t.Fatalf("before a catch-up, recall found %q", got)
	}
	if _, err := catchUpPart(v, transcriptPart, 0, false); err != nil {
		t.Fatal(err)
	}
	if got := recallIDs(t, v, "kinkajou"); len(got) != 1 {
		t.Fatalf("after a catch-up, recall found %q", got)
	}
	if got := recallIDs(t, v, "tapir"); len(got) != 0 {
		t.Fatalf("text taken back is still found: %q", got)
	}
}

// BenchmarkCatchUp measures how fast a catch-up indexes transcript text;
// recallCatchUpBytes is chosen from it.
func BenchmarkCatchUp(b *testing.B) {
	v, _, err := vault.Init(filepath.Join(b.TempDir(), vault.DirName))
	if err != nil {
		b.Fatal(err)
	}
	appendMessages(b, v, "s0", "a start")
	if _, err := Reindex(v, nil); err != nil {
		b.Fatal(err)
	}
	words := strings.Fields("the build failed because the cache key ignored the go version so we pinned it and reran the job which passed")
	// About 256 KiB of messages per catch-up.
	const perOp = 512
	var bytes int64
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		var texts []string
		for k := range perOp {
			var sb strings.Builder
			for w := range 60 {
				sb.WriteString(words[(i*7+k*3+w)%len(words)] + " ")
			}
			fmt.Fprintf(&sb, "marker%d", i*perOp+k)
			texts = append(texts, sb.String())
		}
		appendMessages(b, v, fmt.Sprintf("s%d", i%8), texts...)
		before := indexedBytesB(b, v)
		b.StartTimer()
		if _, err := catchUpPart(v, transcriptPart, 0, false); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		bytes += indexedBytesB(b, v) - before
		b.StartTimer()
	}
	b.SetBytes(bytes / int64(b.N))
}

func indexedBytesB(b *testing.B, v *vault.Vault) int64 {
	meta, err := index.ReadMeta(partDir(v, transcriptPart))
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, m := range meta.Watermarks {
		n += m
	}
	return n
}

// Without a transcript index the journal still stays small: a compaction
// keeps no line, since the build to come lists every part.
func TestJournalCompactionWithoutIndex(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	for i := 0; i < 400; i++ {
		testvault.AppendMessage(t, v, "s0", fmt.Sprintf("a message no index holds, number %d", i))
	}
	info, err := os.Stat(v.JournalPath())
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() > vault.JournalCompactBytes+1024 {
		t.Fatalf("journal of %d bytes without an index", info.Size())
	}
	if got := recallIDs(t, v, "index holds"); len(got) != 400 {
		t.Fatalf("recall built the index and found %d of 400 messages", len(got))
	}
}

// journalWriter appends messages naming word, each a line of the journal
// (a transaction's messages go to five sessions), ten to a session: a line
// dropped wrongly names a part no later line names, so its text is lost.
// The long session names make few messages fill the journal.
type journalWriter struct {
	t    *testing.T
	v    *vault.Vault
	word string
	n    int
}

func (w *journalWriter) write(k int) {
	w.t.Helper()
	_, err := w.v.Update(vault.TxOptions{NoCommit: true}, func(tx *vault.Tx) error {
		for range k {
			ref := transcript.Ref{Agent: w.v.Config.Agent, Session: fmt.Sprintf("a-session-with-a-long-name-so-that-its-journal-lines-are-long-%d-%d", w.n/50, w.n%5)}
			if _, _, err := tx.AppendText(ref, []transcript.Message{{Role: transcript.RoleUser, Text: fmt.Sprintf("%s number %d", w.word, w.n)}}); err != nil {
				return err
			}
			w.n++
		}
		return nil
	})
	if err != nil {
		w.t.Fatal(err)
	}
}

// fill writes until the journal is past size bytes.
func (w *journalWriter) fill(size int64) {
	w.t.Helper()
	for {
		if info, err := os.Stat(w.v.JournalPath()); err == nil && info.Size() > size {
			return
		}
		w.write(5)
	}
}

// everyMessageFound checks that recall finds each of the writer's messages,
// and that the index alone holds them all once caught up.
func (w *journalWriter) everyMessageFound(when string) {
	w.t.Helper()
	if got := recallIDs(w.t, w.v, w.word); len(got) != w.n {
		w.t.Fatalf("%s: recall found %d of %d messages", when, len(got), w.n)
	}
	if done, err := CatchUpIndex(w.v, 0); !done || err != nil {
		w.t.Fatalf("%s: catch-up: %v %v", when, done, err)
	}
	ix, err := index.Open(partDir(w.v, transcriptPart), true, time.Second)
	if err != nil {
		w.t.Fatal(err)
	}
	defer ix.Close()
	hits, err := index.Search([]*index.Index{ix}, index.Query{Text: w.word, Limit: 1000})
	if err != nil {
		w.t.Fatal(err)
	}
	if len(hits) != w.n {
		w.t.Fatalf("%s: the caught-up index alone holds %d of %d messages", when, len(hits), w.n)
	}
}

// A compaction between a catch-up's read of the journal and its save
// leaves the catch-up's coverage file of the old generation, which the next
// compaction must not drop lines of the new one by: were it taken for the
// new generation, it would claim most of its lines, which no index holds.
func TestJournalCompactionBetweenReadAndSave(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	w := &journalWriter{t: t, v: v, word: "serval"}
	w.write(1)
	if _, err := Reindex(v, nil); err != nil {
		t.Fatal(err)
	}
	w.fill(vault.JournalCompactBytes / 2)
	if _, err := catchUpPart(v, transcriptPart, 0, false); err != nil {
		t.Fatal(err)
	}
	meta, err := index.ReadMeta(partDir(v, transcriptPart))
	if err != nil {
		t.Fatal(err)
	}
	covered, err := os.ReadFile(filepath.Join(partDir(v, transcriptPart), "journal-covered"))
	if want := fmt.Sprintf("\t%s\t%d\t\n", meta.Journal.Gen, meta.Journal.Seen); err != nil || !strings.HasSuffix(string(covered), want) {
		t.Fatalf("a caught-up index's coverage file is %q (%v); want it to end %q", covered, err, want)
	}
	w.fill(vault.JournalCompactBytes)

	// A catch-up starts: under the index lock, it reads the journal.
	release, err := lockIndex(v, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := openIndex(v, partDir(v, transcriptPart), false, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	j := readJournal(v, ix.Meta.Journal)
	// A writer compacts the journal meanwhile, and more writers follow.
	w.write(1)
	if readJournal(v, index.JournalMark{}).gen == j.gen {
		t.Fatal("the journal was not compacted")
	}
	w.write(5)
	// The catch-up goes on with what it read, and saves.
	sources, from, present := journalSources(v, j, ix.Meta.Watermarks, true)
	ix.Meta.Watermarks = from
	if _, err := syncIndex(v, ix, sources, 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := saveJournalMark(v, ix, j, present); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	release()

	// The new generation grows past the compaction with no catch-up, and
	// is compacted by the stale coverage file.
	gen := readJournal(v, index.JournalMark{}).gen
	w.fill(vault.JournalCompactBytes)
	w.write(1)
	if readJournal(v, index.JournalMark{}).gen == gen {
		t.Fatal("the journal was not compacted again")
	}
	w.everyMessageFound("after a compaction raced a catch-up")
}

// A coverage file left behind by an index that is gone claims nothing the
// index to come relies on: an unusable index is rebuilt from every part,
// and one built again by reindex meets a journal of a new generation.
func TestJournalCoverageOfAGoneIndex(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	w := &journalWriter{t: t, v: v, word: "caracal"}
	w.write(1)
	if _, err := Reindex(v, nil); err != nil {
		t.Fatal(err)
	}
	w.fill(vault.JournalCompactBytes / 2)
	if _, err := catchUpPart(v, transcriptPart, 0, false); err != nil {
		t.Fatal(err)
	}
	coverage := filepath.Join(partDir(v, transcriptPart), "journal-covered")
	covered, err := os.ReadFile(coverage)
	if err != nil {
		t.Fatal(err)
	}

	// The index made unusable (a damaged meta, a new mapping version),
	// its coverage file left: the compaction drops what it claims.
	if err := os.WriteFile(filepath.Join(partDir(v, transcriptPart), "meta.gob"), []byte("damaged"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.fill(vault.JournalCompactBytes)
	w.write(1)
	w.everyMessageFound("after the index was damaged")

	// The index built again by reindex, which removes the journal, and the
	// old coverage file put back.
	if _, err := Reindex(v, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(coverage, covered, 0o600); err != nil {
		t.Fatal(err)
	}
	w.write(1)
	gen := readJournal(v, index.JournalMark{}).gen
	w.fill(vault.JournalCompactBytes)
	w.write(1)
	if readJournal(v, index.JournalMark{}).gen == gen {
		t.Fatal("the journal was not compacted")
	}
	w.everyMessageFound("after a reindex under an old coverage file")
}
