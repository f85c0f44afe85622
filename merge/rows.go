package merge

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

// RowConflict is one row of a section merged by MergeRows where the
// render's change could not be applied because the person had changed
// that row too: their text stands.
type RowConflict struct {
	// Row is the row's key (MarkdownOptions.RowKey), or "" for a line
	// with none.
	Row string `json:"row,omitempty"`
	// Yours is the person's line for the row, or "" when they deleted it.
	Yours string `json:"yours"`
	// Theirs is the render's line for the row, or "" when the render
	// dropped it.
	Theirs string `json:"theirs"`
}

// mergeRows settles, row by row, a section both sides changed beyond the
// line merge (MarkdownOptions.MergeRows). A section of a head is a list of
// rows, one a line, each ending with its key (rowKey; nil makes every line
// its own row). The result is ours, with:
//
//   - every line theirs added since base put in, unless ours holds it
//     already or the person changed its row (deleted or rewrote the base's
//     line of the same key, or wrote their own line with that key): placed
//     just after the nearest line before it in theirs that the result
//     holds (or before the nearest one after it), in theirs' order, with
//     ours' line ends;
//   - every line theirs removed since base taken out where ours still holds
//     it as it was; a line the person rewrote stays.
//
// A row both changed is reported: the person rewrote or deleted a row
// whose line the render changed, or rewrote one the render dropped, or
// both put different text in place of one base line (with or without
// keys: "same lines changed both ways").
//
// Blank lines are the person's layout and never added or removed. Lines
// are compared without their line end or trailing blanks, so a file whose
// line ends an editor changed to CRLF merges like the original. It returns
// the merged text and the rows where a change of theirs met a change of
// ours (nil when none did: then nothing of either side was lost, and the
// merge is clean).
func mergeRows(base, ours, theirs []byte, rowKey func([]byte) string) ([]byte, []RowConflict) {
	m := newRowMerge(splitLines(base), splitLines(ours), splitLines(theirs), rowKey)
	kept := m.removed()
	add := m.added()
	return placeRows(m.t, kept, add, eolOf(ours, theirs)), m.conflicts
}

// rowMerge is one mergeRows: the three versions' lines and what is known
// of their rows.
type rowMerge struct {
	b, o, t    [][]byte
	rowKey     func([]byte) string
	cb, co, ct map[string]int    // lineCounts
	baseRow    map[string]int    // row key → the base's line
	ownRow     map[string]string // row key → a line of ours the base lacks
	oRep, tRep map[int]string    // replacements of each side
	conflicts  []RowConflict
	seen       map[RowConflict]bool
}

func newRowMerge(b, o, t [][]byte, rowKey func([]byte) string) *rowMerge {
	m := &rowMerge{b: b, o: o, t: t, rowKey: rowKey, cb: lineCounts(b), co: lineCounts(o), ct: lineCounts(t),
		baseRow: map[string]int{}, ownRow: map[string]string{}, seen: map[RowConflict]bool{}}
	for i, l := range b {
		if r := m.rk(l); r != "" {
			if _, ok := m.baseRow[r]; !ok {
				m.baseRow[r] = i
			}
		}
	}
	for _, l := range o {
		if r, k := m.rk(l), lineKey(l); r != "" && m.cb[k] == 0 {
			if _, ok := m.ownRow[r]; !ok {
				m.ownRow[r] = k
			}
		}
	}
	m.oRep, m.tRep = replacements(b, o, m.rk), replacements(b, t, m.rk)
	return m
}

// rk is a line's row key, "" for none.
func (m *rowMerge) rk(l []byte) string {
	if m.rowKey == nil {
		return ""
	}
	return m.rowKey(bytes.TrimRight(l, " \t\r\n"))
}

// refuse reports a row where ours stood against a change of theirs, once
// a row.
func (m *rowMerge) refuse(c RowConflict) {
	id := c
	if c.Row != "" {
		id = RowConflict{Row: c.Row}
	}
	if !m.seen[id] {
		m.seen[id] = true
		m.conflicts = append(m.conflicts, c)
	}
}

// theirLine is theirs' line of row r, or "".
func (m *rowMerge) theirLine(r string) string {
	for _, l := range m.t {
		if m.rk(l) == r {
			return lineKey(l)
		}
	}
	return ""
}

