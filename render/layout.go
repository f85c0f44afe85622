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
func layout(path, title string, preamble []string, secs []section, budget int, explain bool) (*Doc, error) {
	l := &headLayout{path: path, heading: "# " + title, preamble: preamble, secs: secs, budget: budget, explain: explain}
	l.skeleton = l.skeletonTokens()
	if l.skeleton > budget {
		return nil, &BudgetError{Head: path, Budget: budget, Need: l.skeleton}
	}
	f := l.fill()
	l.overflowLines(f)
	return l.write(f), nil
}

// headLayout is one layout call: the document's parts and its budget.
type headLayout struct {
	path, heading string
	preamble      []string
	secs          []section
	budget        int
	explain       bool
	skeleton      int // tokens of what every render shows (skeletonTokens)
}

// fit is what the budget lets into the head: per section and entry,
// whether it is shown or why not; per section, how many rows it leaves out
// and whether its overflow line is shown; and the tokens used in all.
type fit struct {
	shown    [][]bool
	reason   [][]string
	dropped  []int
	withMore []bool
	used     int
}

// rowPick names an entry: its section and its rank in it.
type rowPick struct{ sec, idx int }

// skeletonTokens counts what a head shows whatever its budget: the title,
// the preamble, each section's title and fixed lines, and "- none" in a
// section with nothing else. A budget below it is refused.
func (l *headLayout) skeletonTokens() int {
	skeleton := Tokens(l.heading)
	for _, p := range l.preamble {
		skeleton += Tokens(p)
	}
	for _, s := range l.secs {
		skeleton += Tokens("## " + s.title)
		for _, f := range s.fixed {
			skeleton += Tokens(f)
		}
		if len(s.fixed) == 0 && len(s.entries) == 0 && s.more == 0 {
			skeleton += Tokens(noneLine)
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
func (l *headLayout) fill() *fit {
	order := rowOrder(l.secs)
	overflowing := make([]bool, len(l.secs))
	for {
		reserve := 0
		for i := range l.secs {
			if overflowing[i] {
				reserve += Tokens(moreLine(len(l.secs[i].entries)))
			}
		}
		f := l.fillOnce(order, reserve)
		if !f.overflowMore(l.secs, overflowing) {
			return f
		}
	}
}

// fillOnce takes the entries in order while they fit in the budget with
// reserve tokens held back, and says of each one left out why.
func (l *headLayout) fillOnce(order []rowPick, reserve int) *fit {
	f := &fit{shown: make([][]bool, len(l.secs)), reason: make([][]string, len(l.secs))}
	for i, s := range l.secs {
		f.shown[i] = make([]bool, len(s.entries))
		f.reason[i] = make([]string, len(s.entries))
	}
	f.used = l.skeleton
	for _, p := range order {
		e := l.secs[p.sec].entries[p.idx]
		if f.used+reserve+e.tokens <= l.budget {
			f.shown[p.sec][p.idx] = true
			f.used += e.tokens
			continue
		}
		left := max(l.budget-f.used-reserve, 0)
		f.reason[p.sec][p.idx] = fmt.Sprintf("over budget: needs %d tokens, %d of %d left", e.tokens, left, l.budget)
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

// overflowLines counts the rows each section leaves out, those past the
// row cap included, and shows the overflow lines while they fit, first
// sections first; the reservation fill made makes them all fit unless even
// an empty head cannot hold them.
func (l *headLayout) overflowLines(f *fit) {
	f.dropped = make([]int, len(l.secs))
	for i := range l.secs {
		for j := range l.secs[i].entries {
			if !f.shown[i][j] {
				f.dropped[i]++
			}
		}
		f.dropped[i] += l.secs[i].more
	}
	f.withMore = make([]bool, len(l.secs))
	for i := range l.secs {
		if ml := moreLine(f.dropped[i]); ml != "" && f.used+Tokens(ml) <= l.budget {
			f.withMore[i] = true
			f.used += Tokens(ml)
		}
	}
}

// write renders the document as f lays it out, with its report.
func (l *headLayout) write(f *fit) *Doc {
	var b strings.Builder
	b.WriteString(l.heading)
	b.WriteString("\n\n")
	for _, p := range l.preamble {
		b.WriteString(p)
		b.WriteByte('\n')
	}
	rep := Report{Head: l.path, Budget: l.budget, Skeleton: l.skeleton}
	for i := range l.secs {
		rep.Sections = append(rep.Sections, l.writeSection(&b, i, f))
	}
	out := []byte(b.String())
	rep.Tokens = Tokens(b.String())
	return &Doc{Path: l.path, Bytes: out, Report: rep}
}

// writeSection writes section i (title, fixed lines, the entries shown, its
// overflow line or "- none") and reports on it: every entry left out with
// its reason, and with explain the rows past the row cap too.
func (l *headLayout) writeSection(b *strings.Builder, i int, f *fit) SectionReport {
	s := &l.secs[i]
	b.WriteString("\n## ")
	b.WriteString(s.title)
	b.WriteString("\n\n")
	for _, fx := range s.fixed {
		b.WriteString(fx)
		b.WriteByte('\n')
	}
	sr := SectionReport{Title: s.title, Rows: len(s.entries) + s.more, LeftOut: f.dropped[i]}
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
	if l.explain {
		why := fmt.Sprintf("over budget: a budget of %d tokens holds at most %d rows of a section, and this row ranks lower", l.budget, rowCap(l.budget))
		for _, it := range s.unconsidered {
			t := clean(it.Text, 120)
			sr.Dropped = append(sr.Dropped, Dropped{ID: it.ID, Kind: it.Kind, Thread: it.Thread, Text: t,
				Tokens: Tokens(t), Reason: why})
		}
	}
	if f.withMore[i] {
		b.WriteString(moreLine(f.dropped[i]))
		b.WriteByte('\n')
	}
	if len(s.fixed) == 0 && len(s.entries) == 0 && s.more == 0 {
		b.WriteString(noneLine)
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
