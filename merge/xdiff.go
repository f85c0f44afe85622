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
