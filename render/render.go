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
	// First marks a next action given with `next --first`: it goes on top
	// of the queue rather than at its end (see Queue).
	First bool `json:"first,omitempty"`
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
	KindReflection = "reflection"
)

// noteKinds are shown as notes: global ones in MEMORY.md, threaded ones in
// their thread head (reflections there in its Lineage).
var noteKinds = map[string]bool{"fact": true, "learning": true, "reflection": true, "claim": true, "executor.delegated": true}

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

// minLineTokens bounds what one line of a section costs from below: a
// dash and a row id alone cost more. A section therefore never shows more
// than budget/minLineTokens rows, and rows past that rank are left out
// without building their lines, so that a ledger with 100k open rows
// renders in the time of a few hundred.
const minLineTokens = 5

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

// Push adds a row newer than every row of a section ranked newest first
// (or a next action put on top of the queue): it ranks first, and with
// more than max rows the last one drops to More.
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

// Append adds a row newer than every row of a queue (Queue): it goes at
// the end, or to More when the section holds max rows already.
func (r *Ranked) Append(it Item, max int) {
	if len(r.Items) >= max {
		r.More++
		return
	}
	r.Items = append(r.Items, it)
}

// Queue reports where a new row of a queue section goes: the open items
// (next actions, blockers, commitments) are listed in the order they were
// given, oldest first, in every view (CONTINUITY.md numbers them so, and
// `memvault done N` counts them so); a next action given with --first goes
// on top. Records (decisions, notes, constraints) rank newest first.
func Queue(it *Item) (queued, onTop bool) {
	switch it.Kind {
	case KindNext:
		return true, it.First
	case KindBlocker, KindCommitment:
		return true, false
	}
	return false, false
}

// rankInto ranks items into sections (section gives each item's, or -1):
// records and the next actions put on top newest first, then the rest of
// the queues oldest first; past limit rows a section only counts them
// (and with explain keeps them for the report).
func rankInto(items []Item, out []Ranked, section func(*Item) int, limit int, explain bool) {
	add := func(it *Item, k int) {
		r := &out[k]
		if len(r.Items) >= limit {
			r.More++
			if explain {
				r.below = append(r.below, it)
			}
			return
		}
		r.Items = append(r.Items, *it)
	}
	for i := len(items) - 1; i >= 0; i-- {
		it := &items[i]
		if q, top := Queue(it); q && !top {
			continue
		}
		if k := section(it); k >= 0 {
			add(it, k)
		}
	}
	for i := range items {
		it := &items[i]
		if q, top := Queue(it); !q || top {
			continue
		}
		if k := section(it); k >= 0 {
			add(it, k)
		}
	}
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
	ThreadNotes // reflections rank here too, and are shown in the Lineage
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

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// PrepareMemory ranks the Input's rows into MEMORY.md's sections.
func PrepareMemory(in Input) *MemoryParts {
	p := &MemoryParts{Nodes: in.Nodes}
	rankInto(in.Items, p.Sections[:], MemorySection, rowCap(in.MemoryTokens), in.Explain)
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
