package hooks

// The start context as rows: the heads and CONTINUITY.md parsed into
// blocks of sections of rows (parseHead), each row once across all of them
// (dedupe), laid out within a character budget by cutting whole rows from
// the end (layoutBlocks). The heads are parsed from the files on disk, hand
// edits included, rather than taken from the vault's state: what a person
// wrote into a head is part of what the session should see.

import (
	"regexp"
	"strings"
	"sync"
)

// row is one unit of the start context: a list item or line of a head, or
// a fenced code block, never split.
type row struct {
	text string
	// ids are what the row stands for: its event or node id, or for a
	// MEMORY.md thread line its thread (threadRowID). A row is dropped
	// when one of them was shown before.
	ids []string
	// key is the text folded for comparison (rowKey): a row is dropped
	// when a row with the same key was shown before. "" compares nothing.
	key string
	// note marks a line that is not memory (the usage note, a head's
	// "… N more"): never dropped as a repeat, not counted as a row.
	note bool
	// more marks a head's "… N more" line: it stays only in a section
	// that keeps a row.
	more bool
	// thread is the thread of a MEMORY.md thread line, whose "; next: …"
	// is dropped when that next action was shown already.
	thread string
}

// section is a heading and its rows; heading "" is for rows before a
// block's first heading.
type section struct {
	heading string
	rows    []row
}

// block is one piece of the start context: a head, CONTINUITY.md's live
// sections, the usage note.
type block struct {
	title    string   // "# …", or ""
	ids      []string // what the whole block stands for: a thread head its thread
	sections []section
}

// noteBlock is a block of notes, one row per line.
func noteBlock(text string) block {
	var s section
	for _, line := range strings.Split(text, "\n") {
		s.rows = append(s.rows, row{text: line, note: true})
	}
	return block{sections: []section{s}}
}

// idRow is a row made from data rather than parsed: its id and the text
// it is compared by are known.
func idRow(text, id, compare string) row {
	r := row{text: text, key: foldKey(compare)}
	if id != "" {
		r.ids = []string{id}
	}
	return r
}

func threadRowID(key string) string { return "thread " + key }

// hasRows reports whether any block holds a memory row (not a note).
func hasRows(blocks []block) bool {
	for _, b := range blocks {
		for _, s := range b.sections {
			for _, r := range s.rows {
				if !r.note {
					return true
				}
			}
		}
	}
	return false
}

// parseHead reads a head (MEMORY.md, a thread head, CONTINUITY.md) into a
// block: its "# " title, and its "## " sections with their rows. It leaves
// out what is not memory: HTML comments (memvault's preamble and markers
// and any a person wrote, over several lines too), blank lines, the
// placeholders of empty sections ("- none", "(none)", …) and the lines
// the renderers write for people (guidance). A section left with no rows
// is left out by the layout.
func parseHead(text string) block {
	var b block
	cur := section{}
	flush := func() {
		if cur.heading != "" || len(cur.rows) > 0 {
			b.sections = append(b.sections, cur)
		}
	}
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	inComment := false
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if fence := fenceOf(line); fence != "" && !inComment {
			// A fenced block is one row, kept as written.
			j := i + 1
			for j < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[j]), fence) {
				j++
			}
			fenced := strings.Join(lines[i:min(j+1, len(lines))], "\n")
			cur.rows = append(cur.rows, row{text: fenced, key: foldKey(fenced)})
			i = j
			continue
		}
		line, inComment = stripComments(line, inComment)
		trim := strings.TrimSpace(line)
		switch {
		case trim == "":
		case strings.HasPrefix(trim, "# ") && b.title == "" && len(b.sections) == 0 && cur.heading == "" && len(cur.rows) == 0:
			b.title = trim
		case strings.HasPrefix(trim, "## "):
			flush()
			cur = section{heading: "## " + strings.Join(strings.Fields(trim[3:]), " ")}
		case isPlaceholder(trim), isGuidance(trim):
		case isMoreLine(trim):
			cur.rows = append(cur.rows, row{text: line, note: true, more: true})
		default:
			cur.rows = append(cur.rows, parseRow(strings.TrimRight(line, " \t")))
		}
	}
	flush()
	return b
}

