package render

import (
	"strings"
	"testing"
)

// A session summarised again after it went on (a resumed session) is listed
// once, by its latest summary; other sessions and other node kinds are not
// affected.
func TestLatestSessionSummaryOnly(t *testing.T) {
	in := Input{MemoryTokens: 1000, ThreadTokens: 1000, Nodes: []Node{
		{ID: "n_old", Kind: "session-summary", Session: "s1", TS: "2026-11-22T10:00:00.000Z", Text: "first span", Threads: []string{"project:x"}},
		{ID: "n_other", Kind: "session-summary", Session: "s2", TS: "2026-11-22T10:30:00.000Z", Text: "another session", Threads: []string{"project:x"}},
		{ID: "n_cmp", Kind: "compaction", Session: "s1", TS: "2026-11-22T10:40:00.000Z", Text: "compacted", Threads: []string{"project:x"}},
		{ID: "n_new", Kind: "session-summary", Session: "s1", TS: "2026-11-22T11:00:00.000Z", Text: "whole session", Threads: []string{"project:x"}},
	}}
	mem, err := Memory(in)
	if err != nil {
		t.Fatal(err)
	}
	th, err := Thread(in, "project:x")
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string]string{"MEMORY.md": string(mem.Bytes), "thread head": string(th.Bytes)} {
		if strings.Contains(doc, "n_old") {
			t.Errorf("%s lists the superseded summary:\n%s", name, doc)
		}
		for _, id := range []string{"n_new", "n_other", "n_cmp"} {
			if !strings.Contains(doc, id) {
				t.Errorf("%s lacks %s:\n%s", name, id, doc)
			}
		}
	}
}

// A period condensed again (docs/LINEAGE.md, "Cadence": a late session, a
// second clone's node) is listed once, by its newest node, in MEMORY.md
// and in a thread head; another period, a title that only looks like one
// and another thread's node of the same period are not affected.
func TestLatestCondensedNodeOfAPeriodOnly(t *testing.T) {
	in := Input{MemoryTokens: 1000, ThreadTokens: 1000, Nodes: []Node{
		{ID: "n_w1", Kind: "condensed", TS: "2020-01-15T09:01:00.000Z", Text: "2020-W03: 1 nodes", Threads: []string{"project:x"}},
		{ID: "n_odd", Kind: "condensed", TS: "2020-01-15T09:02:00.000Z", Text: "2020-W3x: 1 nodes", Threads: []string{"project:x"}},
		{ID: "n_w2", Kind: "condensed", TS: "2020-01-16T10:01:00.000Z", Text: "2020-W03: 2 nodes", Threads: []string{"project:x"}},
	}}
	for name, want := range map[string][]string{"MEMORY.md": {"n_w2", "n_odd"}, "project:x": {"n_w2", "n_odd"}, "project:y": {"n_y"}} {
		var doc *Doc
		var err error
		if name == "MEMORY.md" {
			doc, err = Memory(in)
		} else {
			// project:y's own node of the week is older than x's newest
			in2 := in
			in2.Nodes = append([]Node{{ID: "n_y", Kind: "condensed", TS: "2020-01-14T09:00:00.000Z", Text: "2020-W03: 1 nodes", Threads: []string{"project:y"}}}, in.Nodes...)
			doc, err = Thread(in2, name)
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(doc.Bytes), "n_w1") {
			t.Errorf("%s lists the superseded week node:\n%s", name, doc.Bytes)
		}
		for _, id := range want {
			if !strings.Contains(string(doc.Bytes), id) {
				t.Errorf("%s lacks %s:\n%s", name, id, doc.Bytes)
			}
		}
	}
}
