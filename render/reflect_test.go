package render

import (
	"fmt"
	"strings"
	"testing"
)

// TestThreadReflectionsInLineage: a thread's reflections are listed in its
// head's Lineage, newest first before its nodes, and not in Notes;
// another thread's reflection does not bleed in; a global reflection stays
// a note of MEMORY.md.
func TestThreadReflectionsInLineage(t *testing.T) {
	in := Input{MemoryTokens: 4000, ThreadTokens: 4000,
		Items: []Item{
			{ID: "e_r1", Kind: "reflection", Thread: "project:shop", Text: "the first session went slowly", TS: "2026-11-20T10:00:00.000Z"},
			{ID: "e_f1", Kind: "fact", Thread: "project:shop", Text: "the shop sells tea", TS: "2026-11-20T10:30:00.000Z"},
			{ID: "e_r2", Kind: "reflection", Thread: "project:shop", Text: "smaller commits went better", TS: "2026-11-22T10:00:00.000Z"},
			{ID: "e_r3", Kind: "reflection", Thread: "project:other", Text: "OTHERTHREAD note", TS: "2026-11-22T11:00:00.000Z"},
			{ID: "e_r4", Kind: "reflection", Text: "a global reflection", TS: "2026-11-22T12:00:00.000Z"},
		},
		Nodes: []Node{
			{ID: "n_1", Kind: "session-summary", Session: "s1", TS: "2026-11-21T10:00:00.000Z", Text: "session s1", Threads: []string{"project:shop"}},
		},
	}
	d, err := Thread(in, "project:shop")
	if err != nil {
		t.Fatal(err)
	}
	head := string(d.Bytes)
	notes, lineage, _ := strings.Cut(head[strings.Index(head, "## Notes"):], "## Lineage")
	if strings.Contains(notes, "reflection") || !strings.Contains(notes, "the shop sells tea") {
		t.Errorf("Notes:\n%s", notes)
	}
	r2 := strings.Index(lineage, "- reflection: smaller commits went better (`e_r2`)")
	n1 := strings.Index(lineage, "`n_1`")
	r1 := strings.Index(lineage, "- reflection: the first session went slowly (`e_r1`)")
	if r2 < 0 || n1 < 0 || r1 < 0 || !(r2 < r1 && r1 < n1) {
		t.Errorf("Lineage: want the reflections newest first, then the node:\n%s", lineage)
	}
	if strings.Contains(head, "OTHERTHREAD") || strings.Contains(head, "a global reflection") {
		t.Errorf("another thread's or a global reflection bled in:\n%s", head)
	}
	mem, err := Memory(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mem.Bytes), "a global reflection") {
		t.Errorf("MEMORY.md lost the global reflection:\n%s", mem.Bytes)
	}
}

// TestThreadReflectionsBudget: many reflections are cut by the budget and
// accounted for in the Lineage section's report, the same with and
// without Explain.
func TestThreadReflectionsBudget(t *testing.T) {
	in := Input{MemoryTokens: 4000, ThreadTokens: 300}
	for i := 0; i < 500; i++ {
		in.Items = append(in.Items, Item{ID: fmt.Sprintf("e_%026d", i), Kind: "reflection", Thread: "project:shop",
			Text: fmt.Sprintf("reflection number %d", i), TS: fmt.Sprintf("2026-11-22T10:%02d:%02d.000Z", i/60, i%60)})
	}
	quick, err := Thread(in, "project:shop")
	if err != nil {
		t.Fatal(err)
	}
	in.Explain = true
	full, err := Thread(in, "project:shop")
	if err != nil {
		t.Fatal(err)
	}
	if string(quick.Bytes) != string(full.Bytes) {
		t.Fatal("the render differs with and without Explain")
	}
	if got := Tokens(string(full.Bytes)); got > 300 {
		t.Errorf("%d tokens over a budget of 300", got)
	}
	if !strings.Contains(string(full.Bytes), "reflection number 499") {
		t.Errorf("the newest reflection is not shown:\n%s", full.Bytes)
	}
	// Every reflection is accounted for: shown in the Lineage, or left
	// out (ranked with the notes) and listed with Explain.
	rows, listed := 0, map[string]bool{}
	for _, s := range full.Report.Sections {
		if s.Title == "Lineage" || s.Title == "Notes" {
			rows += s.Rows
			for _, d := range s.Dropped {
				listed[d.ID] = true
			}
		}
	}
	for i := 0; i < 500; i++ {
		id := fmt.Sprintf("e_%026d", i)
		if !listed[id] && !strings.Contains(string(full.Bytes), id) {
			t.Errorf("reflection %s neither shown nor listed as left out", id)
		}
	}
	if rows != 500 {
		t.Errorf("Notes and Lineage count %d rows, want 500", rows)
	}
}
