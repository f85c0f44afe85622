package merge

import (
	"bytes"
	"math"
)

// This file holds the line diff the merge is built on. It follows the
// algorithm of git's xdiff (Myers' O(ND) search with xdiff's cost limits,
// its pre-pass that sets aside lines with no match on the other side, and
// its hunk sliding), because a three-way merge is only as stable as the diff
// beneath it: where several minimal diffs exist, git picks one by these
// rules, and picking another would put conflict markers in other places than
// `git merge-file` does. A generic LCS (or go-diff's line mode, which adds
// its own half-match and cleanup passes) agrees with git on most inputs but
// not on files with repeated lines, which memvault heads have plenty of
// (blank lines, "- [ ]" items).

// Tuning constants of the diff. They are part of the contract with git's
// output, not knobs.
const (
	maxCostMin   = 256  // lower bound of the edit cost before giving up on optimality
	heurMinCost  = 256  // edit cost after which long snakes are taken greedily
	snakeCnt     = 20   // length of a diagonal that counts as a "good snake"
	kHeur        = 4    // weight of the snake heuristic
	maxEqLimit   = 1024 // a line seen this often on the other side is a "maybe" match
	simscanWin   = 100  // how far the maybe-match scan looks each way
	kpdisRun     = 4    // ratio used to drop maybe-matches inside unmatched runs
	lineMax      = math.MaxInt
	discardNo    = 0
	discardYes   = 1
	discardMaybe = 2
)

// splitLines cuts b into lines that keep their "\n"; the last line lacks it
// when b does not end in a newline. The slices alias b.
func splitLines(b []byte) [][]byte {
	if len(b) == 0 {
		return nil
	}
	lines := make([][]byte, 0, bytes.Count(b, []byte{'\n'})+1)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			lines = append(lines, b)
			break
		}
		lines = append(lines, b[:i+1:i+1])
		b = b[i+1:]
	}
	return lines
}

// diffFile is one side of a two-way diff.
type diffFile struct {
	lines   [][]byte
	class   []int  // equivalence class of each line: equal bytes, equal class
	changed []bool // changed[i+1] tells whether line i is changed; [0] and [n+1] stay false
	rindex  []int  // lines taking part in the Myers search, by position
	rclass  []int  // class of each line in rindex
}

func (f *diffFile) n() int { return len(f.lines) }

func (f *diffFile) isChanged(i int) bool {
	if i < -1 || i > len(f.lines) {
		return false
	}
	return f.changed[i+1]
}

func (f *diffFile) setChanged(i int, v bool) { f.changed[i+1] = v }

// change is one hunk of a diff: lines [i1, i1+chg1) of the first file are
// replaced by lines [i2, i2+chg2) of the second.
type change struct {
	i1, i2     int
	chg1, chg2 int
}

// diffLines returns the edit script from a to b, in order.
func diffLines(a, b [][]byte) []change {
	f1, f2 := prepare(a, b)
	myers(f1, f2)
	compact(f1, f2)
	compact(f2, f1)
	return buildScript(f1, f2)
}

// prepare classifies the lines of both files, trims the common head and
// tail, and decides which lines the Myers search may skip outright.
func prepare(a, b [][]byte) (*diffFile, *diffFile) {
	f1 := &diffFile{lines: a, class: make([]int, len(a)), changed: make([]bool, len(a)+2)}
	f2 := &diffFile{lines: b, class: make([]int, len(b)), changed: make([]bool, len(b)+2)}

	ids := make(map[string]int, len(a)+len(b))
	var count1, count2 []int
	classify := func(f *diffFile, first bool) {
		for i, l := range f.lines {
			id, ok := ids[string(l)]
			if !ok {
				id = len(count1)
				ids[string(l)] = id
				count1 = append(count1, 0)
				count2 = append(count2, 0)
			}
			f.class[i] = id
			if first {
				count1[id]++
			} else {
				count2[id]++
			}
		}
	}
	classify(f1, true)
	classify(f2, false)

	// Trim the common head and tail: they are never part of the search.
	lim := min(f1.n(), f2.n())
	start := 0
	for start < lim && f1.class[start] == f2.class[start] {
		start++
	}
	tail := 0
	for tail < lim-start && f1.class[f1.n()-1-tail] == f2.class[f2.n()-1-tail] {
		tail++
	}
	end1, end2 := f1.n()-1-tail, f2.n()-1-tail

	dis1 := discardable(f1, count2, start, end1)
	dis2 := discardable(f2, count1, start, end2)
	keep(f1, dis1, start, end1)
	keep(f2, dis2, start, end2)
	return f1, f2
}

// discardable rates each line of f in [start, end] by how often its class
// occurs in the other file: never (the line is surely changed), often (a
// "maybe" that may be skipped when it sits among unmatched lines), or a few
// times.
func discardable(f *diffFile, other []int, start, end int) []byte {
	dis := make([]byte, f.n()+1)
	mlim := min(bogoSqrt(f.n()), maxEqLimit)
	for i := start; i <= end; i++ {
		switch nm := other[f.class[i]]; {
		case nm == 0:
			dis[i] = discardNo
		case nm >= mlim:
			dis[i] = discardMaybe
		default:
			dis[i] = discardYes
		}
	}
	return dis
}

