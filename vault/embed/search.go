package embed

// The search of the vector cache (docs/RETRIEVAL.md, "Semantic search"),
// in two steps so that a recall stays within its budget at the cache's
// bound: every document the caller keeps is scored from its vector
// reduced to -1, 0 and +1 (two bit-planes) against the query's values
// reduced to three bits, by counting bits (roughQuery), in parts read at
// once on every processor; the Candidates best of those are read and
// scored exactly, as a full scan would score them. Where the
// caller keeps no more than Candidates documents, every one is scored
// exactly: the result is the full scan's. The first step's choice is
// measured against the full scan (TestSearchAgainstFullScan).

import (
	"container/heap"
	"encoding/binary"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"unsafe"
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
// keep accepts (all when it is nil), best first (ties by position). A
// vector that no longer reads (its CRC-32 fails) is left out.
func (s *Store) Search(q []float32, keep func(i int) bool, k int) []Scored {
	var pos []int
	for i := range s.Len() {
		if keep == nil || keep(i) {
			pos = append(pos, i)
		}
	}
	return s.SearchAmong(q, pos, k)
}

// SearchAmong is Search among the documents at pos, in increasing order
// (Split's lists).
func (s *Store) SearchAmong(q []float32, pos []int, k int) []Scored {
	if len(q) != s.Dims || k <= 0 {
		return nil
	}
	qq, qs := quantiseQuery(q)
	cands := s.candidates(qq, pos, max(Candidates, 10*k))
	// The candidates are scored in parts at once, each keeping its best
	// k; the best k of those is the best k of all (ties by position).
	parts := min(runtime.GOMAXPROCS(0), maxParts, max(1, len(cands)/minExact))
	heaps, eq := make([]minHeap, parts), newExactQuery(qq)
	var wg sync.WaitGroup
	for p := range parts {
		part := cands[p*len(cands)/parts : (p+1)*len(cands)/parts]
		wg.Go(func() { heaps[p] = s.exact(eq, qs, part, k) })
	}
	wg.Wait()
	h := &minHeap{}
	for _, part := range heaps {
		for _, sc := range part {
			if h.takes(sc, k) {
				h.offer(sc, k)
			}
		}
	}
	return h.best()
}

// minExact is the fewest candidates a part of the exact step scores.
const minExact = 2048

// exact is the best k of cands by their full vectors. A row's CRC-32 is
// checked only when it would enter the best k: a row that would not
// changes nothing, read or not, and most candidates never enter (a check
// costs a third of a dot).
func (s *Store) exact(eq *exactQuery, qs float32, cands []int, k int) minHeap {
	var h minHeap
	buf := make([]byte, s.Dims)
	for _, i := range cands {
		row, ok := s.rawRow(i, buf)
		if !ok {
			continue
		}
		sc := Scored{Index: i, Sim: float32(eq.dot(row)) * qs * s.scale(i)}
		if h.takes(sc, k) && s.sound(i, row) {
			h.offer(sc, k)
		}
	}
	return h
}

// SearchFull is Search scoring every document exactly: the reference the
// two-step search is measured against.
func (s *Store) SearchFull(q []float32, keep func(i int) bool, k int) []Scored {
	if len(q) != s.Dims || k <= 0 {
		return nil
	}
	qq, qs := quantiseQuery(q)
	h := &minHeap{}
	for i := range s.Len() {
		if keep != nil && !keep(i) {
			continue
		}
		if row, ok := s.row(i); ok {
			h.offer(Scored{Index: i, Sim: float32(dot(qq, row)) * qs * s.scale(i)}, k)
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
// order: all of pos when they are at most n, else the n best by their
// reduced vectors. Many are read in parts, one per processor, at once,
// each part keeping its own n best; the n best of those are the n best of
// all: a document that fewer than n beat in all of pos is beaten by fewer
// than n in its part, and the parts' bests joined in order keep pos's
// order, which settles ties (TestCandidatesInPartsAreOnePass).
func (s *Store) candidates(qq []int32, pos []int, n int) []int {
	if len(pos) <= n {
		return pos
	}
	rq := newRoughQuery(roughLevels(qq), (s.Dims+7)/8)
	sims := make([]float32, len(pos))
	parts := min(runtime.GOMAXPROCS(0), maxParts, max(1, len(pos)/minPart))
	best := make([][]int, parts) // indices into pos
	var wg sync.WaitGroup
	for p := range parts {
		from, to := p*len(pos)/parts, (p+1)*len(pos)/parts
		wg.Go(func() {
			s.roughScores(rq, pos[from:to], sims[from:to])
			best[p] = bestN(sims[from:to], n)
			for k := range best[p] {
				best[p][k] += from
			}
		})
	}
	wg.Wait()
	joined := slices.Concat(best...)
	if parts > 1 {
		js := make([]float32, len(joined))
		for k, j := range joined {
			js[k] = sims[j]
		}
		keep := bestN(js, n)
		for k, b := range keep {
			keep[k] = joined[b]
		}
		joined = keep
	}
	out := make([]int, len(joined))
	for k, j := range joined {
		out[k] = pos[j]
	}
	return out
}

// maxParts and minPart bound how the first step is split: at most
// maxParts parts, none under minPart documents.
const (
	maxParts = 4
	minPart  = 16384
)

// roughScores sets sims[j] to the score of the document at pos[j] from
// the signs alone.
func (s *Store) roughScores(rq *roughQuery, pos []int, sims []float32) {
	// The integer scores are written where their floats go, and turned
	// into them in place: a recall's fresh memory costs page faults.
	raw := unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(sims))), len(sims))
	if !rq.batch(s.Bits, pos, raw) {
		for j, i := range pos {
			raw[j] = rq.score(s.Bits[2*i*rq.nb:])
		}
	}
	for j, i := range pos {
		sim := float32(raw[j]) * s.level(i)
		if sim != sim { // NaN: a level the file made so
			sim = float32(math.Inf(-1))
		}
		sims[j] = sim
	}
}

// bestN is the indices of the n highest of sims, in order, ties to the
// earlier: the n a heap of the best would keep, found by selecting the
// n-th highest value (quickselect, linear) instead of keeping a heap of
// thousands in order through 100,000 offers.
func bestN(sims []float32, n int) []int {
	if len(sims) <= n {
		out := make([]int, len(sims))
		for j := range out {
			out[j] = j
		}
		return out
	}
	t := nthOf(sims, n)
	above := 0
	for _, v := range sims {
		if v > t {
			above++
		}
	}
	ties := n - above // of those equal to t, the first ties make the cut
	out := make([]int, 0, n)
	for j, v := range sims {
		if v > t || v == t && ties > 0 {
			if v == t {
				ties--
			}
			out = append(out, j)
		}
	}
	return out
}

// nthOf is the n-th highest of v (1 ≤ n < len(v)), v left as it is. A
// sample of v gives a value t0 that about twice n values reach; the n-th
// highest is selected among the values at or above t0, a few thousand
// instead of all, when at least n are (then the n-th of all is among
// them); else among all, a copy reordered.
func nthOf(v []float32, n int) float32 {
	const sample = 2048
	if len(v) >= 8*sample && n < len(v)/4 {
		s := make([]float32, sample)
		for i := range s {
			s[i] = v[i*len(v)/sample]
		}
		slices.Sort(s)
		// The rank in the sample of the value twice n reach, and some.
		r := min(sample-1, 2*n*sample/len(v)+16)
		t0 := s[sample-1-r]
		above := make([]float32, 0, 3*n)
		for _, x := range v {
			if x >= t0 {
				above = append(above, x)
			}
		}
		if len(above) >= n {
			return nthHighest(above, n)
		}
	}
	return nthHighest(slices.Clone(v), n)
}

// nthHighest is the n-th highest of v (1 ≤ n ≤ len(v)), which it
// reorders: a quickselect with a three-way partition, so that many equal
// values (sparse vectors score 0 alike) cost no more than distinct ones.
func nthHighest(v []float32, n int) float32 {
	k := n - 1 // the index the value would have sorted high to low
	for len(v) > 1 {
		a, b, c := v[0], v[len(v)/2], v[len(v)-1]
		p := max(min(a, b), min(max(a, b), c)) // the median of three
		// v[:gt] > p, v[gt:lt] == p, v[lt:] < p
		gt, i, lt := 0, 0, len(v)
		for i < lt {
			switch x := v[i]; {
			case x > p:
				v[gt], v[i] = v[i], v[gt]
				gt, i = gt+1, i+1
			case x < p:
				lt--
				v[lt], v[i] = v[i], v[lt]
			default:
				i++
			}
		}
		switch {
		case k < gt:
			v = v[:gt]
		case k < lt:
			return p
		default:
			v, k = v[lt:], k-lt
		}
	}
	return v[0]
}

// exactQuery is the quantised query of the exact step: q16 and tail are
// for the vector kernel (kernel_amd64.go), nil where there is none.
type exactQuery struct {
	qq   []int32
	q16  []int16
	tail uint32
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

// takes reports whether offer would keep sc.
func (h minHeap) takes(sc Scored, n int) bool { return len(h) < n || less(h[0], sc) }

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

// roughQuery is the query as bit-planes for the first step, so that a
// document's reduced vector is scored 64 dimensions at a time by counting
// bits. The query's values are reduced to -7 … +7 (roughLevels): a value
// is its sign and the three bits of its magnitude; a document's value d is
// -1, 0 or +1. Where d is not 0, q·d is |q| when the signs agree and -|q|
// when not, so over a word of 64 dimensions, with u the document's
// dimensions not 0 and t those of u whose sign differs from the query's,
// the sum is, plane by plane, 2^k × (|M_k ∧ u| - 2 × |M_k ∧ t|), M_k the
// dimensions whose |q| has bit k: Σ q·d exactly
// (TestRoughScoreIsTheDotProduct), in 12 words of popcounts at 768
// dimensions. The query's full 8 bits would cost 7 planes for no better
// choice of candidates: the full scan's top 200 found at 100,000 vectors
// is the same with 3 planes as with 7 (0.972 and 0.971 on sparse word
// counts, 1.000 on dense topics), where 7 planes cost twice the time.
type roughQuery struct {
	nb   int                 // bytes per plane of a document
	sign []uint64            // per word: the dimensions where q < 0
	mag  [][roughBits]uint64 // per word: bit k of |q| in plane k
	// lanes is the same for the vector kernel, in chunks of eight words
	// (laneChunk words each: the eight words of sign, then of each plane of
	// mag), the last chunk padded with zeros; lastMask has a bit for each
	// word of the last chunk that is the query's. Nil where a plane does not
	// end on a word.
	lanes    []uint64
	lastMask uint64
}

// laneChunk is the words of a chunk of roughQuery.lanes.
const laneChunk = 8 * (1 + roughBits)

const roughBits = 3

// roughLevels is the quantised query (|q| ≤ 127) reduced to the levels of
// roughBits bits, rounded to the nearest.
func roughLevels(qq []int32) []int32 {
	const top = 1<<roughBits - 1
	out := make([]int32, len(qq))
	for j, q := range qq {
		a := (min(max(q, -127), 127)*top + 63) / 127
		if q < 0 {
			a = -((-min(max(q, -127), 127)*top + 63) / 127)
		}
		out[j] = a
	}
	return out
}

// newRoughQuery is the bit-planes of rq, values of at most roughBits bits.
func newRoughQuery(rq []int32, nb int) *roughQuery {
	nw := (nb + 7) / 8
	r := &roughQuery{nb: nb, sign: make([]uint64, nw), mag: make([][roughBits]uint64, nw)}
	for j, q := range rq {
		a := q
		if q < 0 {
			r.sign[j/64] |= 1 << (j % 64)
			a = -q
		}
		for k := range roughBits {
			if a>>k&1 != 0 {
				r.mag[j/64][k] |= 1 << (j % 64)
			}
		}
	}
	if nb%8 == 0 {
		chunks := (nw + 7) / 8
		r.lanes = make([]uint64, chunks*laneChunk)
		for w := range nw {
			c, l := w/8*laneChunk, w%8
			r.lanes[c+l] = r.sign[w]
			for k := range roughBits {
				r.lanes[c+8*(k+1)+l] = r.mag[w][k]
			}
		}
		r.lastMask = 1<<((nw-1)%8+1) - 1
	}
	return r
}

// word is the 64 dimensions of a plane from byte 8w on: the last word of
// a plane whose size is not a multiple of 8 is padded with zeros.
func word(plane []byte, w int) uint64 {
	if 8*w+8 <= len(plane) {
		return binary.LittleEndian.Uint64(plane[8*w:])
	}
	var x uint64
	for b := len(plane) - 1; b >= 8*w; b-- {
		x = x<<8 | uint64(plane[b])
	}
	return x
}

// score is Σ q·d over the dimensions of the reduced vector whose planes
// start doc (the plane of +1, then the plane of -1, nb bytes each).
func (r *roughQuery) score(doc []byte) int32 {
	if r.nb%8 != 0 {
		return r.scoreAny(doc)
	}
	pos, neg := doc[:r.nb], doc[r.nb:2*r.nb]
	var sum int
	for w, sg := range r.sign {
		x := binary.LittleEndian.Uint64(pos[8*w:])
		y := binary.LittleEndian.Uint64(neg[8*w:])
		u := x | y
		t := u & (sg ^ y)
		m := &r.mag[w]
		c := bits.OnesCount64(m[0]&u) - 2*bits.OnesCount64(m[0]&t)
		c += (bits.OnesCount64(m[1]&u) - 2*bits.OnesCount64(m[1]&t)) << 1
		c += (bits.OnesCount64(m[2]&u) - 2*bits.OnesCount64(m[2]&t)) << 2
		sum += c
	}
	return int32(sum)
}

// scoreAny is score where a plane does not end on a word.
func (r *roughQuery) scoreAny(doc []byte) int32 {
	pos, neg := doc[:r.nb], doc[r.nb:2*r.nb]
	var sum int
	for w := range r.sign {
		x, y := word(pos, w), word(neg, w)
		u := x | y
		t := u & (r.sign[w] ^ y)
		for k, m := range r.mag[w] {
			sum += (bits.OnesCount64(m&u) - 2*bits.OnesCount64(m&t)) << k
		}
	}
	return int32(sum)
}
