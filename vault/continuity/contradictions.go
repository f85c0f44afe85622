package continuity

import (
	"slices"
	"sort"
)

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
	eachPair(items, contradictionRule, fn)
}

// pairRule is what eachPair joins on: pairs of the same polarity or of
// different polarity, sharing at least minShared words and at least
// tenths/10 of their union (Jaccard).
type pairRule struct {
	samePolarity bool
	minShared    int
	tenths       int
}

// contradictionRule is contradicts' rule; similarRule the candidates of a
// reworded learning (similar, which then applies its own threshold, never
// below 0.6).
var (
	contradictionRule = pairRule{samePolarity: false, minShared: 2, tenths: 6}
	similarRule       = pairRule{samePolarity: true, minShared: 1, tenths: 6}
)

// eachPair is eachContradiction for any pairRule: fn(i, j) for every pair
// i < j that the rule joins, in the same order.
func eachPair(items []instr, rule pairRule, fn func(i, j int) bool) {
	freq := map[string]int{}
	for _, it := range items {
		for w := range it.core {
			freq[w]++
		}
	}
	// Every word gets its rank in that order, rarest first; an item is then
	// its ranks, ascending, so that its prefix is its first ranks and the
	// words two items share are counted by a merge, without maps.
	vocab := make([]string, 0, len(freq))
	for w := range freq {
		vocab = append(vocab, w)
	}
	sort.Slice(vocab, func(a, b int) bool {
		if freq[vocab[a]] != freq[vocab[b]] {
			return freq[vocab[a]] < freq[vocab[b]]
		}
		return vocab[a] < vocab[b]
	})
	rank := make(map[string]int32, len(vocab))
	for r, w := range vocab {
		rank[w] = int32(r)
	}
	sets := make([][]int32, len(items))
	prefixes := make([][]int32, len(items))
	index := make([][]int32, len(vocab)) // rank → items whose prefix holds it, ascending
	for i, it := range items {
		n := len(it.core)
		if n < rule.minShared || n == 0 {
			continue // it cannot share enough words with anything
		}
		set := make([]int32, 0, n)
		for w := range it.core {
			set = append(set, rank[w])
		}
		slices.Sort(set)
		sets[i] = set
		k := max(rule.minShared, (rule.tenths*n+9)/10)
		prefixes[i] = set[:n-k+1]
		for _, r := range prefixes[i] {
			index[r] = append(index[r], int32(i))
		}
	}
	seen := make([]int32, len(items)) // seen[j] == i+1: j is a candidate of i already
	var cand []int32
	for i, a := range items {
		cand = cand[:0]
		na := len(sets[i])
		for _, r := range prefixes[i] {
			post := index[r]
			from, _ := slices.BinarySearch(post, int32(i+1))
			for _, j := range post[from:] {
				// A contradiction shares at least 0.6 of the union, so
				// the smaller set is at least 0.6 of the larger.
				if seen[j] == int32(i+1) || (items[j].neg == a.neg) != rule.samePolarity {
					continue
				}
				seen[j] = int32(i + 1)
				if nb := len(sets[j]); 10*min(na, nb) >= rule.tenths*max(na, nb) {
					cand = append(cand, j)
				}
			}
		}
		slices.Sort(cand)
		for _, j := range cand {
			if rule.overlaps(sets[i], sets[j]) && !fn(i, int(j)) {
				break
			}
		}
	}
}

// overlaps is the rule's overlap test for two sets of word ranks in
// ascending order (their polarity checked by the caller): at least
// minShared words shared, and shared at least tenths/10 of the union.
func (rule pairRule) overlaps(a, b []int32) bool {
	shared := 0
	for x, y := 0, 0; x < len(a) && y < len(b); {
		switch {
		case a[x] < b[y]:
			x++
		case a[x] > b[y]:
			y++
		default:
			shared++
			x++
			y++
		}
	}
	union := len(a) + len(b) - shared
	return shared >= rule.minShared && union > 0 && shared*10 >= union*rule.tenths
}
