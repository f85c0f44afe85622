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
	"unicode"
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
	Session string   `json:"session,omitempty"`
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
	// more counts the rows past what the budget could ever hold: no line
	// is built for them (see minLineTokens). With Explain, unconsidered
	// lists them.
	more         int
	unconsidered []*Item
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

const noneLine = "- none"

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

// Ranked is the candidates of one section, newest first: what a render
// considers. Items holds at most the section's row cap (RowCap of the
// head's budget); More counts the rows ranked below, which are left out
// without building their lines.
type Ranked struct {
	Items []Item
	More  int
	// below are the rows More counts, kept only for Explain.
	below []*Item
}

// Push adds a row newer than every row of the section: it ranks first,
// and with more than max rows the last one drops to More.
func (r *Ranked) Push(it Item, max int) {
	if len(r.Items) >= max {
		r.More += len(r.Items) - max + 1
		if max <= 0 {
			r.Items = r.Items[:0]
			return
		}
		r.Items = r.Items[:max-1]
	}
	r.Items = append(r.Items, Item{})
	copy(r.Items[1:], r.Items)
	r.Items[0] = it
}

// Sections of MEMORY.md made of rows, in MemoryParts.Sections.
const (
	MemConstraints = iota
	MemBlockers
	MemCommitments
	MemNext
	MemDecisions
	MemNotes
	MemorySections
)

// Sections of a thread head made of rows, in ThreadParts.Sections.
const (
	ThreadLoops = iota
	ThreadNext
	ThreadDecisions
	ThreadConstraints
	ThreadNotes
	ThreadSections
)

// MemorySection is the MEMORY.md section an item ranks in, or -1.
func MemorySection(it *Item) int {
	switch it.Kind {
	case KindConstraint:
		return MemConstraints
	case KindBlocker:
		return MemBlockers
	case KindCommitment:
		return MemCommitments
	case KindNext:
		return MemNext
	case KindDecision:
		return MemDecisions
	}
	// Notes of threads live in their heads; only global ones come here.
	if noteKinds[it.Kind] && it.Thread == "" {
		return MemNotes
	}
	return -1
}

// ThreadSection is the section of its thread's head an item of this kind
// ranks in, or -1.
func ThreadSection(kind string) int {
	switch kind {
	case KindCommitment, KindBlocker:
		return ThreadLoops
	case KindNext:
		return ThreadNext
	case KindDecision:
		return ThreadDecisions
	case KindConstraint:
		return ThreadConstraints
	}
	if noteKinds[kind] {
		return ThreadNotes
	}
	return -1
}

// ThreadSummary summarises one thread's rows that hold, for the Tier 1
// thread lines and the thread head's status.
type ThreadSummary struct {
	Key string `json:"key"`
	// Last is the position of the thread's newest row in ledger order;
	// MEMORY.md lists threads by it, newest first. Positions only need to
	// grow along the ledger.
	Last     int            `json:"last"`
	LastItem Item           `json:"last_item"`
	Counts   map[string]int `json:"counts"`
	Blockers int            `json:"blockers,omitempty"`
	Open     int            `json:"open,omitempty"`
	Next     *Item          `json:"next,omitempty"` // the newest next row
}

// Add counts a row newer than every row counted so far, at position pos.
func (ts *ThreadSummary) Add(it *Item, pos int) {
	if ts.Counts == nil {
		ts.Counts = map[string]int{}
	}
	ts.Last, ts.LastItem = pos, *it
	ts.Counts[it.Kind]++
	switch it.Kind {
	case KindBlocker:
		ts.Blockers++
	case KindCommitment:
		ts.Open++
	case KindNext:
		n := *it
		ts.Next = &n
	}
}

func (ts *ThreadSummary) state() string {
	switch {
	case ts.Blockers == 1:
		return "blocked (1 blocker)"
	case ts.Blockers > 1:
		return "blocked (" + strconv.Itoa(ts.Blockers) + " blockers)"
	}
	return "active"
}

