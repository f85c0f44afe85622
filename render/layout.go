package render

// The layout shared by every head: sections filled in priority order
// within a token budget, lines cleaned and clipped, what was left out
// reported.

import (
	"fmt"
	"strings"
	"unicode"
)

// entry is one candidate line of a section.
type entry struct {
	id, kind, thread, text string
	line                   string
	tokens                 int
}

// section is a section before layout.
type section struct {
	title   string
	fixed   []string // always shown, part of the skeleton
	entries []entry  // ranked, best first
	quota   int      // rows guaranteed a try in the first pass
	// more counts the rows past what the budget could ever hold: no line
	// is built for them (see minLineTokens). With Explain, unconsidered
	// lists them.
	more         int
	unconsidered []*Item
}

func rowCap(budget int) int { return budget/minLineTokens + 1 }

// layout fills the sections within budget and writes the document.
//
// The steps take secs and preamble as parameters rather than in a struct
// of their own: through a struct, escape analysis loses track of them, and
// the callers' section lists and the heading move to the heap on every
// render (a kilobyte and five allocations more per head, measured). What
// each section leaves out, and whether its overflow line fits, is decided
// as it is written, in section order, so no slice per section is made for
// them.
func layout(path, title string, preamble []string, secs []section, budget int, explain bool) (*Doc, error) {
	heading := "# " + title
	skeleton := skeletonTokens(heading, preamble, secs)
	if skeleton > budget {
		return nil, &BudgetError{Head: path, Budget: budget, Need: skeleton}
	}
	f := fill(secs, skeleton, budget)

	var b strings.Builder
	b.WriteString(heading)
	b.WriteString("\n\n")
	for _, p := range preamble {
		b.WriteString(p)
		b.WriteByte('\n')
	}
	rep := Report{Head: path, Budget: budget, Skeleton: skeleton}
	for i := range secs {
		rep.Sections = append(rep.Sections, f.writeSection(&b, &secs[i], i, explain))
	}
	out := []byte(b.String())
	rep.Tokens = Tokens(b.String())
	return &Doc{Path: path, Bytes: out, Report: rep}, nil
}

// fit is what the budget lets into the head: per section and entry,
// whether it is shown or why not, and the tokens used so far.
type fit struct {
	budget int
	used   int
	shown  [][]bool
	reason [][]string
}

// rowPick names an entry: its section and its rank in it.
type rowPick struct{ sec, idx int }

// skeletonTokens counts what a head shows whatever its budget: the title,
// the preamble, each section's title and fixed lines. A budget below it is
// refused. An empty section is its heading alone: no "- none" under it.
func skeletonTokens(heading string, preamble []string, secs []section) int {
	skeleton := Tokens(heading)
	for _, p := range preamble {
		skeleton += Tokens(p)
	}
	for _, s := range secs {
		skeleton += Tokens("## " + s.title)
		for _, f := range s.fixed {
			skeleton += Tokens(f)
		}
	}
	return skeleton
}

// rowOrder is the order in which entries try for the budget: every
// section's quota first, sections in order, so no section is starved by
// those above it, then the rest of each section.
func rowOrder(secs []section) []rowPick {
	var order []rowPick
	for i, s := range secs {
		for j := 0; j < len(s.entries) && j < s.quota; j++ {
			order = append(order, rowPick{i, j})
		}
	}
	for i, s := range secs {
		for j := s.quota; j < len(s.entries); j++ {
			order = append(order, rowPick{i, j})
		}
	}
	return order
}

// moreLine is the overflow line of a section that leaves n rows out; ""
// when it leaves none.
func moreLine(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("- … %d more", n)
}

// fill decides which entries are shown. A section that loses rows says so
// in an overflow line, which costs tokens too. Fill with the overflow
// lines' cost held back; when that makes another section lose rows, hold
// back its line as well and fill again. The set of overflowing sections
// only grows, so this ends.
func fill(secs []section, skeleton, budget int) fit {
	order := rowOrder(secs)
	overflowing := make([]bool, len(secs))
	for {
		reserve := 0
		for i := range secs {
			if overflowing[i] {
				reserve += Tokens(moreLine(len(secs[i].entries)))
			}
		}
		f := fillOnce(secs, order, skeleton, reserve, budget)
		if !f.overflowMore(secs, overflowing) {
			return f
		}
	}
}

// fillOnce takes the entries in order while they fit in the budget after
// the skeleton with reserve tokens held back, and says of each one left
// out why.
func fillOnce(secs []section, order []rowPick, skeleton, reserve, budget int) fit {
	f := fit{budget: budget, used: skeleton, shown: make([][]bool, len(secs)), reason: make([][]string, len(secs))}
	for i, s := range secs {
		f.shown[i] = make([]bool, len(s.entries))
		f.reason[i] = make([]string, len(s.entries))
	}
	for _, p := range order {
		e := secs[p.sec].entries[p.idx]
		if f.used+reserve+e.tokens <= budget {
			f.shown[p.sec][p.idx] = true
			f.used += e.tokens
			continue
		}
		left := max(budget-f.used-reserve, 0)
		f.reason[p.sec][p.idx] = fmt.Sprintf("over budget: needs %d tokens, %d of %d left", e.tokens, left, budget)
	}
	return f
}

