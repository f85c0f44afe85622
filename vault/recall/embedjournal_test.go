package recall

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/embed"
	"github.com/memvault/memvault/vault/embed/embedtest"
	"github.com/memvault/memvault/vault/testvault"
)

// cachedIDs is the ids of the vector cache's documents, sorted.
func cachedIDs(t *testing.T, root string) ([]string, embed.JournalMark) {
	t.Helper()
	st := embed.Open(root, "fake", 0)
	defer st.Close()
	ids := make([]string, st.Len())
	for i := range ids {
		ids[i] = st.ID(i)
	}
	slices.Sort(ids)
	return ids, st.Journal
}

// The vector catch-up follows the transcript journal (it lists the parts
// only when the journal's generation changed): racing a writer that
// compacts the journal again and again, with the index caught up now and
// then (so that a compaction drops the lines it covers) and catch-ups of
// the vectors cut short by a budget of a millisecond, no message is left
// without its vector, and the cache holds exactly what a rebuild, which
// lists every part, finds. Caught up, its mark is at the journal's end.
func TestEmbedCatchUpFollowsTheJournal(t *testing.T) {
	srv := embedtest.New(32)
	defer srv.Close()
	v := testvault.New(t)
	testvault.AppendMessage(t, v, "s0", "a first message before the vectors")
	setEmbed(v, srv.URL(), "fake")
	if rep, err := CatchUpEmbeddings(context.Background(), v, 0, false); err != nil || !rep.Done {
		t.Fatalf("first catch-up: %+v %v", rep, err)
	}
	if _, mark := cachedIDs(t, v.Root); mark.Gen == "" {
		t.Fatal("a catch-up left the cache without a journal mark: every catch-up lists the parts")
	}
	w := &journalWriter{t: t, v: v, word: "ocelot"}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			budget := time.Duration(0)
			if i%2 == 1 {
				budget = time.Millisecond
			}
			if _, err := CatchUpEmbeddings(context.Background(), v, budget, false); err != nil {
				t.Error(err)
				return
			}
			if i%3 == 0 {
				if _, err := CatchUpIndex(v, 0); err != nil && !vault.IsBusy(err) {
					t.Error(err)
					return
				}
			}
		}
	}()
	gens := map[string]bool{}
	for range 100 { // about 500 lines: three compactions or more
		w.write(5)
		gen, _, _ := v.ReadJournal("", 0)
		gens[gen] = true
	}
	close(stop)
	wg.Wait()
	rep, err := CatchUpEmbeddings(context.Background(), v, 0, false)
	if err != nil || !rep.Done {
		t.Fatalf("last catch-up: %+v %v", rep, err)
	}
	if len(gens) < 3 {
		t.Fatalf("the journal was compacted %d times, not enough to test", len(gens)-1)
	}
	got, mark := cachedIDs(t, v.Root)
	gen, _, end := v.ReadJournal("", 0)
	if mark.Gen != gen || mark.Off != end {
		t.Fatalf("caught up, the cache's mark is %+v; the journal is %s at %d", mark, gen, end)
	}
	// Within the generation, what the lines past the mark name.
	w.write(2)
	if again, _, _ := v.ReadJournal("", 0); again != gen {
		t.Fatal("compacted: the test needs the same generation")
	}
	if rep, err := CatchUpEmbeddings(context.Background(), v, 0, false); err != nil || rep.Embedded != 2 {
		t.Fatalf("a catch-up after two more messages: %+v %v", rep, err)
	}
	got, _ = cachedIDs(t, v.Root)
	if rep, err := CatchUpEmbeddings(context.Background(), v, 0, true); err != nil || rep.Requests != 0 {
		t.Fatalf("rebuild: %+v %v", rep, err)
	}
	want, _ := cachedIDs(t, v.Root)
	if len(want) != w.n+1 {
		t.Fatalf("the rebuild holds %d documents, want %d", len(want), w.n+1)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("following the journal, the cache holds %d documents; a rebuild %d", len(got), len(want))
	}
}

// Without the journal (removed, or a vault whose journal was lost) the
// catch-up lists the parts, and a message written after is embedded.
func TestEmbedCatchUpWithoutJournal(t *testing.T) {
	srv := embedtest.New(32)
	defer srv.Close()
	v := embedVault(t)
	setEmbed(v, srv.URL(), "fake")
	if rep, err := CatchUpEmbeddings(context.Background(), v, 0, false); err != nil || rep.Embedded != 6 {
		t.Fatalf("catch-up: %+v %v", rep, err)
	}
	if err := os.Remove(v.JournalPath()); err != nil {
		t.Fatal(err)
	}
	appendTurns(t, v, "s1", user("caroline", "a seventh turn"))
	if rep, err := CatchUpEmbeddings(context.Background(), v, 0, false); err != nil || rep.Embedded != 1 || rep.Vectors != 7 {
		t.Fatalf("catch-up after the journal was removed: %+v %v", rep, err)
	}
	if rep, err := CatchUpEmbeddings(context.Background(), v, 0, false); err != nil || rep.Requests != 0 {
		t.Fatalf("a catch-up with nothing to do: %+v %v", rep, err)
	}
	// No journal (as after a reindex): the mark is the time of its
	// folder, and a message appended and its journal removed again (a
	// reindex whose vectors were not rebuilt) since is still embedded.
	if err := os.Remove(v.JournalPath()); err != nil {
		t.Fatal(err)
	}
	if rep, err := CatchUpEmbeddings(context.Background(), v, 0, false); err != nil || rep.Requests != 0 {
		t.Fatalf("a catch-up with nothing to do: %+v %v", rep, err)
	}
	if _, mark := cachedIDs(t, v.Root); mark.Gen != "" || mark.Off == 0 {
		t.Fatalf("without a journal the mark is %+v, want the folder's time", mark)
	}
	for i := range 2 {
		time.Sleep(20 * time.Millisecond) // past the file system's clock tick
		appendTurns(t, v, "s2", user("mel", fmt.Sprintf("turn %d after the reindex", i)))
		if i == 0 {
			if err := os.Remove(v.JournalPath()); err != nil {
				t.Fatal(err)
			}
		}
		if rep, err := CatchUpEmbeddings(context.Background(), v, 0, false); err != nil || rep.Embedded != 1 || rep.Vectors != 8+i {
			t.Fatalf("turn %d: catch-up %+v %v", i, rep, err)
		}
	}
}
