package merge

import (
	"bytes"
	"errors"
	"fmt"
)

// Style picks how a conflict is written out. The zero value is git's
// default, so a caller that does not care gets what people expect from git.
type Style int

const (
	// StyleMerge writes ours and theirs between "<<<<<<<", "=======" and
	// ">>>>>>>" and shrinks each conflict to the lines that really differ.
	StyleMerge Style = iota
	// StyleDiff3 also shows the base between "|||||||" and "=======", so a
	// person can see what each side changed; conflicts are not shrunk,
	// because the base would no longer line up with them.
	StyleDiff3
	// StyleZealousDiff3 is StyleDiff3 with lines common to both sides at the
	// edges of a conflict moved out of it (git's zdiff3).
	StyleZealousDiff3
)

// Favor resolves conflicts without markers, for callers that already know
// which side must win (git merge-file --ours, --theirs, --union).
type Favor int

const (
	// FavorNone leaves conflicts in the output with markers.
	FavorNone Favor = iota
	// FavorOurs takes our side of each conflict.
	FavorOurs
	// FavorTheirs takes their side of each conflict.
	FavorTheirs
	// FavorUnion takes our side then their side of each conflict.
	FavorUnion
)

// defaultMarkerSize is the length of conflict markers when Options leaves
// it zero; it is git's, so tools that look for markers find ours.
const defaultMarkerSize = 7

// maxMarkerSize bounds MarkerSize so a bad option cannot make the output
// explode.
const maxMarkerSize = 1024

// Options tunes a three-way merge. The zero value behaves like
// `git merge-file -p -L ours -L base -L theirs`.
type Options struct {
	// OursLabel, BaseLabel and TheirsLabel follow the conflict markers, so a
	// person reading the file knows which text came from where. Empty means
	// "ours", "base" and "theirs".
	OursLabel, BaseLabel, TheirsLabel string
	// Style picks the conflict layout.
	Style Style
	// Favor resolves conflicts instead of marking them; the merge is then
	// clean, as git's exit status says.
	Favor Favor
	// MarkerSize is the number of marker characters; 0 means
	// defaultMarkerSize.
	MarkerSize int
}

// Result is the outcome of a merge.
type Result struct {
	// Merged is the merged text, with conflict markers where the sides
	// could not be reconciled.
	Merged []byte
	// Conflicts counts the conflict hunks; git merge-file reports the same
	// number as its exit status (capped there at 127).
	Conflicts int
	// Sections lists the conflicted sections of a Markdown merge, in
	// document order. Lines leaves it empty.
	Sections []SectionConflict
}

// Clean reports whether the merge needed no conflict resolution, which is
// the only case where a caller may write Merged without telling anyone.
func (r Result) Clean() bool { return r.Conflicts == 0 }

// errBadOptions is wrapped by errors about Options, so a caller can tell a
// programming mistake from anything else.
var errBadOptions = errors.New("bad options")

func (o Options) normalized() (Options, error) {
	if o.OursLabel == "" {
		o.OursLabel = "ours"
	}
	if o.BaseLabel == "" {
		o.BaseLabel = "base"
	}
	if o.TheirsLabel == "" {
		o.TheirsLabel = "theirs"
	}
	for _, l := range []string{o.OursLabel, o.BaseLabel, o.TheirsLabel} {
		if bytes.ContainsAny([]byte(l), "\r\n") {
			return o, fmt.Errorf("merge: label %q: %w: contains a line break", l, errBadOptions)
		}
	}
	if o.MarkerSize == 0 {
		o.MarkerSize = defaultMarkerSize
	}
	if o.MarkerSize < 0 || o.MarkerSize > maxMarkerSize {
		return o, fmt.Errorf("merge: marker size %d: %w: want 1 to %d", o.MarkerSize, errBadOptions, maxMarkerSize)
	}
	if o.Style < StyleMerge || o.Style > StyleZealousDiff3 {
		return o, fmt.Errorf("merge: style %d: %w", o.Style, errBadOptions)
	}
	if o.Favor < FavorNone || o.Favor > FavorUnion {
		return o, fmt.Errorf("merge: favor %d: %w", o.Favor, errBadOptions)
	}
	return o, nil
}