// keep fills f.rindex with the lines the search looks at and marks the
// others changed.
func keep(f *diffFile, dis []byte, start, end int) {
	for i := start; i <= end; i++ {
		if dis[i] == discardYes || (dis[i] == discardMaybe && !surroundedByUnmatched(dis, i, start, end)) {
			f.rindex = append(f.rindex, i)
			f.rclass = append(f.rclass, f.class[i])
		} else {
			f.setChanged(i, true)
		}
	}
}

// surroundedByUnmatched tells whether the frequent line i sits inside a run
// made mostly of lines with no match, in which case matching it would only
// produce a noisy diff.
func surroundedByUnmatched(dis []byte, i, s, e int) bool {
	if i-s > simscanWin {
		s = i - simscanWin
	}
	if e-i > simscanWin {
		e = i + simscanWin
	}
	before, beforeMaybe := 0, 1
	for r := 1; i-r >= s; r++ {
		if dis[i-r] == discardNo {
			before++
		} else if dis[i-r] == discardMaybe {
			beforeMaybe++
		} else {
			break
		}
	}
	if before == 0 {
		return false
	}
	after, afterMaybe := 0, 1
	for r := 1; i+r <= e; r++ {
		if dis[i+r] == discardNo {
			after++
		} else if dis[i+r] == discardMaybe {
			afterMaybe++
		} else {
			break
		}
	}
	if after == 0 {
		return false
	}
	no := after + before
	maybe := afterMaybe + beforeMaybe
	return maybe*kpdisRun < maybe+no
}

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

// group is a run of changed lines [start, end); an empty group sits just
// above line start.
type group struct{ start, end int }

func (f *diffFile) firstGroup() group {
	var g group
	for f.isChanged(g.end) {
		g.end++
	}
	return g
}

func (f *diffFile) nextGroup(g *group) bool {
	if g.end == f.n() {
		return false
	}
	g.start = g.end + 1
	g.end = g.start
	for f.isChanged(g.end) {
		g.end++
	}
	return true
}

func (f *diffFile) prevGroup(g *group) bool {
	if g.start == 0 {
		return false
	}
	g.end = g.start - 1
	g.start = g.end
	for f.isChanged(g.start - 1) {
		g.start--
	}
	return true
}

func (f *diffFile) slideDown(g *group) bool {
	if g.end < f.n() && f.class[g.start] == f.class[g.end] {
		f.setChanged(g.start, false)
		g.start++
		f.setChanged(g.end, true)
		g.end++
		for f.isChanged(g.end) {
			g.end++
		}
		return true
	}
	return false
}

func (f *diffFile) slideUp(g *group) bool {
	if g.start > 0 && f.class[g.start-1] == f.class[g.end-1] {
		g.start--
		f.setChanged(g.start, true)
		g.end--
		f.setChanged(g.end, false)
		for f.isChanged(g.start - 1) {
			g.start--
		}
		return true
	}
	return false
}

// compact slides each group of changed lines of f as far down as it goes,
// merging groups that touch, then back up to line up with a change in the
// other file when it can. This is what makes "insert a line next to an equal
// line" land in the same place git puts it.
func compact(f, other *diffFile) {
	g := f.firstGroup()
	og := other.firstGroup()
	for {
		if g.end != g.start {
			var earliestEnd, endMatchingOther int
			for {
				size := g.end - g.start
				endMatchingOther = -1
				for f.slideUp(&g) {
					other.prevGroup(&og)
				}
				earliestEnd = g.end
				if og.end > og.start {
					endMatchingOther = g.end
				}
				for f.slideDown(&g) {
					other.nextGroup(&og)
					if og.end > og.start {
						endMatchingOther = g.end
					}
				}
				if size == g.end-g.start {
					break
				}
			}
			if g.end != earliestEnd && endMatchingOther != -1 {
				for og.end == og.start {
					if !f.slideUp(&g) || !other.prevGroup(&og) {
						break
					}
				}
			}
		}
		if !f.nextGroup(&g) || !other.nextGroup(&og) {
			break
		}
	}
}

// buildScript collects the changed lines of both files into hunks.
func buildScript(f1, f2 *diffFile) []change {
	var rev []change
	for i1, i2 := f1.n(), f2.n(); i1 >= 0 || i2 >= 0; i1, i2 = i1-1, i2-1 {
		if f1.isChanged(i1-1) || f2.isChanged(i2-1) {
			l1, l2 := i1, i2
			for f1.isChanged(i1 - 1) {
				i1--
			}
			for f2.isChanged(i2 - 1) {
				i2--
			}
			rev = append(rev, change{i1: i1, i2: i2, chg1: l1 - i1, chg2: l2 - i2})
		}
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}
