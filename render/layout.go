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
	heading := "# " + title
	skeleton := Tokens(heading)
	for _, p := range preamble {
		skeleton += Tokens(p)
	}
	for _, s := range secs {
		skeleton += Tokens("## " + s.title)
		for _, f := range s.fixed {
			skeleton += Tokens(f)
		}
		if len(s.fixed) == 0 && len(s.entries) == 0 && s.more == 0 {
			skeleton += Tokens(noneLine)
		}
	}
	if skeleton > budget {
		return nil, &BudgetError{Head: path, Budget: budget, Need: skeleton}
	}

	type pick struct{ sec, idx int }
	var order []pick
	for i, s := range secs {
		for j := 0; j < len(s.entries) && j < s.quota; j++ {
			order = append(order, pick{i, j})
		}
	}
	for i, s := range secs {
		for j := s.quota; j < len(s.entries); j++ {
			order = append(order, pick{i, j})
		}
	}
	moreLine := func(i, n int) string {
		if n == 0 {
			return ""
		}
		return fmt.Sprintf("- … %d more", n)
	}
	// A section that loses rows says so in an overflow line, which costs
	// tokens too. Fill with the overflow lines' cost held back; when that
	// makes another section lose rows, hold back its line as well and fill
	// again. The set of overflowing sections only grows, so this ends.
	var shown [][]bool
	var reason [][]string
	var used int
	overflowing := make([]bool, len(secs))
	for {
		reserve := 0
		for i := range secs {
			if overflowing[i] {
				reserve += Tokens(moreLine(i, len(secs[i].entries)))
			}
		}
		shown = make([][]bool, len(secs))
		reason = make([][]string, len(secs))
		for i, s := range secs {
			shown[i] = make([]bool, len(s.entries))
			reason[i] = make([]string, len(s.entries))
		}
		used = skeleton
		for _, p := range order {
			e := secs[p.sec].entries[p.idx]
			if used+reserve+e.tokens <= budget {
				shown[p.sec][p.idx] = true
				used += e.tokens
				continue
			}
			left := max(budget-used-reserve, 0)
			reason[p.sec][p.idx] = fmt.Sprintf("over budget: needs %d tokens, %d of %d left", e.tokens, left, budget)
		}
		grew := false
		for i := range secs {
			if overflowing[i] {
				continue
			}
			for j := range secs[i].entries {
				if !shown[i][j] {
					overflowing[i], grew = true, true
					break
				}
			}
		}
		if !grew {
			break
		}
	}
	dropped := make([]int, len(secs))
	for i := range secs {
		for j := range secs[i].entries {
			if !shown[i][j] {
				dropped[i]++
			}
		}
		dropped[i] += secs[i].more
	}
	// Overflow lines are shown while they fit, first sections first; the
	// reservation above makes them all fit unless even an empty head
	// cannot hold them.
	withMore := make([]bool, len(secs))
	for i := range secs {
		if l := moreLine(i, dropped[i]); l != "" && used+Tokens(l) <= budget {
			withMore[i] = true
			used += Tokens(l)
		}
	}

	var b strings.Builder
	b.WriteString(heading)
	b.WriteString("\n\n")
	for _, p := range preamble {
		b.WriteString(p)
		b.WriteByte('\n')
	}
	rep := Report{Head: path, Budget: budget, Skeleton: skeleton}
	for i, s := range secs {
		b.WriteString("\n## ")
		b.WriteString(s.title)
		b.WriteString("\n\n")
		for _, f := range s.fixed {
			b.WriteString(f)
			b.WriteByte('\n')
		}
		sr := SectionReport{Title: s.title, Rows: len(s.entries) + s.more, LeftOut: dropped[i]}
		for j, e := range s.entries {
			if shown[i][j] {
				b.WriteString(e.line)
				b.WriteByte('\n')
				sr.Shown++
				continue
			}
			sr.Dropped = append(sr.Dropped, Dropped{ID: e.id, Kind: e.kind, Thread: e.thread,
				Text: e.text, Tokens: e.tokens, Reason: reason[i][j]})
		}
		if explain {
			why := fmt.Sprintf("over budget: a budget of %d tokens holds at most %d rows of a section, and this row ranks lower", budget, rowCap(budget))
			for _, it := range s.unconsidered {
				t := clean(it.Text, 120)
				sr.Dropped = append(sr.Dropped, Dropped{ID: it.ID, Kind: it.Kind, Thread: it.Thread, Text: t,
					Tokens: Tokens(t), Reason: why})
			}
		}
		if withMore[i] {
			b.WriteString(moreLine(i, dropped[i]))
			b.WriteByte('\n')
		}
		if len(s.fixed) == 0 && len(s.entries) == 0 && s.more == 0 {
			b.WriteString(noneLine)
			b.WriteByte('\n')
		}
		rep.Sections = append(rep.Sections, sr)
	}
	out := []byte(b.String())
	rep.Tokens = Tokens(b.String())
	return &Doc{Path: path, Bytes: out, Report: rep}, nil
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
