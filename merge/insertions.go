package merge

import "bytes"

// keepInsertions settles a section both sides changed when one of them
// only inserted lines (deleted and changed none of the base's): the other
// side's version stands, and the inserted lines go into it where they
// were inserted. Nothing is lost either way: the inserting side changed
// no line of the base, so the other side's changes are all there is to
// take of it, and every line it inserted is kept.
//
// Where an insertion goes: lines we inserted before base line p go just
// before the first base line from p on that they kept (after their own
// insertions there), or at the end; lines they inserted go just after
// the last base line before p that we kept (before our own insertions
// there), or at the start. Where both sides inserted at one place, their
// lines come first and ours after: for a head, the render's rows, then
// the person's. It reports false when neither side only inserted, or a
// version does not end in a newline.
func keepInsertions(base, ours, theirs []byte) ([]byte, bool) {
	b, o, t := splitLines(base), splitLines(ours), splitLines(theirs)
	for _, v := range [][][]byte{b, o, t} {
		if len(v) > 0 && !bytes.HasSuffix(v[len(v)-1], []byte("\n")) {
			return nil, false
		}
	}
	if ins, ok := insertionsOnly(b, o); ok {
		return place(b, t, ins, true), true
	}
	if ins, ok := insertionsOnly(b, t); ok {
		return place(b, o, ins, false), true
	}
	return nil, false
}

// insertion is a run of lines a side put before base line at.
type insertion struct {
	at    int
	lines [][]byte
}

// insertionsOnly returns the runs of lines side inserted into base, when
// that is all it did.
func insertionsOnly(base, side [][]byte) ([]insertion, bool) {
	var ins []insertion
	for _, c := range diffLines(base, side) {
		if c.chg1 > 0 {
			return nil, false
		}
		ins = append(ins, insertion{at: c.i1, lines: side[c.i2 : c.i2+c.chg2]})
	}
	return ins, len(ins) > 0
}

// place puts the insertions into other (a version of base), by the rule
// keepInsertions gives: before the next kept base line for ours (before),
// after the last kept one for theirs.
func place(base, other [][]byte, ins []insertion, before bool) []byte {
	// Lines are matched without their line ends, and the inserted ones
	// take other's: a side an editor turned CRLF keeps every line, and the
	// lines put in it match it.
	kept := keptAt(normLines(base), normLines(other))
	nl := eolOf(bytes.Join(other, nil), bytes.Join(base, nil))
	for i, in := range ins {
		lines := make([][]byte, len(in.lines))
		for j, l := range in.lines {
			lines[j] = append(bytes.TrimRight(bytes.Clone(l), "\r\n"), nl...)
		}
		ins[i].lines = lines
	}
	at := make(map[int][][]byte) // lines to put before other[i]; i == len(other): at the end
	for _, in := range ins {
		pos := len(other)
		if before {
			for k := in.at; k < len(base); k++ {
				if kept[k] >= 0 {
					pos = kept[k]
					break
				}
			}
		} else {
			pos = 0
			for k := in.at - 1; k >= 0; k-- {
				if kept[k] >= 0 {
					pos = kept[k] + 1
					break
				}
			}
		}
		at[pos] = append(at[pos], in.lines...)
	}
	var out bytes.Buffer
	for i := 0; i <= len(other); i++ {
		for _, l := range at[i] {
			out.Write(l)
		}
		if i < len(other) {
			out.Write(other[i])
		}
	}
	return out.Bytes()
}

// keptAt maps each base line to its index in other, or -1 where other
// deleted or changed it.
func keptAt(base, other [][]byte) []int {
	kept := make([]int, len(base))
	i, j := 0, 0
	for _, c := range diffLines(base, other) {
		for ; i < c.i1; i, j = i+1, j+1 {
			kept[i] = j
		}
		for k := 0; k < c.chg1; k++ {
			kept[i+k] = -1
		}
		i, j = i+c.chg1, j+c.chg2
	}
	for ; i < len(base); i, j = i+1, j+1 {
		kept[i] = j
	}
	return kept
}

// normLines is ls without line ends, each ending in "\n", for matching.
func normLines(ls [][]byte) [][]byte {
	out := make([][]byte, len(ls))
	for i, l := range ls {
		out[i] = append(bytes.TrimRight(bytes.Clone(l), "\r\n"), '\n')
	}
	return out
}