// removed returns ours without the lines theirs removed that ours holds
// as they were, and reports the rows ours changed that theirs removed.
func (m *rowMerge) removed() [][]byte {
	drop := map[string]int{}
	for i, l := range m.b {
		k, r := lineKey(l), m.rk(l)
		switch {
		case k == "" || m.cb[k] <= m.ct[k]:
		case m.co[k] > 0:
			drop[k] = min(m.cb[k]-m.ct[k], m.co[k])
		case r != "" && m.ownRow[r] != "" && m.ct[m.ownRow[r]] == 0:
			m.refuse(RowConflict{Row: r, Yours: m.ownRow[r], Theirs: m.theirLine(r)})
		case m.oRep[i] != "" && m.oRep[i] != m.tRep[i]:
			// Both put something else in place of the line: a line changed
			// both ways, whatever their keys.
			m.refuse(RowConflict{Row: r, Yours: m.oRep[i], Theirs: m.tRep[i]})
		}
	}
	var kept [][]byte
	for _, l := range m.o {
		if k := lineKey(l); drop[k] > 0 {
			drop[k]--
			continue
		}
		kept = append(kept, l)
	}
	return kept
}

// added marks the lines of theirs to put in: those theirs added that ours
// lacks, unless ours changed their row (reported).
func (m *rowMerge) added() []bool {
	add := make([]bool, len(m.t))
	left := map[string]int{}
	for k, n := range m.ct {
		left[k] = min(n-m.cb[k], n-m.co[k])
	}
	for j, l := range m.t {
		k := lineKey(l)
		if k == "" || left[k] <= 0 {
			continue
		}
		if r := m.rk(l); r != "" {
			if own := m.ownRow[r]; own != "" {
				m.refuse(RowConflict{Row: r, Yours: own, Theirs: k})
				continue
			}
			if i, ok := m.baseRow[r]; ok && m.co[lineKey(m.b[i])] == 0 {
				m.refuse(RowConflict{Row: r, Yours: m.oRep[i], Theirs: k})
				continue
			}
		}
		left[k]--
		add[j] = true
	}
	return add
}

// replacements maps each base line that side changed (and did not only
// delete) to the non-blank lines side put in its place, without their
// line ends, joined by "\n": of the lines of its hunk, those with the
// base line's row key, else those with no key (a line keyed for another
// row replaces none).
func replacements(base, side [][]byte, rk func([]byte) string) map[int]string {
	out := map[int]string{}
	for _, c := range diffLines(normLines(base), normLines(side)) {
		put := map[string][]string{} // row key → lines
		for _, l := range side[c.i2 : c.i2+c.chg2] {
			if k := lineKey(l); k != "" {
				put[rk(l)] = append(put[rk(l)], k)
			}
		}
		for i := c.i1; i < c.i1+c.chg1; i++ {
			p := put[rk(base[i])]
			if len(p) == 0 {
				p = put[""]
			}
			if len(p) > 0 {
				out[i] = strings.Join(p, "\n")
			}
		}
	}
	return out
}

// placeRows puts the lines of theirs marked add into kept: each just after
// the line of kept that the nearest earlier line of theirs matches, or
// before the one the nearest later line matches, or at the end.
func placeRows(theirs, kept [][]byte, add []bool, nl string) []byte {
	at := keptAt(normLines(theirs), normLines(kept)) // theirs line → index in kept, or -1
	before := make(map[int][][]byte)                 // lines to put before kept[i]
	for j := range theirs {
		if !add[j] {
			continue
		}
		pos := -1
		for i := j - 1; i >= 0 && pos < 0; i-- {
			if at[i] >= 0 {
				pos = at[i] + 1
			}
		}
		for i := j + 1; i < len(theirs) && pos < 0; i++ {
			if at[i] >= 0 {
				pos = at[i]
			}
		}
		if pos < 0 {
			pos = len(kept)
		}
		before[pos] = append(before[pos], append([]byte(lineKey(theirs[j])), nl...))
	}
	var buf bytes.Buffer
	for i := 0; i <= len(kept); i++ {
		for _, l := range before[i] {
			if buf.Len() > 0 && !bytes.HasSuffix(buf.Bytes(), []byte("\n")) {
				buf.WriteString(nl)
			}
			buf.Write(l)
		}
		if i < len(kept) {
			if buf.Len() > 0 && !bytes.HasSuffix(buf.Bytes(), []byte("\n")) {
				buf.WriteString(nl)
			}
			buf.Write(kept[i])
		}
	}
	return buf.Bytes()
}

