package lineage

// The cadence job (docs/LINEAGE.md, "Cadence"): what the background
// worker writes on its own once time has passed, without a person running
// `memvault condense`: the condensed node of every day and ISO week (UTC)
// that has closed with nodes no condensed node consumes yet, and the
// agent's self-summaries (selfsummary.go). Everything here takes now as a
// parameter (the vault's Clock where the caller has one), so "closed" is
// never a wall-clock read a test cannot set.

import (
	"fmt"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/node"
)

// Period is a day or an ISO week, in UTC, that condensation works on.
type Period struct {
	Kind  string    `json:"kind"`  // "day" or "week"
	Label string    `json:"label"` // "2020-01-15", "2020-W03"
	Start time.Time `json:"start"`
	End   time.Time `json:"end"` // exclusive: the period has closed once now reaches it
}

// CondenseDue lists the periods of agent whose condensed node the cadence
// would write at now: each day that has closed with a session summary or
// compaction node no condensed node consumes yet, then each ISO week that
// has closed with a root a week consumes (a day node, or such a day due
// now). Days first, each kind in order.
func CondenseDue(v *vault.Vault, agent string, now time.Time) ([]Period, error) {
	ix, err := node.Load(v.Files())
	if err != nil {
		return nil, err
	}
	days, _ := condenseGroups(ix, agent, CondenseOptions{Period: "day"}, now)
	weeks, _ := condenseGroups(ix, agent, CondenseOptions{Period: "week"}, now)
	var out []Period
	seen := map[string]bool{}
	for _, l := range weeks {
		seen[l] = true
	}
	for _, l := range days {
		p := periodFrom("day", l)
		out = append(out, p)
		w := periodAt(p.Start, "week")
		if !now.Before(w.End) && !seen[w.Label] {
			seen[w.Label] = true
			weeks = append(weeks, w.Label)
		}
	}
	weeks = sortedUnique(weeks)
	for _, l := range weeks {
		out = append(out, periodFrom("week", l))
	}
	return out, nil
}

// CondenseClosed writes, in tx, the condensed node of every period
// CondenseDue lists at now: the days first, then the weeks over them. It
// is idempotent: a period's nodes, once under a condensed node, are not
// condensed again, and the same children make the same node (same id,
// same bytes), so a run killed before its commit and run again writes
// what one run writes. A node that reaches a day after the day was
// condensed (a session summarised after midnight: its node is dated by its
// last message) gets a condensed node of its own for that day, which names
// the earlier one; the week takes both.
func CondenseClosed(tx *vault.Tx, now time.Time) ([]*node.Node, error) {
	ix, err := tx.Nodes()
	if err != nil {
		return nil, err
	}
	var out []*node.Node
	for _, period := range vault.CondensePeriods { // day, then week: a week takes the new day nodes
		made, err := condensePeriods(tx, ix, CondenseOptions{Period: period}, now)
		if err != nil {
			return nil, err
		}
		out = append(out, made...)
	}
	return out, nil
}

// CadenceReport is what a cadence run wrote.
type CadenceReport struct {
	Condensed     []*node.Node
	SelfSummaries []*node.Node
}

// RunCadence is the worker's cadence job for the agent opts names: in one
// transaction, the condensed nodes of the periods closed at now
// (CondenseClosed) and the self-summaries due (SelfSummarize). It writes
// nothing, and takes no lock, when nothing is due.
func RunCadence(v *vault.Vault, opts vault.TxOptions, now time.Time) (CadenceReport, error) {
	var rep CadenceReport
	agent := opts.Agent
	if agent == "" {
		agent = v.Config.Agent
	}
	due, err := CondenseDue(v, agent, now)
	if err != nil {
		return rep, err
	}
	self, err := selfDue(v, agent, now) // selfmark.go: incremental
	if err != nil {
		return rep, err
	}
	if len(due) == 0 && !self {
		return rep, nil
	}
	_, err = v.Update(opts, func(tx *vault.Tx) error {
		rep = CadenceReport{}
		var err error
		if rep.Condensed, err = CondenseClosed(tx, now); err != nil {
			return err
		}
		rep.SelfSummaries, err = SelfSummarize(tx, now)
		return err
	})
	return rep, err
}

// periodAt is the period of kind that t falls in.
func periodAt(t time.Time, kind string) Period {
	label, start := periodOf(t, kind)
	return Period{Kind: kind, Label: label, Start: start, End: periodEnd(start, kind)}
}

// periodFrom is the period of kind a label names (a label periodOf made).
func periodFrom(kind, label string) Period {
	if kind == "day" {
		t, _ := time.Parse("2006-01-02", label)
		return periodAt(t, kind)
	}
	var y, w int
	_, _ = fmt.Sscanf(label, "%04d-W%02d", &y, &w)
	// ISO week 1 holds January 4th; its Monday starts the year's weeks.
	jan4 := time.Date(y, 1, 4, 0, 0, 0, 0, time.UTC)
	monday := jan4.AddDate(0, 0, -((int(jan4.Weekday()) + 6) % 7))
	return periodAt(monday.AddDate(0, 0, 7*(w-1)), kind)
}

func sortedUnique(s []string) []string {
	m := map[string]bool{}
	for _, x := range s {
		m[x] = true
	}
	return vault.SortedKeys(m)
}
