// Package render turns the state of a vault into its head files: MEMORY.md
// (Tier 1, the global head) and one head per thread (Tier 2). It is a pure
// function: the same Input gives the same bytes on any machine, with no
// clock, no environment and no file system involved, so a head can be
// re-rendered at any past commit and compared with what was written then.
//
// The package knows nothing about ledgers or git. The vault package folds
// the ledger into an Input (current rows only, corrections applied) and
// merges the result with what people wrote into the files by hand.
//
// A head is a title, a short preamble, and a fixed list of sections in a
// fixed order, so that a three-way merge can match sections by heading
// across renders. Each section holds lines made from ledger rows, ranked
// newest first. Which lines are shown is decided by a token budget (see
// Tokens), filled in two passes: first each section gets up to its quota,
// in section order, then the remaining rows are taken in section order
// while they fit. What is left out is listed, with the reason, in the
// Doc's Report.
package render

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Item is one row of the ledger that still holds, as the renderer sees it.
type Item struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"` // effective kind: a supersede counts as the kind it replaced
	Thread  string `json:"thread,omitempty"`
	Text    string `json:"text"`
	TS      string `json:"ts"`
	Agent   string `json:"agent,omitempty"`
	Session string `json:"session,omitempty"`
}

// Node is a temporal node (session summary, compaction, condensed) that a
// head points to, so an agent can drill down with memvault expand.
type Node struct {
	ID      string   `json:"id"`
	Kind    string   `json:"kind,omitempty"`
	TS      string   `json:"ts"`
	Text    string   `json:"text,omitempty"`
	Threads []string `json:"threads,omitempty"`
}

// ThreadMeta is a thread the vault declares (in memvault.toml), with the
// aliases it answers to. Threads that only appear in rows need no entry.
type ThreadMeta struct {
	Key     string   `json:"key"`
	Aliases []string `json:"aliases,omitempty"`
}

// Input is everything a render depends on. Items and Nodes are in ledger
// order; ranking uses that order, never wall-clock time.
type Input struct {
	Items        []Item
	Nodes        []Node
	Threads      []ThreadMeta
	MemoryTokens int // budget of MEMORY.md
	ThreadTokens int // budget of each thread head
	// Explain lists every row left out in the Report. Without it, rows a
	// section never considered (see minLineTokens) are only counted, which
	// keeps a render of a huge ledger cheap. The bytes are the same.
	Explain bool
}

// Kinds the renderer places. Other kinds are ignored.
const (
	KindConstraint = "constraint"
	KindBlocker    = "blocker"
	KindCommitment = "commitment.open" // only open commitments are passed in
	KindNext       = "next"
	KindDecision   = "decision"
)

// noteKinds are shown as notes: global ones in MEMORY.md, threaded ones in
// their thread head.
var noteKinds = map[string]bool{"fact": true, "learning": true, "reflection": true, "claim": true}

// Clipping: a head line shows at most this many characters of a row's
// text; the full text stays in the ledger under the id the line shows.
const (
	memoryTextRunes = 200
	threadTextRunes = 400
)

// MemoryPath is the path of the Tier 1 head inside the vault.
const MemoryPath = "MEMORY.md"

// ThreadPath is the path of a thread's head inside the vault.
func ThreadPath(key string) string {
	kind, slug, _ := strings.Cut(key, ":")
	return "threads/" + kind + "/" + slug + ".md"
}

// Doc is a rendered head.
type Doc struct {
	Path   string `json:"path"`
	Bytes  []byte `json:"-"`
	Report Report `json:"report"`
}

// Report says what a render shows and what its budget left out.
type Report struct {
	Head     string          `json:"head"`
	Budget   int             `json:"budget_tokens"`
	Tokens   int             `json:"tokens"`
	Skeleton int             `json:"skeleton_tokens"` // title, preamble, headings and fixed lines
	Sections []SectionReport `json:"sections"`
}