// MemoryParts is what MEMORY.md is rendered from: the candidates of each
// section, every thread's summary and every node. PrepareMemory makes it
// from an Input; a cache may keep it and update it row by row (Push, Add),
// which renders the same bytes as long as its Items were ranked with the
// same budget.
type MemoryParts struct {
	Sections [MemorySections]Ranked
	Threads  []*ThreadSummary // any order
	Nodes    []Node           // ledger order
}

// ThreadParts is what one thread head is rendered from.
type ThreadParts struct {
	Summary  *ThreadSummary // nil when no row of the thread holds
	Sections [ThreadSections]Ranked
	Nodes    []Node // the thread's nodes, ledger order
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// PrepareMemory ranks the Input's rows into MEMORY.md's sections.
func PrepareMemory(in Input) *MemoryParts {
	p := &MemoryParts{Nodes: in.Nodes}
	limit := rowCap(in.MemoryTokens)
	for i := len(in.Items) - 1; i >= 0; i-- {
		it := &in.Items[i]
		k := MemorySection(it)
		if k < 0 {
			continue
		}
		r := &p.Sections[k]
		if len(r.Items) >= limit {
			r.More++
			if in.Explain {
				r.below = append(r.below, it)
			}
			continue
		}
		r.Items = append(r.Items, *it)
	}
	stats := map[string]*ThreadSummary{}
	for i := range in.Items {
		it := &in.Items[i]
		if it.Thread == "" {
			continue
		}
		ts := stats[it.Thread]
		if ts == nil {
			ts = &ThreadSummary{Key: it.Thread}
			stats[it.Thread] = ts
			p.Threads = append(p.Threads, ts)
		}
		ts.Add(it, i)
	}
	return p
}

// PrepareThread ranks the rows of one thread into its head's sections.
func PrepareThread(in Input, key string) *ThreadParts {
	var items []Item
	for _, it := range in.Items {
		if it.Thread == key {
			items = append(items, it)
		}
	}
	var nodes []Node
	for _, n := range in.Nodes {
		for _, t := range n.Threads {
			if t == key {
				nodes = append(nodes, n)
				break
			}
		}
	}
	return prepareThread(items, nodes, rowCap(in.ThreadTokens), in.Explain)
}

// PrepareThreads ranks the rows of every thread at once: the thread heads'
// parts by thread key, for threads with rows or nodes.
func PrepareThreads(in Input) map[string]*ThreadParts {
	items := map[string][]Item{}
	nodes := map[string][]Node{}
	var keys []string
	for _, it := range in.Items {
		if it.Thread == "" {
			continue
		}
		if _, ok := items[it.Thread]; !ok {
			keys = append(keys, it.Thread)
		}
		items[it.Thread] = append(items[it.Thread], it)
	}
	for _, n := range in.Nodes {
		seen := map[string]bool{}
		for _, t := range n.Threads {
			if seen[t] {
				continue
			}
			seen[t] = true
			if _, ok := items[t]; !ok {
				items[t] = nil
				keys = append(keys, t)
			}
			nodes[t] = append(nodes[t], n)
		}
	}
	out := make(map[string]*ThreadParts, len(keys))
	limit := rowCap(in.ThreadTokens)
	for _, k := range keys {
		out[k] = prepareThread(items[k], nodes[k], limit, in.Explain)
	}
	return out
}

func prepareThread(items []Item, nodes []Node, limit int, explain bool) *ThreadParts {
	p := &ThreadParts{Nodes: nodes}
	for i := range items {
		if p.Summary == nil {
			p.Summary = &ThreadSummary{Key: items[i].Thread}
		}
		p.Summary.Add(&items[i], i)
	}
	for i := len(items) - 1; i >= 0; i-- {
		it := &items[i]
		k := ThreadSection(it.Kind)
		if k < 0 {
			continue
		}
		r := &p.Sections[k]
		if len(r.Items) >= limit {
			r.More++
			if explain {
				r.below = append(r.below, it)
			}
			continue
		}
		r.Items = append(r.Items, *it)
	}
	return p
}

// Memory renders MEMORY.md, the global head: durable constraints, blockers,
// open commitments, next actions, one line per active thread, recent
// decisions, global notes, and the nodes to drill into.
func Memory(in Input) (*Doc, error) {
	return RenderMemory(PrepareMemory(in), in)
}

// RenderMemory renders MEMORY.md from its parts; in gives the budget and
// Explain (its Items and Nodes are not read). With parts that were not
// prepared from an Input, Explain counts the rows below the row cap
// without listing them.
func RenderMemory(p *MemoryParts, in Input) (*Doc, error) {
	ref := func(it *Item) string {
		if it.Thread != "" {
			return " (" + it.Thread + ", `" + it.ID + "`)"
		}
		return " (`" + it.ID + "`)"
	}
	kindSection := func(title string, r *Ranked, prefix string, quota int) section {
		s := section{title: title, quota: quota, more: r.More, unconsidered: r.below}
		s.entries = make([]entry, 0, len(r.Items))
		for i := range r.Items {
			it := &r.Items[i]
			s.entries = append(s.entries, mkEntry(it, "- "+prefix+clean(it.Text, memoryTextRunes)+ref(it)))
		}
		return s
	}

	threads := append([]*ThreadSummary(nil), p.Threads...)
	sort.Slice(threads, func(i, j int) bool { return threads[i].Last > threads[j].Last })
	tsec := section{title: "Threads", quota: 10}
	for _, ts := range threads {
		line := "- " + ts.Key + ": " + ts.state()
		if ts.Open > 0 {
			line += ", " + plural(ts.Open, "open commitment", "open commitments")
		}
		if ts.Next != nil {
			line += "; next: " + clean(ts.Next.Text, 80)
		}
		line += " → " + ThreadPath(ts.Key)
		tsec.entries = append(tsec.entries, entry{id: ts.Key, kind: "thread", thread: ts.Key,
			text: ts.state(), line: line, tokens: Tokens(line)})
	}

	summarised := map[string]bool{}
	nsec := section{title: "Drill down", quota: 3,
		fixed: []string{"- details of a node: `memvault expand <node-id>`; every row: `memvault ledger`; what the budget left out: `memvault render --explain`"}}
	nodeCap := rowCap(in.MemoryTokens)
	for i := len(p.Nodes) - 1; i >= 0; i-- {
		n := &p.Nodes[i]
		if supersededSummary(n, summarised) {
			continue
		}
		if len(nsec.entries) == nodeCap {
			// Past what the budget could ever hold: counted, no line built
			// (a vault has thousands of nodes).
			nsec.more++
			if in.Explain {
				nsec.unconsidered = append(nsec.unconsidered, &Item{ID: n.ID, Kind: "node", Text: n.Text})
			}
			continue
		}
		line := "- `" + n.ID + "` " + nodeLabel(n)
		if n.Text != "" {
			line += ": " + clean(n.Text, 120)
		}
		nsec.entries = append(nsec.entries, entry{id: n.ID, kind: "node", text: clean(n.Text, 120), line: line, tokens: Tokens(line)})
	}

	secs := []section{
		kindSection("Constraints", &p.Sections[MemConstraints], "", 10),
		kindSection("Blockers", &p.Sections[MemBlockers], "", 5),
		kindSection("Commitments", &p.Sections[MemCommitments], "[ ] ", 5),
		kindSection("Next actions", &p.Sections[MemNext], "", 5),
		tsec,
		kindSection("Decisions", &p.Sections[MemDecisions], "", 3),
		kindSection("Notes", &p.Sections[MemNotes], "", 3),
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
	return RenderThread(PrepareThread(in, key), key, in)
}

// RenderThread renders the head of thread key from its parts; in gives the
// budget, the declared threads (for aliases) and Explain (its Items and
// Nodes are not read).
func RenderThread(p *ThreadParts, key string, in Input) (*Doc, error) {
	var aliases []string
	for _, t := range in.Threads {
		if t.Key == key {
			aliases = t.Aliases
		}
	}
	ts := p.Summary
	ref := func(it *Item) string { return " (`" + it.ID + "`)" }
	kindSection := func(title string, r *Ranked, prefix func(*Item) string, quota int) section {
		s := section{title: title, quota: quota, more: r.More, unconsidered: r.below}
		s.entries = make([]entry, 0, len(r.Items))
		for i := range r.Items {
			it := &r.Items[i]
			s.entries = append(s.entries, mkEntry(it, "- "+prefix(it)+clean(it.Text, threadTextRunes)+ref(it)))
		}
		return s
	}
	none := func(*Item) string { return "" }

	status := section{title: "Status"}
	if ts == nil {
		status.fixed = []string{"- no rows yet"}
	} else {
		line := "- state: " + ts.state()
		if ts.Open > 0 {
			line += ", " + plural(ts.Open, "open commitment", "open commitments")
		}
		status.fixed = append(status.fixed, line)
		last := "- last activity: " + ts.LastItem.TS
		if ts.LastItem.Agent != "" {
			last += ", agent " + ts.LastItem.Agent
		}
		if ts.LastItem.Session != "" {
			last += ", session " + ts.LastItem.Session
		}
		status.fixed = append(status.fixed, last)
		kinds := make([]string, 0, len(ts.Counts))
		for k, n := range ts.Counts {
			if n > 0 {
				kinds = append(kinds, k)
			}
		}
		sort.Strings(kinds)
		var parts []string
		for _, k := range kinds {
			parts = append(parts, strconv.Itoa(ts.Counts[k])+" "+k)
		}
		status.fixed = append(status.fixed, "- rows that hold: "+strings.Join(parts, ", "))
	}

	loops := kindSection("Open loops", &p.Sections[ThreadLoops], func(it *Item) string {
		if it.Kind == KindBlocker {
			return "blocker: "
		}
		return "[ ] "
	}, 10)
	next := kindSection("Next action", &p.Sections[ThreadNext], none, 3)

	summarised := map[string]bool{}
	lineage := section{title: "Lineage", quota: 5,
		fixed: []string{"- every row of this thread: `memvault ledger --thread " + key + "`; what the budget left out: `memvault render --thread " + key + " --explain`"}}
	for i := len(p.Nodes) - 1; i >= 0; i-- {
		n := &p.Nodes[i]
		if supersededSummary(n, summarised) {
			continue
		}
		mine := false
		for _, t := range n.Threads {
			mine = mine || t == key
		}
		if !mine {
			continue
		}
		if len(lineage.entries) == rowCap(in.ThreadTokens) {
			lineage.more++
			if in.Explain {
				lineage.unconsidered = append(lineage.unconsidered, &Item{ID: n.ID, Kind: "node", Thread: key, Text: n.Text})
			}
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
		kindSection("Decisions", &p.Sections[ThreadDecisions], none, 10),
		kindSection("Constraints", &p.Sections[ThreadConstraints], none, 5),
		kindSection("Notes", &p.Sections[ThreadNotes], func(it *Item) string {
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

// supersededSummary reports whether n is a session summary of a session
// whose newer summary was already listed (nodes are walked newest first): a
// session summarised again after it went on is shown once, by its latest
// summary; the older ones stay in the lineage, a memvault expand away.
func supersededSummary(n *Node, summarised map[string]bool) bool {
	if n.Kind != "session-summary" || n.Session == "" {
		return false
	}
	if summarised[n.Session] {
		return true
	}
	summarised[n.Session] = true
	return false
}