// fenceOf returns the fence a line opens (``` or ~~~), or "".
func fenceOf(line string) string {
	t := strings.TrimSpace(line)
	for _, f := range []string{"```", "~~~"} {
		if strings.HasPrefix(t, f) {
			return f
		}
	}
	return ""
}

// stripComments removes the HTML comments of one line; inComment says a
// comment opened on an earlier line is still open, and the result whether
// one is open at the end of this line.
func stripComments(line string, inComment bool) (string, bool) {
	var b strings.Builder
	for {
		if inComment {
			end := strings.Index(line, "-->")
			if end < 0 {
				return b.String(), true
			}
			line, inComment = line[end+3:], false
		}
		start := strings.Index(line, "<!--")
		if start < 0 {
			b.WriteString(line)
			return b.String(), false
		}
		b.WriteString(line[:start])
		line, inComment = line[start+4:], true
	}
}

// placeholders are what the renderers (render/layout.go's "- none",
// render/thread.go's "- no rows yet", vault/continuity/continuity_render.go's "- none"
// and "- none: set one with memvault goal") and people write into a
// section that holds nothing, lower-cased.
var placeholders = map[string]bool{
	"- none": true, "none": true, "(none)": true, "- (none)": true, "none.": true, "- none.": true,
	"_none_": true, "- _none_": true, "*none*": true, "- *none*": true, "n/a": true, "- n/a": true,
	"- no rows yet": true, "-": true, "- nothing": true, "nothing": true,
}

func isPlaceholder(trim string) bool {
	t := strings.ToLower(trim)
	return placeholders[t] || strings.HasPrefix(t, "- none:") || strings.HasPrefix(t, "- none (")
}

// guidance are the lines the head renderers write for people, not for an
// agent: render.Memory's "Drill down" line and render.Thread's "Lineage"
// line. The usage note says what an agent needs of them.
var guidance = []string{
	"- details of a node: `memvault expand",
	"- every row of this thread: `memvault ledger",
}

func isGuidance(trim string) bool {
	for _, g := range guidance {
		if strings.HasPrefix(trim, g) {
			return true
		}
	}
	return false
}

// isMoreLine reports a head's count of the rows its own budget left out:
// render's "- … 3 more", CONTINUITY.md's "- … 3 more in the ledger".
func isMoreLine(trim string) bool {
	rest, ok := strings.CutPrefix(trim, "- … ")
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	return ok && n > 0 && strings.HasPrefix(rest[n:], " more")
}

// isID reports an event or node id: e_…, n_….
func isID(s string) bool {
	if len(s) < 12 || s[0] < 'a' || s[0] > 'z' || s[1] != '_' {
		return false
	}
	for _, c := range []byte(s[2:]) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'z') {
			return false
		}
	}
	return true
}

// threadLine matches a MEMORY.md thread line: "- KEY: STATE[; next:
// TEXT] → PATH". Lines without " → threads/" are not tried: a regular
// expression costs microseconds a line, and session start reads hundreds.
var threadLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^- ([a-z0-9_.-]+:[^\s:]+): (.*?)(; next: (.*))? → (threads/\S+\.md)$`)
})

func matchThreadLine(t string) []int {
	if !strings.Contains(t, " → threads/") {
		return nil
	}
	return threadLine().FindStringSubmatchIndex(t)
}

// parseRow reads a head's line: the id it stands for, if any, and the
// text it is compared by.
func parseRow(line string) row {
	r := row{text: line, key: rowKey(line)}
	t := strings.TrimSpace(line)
	if m := matchThreadLine(t); m != nil {
		r.thread = t[m[2]:m[3]]
		r.ids = []string{threadRowID(r.thread)}
		return r
	}
	if id := rowID(line); id != "" {
		r.ids = []string{id}
	}
	return r
}

// rowID is the id a rendered line stands for: the last backticked id of
// its closing reference (MEMORY.md's "(thread, `e_…`)", a thread head's
// and CONTINUITY.md's "(`e_…`)"), or a node line's leading "`n_…`". An id
// named inside the text does not count: the row is not that event.
func rowID(line string) string {
	t := strings.TrimSpace(line)
	if strings.HasSuffix(t, "`)") {
		open := strings.LastIndex(t, "(")
		ref := t[open+1 : len(t)-1]
		parts := strings.Split(ref, "`")
		for i := len(parts) - 2; i >= 1; i -= 2 {
			if isID(parts[i]) {
				return parts[i]
			}
		}
	}
	t = trimListMarker(t)
	if strings.HasPrefix(t, "`") {
		if end := strings.Index(t[1:], "`"); end > 0 && isID(t[1:1+end]) {
			return t[1 : 1+end]
		}
	}
	return ""
}