// lineCounts counts the non-blank lines of ls by lineKey.
func lineCounts(ls [][]byte) map[string]int {
	n := map[string]int{}
	for _, l := range ls {
		if k := lineKey(l); k != "" {
			n[k]++
		}
	}
	return n
}

// eolOf is the line end of the first of docs that has a line end.
func eolOf(docs ...[]byte) string {
	for _, d := range docs {
		if bytes.IndexByte(d, '\n') >= 0 {
			return eol(d)
		}
	}
	return "\n"
}

// Mark identifies the conflict by the person's side of it: the section's
// heading path and kind and, for a section merged row by row, their line
// of each conflicting row (a row they deleted by its key), else our text
// of the section. The same edit meeting the render again has the same
// mark, though the render's side moved on; a new edit gives a new one.
func (c SectionConflict) Mark() string {
	h := sha256.New()
	h.Write([]byte(c.Heading + "\x00" + c.Kind.String() + "\x00"))
	if len(c.Rows) > 0 {
		rows := make([]string, 0, len(c.Rows))
		for _, r := range c.Rows {
			rows = append(rows, r.Row+"\x00"+r.Yours)
		}
		slices.Sort(rows)
		h.Write([]byte(strings.Join(rows, "\x01")))
	} else {
		for _, l := range splitLines(c.Ours) {
			h.Write([]byte(lineKey(l) + "\x01"))
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// mergeDeleted settles, with MergeRows, each section we deleted and they
// changed. When one of our sections the base and theirs lack holds lines
// of its body (the person renamed it), their changes go into that section
// under our heading. Else the section comes back holding only the lines
// they added since base (the rows the person deleted stay deleted), or
// stays deleted when they added none. Either way a row they changed that
// the person deleted or rewrote is reported, as in mergeRows.
func (m *sectionMerge) mergeDeleted() {
	claimed := map[string]bool{}
	for _, key := range m.deleted {
		b, y := m.base[key], m.theirs[key]
		if r, ok := m.renamed(b, claimed); ok {
			claimed[r.key] = true
			merged, rows := mergeRows(b.text, r.text, y.text, m.opts.RowKey)
			m.out[r.key] = merged
			if len(rows) > 0 {
				m.res.Sections = append(m.res.Sections, SectionConflict{Heading: r.path, Kind: BothEdited,
					Base: bytes.Clone(b.text), Ours: bytes.Clone(r.text), Theirs: bytes.Clone(y.text), Rows: rows})
			}
			continue
		}
		// Ours as the person left it: the base's heading and blank lines.
		bare := bytes.Clone(b.text[:b.head])
		for _, l := range splitLines(b.text[b.head:]) {
			if lineKey(l) == "" {
				bare = append(bare, l...)
			}
		}
		merged, rows := mergeRows(b.text, bare, y.text, m.opts.RowKey)
		if len(merged) > len(bare) {
			m.out[key] = merged // rows came in: the section is back
		}
		if len(rows) > 0 {
			m.res.Sections = append(m.res.Sections, SectionConflict{Heading: y.path, Kind: OursDeleted,
				Base: bytes.Clone(b.text), Theirs: bytes.Clone(y.text), Rows: rows})
		}
	}
}

// renamed finds the section of ours that the base's section b became under
// another heading: one the base and theirs lack, not pinned, not claimed
// by another, holding the most non-blank lines of b's body (at least one).
func (m *sectionMerge) renamed(b section, claimed map[string]bool) (section, bool) {
	body := lineCounts(splitLines(b.text[b.head:]))
	var best section
	most := 0
	for _, s := range m.oursOrder {
		_, inB := m.base[s.key]
		_, inT := m.theirs[s.key]
		if inB || inT || s.keep || claimed[s.key] || s.key == "" {
			continue
		}
		n := 0
		for k := range lineCounts(splitLines(s.text[s.head:])) {
			if body[k] > 0 {
				n++
			}
		}
		if n > most {
			best, most = s, n
		}
	}
	return best, most > 0
}
