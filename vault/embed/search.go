package embed

// The search of the vector cache (docs/RETRIEVAL.md, "Semantic search"),
// in two steps so that a recall stays within its budget at the cache's
// bound: every document the caller keeps is scored from its signs alone
// (a bit a dimension, an eighth of a byte) against the query's quantised
// values, through a table per byte of signs; the Candidates best of those
// are read and scored exactly, as a full scan would score them. Where the
// caller keeps no more than Candidates documents, every one is scored
// exactly: the result is the full scan's. The first step's choice is
// measured against the full scan (TestSearchAgainstFullScan).

import (
	"container/heap"
	"math"
	"math/bits"
	"slices"
)

// Candidates is how many documents, at least, are scored exactly; a
// search for k asks for 10 × k when that is more.
const Candidates = 6000

// Scored is a document of the cache and its cosine similarity to a query.
type Scored struct {
	Index int
	Sim   float32
}

// Search returns the k documents most like the unit vector q among those
// keep accepts, best first (ties by position). A vector that no longer
// reads (its CRC-32 fails) is left out.
func (s *Store) Search(q []float32, keep func(i int) bool, k int) []Scored {
	if len(q) != s.Dims || k <= 0 {
		return nil
	}
	qq, qs := quantiseQuery(q)
	cands := s.candidates(qq, keep, max(Candidates, 10*k))
	h := &minHeap{}
	for _, i := range cands {
		row, ok := s.row(i)
		if !ok {
			continue
		}
		sc := Scored{Index: i, Sim: float32(dot(qq, row)) * qs * s.Scales[i]}
		h.offer(sc, k)
	}
	return h.best()
}

// SearchFull is Search scoring every document exactly: the reference the
// two-step search is measured against.
func (s *Store) SearchFull(q []float32, keep func(i int) bool, k int) []Scored {
	if len(q) != s.Dims || k <= 0 {
		return nil
	}
	qq, qs := quantiseQuery(q)
	h := &minHeap{}
	for i := range s.IDs {
		if keep != nil && !keep(i) {
			continue
		}
		if row, ok := s.row(i); ok {
			h.offer(Scored{Index: i, Sim: float32(dot(qq, row)) * qs * s.Scales[i]}, k)
		}
	}
	return h.best()
}

// quantiseQuery quantises the query as the documents are, so that the
// scan is integer multiplications.
func quantiseQuery(q []float32) ([]int32, float32) {
	var m float32
	for _, x := range q {
		m = max(m, float32(math.Abs(float64(x))))
	}
	qs := m / 127
	qq := make([]int32, len(q))
	for j, x := range q {
		if qs > 0 {
			qq[j] = int32(math.Round(float64(x / qs)))
		}
	}
	return qq, qs
}

// candidates is the positions of the documents to score exactly, in
// order: every one keep accepts when they are at most n, else the n best
// by their signs.
func (s *Store) candidates(qq []int32, keep func(i int) bool, n int) []int {
	var kept []int
	if keep == nil {
		if len(s.IDs) <= n {
			kept = make([]int, len(s.IDs))
			for i := range kept {
				kept[i] = i
			}
			return kept
		}
	} else {
		for i := range s.IDs {
			if keep(i) {
				kept = append(kept, i)
			}
		}
		if len(kept) <= n {
			return kept
		}
	}
	// A table per byte of a plane: for each of the 256 values of the
	// byte, the sum of the query's values over the dimensions it sets. A
	// document's estimate is its plane of values above 0 looked up, less
	// its plane below 0, times its level: its dot product with the query
	// as if each of its values were -1, 0 or +1 times its level.
	nb := (s.Dims + 7) / 8
	tab := make([][256]int16, nb)
	// int16: a byte sums at most 8 values of at most 127.
	for p := range tab {
		for b := 1; b < 256; b++ {
			k := bits.TrailingZeros8(uint8(b))
			v := int16(0)
			if 8*p+k < len(qq) {
				v = int16(qq[8*p+k])
			}
			tab[p][b] = tab[p][b&(b-1)] + v
		}
	}
	h := &minHeap{}
	score := func(i int) {
		pos := s.Bits[2*i*nb : (2*i+1)*nb]
		neg := s.Bits[(2*i+1)*nb : (2*i+2)*nb]
		neg, t := neg[:len(pos)], tab[:len(pos)]
		var a, b int32
		for p, x := range pos {
			a += int32(t[p][x])
			b += int32(t[p][neg[p]])
		}
		h.offer(Scored{Index: i, Sim: float32(a-b) * s.Levels[i]}, n)
	}
	if kept == nil {
		for i := range s.IDs {
			score(i)
		}
	} else {
		for _, i := range kept {
			score(i)
		}
	}
	out := make([]int, len(*h))
	for j, sc := range *h {
		out[j] = sc.Index
	}
	slices.Sort(out) // read the file front to back
	return out
}

// dot is the integer dot product of the quantised query and a row.
func dot(qq []int32, row []byte) int32 {
	row = row[:len(qq)]
	var a, b, c, d int32
	j := 0
	for ; j+4 <= len(qq); j += 4 {
		a += qq[j] * int32(int8(row[j]))
		b += qq[j+1] * int32(int8(row[j+1]))
		c += qq[j+2] * int32(int8(row[j+2]))
		d += qq[j+3] * int32(int8(row[j+3]))
	}
	for ; j < len(qq); j++ {
		a += qq[j] * int32(int8(row[j]))
	}
	return a + b + c + d
}

// minHeap keeps the best n of what it is offered, the worst on top.
type minHeap []Scored

func (h *minHeap) offer(sc Scored, n int) {
	if h.Len() < n {
		heap.Push(h, sc)
	} else if less((*h)[0], sc) {
		(*h)[0] = sc
		heap.Fix(h, 0)
	}
}

// best empties the heap, best first.
func (h *minHeap) best() []Scored {
	out := make([]Scored, h.Len())
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = heap.Pop(h).(Scored)
	}
	return out
}

// less orders worse before better: a lower similarity, then a later
// position.
func less(a, b Scored) bool {
	if a.Sim != b.Sim {
		return a.Sim < b.Sim
	}
	return a.Index > b.Index
}

func (h minHeap) Len() int           { return len(h) }
func (h minHeap) Less(i, j int) bool { return less(h[i], h[j]) }
func (h minHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *minHeap) Push(x any)        { *h = append(*h, x.(Scored)) }
func (h *minHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
