package merge

// The search for the shortest edit script between two files of lines, as
// xdiff makes it: a divide-and-conquer Myers search for the middle snake,
// with the same heuristics and limits, so that the result is git's.

// bogoSqrt is the power-of-two square root estimate xdiff sizes its limits
// with; the exact value matters because it decides when heuristics start.
func bogoSqrt(n int) int {
	i := 1
	for ; n > 0; n >>= 2 {
		i <<= 1
	}
	return i
}

// searcher holds the state of one Myers search.
type searcher struct {
	f1, f2     *diffFile
	h1, h2     []int
	kvdf, kvdb []int
	koff       int
	mxcost     int
}

// myers marks changed lines among the lines prepare kept.
func myers(f1, f2 *diffFile) {
	n1, n2 := len(f1.rindex), len(f2.rindex)
	ndiags := n1 + n2 + 3
	s := &searcher{
		f1: f1, f2: f2,
		h1: f1.rclass, h2: f2.rclass,
		kvdf:   make([]int, ndiags),
		kvdb:   make([]int, ndiags),
		koff:   n2 + 1,
		mxcost: max(bogoSqrt(ndiags), maxCostMin),
	}
	s.compare(0, n1, 0, n2, false)
}

// compare splits the box [off1,lim1)×[off2,lim2) until one side is empty.
func (s *searcher) compare(off1, lim1, off2, lim2 int, needMin bool) {
	for {
		for off1 < lim1 && off2 < lim2 && s.h1[off1] == s.h2[off2] {
			off1++
			off2++
		}
		for off1 < lim1 && off2 < lim2 && s.h1[lim1-1] == s.h2[lim2-1] {
			lim1--
			lim2--
		}
		if off1 == lim1 {
			for ; off2 < lim2; off2++ {
				s.f2.setChanged(s.f2.rindex[off2], true)
			}
			return
		}
		if off2 == lim2 {
			for ; off1 < lim1; off1++ {
				s.f1.setChanged(s.f1.rindex[off1], true)
			}
			return
		}
		i1, i2, minLo, minHi := s.split(off1, lim1, off2, lim2, needMin)
		s.compare(off1, i1, off2, i2, minLo)
		// The upper half is handled by the loop rather than by recursion,
		// which keeps the stack shallow on long inputs.
		off1, off2, needMin = i1, i2, minHi
	}
}

// splitBox is the state of one split: the box being divided, the range of
// diagonals it spans, and how far along them the forward search (from the
// top left) and the backward search (from the bottom right) have got. The
// furthest point reached on each diagonal lives in searcher.kvdf and kvdb.
type splitBox struct {
	off1, lim1, off2, lim2 int
	dmin, dmax             int  // diagonals inside the box
	fmid, bmid             int  // the diagonals the two searches start on
	fmin, fmax, bmin, bmax int  // diagonals each search has reached
	odd                    bool // fmid-bmid is odd: only the forward search can meet the backward one
	gotSnake               bool // this edit cost followed a diagonal for more than snakeCnt lines
}

// split finds the point where the forward and backward searches meet, or,
// when the search grows too expensive, a good-enough point to divide at.
// Each round of the loop spends one more edit on both searches; the two
// bools say whether each half must still be divided optimally.
func (s *searcher) split(off1, lim1, off2, lim2 int, needMin bool) (int, int, bool, bool) {
	fmid, bmid := off1-off2, lim1-lim2
	b := splitBox{
		off1: off1, lim1: lim1, off2: off2, lim2: lim2,
		dmin: off1 - lim2, dmax: lim1 - off2,
		fmid: fmid, bmid: bmid,
		fmin: fmid, fmax: fmid, bmin: bmid, bmax: bmid,
		odd: (fmid-bmid)&1 != 0,
	}
	s.kvdf[fmid+s.koff] = off1
	s.kvdb[bmid+s.koff] = lim1

	for ec := 1; ; ec++ {
		b.gotSnake = false
		if i1, i2, met := s.forward(&b); met {
			return i1, i2, true, true
		}
		if i1, i2, met := s.backward(&b); met {
			return i1, i2, true, true
		}
		if needMin {
			continue
		}
		// Past the heuristic threshold, take a diagonal that went far
		// along a long snake instead of insisting on the optimum.
		if b.gotSnake && ec > heurMinCost {
			if i1, i2, ok := s.forwardSnake(&b, ec); ok {
				return i1, i2, true, false
			}
			if i1, i2, ok := s.backwardSnake(&b, ec); ok {
				return i1, i2, false, true
			}
		}
		if ec >= s.mxcost {
			return s.furthest(&b)
		}
	}
}

// forward spends one more edit on the forward search: its range of
// diagonals grows by one each way while the box allows, and each diagonal
// is extended past the lines the two files share from there. It returns
// the point where the search overlaps the backward one, when the edit
// count's parity lets the forward search be the one to meet.
func (s *searcher) forward(b *splitBox) (int, int, bool) {
	h1, h2, kvdf, kvdb, o := s.h1, s.h2, s.kvdf, s.kvdb, s.koff
	if b.fmin > b.dmin {
		b.fmin--
		kvdf[b.fmin-1+o] = -1
	} else {
		b.fmin++
	}
	if b.fmax < b.dmax {
		b.fmax++
		kvdf[b.fmax+1+o] = -1
	} else {
		b.fmax--
	}
	fmin, fmax, bmin, bmax := b.fmin, b.fmax, b.bmin, b.bmax
	lim1, lim2, odd := b.lim1, b.lim2, b.odd
	for d := fmax; d >= fmin; d -= 2 {
		var i1 int
		if kvdf[d-1+o] >= kvdf[d+1+o] {
			i1 = kvdf[d-1+o] + 1
		} else {
			i1 = kvdf[d+1+o]
		}
		prev1 := i1
		i2 := i1 - d
		for i1 < lim1 && i2 < lim2 && h1[i1] == h2[i2] {
			i1++
			i2++
		}
		if i1-prev1 > snakeCnt {
			b.gotSnake = true
		}
		kvdf[d+o] = i1
		if odd && bmin <= d && d <= bmax && kvdb[d+o] <= i1 {
			return i1, i2, true
		}
	}
	return 0, 0, false
}

