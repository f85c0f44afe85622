package index

import (
	"path/filepath"
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
	ix.Meta.Version = MappingVersion + 1
	ix.SaveMeta()
	ix.Close()
	if _, err := Open(dir, true, time.Second); err == nil {
		t.Fatal("an index of another mapping version opened")
	}
	if _, err := Open(filepath.Join(t.TempDir(), "none"), true, time.Second); err == nil {
		t.Fatal("a missing index opened")
	}
}
