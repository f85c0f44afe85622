package lineage

// Temporal condensation (docs/LINEAGE.md, "Condensation"): a condensed node
// per day over the session summaries and compaction nodes no condensed node
// consumes yet, and per ISO week over the week's roots (the day nodes, and
// any summary or compaction still a root). `memvault condense` runs it by
// hand; the worker's cadence job (cadence.go) runs it for every period that
// has closed.

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/executor"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/node"
)

// CondenseOptions tune Condense.
type CondenseOptions struct {
	Period  string // "day" (default) or "week"
	Thread  string // only nodes of this thread
	Current bool   // include the period still under way
	// Models are the executor's summaries CondenseModels asked for before
	// the transaction, by period label (nil: no summariser).
	Models map[string]*Model
}

// periodOf returns the period a time falls in, as a label and its start.
func periodOf(t time.Time, period string) (string, time.Time) {
	t = t.UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	if period == "week" {
		wd := (int(day.Weekday()) + 6) % 7 // Monday is 0
		start := day.AddDate(0, 0, -wd)
		y, w := start.ISOWeek()
		return fmt.Sprintf("%04d-W%02d", y, w), start
	}
	return day.Format("2006-01-02"), day
}

// periodEnd is when the period starting at start ends (exclusive).
func periodEnd(start time.Time, period string) time.Time {
	if period == "week" {
		return start.AddDate(0, 0, 7)
	}
	return start.AddDate(0, 0, 1)
}

var (
	dayLabel  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`) })
	weekLabel = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\d{4}-W\d{2}$`) })
)

// condensedPeriod is the period of a condensed node, read from its title
// ("2020-01-15: 3 nodes", "2020-W03: 2 nodes"): "day", "week", or "" for
// any other node.
func condensedPeriod(n *node.Node) string {
	if n.Kind != node.Condensed {
		return ""
	}
	label, _, _ := strings.Cut(n.Title, ":")
	switch {
	case dayLabel().MatchString(label):
		return "day"
	case weekLabel().MatchString(label):
		return "week"
	}
	return ""
}

// consumes reports whether a condensed node of period takes n as a child
// (when n is a root): a day takes session summaries and compaction nodes;
// a week takes those and the day nodes. Self-summaries stand over events,
// not transcripts, and are never condensed.
func consumes(period string, n *node.Node) bool {
	switch n.Kind {
	case node.SessionSummary, node.Compaction:
		return true
	case node.Condensed:
		return period == "week" && condensedPeriod(n) == "day"
	}
	return false
}

// Condense writes condensed nodes over the nodes of the agent that no
// condensed node consumes yet, one per period (and per thread with
// Thread). Periods still under way are left alone unless Current is set,
// so a day is condensed once it is over.
func Condense(tx *vault.Tx, opts CondenseOptions) ([]*node.Node, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	ix, err := tx.Nodes()
	if err != nil {
		return nil, err
	}
	return condensePeriods(tx, ix, opts, tx.Now())
}

// condensePeriods writes the condensed node of each of opts' periods
// closed by now that needs one (writeCondensed), oldest first, and returns
// the nodes it wrote.
func condensePeriods(tx *vault.Tx, ix *node.Index, opts CondenseOptions, now time.Time) ([]*node.Node, error) {
	labels, groups := condenseGroups(ix, tx.Agent(), opts, now)
	var out []*node.Node
	for _, label := range labels {
		made, err := writeCondensed(tx, ix, label, groups[label], opts)
		if err != nil {
			return nil, err
		}
		if made != nil {
			out = append(out, made)
		}
	}
	return out, nil
}