// overflowMore marks the sections that lose an entry in f and were not
// overflowing yet, and reports whether there were any.
func (f *fit) overflowMore(secs []section, overflowing []bool) bool {
	grew := false
	for i := range secs {
		if overflowing[i] {
			continue
		}
		for j := range secs[i].entries {
			if !f.shown[i][j] {
				overflowing[i], grew = true, true
				break
			}
		}
	}
	return grew
}

// writeSection writes s, section i of the head (title, fixed lines, the
// entries shown, its overflow line; an empty section its title alone), and reports on it: every
// entry left out with its reason, and with explain the rows past the row
// cap too. Overflow lines are shown while they fit, first sections first:
// the reservation fill made makes them all fit unless even an empty head
// cannot hold them.
func (f *fit) writeSection(b *strings.Builder, s *section, i int, explain bool) SectionReport {
	b.WriteString("\n## ")
	b.WriteString(s.title)
	b.WriteByte('\n')
	if len(s.fixed) > 0 || len(s.entries) > 0 || s.more > 0 {
		// An empty section is its heading alone (one line, kept so that a
		// three-way merge matches every section by heading, and so that
		// a person can write into it).
		b.WriteByte('\n')
	}
	for _, fx := range s.fixed {
		b.WriteString(fx)
		b.WriteByte('\n')
	}
	dropped := s.more // rows past the row cap are left out too
	for j := range s.entries {
		if !f.shown[i][j] {
			dropped++
		}
	}
	sr := SectionReport{Title: s.title, Rows: len(s.entries) + s.more, LeftOut: dropped}
	for j, e := range s.entries {
		if f.shown[i][j] {
			b.WriteString(e.line)
			b.WriteByte('\n')
			sr.Shown++
			continue
		}
		sr.Dropped = append(sr.Dropped, Dropped{ID: e.id, Kind: e.kind, Thread: e.thread,
			Text: e.text, Tokens: e.tokens, Reason: f.reason[i][j]})
	}
	if explain {
		why := fmt.Sprintf("over budget: a budget of %d tokens holds at most %d rows of a section, and this row ranks lower", f.budget, rowCap(f.budget))
		for _, it := range s.unconsidered {
			t := clean(it.Text, 120)
			sr.Dropped = append(sr.Dropped, Dropped{ID: it.ID, Kind: it.Kind, Thread: it.Thread, Text: t,
				Tokens: Tokens(t), Reason: why})
		}
	}
	if ml := moreLine(dropped); ml != "" && f.used+Tokens(ml) <= f.budget {
		f.used += Tokens(ml)
		b.WriteString(ml)
		b.WriteByte('\n')
	}
	return sr
}

// clean makes row text safe to place on one list line: white space folded,
// clipped, and anything that could change the document's structure
// neutralised (an HTML comment could forge the keep marker; a leading #
// would make a heading inside the list item).
func clean(s string, max int) string {
	// Only the first max runes survive the clip, so only those (and a few
	// more, for a marker that straddles the cut) are folded: a node's text
	// can be pages long, and a head of 200 threads cleans thousands.
	return neutralise(foldSpace(s, max+8), max)
}

// neutralise clips folded text to max runes and escapes what could change
// the document's structure.
func neutralise(s string, max int) string {
	s = strings.ReplaceAll(s, "<!--", "&lt;!--")
	s = strings.ReplaceAll(s, "-->", "--&gt;")
	if r := []rune(s); len(r) > max {
		s = strings.TrimSpace(string(r[:max-1])) + "…"
	}
	if strings.HasPrefix(s, "#") || strings.HasPrefix(s, ">") || strings.HasPrefix(s, "[ ]") {
		s = `\` + s
	}
	if s == "" {
		s = "(empty)"
	}
	return s
}

// foldSpace is strings.Join(strings.Fields(s), " ") cut after limit runes.
func foldSpace(s string, limit int) string {
	var b strings.Builder
	n, space := 0, false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if n >= limit {
			break
		}
		if space {
			b.WriteByte(' ')
			n++
			space = false
			if n >= limit {
				break
			}
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

func mkEntry(it *Item, line string) entry {
	return entry{id: it.ID, kind: it.Kind, thread: it.Thread, text: clean(it.Text, 120), line: line, tokens: Tokens(line)}
}

// RowCap is how many rows of one section a head with this budget
// considers (see minLineTokens): rows ranked lower are only counted.
func RowCap(budget int) int { return rowCap(budget) }
