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