// backward is forward for the search from the bottom right of the box,
// which follows shared lines upwards and meets on an even edit count.
func (s *searcher) backward(b *splitBox) (int, int, bool) {
	h1, h2, kvdf, kvdb, o := s.h1, s.h2, s.kvdf, s.kvdb, s.koff
	if b.bmin > b.dmin {
		b.bmin--
		kvdb[b.bmin-1+o] = lineMax
	} else {
		b.bmin++
	}
	if b.bmax < b.dmax {
		b.bmax++
		kvdb[b.bmax+1+o] = lineMax
	} else {
		b.bmax--
	}
	fmin, fmax, bmin, bmax := b.fmin, b.fmax, b.bmin, b.bmax
	off1, off2, odd := b.off1, b.off2, b.odd
	for d := bmax; d >= bmin; d -= 2 {
		var i1 int
		if kvdb[d-1+o] < kvdb[d+1+o] {
			i1 = kvdb[d-1+o]
		} else {
			i1 = kvdb[d+1+o] - 1
		}
		prev1 := i1
		i2 := i1 - d
		for i1 > off1 && i2 > off2 && h1[i1-1] == h2[i2-1] {
			i1--
			i2--
		}
		if prev1-i1 > snakeCnt {
			b.gotSnake = true
		}
		kvdb[d+o] = i1
		if !odd && fmin <= d && d <= fmax && i1 <= kvdf[d+o] {
			return i1, i2, true
		}
	}
	return 0, 0, false
}

// forwardSnake picks, among the forward diagonals, the one that got
// furthest (by more than kHeur lines per edit, less its distance from the
// middle diagonal) and ends in snakeCnt shared lines: xdiff's heuristic
// split, which keeps long inputs fast at the price of optimality. It
// reports false when no diagonal qualifies.
func (s *searcher) forwardSnake(b *splitBox, ec int) (int, int, bool) {
	h1, h2, kvdf, o := s.h1, s.h2, s.kvdf, s.koff
	best, b1, b2 := 0, 0, 0
	for d := b.fmax; d >= b.fmin; d -= 2 {
		dd := abs(d - b.fmid)
		i1 := kvdf[d+o]
		i2 := i1 - d
		v := (i1 - b.off1) + (i2 - b.off2) - dd
		if v > kHeur*ec && v > best &&
			b.off1+snakeCnt <= i1 && i1 < b.lim1 &&
			b.off2+snakeCnt <= i2 && i2 < b.lim2 {
			for k := 1; h1[i1-k] == h2[i2-k]; k++ {
				if k == snakeCnt {
					best, b1, b2 = v, i1, i2
					break
				}
			}
		}
	}
	return b1, b2, best > 0
}

// backwardSnake is forwardSnake for the backward search: the diagonal must
// start with snakeCnt shared lines.
func (s *searcher) backwardSnake(b *splitBox, ec int) (int, int, bool) {
	h1, h2, kvdb, o := s.h1, s.h2, s.kvdb, s.koff
	best, b1, b2 := 0, 0, 0
	for d := b.bmax; d >= b.bmin; d -= 2 {
		dd := abs(d - b.bmid)
		i1 := kvdb[d+o]
		i2 := i1 - d
		v := (b.lim1 - i1) + (b.lim2 - i2) - dd
		if v > kHeur*ec && v > best &&
			b.off1 < i1 && i1 <= b.lim1-snakeCnt &&
			b.off2 < i2 && i2 <= b.lim2-snakeCnt {
			for k := 0; h1[i1+k] == h2[i2+k]; k++ {
				if k == snakeCnt-1 {
					best, b1, b2 = v, i1, i2
					break
				}
			}
		}
	}
	return b1, b2, best > 0
}

// furthest gives up on the optimum once the edit cost reaches mxcost: it
// splits at the diagonal that reached furthest into the box, forward or
// backward, whichever went further. Only the half that search came from is
// still divided optimally.
func (s *searcher) furthest(b *splitBox) (int, int, bool, bool) {
	kvdf, kvdb, o := s.kvdf, s.kvdb, s.koff
	fbest, fbest1 := -1, -1
	for d := b.fmax; d >= b.fmin; d -= 2 {
		i1 := min(kvdf[d+o], b.lim1)
		i2 := i1 - d
		if b.lim2 < i2 {
			i1 = b.lim2 + d
			i2 = b.lim2
		}
		if fbest < i1+i2 {
			fbest = i1 + i2
			fbest1 = i1
		}
	}
	bbest, bbest1 := lineMax, lineMax
	for d := b.bmax; d >= b.bmin; d -= 2 {
		i1 := max(b.off1, kvdb[d+o])
		i2 := i1 - d
		if i2 < b.off2 {
			i1 = b.off2 + d
			i2 = b.off2
		}
		if i1+i2 < bbest {
			bbest = i1 + i2
			bbest1 = i1
		}
	}
	if (b.lim1+b.lim2)-bbest < fbest-(b.off1+b.off2) {
		return fbest1, fbest - fbest1, true, false
	}
	return bbest1, bbest - bbest1, false, true
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
