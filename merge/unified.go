package merge

import (
	"bytes"
	"fmt"
)

// Unified returns the unified diff from a to b, with the hunks git's diff
// would pick (the same line diff the merge uses) and context lines of
// context around each: "--- from" and "+++ to" headers, then "@@" hunks.
// Equal inputs give nil. A last line without a newline is marked as diff
// marks it.
func Unified(from, to string, a, b []byte, context int) []byte {
	la, lb := splitLines(a), splitLines(b)
	changes := diffLines(la, lb)
	if len(changes) == 0 {
		return nil
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", from, to)
	for len(changes) > 0 {
		// a hunk takes the changes whose context touches or overlaps
		n := 1
		for n < len(changes) && changes[n].i1-(changes[n-1].i1+changes[n-1].chg1) <= 2*context {
			n++
		}
		unifiedHunk(&out, la, lb, changes[:n], context)
		changes = changes[n:]
	}
	return out.Bytes()
}

func unifiedHunk(out *bytes.Buffer, la, lb [][]byte, cs []change, context int) {
	first, last := cs[0], cs[len(cs)-1]
	s1 := max(0, first.i1-context)
	s2 := first.i2 - (first.i1 - s1)
	e1 := min(len(la), last.i1+last.chg1+context)
	e2 := last.i2 + last.chg2 + (e1 - (last.i1 + last.chg1))
	fmt.Fprintf(out, "@@ -%s +%s @@\n", span(s1, e1-s1), span(s2, e2-s2))
	pos := s1
	for _, c := range cs {
		unifiedLines(out, ' ', la[pos:c.i1])
		unifiedLines(out, '-', la[c.i1:c.i1+c.chg1])
		unifiedLines(out, '+', lb[c.i2:c.i2+c.chg2])
		pos = c.i1 + c.chg1
	}
	unifiedLines(out, ' ', la[pos:e1])
}

// span writes a hunk's range as diff does: "start,count", the count left
// out when it is 1, and the line before the hunk as start when it is 0.
func span(start, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, count)
}

func unifiedLines(out *bytes.Buffer, mark byte, ls [][]byte) {
	for _, l := range ls {
		out.WriteByte(mark)
		out.Write(l)
		if !bytes.HasSuffix(l, []byte("\n")) {
			out.WriteString("\n\\ No newline at end of file\n")
		}
	}
}
