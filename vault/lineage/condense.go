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
	labels, groups := condenseGroups(ix, tx.Agent(), opts, tx.Now())
	var out []*node.Node
	for _, label := range labels {
		made, err := writeCondensed(tx, ix, label, groups[label], opts)
		if err != nil {
			return nil, err
		}
		out = append(out, made)
	}
	return out, nil
}

// writeCondensed writes the condensed node of period label over children.
// When the agent has an earlier node of the same period (a node that came
// late, after the period was condensed: a session summarised after
// midnight), the body names it; the new node condenses only what the
// earlier one did not.
func writeCondensed(tx *vault.Tx, ix *node.Index, label string, children []*node.Node, opts CondenseOptions) (*node.Node, error) {
	node.Sort(children)
	var b strings.Builder
	fmt.Fprintf(&b, "# %s (%s)\n\n", label, opts.Period)
	if earlier := earlierCondensed(ix, tx.Agent(), label); len(earlier) > 0 {
		fmt.Fprintf(&b, "_This %s was condensed before, in `%s`; these nodes came after._\n\n", opts.Period,
			strings.Join(earlier, "`, `"))
	}
	ids := make([]string, len(children))
	threads := map[string]bool{}
	sessions := map[string]bool{}
	for i, c := range children {
		ids[i] = c.ID
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
// the period label.
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

// condenseGroups is what Condense condenses: the agent's nodes no
// condensed node consumes yet and the period consumes, by the period they
// were made in (the period under way left out unless opts.Current: a
// period is under way until now reaches its end), each group sorted, and
// the labels in order.
func condenseGroups(ix *node.Index, agent string, opts CondenseOptions, now time.Time) ([]string, map[string][]*node.Node) {
	groups := map[string][]*node.Node{}
	for _, n := range ix.Select(node.Filter{Agent: agent, Thread: opts.Thread}) {
		if !consumes(opts.Period, n) || len(ix.Parents[n.ID]) > 0 {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, n.Created)
		if err != nil {
			continue
		}
		label, start := periodOf(t, opts.Period)
		if now.Before(periodEnd(start, opts.Period)) && !opts.Current {
			continue
		}
		groups[label] = append(groups[label], n)
	}
	labels := make([]string, 0, len(groups))
	for l, g := range groups {
		labels = append(labels, l)
		node.Sort(g)
	}
	sort.Strings(labels)
	return labels, groups
}
