package ops

import (
	"slices"
	"time"

	"github.com/memvault/memvault/vault"
)

// LedgerQuery selects ledger events: those that pass Filter and, when IDs
// are given (any unique prefix of each), only those events; the newest
// Limit of them (0: all).
type LedgerQuery struct {
	Filter vault.Filter
	IDs    []string
	Limit  int
	// Agents, when not nil, keeps only the rows these agents wrote and the
	// rows of no agent: what a reader acting as an agent other than the
	// vault's may see (continuity.VisibleAgents, the rule recall, the
	// heads and the context keep). Rows left out are not counted in
	// matched, and an id among IDs that names one selects nothing.
	Agents []string
	// Until, when not zero, keeps only the events written before it (the
	// bound recall --until and the web timeline keep): with Filter.Since,
	// a half-open window [Since, Until).
	Until time.Time
}

// Ledger returns the events q selects, oldest first, each with its
// status, and how many matched before the limit.
func Ledger(st *vault.State, q LedgerQuery) (rows []*vault.Row, matched int, err error) {
	if err := CheckWindow("ledger", q.Filter.Since, q.Until); err != nil {
		return nil, 0, err
	}
	var only map[string]bool
	for _, arg := range q.IDs {
		id, err := st.ResolveEventID("ledger", arg)
		if err != nil {
			return nil, 0, err
		}
		if only == nil {
			only = map[string]bool{}
		}
		only[id] = true
	}
	rows = st.Select(q.Filter)
	if only != nil {
		rows = slices.DeleteFunc(rows, func(r *vault.Row) bool { return !only[r.ID] })
	}
	if !q.Until.IsZero() {
		rows = slices.DeleteFunc(rows, func(r *vault.Row) bool { return !r.Time().Before(q.Until) })
	}
	if q.Agents != nil {
		rows = slices.DeleteFunc(rows, func(r *vault.Row) bool { return r.Agent != "" && !slices.Contains(q.Agents, r.Agent) })
	}
	matched = len(rows)
	if q.Limit > 0 && len(rows) > q.Limit {
		rows = rows[len(rows)-q.Limit:]
	}
	for _, r := range rows {
		r.Status = st.Status(r)
	}
	if rows == nil {
		rows = []*vault.Row{}
	}
	return rows, matched, nil
}