// kindLabels are the kinds a thread head writes before a row
// ("blocker: ", "learning: ").
var kindLabels = map[string]bool{"blocker": true, "learning": true, "reflection": true, "claim": true, "fact": true,
	"next": true, "decision": true, "constraint": true, "commitment": true}

// trimRef removes a closing reference that says where a row comes from,
// not what it says: "(`e_…`)", "(project:x, `e_…`)", "(since
// 2026-11-23)", "(2026-11-23)".
func trimRef(t string) (string, bool) {
	if !strings.HasSuffix(t, ")") {
		return t, false
	}
	open := strings.LastIndexByte(t, '(')
	if open < 0 {
		return t, false
	}
	inner := t[open+1 : len(t)-1]
	date := strings.TrimPrefix(inner, "since ")
	isDate := len(date) >= 10 && date[4] == '-' && date[7] == '-' && strings.Trim(date[:4]+date[5:7]+date[8:10], "0123456789") == ""
	if strings.Contains(inner, ")") || !isDate && strings.Count(inner, "`") < 2 {
		return t, false
	}
	return strings.TrimRight(t[:open], " \t"), true
}

// rowKey is what a line says, folded for comparison: without its list
// marker, checkbox, kind label and closing references, case and spaces
// folded. "1. Fix the build", "- fix the build (since 2026-11-23)" and
// "- Fix the  build (`e_…`)" have one key.
func rowKey(line string) string {
	t := trimListMarker(strings.TrimSpace(line))
	t = strings.TrimPrefix(t, `\`)
	if label, rest, ok := strings.Cut(t, ": "); ok && kindLabels[strings.ToLower(label)] {
		t = rest
	}
	for ok := true; ok; {
		t, ok = trimRef(t)
	}
	return foldKey(t)
}

func foldKey(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }

// trimListMarker removes a list marker ("- ", "* ", "+ ", "1. ", "1) ")
// and a checkbox ("[ ] ", "[x] ").
func trimListMarker(t string) string {
	switch {
	case strings.HasPrefix(t, "- "), strings.HasPrefix(t, "* "), strings.HasPrefix(t, "+ "):
		t = t[2:]
	default:
		i := 0
		for i < len(t) && i < 4 && t[i] >= '0' && t[i] <= '9' {
			i++
		}
		if i > 0 && i+1 < len(t) && (t[i] == '.' || t[i] == ')') && t[i+1] == ' ' {
			t = t[i+2:]
		}
	}
	for _, box := range []string{"[ ] ", "[x] ", "[X] "} {
		t = strings.TrimPrefix(t, box)
	}
	return strings.TrimSpace(t)
}

// dedupe keeps each row once, at its first place: a row is dropped when
// one of its ids, or its key, belongs to a row kept before it. A MEMORY.md
// thread line loses its "; next: …" when that next action was kept
// before it. Sections left without rows (a "… N more" line alone is no
// row) and blocks left without sections are dropped; a block's own ids
// count as shown once it keeps a row.
func dedupe(blocks []block) []block {
	seenID := map[string]bool{}
	seenKey := map[string]bool{}
	var out []block
	for _, b := range blocks {
		nb := block{title: b.title, ids: b.ids}
		for _, s := range b.sections {
			ns := section{heading: s.heading}
			rows := 0
			for _, r := range s.rows {
				if !r.note {
					if r.thread != "" {
						r = withoutShownNext(r, seenKey)
					}
					dup := r.key != "" && seenKey[r.key]
					for _, id := range r.ids {
						dup = dup || seenID[id]
					}
					if dup {
						continue
					}
					for _, id := range r.ids {
						seenID[id] = true
					}
					if r.key != "" {
						seenKey[r.key] = true
					}
				}
				ns.rows = append(ns.rows, r)
				if !r.more {
					rows++
				}
			}
			if rows > 0 {
				nb.sections = append(nb.sections, ns)
			}
		}
		if len(nb.sections) > 0 {
			for _, id := range b.ids {
				seenID[id] = true
			}
			out = append(out, nb)
		}
	}
	return out
}

// withoutShownNext drops a thread line's "; next: TEXT" when a row kept
// before it says TEXT (which the line clips at 80 characters with "…").
func withoutShownNext(r row, seenKey map[string]bool) row {
	t := strings.TrimSpace(r.text)
	m := matchThreadLine(t)
	if m == nil || m[6] < 0 {
		return r
	}
	next := foldKey(strings.TrimSuffix(t[m[8]:m[9]], "…"))
	for k := range seenKey {
		if strings.HasPrefix(k, next) {
			t = t[:m[6]] + t[m[7]:]
			r.text, r.key = t, rowKey(t)
			return r
		}
	}
	return r
}

// layoutBlocks writes the blocks in order: a block's title and a
// section's heading with its first row, so that nothing is written for a
// section without rows. When the whole is over limit bytes (a character
// is at least a byte, so it is within limit characters too), rows are cut
// from the end, whole, and the text ends with cutNote's line, saying how
// many rows were left out; with a limit too small even for that line, the
// text is empty.
func layoutBlocks(blocks []block, limit int, cutNote func(rows, limit int) string) string {
	text, _ := layoutShown(blocks, limit, cutNote)
	return text
}

// layoutShown is layoutBlocks that also returns the ids of the rows it
// kept: what the text shows, for the session's marks.
func layoutShown(blocks []block, limit int, cutNote func(rows, limit int) string) (string, []string) {
	type unit struct {
		prefix, text string
		note         bool
		ids          []string
	}
	var units []unit
	for bi, b := range blocks {
		started := false
		for _, s := range b.sections {
			for ri, r := range s.rows {
				var p strings.Builder
				heading := ri == 0 && s.heading != ""
				switch {
				case !started:
					if bi > 0 && len(units) > 0 {
						p.WriteString("\n\n")
					}
					if b.title != "" {
						p.WriteString(b.title + "\n")
						if heading {
							p.WriteString("\n")
						}
					}
					if heading {
						p.WriteString(s.heading + "\n")
					}
				case heading:
					p.WriteString("\n\n" + s.heading + "\n")
				default:
					p.WriteString("\n")
				}
				units = append(units, unit{prefix: p.String(), text: r.text, note: r.note, ids: r.ids})
				started = true
			}
		}
	}
	total := 0
	for _, u := range units {
		total += len(u.prefix) + len(u.text)
	}
	write := func(n int) (string, []string) {
		var b strings.Builder
		var ids []string
		for _, u := range units[:n] {
			b.WriteString(u.prefix)
			b.WriteString(u.text)
			ids = append(ids, u.ids...)
		}
		return b.String(), ids
	}
	if total <= limit {
		return write(len(units))
	}
	// left[k]: the rows (notes when no row is cut) cut when k units are kept.
	rowsLeft, notesLeft := 0, 0
	for _, u := range units {
		if u.note {
			notesLeft++
		} else {
			rowsLeft++
		}
	}
	used := 0
	best, bestNote := -1, ""
	for k := 0; k <= len(units); k++ {
		left := rowsLeft
		if left == 0 {
			left = notesLeft
		}
		note := cutNote(left, limit)
		sep := 0
		if k > 0 {
			sep = 2
		}
		if used+sep+len(note) <= limit {
			best, bestNote = k, note
		} else if k > 0 {
			break
		}
		if k == len(units) {
			break
		}
		u := units[k]
		used += len(u.prefix) + len(u.text)
		if u.note {
			notesLeft--
		} else {
			rowsLeft--
		}
	}
	if best < 0 {
		return "", nil
	}
	if best == 0 {
		return bestNote, nil
	}
	text, ids := write(best)
	return text + "\n\n" + bestNote, ids
}

// sectionName is a heading's title, lower-cased, for matching.
func sectionName(heading string) string {
	return foldKey(strings.TrimPrefix(heading, "## "))
}
