package continuity

import (
	"math/rand"
	"slices"
	"testing"
)

// TestEachContradictionMatchesEveryPair holds the prefix filter to the
// double loop it replaces: on random instructions over small vocabularies
// (so that pairs share words often, and contradictions happen), both find
// exactly the same pairs in the same order, and stopping early for an i
// stops at the same j.
func TestEachContradictionMatchesEveryPair(t *testing.T) {
	rng := rand.New(rand.NewSource(22))
	found := 0
	for round := 0; round < 400; round++ {
		vocab := 3 + rng.Intn(10)
		items := make([]instr, 1+rng.Intn(40))
		for i := range items {
			items[i].neg = rng.Intn(3) == 0
			items[i].core = map[string]bool{}
			for n := rng.Intn(7); n > 0; n-- {
				items[i].core[string(rune('a'+rng.Intn(vocab)))] = true
			}
		}
		var want, got, wantFirst, gotFirst [][2]int
		for i := range items {
			first := true
			for j := i + 1; j < len(items); j++ {
				if contradicts(items[i].neg, items[i].core, items[j].neg, items[j].core) {
					want = append(want, [2]int{i, j})
					if first {
						wantFirst, first = append(wantFirst, [2]int{i, j}), false
					}
				}
			}
		}
		eachContradiction(items, func(i, j int) bool { got = append(got, [2]int{i, j}); return true })
		eachContradiction(items, func(i, j int) bool { gotFirst = append(gotFirst, [2]int{i, j}); return false })
		if !slices.Equal(want, got) || !slices.Equal(wantFirst, gotFirst) {
			t.Fatalf("round %d: items %v\nevery pair: %v, first %v\nprefix filter: %v, first %v", round, items, want, wantFirst, got, gotFirst)
		}
		found += len(want)
	}
	if found < 100 {
		t.Fatalf("only %d contradictions in all rounds: the test compares too little", found)
	}
}