// SectionReport accounts for one section.
type SectionReport struct {
	Title   string    `json:"title"`
	Rows    int       `json:"rows"`     // candidates
	Shown   int       `json:"shown"`    // lines shown
	LeftOut int       `json:"left_out"` // rows not shown
	Dropped []Dropped `json:"dropped,omitempty"`
}

// Dropped is one row a render left out, and why.
type Dropped struct {
	ID     string `json:"id"`
	Kind   string `json:"kind"`
	Thread string `json:"thread,omitempty"`
	Text   string `json:"text"`
	Tokens int    `json:"tokens"`
	Reason string `json:"reason"`
}

// BudgetError is returned when a budget cannot hold even the skeleton of a
// head: its title, preamble, section headings and fixed lines.
type BudgetError struct {
	Head   string
	Budget int
	Need   int
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("%s: a budget of %d tokens is too small for the section titles, which need %d", e.Head, e.Budget, e.Need)
}

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
	// unconsidered are rows past what the budget could ever hold: no line
	// is built for them (see minLineTokens).
	unconsidered []*Item
	textRunes    int
}

// minLineTokens bounds what one line of a section costs from below: a
// dash and a row id alone cost more. A section therefore never shows more
// than budget/minLineTokens rows, and rows past that rank are left out
// without building their lines, so that a ledger with 100k open rows
// renders in the time of a few hundred.
const minLineTokens = 5

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
		if len(s.fixed) == 0 && len(s.entries) == 0 && len(s.unconsidered) == 0 {
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
		dropped[i] += len(secs[i].unconsidered)
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
		sr := SectionReport{Title: s.title, Rows: len(s.entries) + len(s.unconsidered), LeftOut: dropped[i]}
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
		if len(s.fixed) == 0 && len(s.entries) == 0 && len(s.unconsidered) == 0 {
			b.WriteString(noneLine)
			b.WriteByte('\n')
		}
		rep.Sections = append(rep.Sections, sr)
	}
	out := []byte(b.String())
	rep.Tokens = Tokens(b.String())
	return &Doc{Path: path, Bytes: out, Report: rep}, nil
}

const noneLine = "- none"

