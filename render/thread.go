package render

// Thread heads (Tier 2): one rolling summary per project, person or
// topic, and the prepared parts a render is made from.

import (
	"slices"
	"sort"
	"strconv"
	"strings"
)

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
	Next     *Item          `json:"next,omitempty"` // the first next action of the queue
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
		if ts.Next == nil || it.First {
			n := *it
			ts.Next = &n
		}
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

// ThreadParts is what one thread head is rendered from.
type ThreadParts struct {
	Summary  *ThreadSummary // nil when no row of the thread holds
	Sections [ThreadSections]Ranked
	Nodes    []Node // the thread's nodes, ledger order
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
	rankInto(items, p.Sections[:], func(it *Item) int { return ThreadSection(it.Kind) }, limit, explain)
	return p
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

	// Reflections rank with the notes (within the notes' row cap, and the
	// rows below it are counted there) but are shown in the Lineage.
	notes := Ranked{More: p.Sections[ThreadNotes].More, below: p.Sections[ThreadNotes].below}
	var reflections []Item
	for _, it := range p.Sections[ThreadNotes].Items {
		if it.Kind == KindReflection {
			reflections = append(reflections, it)
		} else {
			notes.Items = append(notes.Items, it)
		}
	}
	lineage := lineageSection(p, key, reflections, in)

	secs := []section{
		status,
		loops,
		next,
		kindSection("Decisions", &p.Sections[ThreadDecisions], none, 10),
		kindSection("Constraints", &p.Sections[ThreadConstraints], none, 5),
		kindSection("Notes", &notes, func(it *Item) string {
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

// lineageSection lists the thread's reflections (newest first, as they
// ranked), then its nodes, newest first. The order needs no timestamps,
// which the prepared view does not keep for ranked rows.
func lineageSection(p *ThreadParts, key string, reflections []Item, in Input) section {
	summarised := map[string]bool{}
	lineage := section{title: "Lineage", quota: 5,
		fixed: []string{"- every row of this thread: `memvault ledger --thread " + key + "`; what the budget left out: `memvault render --thread " + key + " --explain`"}}
	for i := range reflections {
		it := &reflections[i]
		lineage.entries = append(lineage.entries, mkEntry(it, "- reflection: "+clean(it.Text, threadTextRunes)+" (`"+it.ID+"`)"))
	}
	for i := len(p.Nodes) - 1; i >= 0; i-- {
		n := &p.Nodes[i]
		if n.Kind == "condensed" && !slices.Contains(n.Threads, key) {
			continue // another thread's node of a period hides none of this thread's
		}
		if supersededSummary(n, summarised) || !slices.Contains(n.Threads, key) {
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
	return lineage
}

// supersededSummary reports whether n is a session summary of a session
// whose newer summary was already listed (nodes are walked newest first): a
// session summarised again after it went on is shown once, by its latest
// summary; the older ones stay in the lineage, a memvault expand away. The
// same holds for a condensed node of a period (its title starts with the
// day's or the week's label, "2020-W03: 2 nodes") condensed again: the
// newest node of the period is shown (docs/LINEAGE.md, "Cadence").
func supersededSummary(n *Node, summarised map[string]bool) bool {
	var key string
	switch {
	case n.Kind == "session-summary" && n.Session != "":
		key = "session " + n.Session
	case n.Kind == "condensed":
		label, _, ok := strings.Cut(n.Text, ":")
		if !ok || !periodLabel(label) {
			return false
		}
		key = "period " + label
	default:
		return false
	}
	if summarised[key] {
		return true
	}
	summarised[key] = true
	return false
}

// periodLabel reports whether s is a day's label (2020-01-15) or an ISO
// week's (2020-W03).
func periodLabel(s string) bool {
	digits := func(s string) bool {
		for _, c := range s {
			if c < '0' || c > '9' {
				return false
			}
		}
		return s != ""
	}
	switch len(s) {
	case 10:
		return digits(s[:4]) && s[4] == '-' && digits(s[5:7]) && s[7] == '-' && digits(s[8:])
	case 8:
		return digits(s[:4]) && s[4:6] == "-W" && digits(s[6:])
	}
	return false
}
