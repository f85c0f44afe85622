package recall

import (
	"slices"
	"testing"
)

// A head section is a duplicate only when every line matching the query
// points at a node; a line of its own that matches keeps it.
func TestPointerLines(t *testing.T) {
	const a, b = "n_01dymaan48eqvanwdxepxmtnzg", "n_01dym6x0b0aze2ymee9y9fz66d"
	sec := "## Drill down\n- `" + a + "` session-summary: Fix the parser test\n- `" + b + "` session-summary: deploy notes\n"
	if got := pointerLines(sec, "parser"); !slices.Equal(got, []string{a}) {
		t.Errorf("pointer only: %v", got)
	}
	if got := pointerLines(sec+"- the parser is flaky on CI, says Dana\n", "parser"); got != nil {
		t.Errorf("a line of its own matches: %v", got)
	}
	var s shownOnce
	head := Hit{ID: "MEMORY.md#8", Kind: "head", nodeRefs: []string{a}}
	if show, drop := s.add(head, nil); !show || drop != -1 {
		t.Errorf("head before its node: %v %d", show, drop)
	}
	if show, drop := s.add(Hit{ID: a, Kind: "session-summary"}, []Hit{head}); !show || drop != 0 {
		t.Errorf("node after its head: %v %d, want the head dropped", show, drop)
	}
	if show, _ := s.add(head, nil); show {
		t.Error("a head pointing at a shown node is shown")
	}
}