// clean makes row text safe to place on one list line: white space folded,
// clipped, and anything that could change the document's structure
// neutralised (an HTML comment could forge the keep marker; a leading #
// would make a heading inside the list item).
func clean(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
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

// newestFirst returns the items matching keep, newest first. Items arrive
// in ledger order, so reversing it ranks by recency without reading clocks.
func newestFirst(items []Item, keep func(*Item) bool) []*Item {
	var out []*Item
	for i := len(items) - 1; i >= 0; i-- {
		if keep(&items[i]) {
			out = append(out, &items[i])
		}
	}
	return out
}

func mkEntry(it *Item, line string) entry {
	return entry{id: it.ID, kind: it.Kind, thread: it.Thread, text: clean(it.Text, 120), line: line, tokens: Tokens(line)}
}

// threadStat summarises one thread for the Tier 1 thread lines and the
// thread head's status.
type threadStat struct {
	key      string
	last     int // index of its newest item
	lastItem *Item
	counts   map[string]int
	blockers int
	open     int
	next     *Item
}

func threadStats(items []Item) map[string]*threadStat {
	m := map[string]*threadStat{}
	for i := range items {
		it := &items[i]
		if it.Thread == "" {
			continue
		}
		ts := m[it.Thread]
		if ts == nil {
			ts = &threadStat{key: it.Thread, counts: map[string]int{}}
			m[it.Thread] = ts
		}
		ts.last, ts.lastItem = i, it
		ts.counts[it.Kind]++
		switch it.Kind {
		case KindBlocker:
			ts.blockers++
		case KindCommitment:
			ts.open++
		case KindNext:
			ts.next = it
		}
	}
	return m
}

func (ts *threadStat) state() string {
	switch {
	case ts.blockers == 1:
		return "blocked (1 blocker)"
	case ts.blockers > 1:
		return "blocked (" + strconv.Itoa(ts.blockers) + " blockers)"
	}
	return "active"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// Memory renders MEMORY.md, the global head: durable constraints, blockers,
// open commitments, next actions, one line per active thread, recent
// decisions, global notes, and the nodes to drill into.
func Memory(in Input) (*Doc, error) {
	ref := func(it *Item) string {
		if it.Thread != "" {
			return " (" + it.Thread + ", `" + it.ID + "`)"
		}
		return " (`" + it.ID + "`)"
	}
	kindSection := func(title string, match func(*Item) bool, prefix string, quota int) section {
		s := section{title: title, quota: quota}
		for _, it := range newestFirst(in.Items, match) {
			if len(s.entries) >= rowCap(in.MemoryTokens) {
				s.unconsidered = append(s.unconsidered, it)
				continue
			}
			s.entries = append(s.entries, mkEntry(it, "- "+prefix+clean(it.Text, memoryTextRunes)+ref(it)))
		}
		return s
	}
	is := func(kind string) func(*Item) bool { return func(it *Item) bool { return it.Kind == kind } }

	stats := threadStats(in.Items)
	threads := make([]*threadStat, 0, len(stats))
	for _, ts := range stats {
		threads = append(threads, ts)
	}
	sort.Slice(threads, func(i, j int) bool { return threads[i].last > threads[j].last })
	tsec := section{title: "Threads", quota: 10}
	for _, ts := range threads {
		line := "- " + ts.key + ": " + ts.state()
		if ts.open > 0 {
			line += ", " + plural(ts.open, "open commitment", "open commitments")
		}
		if ts.next != nil {
			line += "; next: " + clean(ts.next.Text, 80)
		}
		line += " → " + ThreadPath(ts.key)
		tsec.entries = append(tsec.entries, entry{id: ts.key, kind: "thread", thread: ts.key,
			text: ts.state(), line: line, tokens: Tokens(line)})
	}

	nsec := section{title: "Drill down", quota: 3,
		fixed: []string{"- details of a node: `memvault expand <node-id>`; every row: `memvault ledger`; what the budget left out: `memvault render --explain`"}}
	for i := len(in.Nodes) - 1; i >= 0; i-- {
		n := &in.Nodes[i]
		line := "- `" + n.ID + "` " + nodeLabel(n)
		if n.Text != "" {
			line += ": " + clean(n.Text, 120)
		}
		nsec.entries = append(nsec.entries, entry{id: n.ID, kind: "node", text: clean(n.Text, 120), line: line, tokens: Tokens(line)})
	}

	secs := []section{
		kindSection("Constraints", is(KindConstraint), "", 10),
		kindSection("Blockers", is(KindBlocker), "", 5),
		kindSection("Commitments", is(KindCommitment), "[ ] ", 5),
		kindSection("Next actions", is(KindNext), "", 5),
		tsec,
		kindSection("Decisions", is(KindDecision), "", 3),
		// Notes of threads live in their heads; only global ones come here.
		kindSection("Notes", func(it *Item) bool { return noteKinds[it.Kind] && it.Thread == "" }, "", 3),
		nsec,
	}
	preamble := []string{
		"<!-- memvault: the global head, rendered from the ledger. Hand edits are merged into the next refresh; a section holding the memvault:keep marker is never rewritten. See docs/HEADS.md. -->",
	}
	return layout(MemoryPath, "MEMORY", preamble, secs, in.MemoryTokens, in.Explain)
}

func nodeLabel(n *Node) string {
	var parts []string
	if n.Kind != "" {
		parts = append(parts, n.Kind)
	}
	parts = append(parts, n.Threads...)
	if len(n.TS) >= 10 {
		parts = append(parts, n.TS[:10])
	}
	return strings.Join(parts, ", ")
}

// Thread renders the head of one thread: its status, open loops, next
// action, decisions, constraints, notes and lineage. Only the thread's own
// rows are used: nothing from another thread bleeds in.
func Thread(in Input, key string) (*Doc, error) {
	items := make([]Item, 0)
	for _, it := range in.Items {
		if it.Thread == key {
			items = append(items, it)
		}
	}
	var aliases []string
	for _, t := range in.Threads {
		if t.Key == key {
			aliases = t.Aliases
		}
	}
	ts := threadStats(items)[key]
	ref := func(it *Item) string { return " (`" + it.ID + "`)" }
	kindSection := func(title string, match func(*Item) bool, prefix func(*Item) string, quota int) section {
		s := section{title: title, quota: quota}
		for _, it := range newestFirst(items, match) {
			if len(s.entries) >= rowCap(in.ThreadTokens) {
				s.unconsidered = append(s.unconsidered, it)
				continue
			}
			s.entries = append(s.entries, mkEntry(it, "- "+prefix(it)+clean(it.Text, threadTextRunes)+ref(it)))
		}
		return s
	}
	is := func(kinds ...string) func(*Item) bool {
		return func(it *Item) bool {
			for _, k := range kinds {
				if it.Kind == k {
					return true
				}
			}
			return false
		}
	}
	none := func(*Item) string { return "" }

	status := section{title: "Status"}
	if ts == nil {
		status.fixed = []string{"- no rows yet"}
	} else {
		line := "- state: " + ts.state()
		if ts.open > 0 {
			line += ", " + plural(ts.open, "open commitment", "open commitments")
		}
		status.fixed = append(status.fixed, line)
		last := "- last activity: " + ts.lastItem.TS
		if ts.lastItem.Agent != "" {
			last += ", agent " + ts.lastItem.Agent
		}
		if ts.lastItem.Session != "" {
			last += ", session " + ts.lastItem.Session
		}
		status.fixed = append(status.fixed, last)
		kinds := make([]string, 0, len(ts.counts))
		for k := range ts.counts {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		var parts []string
		for _, k := range kinds {
			parts = append(parts, strconv.Itoa(ts.counts[k])+" "+k)
		}
		status.fixed = append(status.fixed, "- rows that hold: "+strings.Join(parts, ", "))
	}

	loops := kindSection("Open loops", is(KindCommitment, KindBlocker), func(it *Item) string {
		if it.Kind == KindBlocker {
			return "blocker: "
		}
		return "[ ] "
	}, 10)
	next := kindSection("Next action", is(KindNext), none, 3)

	lineage := section{title: "Lineage", quota: 5,
		fixed: []string{"- every row of this thread: `memvault ledger --thread " + key + "`; what the budget left out: `memvault render --thread " + key + " --explain`"}}
	for i := len(in.Nodes) - 1; i >= 0; i-- {
		n := &in.Nodes[i]
		mine := false
		for _, t := range n.Threads {
			mine = mine || t == key
		}
		if !mine {
			continue
		}
		line := "- `" + n.ID + "` " + nodeLabel(n)
		if n.Text != "" {
			line += ": " + clean(n.Text, 160)
		}
		lineage.entries = append(lineage.entries, entry{id: n.ID, kind: "node", thread: key,
			text: clean(n.Text, 120), line: line, tokens: Tokens(line)})
	}

	secs := []section{
		status,
		loops,
		next,
		kindSection("Decisions", is(KindDecision), none, 10),
		kindSection("Constraints", is(KindConstraint), none, 5),
		kindSection("Notes", func(it *Item) bool { return noteKinds[it.Kind] }, func(it *Item) string {
			if it.Kind == "fact" {
				return ""
			}
			return it.Kind + ": "
		}, 5),
		lineage,
	}
	preamble := []string{
		"<!-- memvault: the head of thread " + key + ", rendered from the ledger. Hand edits are merged into the next refresh; a section holding the memvault:keep marker is never rewritten. See docs/HEADS.md. -->",
	}
	if len(aliases) > 0 {
		preamble = append(preamble, "", "Aliases: "+strings.Join(aliases, ", "))
	}
	return layout(ThreadPath(key), key, preamble, secs, in.ThreadTokens, in.Explain)
}