// writeCondensed writes the condensed node of period label over children
// (condenseGroups': the period's roots and, without a thread, the children
// of the nodes of the period condensed before). Without a thread, a
// period has one condensed node that counts: the new node supersedes
// every earlier one of the agent's period (a node that came late, after
// the period was condensed: a session summarised after midnight, a
// backfill of old sessions; or two clones that each condensed it), and
// says so; when the one node that counts has these children already, it
// is returned and nothing is written. With a thread (`condense --thread`)
// the earlier nodes are only named, and the new node condenses what they
// did not.
func writeCondensed(tx *vault.Tx, ix *node.Index, label string, children []*node.Node, opts CondenseOptions) (*node.Node, error) {
	if len(children) == 0 {
		return nil, nil // every node the period's earlier nodes held is gone or superseded
	}
	node.Sort(children)
	ids := make([]string, len(children))
	for i, c := range children {
		ids[i] = c.ID
	}
	earlier := earlierCondensed(ix, tx.Agent(), label)
	if opts.Thread == "" && len(earlier) == 1 && slices.Equal(ix.Nodes[earlier[0]].Children, ids) {
		return ix.Nodes[earlier[0]], nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s (%s)\n\n", label, opts.Period)
	switch {
	case len(earlier) > 0 && opts.Thread == "":
		fmt.Fprintf(&b, "_This %s was condensed before, in `%s`; this node takes its place, with every node of the %s._\n\n",
			opts.Period, strings.Join(earlier, "`, `"), opts.Period)
	case len(earlier) > 0:
		fmt.Fprintf(&b, "_This %s was condensed before, in `%s`; these nodes came after._\n\n", opts.Period,
			strings.Join(earlier, "`, `"))
	}
	threads := map[string]bool{}
	sessions := map[string]bool{}
	for _, c := range children {
		for _, th := range c.Threads {
			threads[th] = true
		}
		sessions[c.Session] = true
		fmt.Fprintf(&b, "- %s `%s`: %s\n", c.Kind, c.ID, c.Title)
	}
	if opts.Thread != "" {
		threads = map[string]bool{opts.Thread: true}
	}
	session := ""
	if len(sessions) == 1 {
		session = children[0].Session
	}
	n := &node.Node{Kind: node.Condensed, Agent: tx.Agent(), Session: session, Threads: vault.SortedKeys(threads),
		Children: ids, Created: children[len(children)-1].Created,
		Title: fmt.Sprintf("%s: %d nodes", label, len(children)), Body: b.String()}
	if opts.Thread == "" {
		n.Supersedes = earlier
	}
	if opts.Models != nil {
		m := opts.Models[label]
		if m == nil {
			m = &Model{Call: executor.Summary{Code: executor.CodeStale,
				Err: fmt.Errorf("summarise: the period %s had no nodes to condense when the executor was asked", label)}}
		}
		if err := applyModel(tx, n, m, slices.Equal(m.Children, ids), "condensation of "+label); err != nil {
			return nil, err
		}
	}
	made, _, err := tx.CreateNode(n)
	return made, err
}

// earlierCondensed lists, sorted, the ids of agent's condensed nodes of
// the period label that count (a superseded one left out).
func earlierCondensed(ix *node.Index, agent, label string) []string {
	var out []string
	for _, n := range ix.Select(node.Filter{Agent: agent, Kind: node.Condensed}) {
		if l, _, _ := strings.Cut(n.Title, ":"); l == label {
			out = append(out, n.ID)
		}
	}
	sort.Strings(out)
	return out
}

// inherit adds to the roots of period label the children of the agent's
// condensed nodes of that period that count, each once, leaving out a
// child that a later node supersedes (a session summary of a resumed
// session, a day condensed again) or that the index does not hold.
func inherit(ix *node.Index, agent, label string, roots []*node.Node) []*node.Node {
	seen := map[string]bool{}
	out := make([]*node.Node, 0, len(roots))
	for _, r := range roots {
		seen[r.ID] = true
		out = append(out, r)
	}
	for _, e := range earlierCondensed(ix, agent, label) {
		for _, c := range ix.Nodes[e].Children {
			if cn := ix.Nodes[c]; cn != nil && !seen[c] && ix.SupersededBy(c) == "" {
				seen[c] = true
				out = append(out, cn)
			}
		}
	}
	return out
}

// check validates the options and fills in their defaults.
func (opts *CondenseOptions) check() error {
	if opts.Period == "" {
		opts.Period = vault.CondensePeriods[0]
	}
	if !slices.Contains(vault.CondensePeriods, opts.Period) {
		return fault.New(vault.ErrInvalid, "condense: period %q: want %s", opts.Period, strings.Join(vault.CondensePeriods, " or "))
	}
	if opts.Thread != "" {
		th, err := vault.ParseThread(opts.Thread)
		if err != nil {
			return err
		}
		opts.Thread = th.String()
	}
	return nil
}

// condenseGroups is what Condense condenses: by period label, the
// agent's nodes no condensed node consumes yet and the period consumes,
// by the period they were made in (the period under way left out unless
// opts.Current: a period is under way until now reaches its end), each
// group sorted, and the labels in order. Without a thread, a period is
// also due when more than one condensed node of it counts (two clones
// that each condensed it, merged), and each group takes the children of
// the period's condensed nodes that count (inherit): the node written
// supersedes them.
func condenseGroups(ix *node.Index, agent string, opts CondenseOptions, now time.Time) ([]string, map[string][]*node.Node) {
	groups := map[string][]*node.Node{}
	closed := func(start time.Time) bool { return opts.Current || !now.Before(periodEnd(start, opts.Period)) }
	for _, n := range ix.Select(node.Filter{Agent: agent, Thread: opts.Thread}) {
		if !consumes(opts.Period, n) || len(ix.Parents[n.ID]) > 0 {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, n.Created)
		if err != nil {
			continue
		}
		label, start := periodOf(t, opts.Period)
		if !closed(start) {
			continue
		}
		groups[label] = append(groups[label], n)
	}
	if opts.Thread == "" {
		counting := map[string]int{}
		for _, n := range ix.Select(node.Filter{Agent: agent, Kind: node.Condensed}) {
			if condensedPeriod(n) == opts.Period {
				label, _, _ := strings.Cut(n.Title, ":")
				counting[label]++
			}
		}
		for label, c := range counting {
			if _, due := groups[label]; !due && c > 1 && closed(periodFrom(opts.Period, label).Start) {
				groups[label] = nil
			}
		}
		for label, g := range groups {
			groups[label] = inherit(ix, agent, label, g)
		}
	}
	labels := make([]string, 0, len(groups))
	for l, g := range groups {
		labels = append(labels, l)
		node.Sort(g)
	}
	sort.Strings(labels)
	return labels, groups
}
