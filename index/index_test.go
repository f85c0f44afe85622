package index

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestAnalyzeStemsAndDropsStopWords(t *testing.T) {
	got := Analyze("The migrations were running")
	want := map[string]bool{"migrat": true, "run": true}
	if len(got) != 2 || !want[got[0]] || !want[got[1]] {
		t.Fatalf("Analyze = %q", got)
	}
	if n := len(Analyze("the and of to")); n != 0 {
		t.Fatalf("stop words gave %d terms", n)
	}
}

// Analyze is a package function any goroutine may call; under -race this
// fails if the shared analyzer is built without synchronisation.
func TestAnalyzeConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got := Analyze("running migrations"); len(got) != 2 {
				t.Errorf("Analyze = %q", got)
			}
		}()
	}
	wg.Wait()
}

func TestSearchAcrossPersistentAndMemory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ix")
	disk, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	docs := []Doc{
		{ID: "a", Text: "the migration of the orders table", Tier: "transcripts", Agent: "x"},
		{ID: "b", Text: "lunch plans", Tier: "transcripts", Agent: "x"},
		{ID: "c", Text: "the migration, by another agent", Tier: "transcripts", Agent: "y"},
		{ID: "d", Text: "a migration decision", Tier: "structured", Agent: "x"},
	}
	if err := disk.Add(docs); err != nil {
		t.Fatal(err)
	}
	disk.Meta.Watermarks["f"] = 42
	if err := disk.SaveMeta(); err != nil {
		t.Fatal(err)
	}
	disk.Close()

	ro, err := Open(dir, true, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if ro.Meta.Watermarks["f"] != 42 {
		t.Fatalf("watermarks not kept: %v", ro.Meta.Watermarks)
	}
	mem, err := NewMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	if err := mem.Add([]Doc{{ID: "e", Text: "migrating the invoices", Tier: "transcripts", Agent: "x"}}); err != nil {
		t.Fatal(err)
	}
	// Query syntax characters are plain text, not operators.
	hits, err := Search([]*Index{ro, mem}, Query{Text: `+migrations -"orders*`, Tier: "transcripts", Agents: []string{"x"}, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, h := range hits {
		ids[h.ID] = true
	}
	if !ids["a"] || !ids["e"] || ids["b"] || ids["c"] || ids["d"] {
		t.Fatalf("hits %v: want a and e only (tier and agent filtered, stems matched)", hits)
	}
}

func TestOpenRefusesOtherMappingVersions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ix")
	ix, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	ix.Meta.Version = mappingVersion + 1
	ix.SaveMeta()
	ix.Close()
	if _, err := Open(dir, true, time.Second); err == nil {
		t.Fatal("an index of another mapping version opened")
	}
	if _, err := Open(filepath.Join(t.TempDir(), "none"), true, time.Second); err == nil {
		t.Fatal("a missing index opened")
	}
}

// Common words only add to the score of documents that hold a rarer word;
// a query of common words only needs documents that hold them all, unless
// too few do. The rule applies only past commonMinDocs documents, so the
// index is made big enough for apple and banana to pass it.
func TestCommonWords(t *testing.T) {
	mem, err := NewMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	var docs []Doc
	const n = 7000
	for i := range n {
		text := "filler"
		if i%2 == 0 {
			text += " apple"
		}
		if i%3 == 0 {
			text += " banana"
		}
		if i == 7 || i == 9 {
			text += " cherry" // 2 documents
		}
		docs = append(docs, Doc{ID: fmt.Sprintf("d%03d", i), Text: text, Tier: "transcripts", Agent: "x"})
	}
	if err := mem.Add(docs); err != nil {
		t.Fatal(err)
	}
	search := func(text string, enough int) map[string]bool {
		t.Helper()
		hits, err := Search([]*Index{mem}, Query{Text: text, Limit: n, Enough: enough})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, h := range hits {
			got[h.ID] = true
		}
		return got
	}
	if got := search("apple cherry", 0); len(got) != 2 || !got["d007"] || !got["d009"] {
		t.Errorf("apple cherry: %v, want the two documents with cherry", got)
	}
	// 1,167 documents hold both apple (i%2) and banana (i%3).
	if got := search("apple banana", 10); len(got) != 1167 {
		t.Errorf("apple banana: %d hits, want the 1167 with both", len(got))
	}
	// Too few hold both: any of them will do.
	if got := search("apple banana", 2000); len(got) != 4667 {
		t.Errorf("apple banana, 2000 wanted: %d hits, want the 4667 with either", len(got))
	}
}

// A word no document holds does not narrow the search to nothing.
func TestAbsentWordDoesNotNarrow(t *testing.T) {
	mem, err := NewMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	if err := mem.Add([]Doc{{ID: "a", Text: "the migration runs at night", Agent: "x"}, {ID: "b", Text: "lunch", Agent: "x"}}); err != nil {
		t.Fatal(err)
	}
	hits, err := Search([]*Index{mem}, Query{Text: "what did bobby say about the migration", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].ID != "a" {
		t.Fatalf("hits %v, want a", hits)
	}
}