// Lines merges the changes from base to ours and from base to theirs, line
// by line, and agrees byte for byte with `git merge-file -p ours base
// theirs` (git's default "zealous, alnum" level): the same output, the same
// conflict count. Unlike git it does not refuse input that contains NUL
// bytes. The inputs are not modified; Merged never aliases them.
func Lines(base, ours, theirs []byte, opts Options) (Result, error) {
	o, err := opts.normalized()
	if err != nil {
		return Result{}, err
	}
	b, x, y := splitLines(base), splitLines(ours), splitLines(theirs)
	s1 := diffLines(b, x)
	if len(s1) == 0 {
		return Result{Merged: bytes.Clone(nonNil(theirs))}, nil
	}
	s2 := diffLines(b, y)
	if len(s2) == 0 {
		return Result{Merged: bytes.Clone(nonNil(ours))}, nil
	}
	m := &merger{base: b, ours: x, theirs: y, opts: o}
	hunks := m.collect(s1, s2)
	level := levelZealousAlnum
	if o.Style != StyleMerge {
		level = levelEager
	}
	switch {
	case o.Style == StyleZealousDiff3:
		m.trimCommon(hunks)
	case level >= levelZealous:
		hunks = m.refine(hunks)
		hunks = m.simplify(hunks, level > levelZealous)
	}
	n := 0
	for _, h := range hunks {
		if h.mode == modeConflict && o.Favor == FavorNone {
			n++
		}
	}
	return Result{Merged: m.render(hunks), Conflicts: n}, nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// Merge levels, as git numbers them. Only eager and zealous-alnum are used.
const (
	levelEager        = 1
	levelZealous      = 2
	levelZealousAlnum = 3
)

// Hunk modes.
const (
	modeConflict  = 0
	modeOurs      = 1
	modeTheirs    = 2
	modeBoth      = 3 // a conflict resolved by FavorUnion
	modeIdentical = 4 // a conflict whose sides turned out equal: ours' text flows through
)

// hunk is a region where at least one side changed the base: lines
// [i0,i0+chg0) of base, [i1,i1+chg1) of ours, [i2,i2+chg2) of theirs.
type hunk struct {
	mode     int
	i0, chg0 int
	i1, chg1 int
	i2, chg2 int
}

type merger struct {
	base, ours, theirs [][]byte
	opts               Options
}

// add appends h to hs, folding it into the last hunk when the two overlap
// or touch on either side: git treats changes to adjacent lines as one
// region, so they conflict.
func add(hs []hunk, h hunk) []hunk {
	if n := len(hs); n > 0 {
		m := &hs[n-1]
		if h.i1 <= m.i1+m.chg1 || h.i2 <= m.i2+m.chg2 {
			if h.mode != m.mode {
				m.mode = modeConflict
			}
			m.chg0 = h.i0 + h.chg0 - m.i0
			m.chg1 = h.i1 + h.chg1 - m.i1
			m.chg2 = h.i2 + h.chg2 - m.i2
			return hs
		}
	}
	return append(hs, h)
}

// collect walks the two edit scripts side by side and turns them into
// hunks: one-sided changes, identical changes (taken once), and conflicts
// covering the union of the overlapping base ranges.
func (m *merger) collect(s1, s2 []change) []hunk {
	var hs []hunk
	p, q := 0, 0
	for p < len(s1) && q < len(s2) {
		x, y := s1[p], s2[q]
		if x.i1+x.chg1 < y.i1 {
			hs = add(hs, hunk{mode: modeOurs,
				i0: x.i1, chg0: x.chg1,
				i1: x.i2, chg1: x.chg2,
				i2: y.i2 - y.i1 + x.i1, chg2: x.chg1})
			p++
			continue
		}
		if y.i1+y.chg1 < x.i1 {
			hs = add(hs, hunk{mode: modeTheirs,
				i0: y.i1, chg0: y.chg1,
				i1: x.i2 - x.i1 + y.i1, chg1: y.chg1,
				i2: y.i2, chg2: y.chg2})
			q++
			continue
		}
		if x.i1 != y.i1 || x.chg1 != y.chg1 || x.chg2 != y.chg2 ||
			!equalLines(m.ours[x.i2:x.i2+x.chg2], m.theirs[y.i2:y.i2+y.chg2]) {
			off := x.i1 - y.i1
			ffo := off + x.chg1 - y.chg1
			i0, i1, i2 := x.i1, x.i2, y.i2
			if off > 0 {
				i0 -= off
				i1 -= off
			} else {
				i2 += off
			}
			chg0 := x.i1 + x.chg1 - i0
			chg1 := x.i2 + x.chg2 - i1
			chg2 := y.i2 + y.chg2 - i2
			if ffo < 0 {
				chg0 -= ffo
				chg1 -= ffo
			} else {
				chg2 += ffo
			}
			hs = add(hs, hunk{mode: modeConflict, i0: i0, chg0: chg0, i1: i1, chg1: chg1, i2: i2, chg2: chg2})
		}
		e1, e2 := x.i1+x.chg1, y.i1+y.chg1
		if e1 >= e2 {
			q++
		}
		if e2 >= e1 {
			p++
		}
	}
	for ; p < len(s1); p++ {
		x := s1[p]
		hs = add(hs, hunk{mode: modeOurs,
			i0: x.i1, chg0: x.chg1,
			i1: x.i2, chg1: x.chg2,
			i2: x.i1 + len(m.theirs) - len(m.base), chg2: x.chg1})
	}
	for ; q < len(s2); q++ {
		y := s2[q]
		hs = add(hs, hunk{mode: modeTheirs,
			i0: y.i1, chg0: y.chg1,
			i1: y.i1 + len(m.ours) - len(m.base), chg1: y.chg1,
			i2: y.i2, chg2: y.chg2})
	}
	return hs
}

func equalLines(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// refine diffs ours against theirs inside each conflict and keeps only the
// parts that differ as conflicts, so two sides that made mostly the same
// edit conflict on the few lines where they disagree.
func (m *merger) refine(hs []hunk) []hunk {
	out := make([]hunk, 0, len(hs))
	for _, h := range hs {
		if h.mode != modeConflict || h.chg1 == 0 || h.chg2 == 0 {
			out = append(out, h)
			continue
		}
		sub := diffLines(m.ours[h.i1:h.i1+h.chg1], m.theirs[h.i2:h.i2+h.chg2])
		if len(sub) == 0 {
			h.mode = modeIdentical
			out = append(out, h)
			continue
		}
		for _, c := range sub {
			// The base range of a refined piece is unknown; it is only
			// shown by the diff3 styles, which never refine.
			out = append(out, hunk{mode: modeConflict,
				i0: h.i0, chg0: h.chg0,
				i1: h.i1 + c.i1, chg1: c.chg1,
				i2: h.i2 + c.i2, chg2: c.chg2})
		}
	}
	return out
}

// simplify folds the few unchanged lines between two neighbouring
// conflicts into one conflict: three lines or fewer (or, with alnum, any
// number of lines without a letter or digit, like blank lines and braces)
// read better inside one conflict than as a sliver between two.
func (m *merger) simplify(hs []hunk, alnum bool) []hunk {
	if len(hs) == 0 {
		return hs
	}
	out := []hunk{hs[0]}
	for _, next := range hs[1:] {
		cur := &out[len(out)-1]
		begin, end := cur.i1+cur.chg1, next.i1
		if cur.mode != modeConflict || next.mode != modeConflict ||
			(end-begin > 3 && (!alnum || containsAlnum(m.ours[begin:end]))) {
			out = append(out, next)
			continue
		}
		cur.chg1 = next.i1 + next.chg1 - cur.i1
		cur.chg2 = next.i2 + next.chg2 - cur.i2
	}
	return out
}

// containsAlnum reports whether any line holds an ASCII letter or digit,
// the test git applies (its isalnum ignores non-ASCII bytes).
func containsAlnum(lines [][]byte) bool {
	for _, l := range lines {
		for _, c := range l {
			if '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' {
				return true
			}
		}
	}
	return false
}

// trimCommon moves lines equal on both sides at the start and end of each
// conflict out of it, which is all zdiff3 refines.
func (m *merger) trimCommon(hs []hunk) {
	for i := range hs {
		h := &hs[i]
		if h.mode != modeConflict {
			continue
		}
		for h.chg1 > 0 && h.chg2 > 0 && bytes.Equal(m.ours[h.i1], m.theirs[h.i2]) {
			h.chg1--
			h.chg2--
			h.i1++
			h.i2++
		}
		for h.chg1 > 0 && h.chg2 > 0 && bytes.Equal(m.ours[h.i1+h.chg1-1], m.theirs[h.i2+h.chg2-1]) {
			h.chg1--
			h.chg2--
		}
	}
}

// eolCRLF tells whether line i of lines ends in CRLF (1) or LF (0); when i
// is the last line and has no newline, the line before decides; -1 means it
// cannot be told.
func eolCRLF(lines [][]byte, i int) int {
	n := len(lines)
	crlf := func(l []byte) int {
		if len(l) > 1 && l[len(l)-2] == '\r' {
			return 1
		}
		return 0
	}
	if i < n-1 {
		return crlf(lines[i])
	}
	if n == 0 {
		return -1
	}
	if l := lines[i]; len(l) > 0 && l[len(l)-1] == '\n' {
		return crlf(l)
	}
	if i == 0 {
		return -1
	}
	return crlf(lines[i-1])
}

// needsCR decides whether the markers of conflict h end in CRLF: only when
// both sides (and the base, if it can tell) use CRLF around it, so a CRLF
// file keeps consistent line ends and an LF file never gets a stray CR.
func (m *merger) needsCR(h hunk) bool {
	at := func(i int) int {
		if i > 0 {
			return i - 1
		}
		return 0
	}
	v := eolCRLF(m.ours, at(h.i1))
	if v != 0 {
		v = eolCRLF(m.theirs, at(h.i2))
	}
	if v != 0 {
		v = eolCRLF(m.base, 0)
	}
	return v > 0
}

// appendLines appends lines to dst; with addNL it ends an unterminated last
// line, so a marker never lands on the same line as text.
func appendLines(dst []byte, lines [][]byte, cr, addNL bool) []byte {
	for _, l := range lines {
		dst = append(dst, l...)
	}
	if addNL && len(lines) > 0 {
		if l := lines[len(lines)-1]; len(l) == 0 || l[len(l)-1] != '\n' {
			if cr {
				dst = append(dst, '\r')
			}
			dst = append(dst, '\n')
		}
	}
	return dst
}

func appendMarker(dst []byte, c byte, size int, label string, cr bool) []byte {
	for range size {
		dst = append(dst, c)
	}
	if label != "" {
		dst = append(dst, ' ')
		dst = append(dst, label...)
	}
	if cr {
		dst = append(dst, '\r')
	}
	return append(dst, '\n')
}

// render writes the merge: ours' text outside hunks, the chosen side in
// resolved hunks, markers around conflicts.
func (m *merger) render(hs []hunk) []byte {
	o := m.opts
	out := []byte{}
	i := 0
	for _, h := range hs {
		mode := h.mode
		if mode == modeConflict && o.Favor != FavorNone {
			mode = int(o.Favor)
		}
		switch mode {
		case modeConflict:
			cr := m.needsCR(h)
			out = appendLines(out, m.ours[i:h.i1], false, false)
			out = appendMarker(out, '<', o.MarkerSize, o.OursLabel, cr)
			out = appendLines(out, m.ours[h.i1:h.i1+h.chg1], cr, true)
			if o.Style != StyleMerge {
				out = appendMarker(out, '|', o.MarkerSize, o.BaseLabel, cr)
				out = appendLines(out, m.base[h.i0:h.i0+h.chg0], cr, true)
			}
			out = appendMarker(out, '=', o.MarkerSize, "", cr)
			out = appendLines(out, m.theirs[h.i2:h.i2+h.chg2], cr, true)
			out = appendMarker(out, '>', o.MarkerSize, o.TheirsLabel, cr)
		case modeOurs, modeTheirs, modeBoth:
			out = appendLines(out, m.ours[i:h.i1], false, false)
			if mode&modeOurs != 0 {
				out = appendLines(out, m.ours[h.i1:h.i1+h.chg1], m.needsCR(h), mode&modeTheirs != 0)
			}
			if mode&modeTheirs != 0 {
				out = appendLines(out, m.theirs[h.i2:h.i2+h.chg2], false, false)
			}
		default:
			// modeIdentical: ours' lines are copied with the next stretch.
			continue
		}
		i = h.i1 + h.chg1
	}
	return appendLines(out, m.ours[i:], false, false)
}
