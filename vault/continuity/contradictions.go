package continuity

import "sort"

// instr is an instruction split once (instruction): its polarity and its
// content words.
type instr struct {
	neg  bool
	core map[string]bool
}

// eachContradiction calls fn(i, j) for every pair i < j of items that
// contradict (contradicts), i ascending and, for each i, j ascending; fn
// returns false to go on to the next i. A plain double loop compares every
// pair, which a busy day (thousands of decisions in one scope) turns into
// minutes; this finds the candidates by prefix filtering, the similarity
// join's standard trick, and finds exactly the pairs the double loop would
// (TestEachContradictionMatchesEveryPair).
//
// Two instructions contradict only when they share at least
// k(A) = max(2, ⌈0.6·|A|⌉) words (shared ≥ 0.6·union ≥ 0.6·|A|), and
// likewise k(B). Order every item's words by how many items hold them,
// rarest first, the same order for all: two sets that share at least t
// words then share one among their first |A|−t+1 words (otherwise the t
// shared ones would all sit past both prefixes, and the two orders could
// not agree). With each set's own k as t, its prefix is no shorter than
// the lemma's, so a contradicting pair always meets in some word of both
// prefixes; only such pairs are checked in full.
func eachContradiction(items []instr, fn func(i, j int) bool) {
	freq := map[string]int{}
	for _, it := range items {
		for w := range it.core {
			freq[w]++
		}
	}
	prefixes := make([][]string, len(items))
	index := map[string][]int{} // word → items whose prefix holds it, ascending
	for i, it := range items {
		n := len(it.core)
		if n < 2 {
			continue // two shared words at least: it contradicts nothing
		}
		words := make([]string, 0, n)
		for w := range it.core {
			words = append(words, w)
		}
		sort.Slice(words, func(a, b int) bool {
			if freq[words[a]] != freq[words[b]] {
				return freq[words[a]] < freq[words[b]]
			}
			return words[a] < words[b]
		})
		k := max(2, (6*n+9)/10)
		prefixes[i] = words[:n-k+1]
		for _, w := range prefixes[i] {
			index[w] = append(index[w], i)
		}
	}
	seen := map[int]bool{}
	var cand []int
	for i, a := range items {
		clear(seen)
		cand = cand[:0]
		for _, w := range prefixes[i] {
			post := index[w]
			for _, j := range post[sort.SearchInts(post, i+1):] {
				if !seen[j] && items[j].neg != a.neg {
					seen[j] = true
					cand = append(cand, j)
				}
			}
		}
		sort.Ints(cand)
		for _, j := range cand {
			if contradicts(a.neg, a.core, items[j].neg, items[j].core) && !fn(i, j) {
				break
			}
		}
	}
}
