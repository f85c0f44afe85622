package ops

import (
	"errors"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/heads"
)

// TimelineQuery selects one page of events, newest first: those that pass
// Filter and were written before Until (zero: no bound), starting after
// the event Before (an id or a unique prefix; "": the newest) or at the
// event At (the page a link to one event opens on), Limit of them. With
// Memory, bookkeeping (IsBookkeeping) is left out, but for the event At
// names: the web timeline's default, memory first.
type TimelineQuery struct {
	Filter vault.Filter
	Until  time.Time
	Before string
	At     string
	Limit  int
	Memory bool
}

// TimelinePage is one page of a timeline: its events, newest first, each
// with its status, and Next, the id the next page starts before ("" when
// this is the last page).
type TimelinePage struct {
	Rows []*vault.Row
	Next string
}

// Timeline returns the page q selects from st. It walks the rows backwards
// from the starting point and stops once the page is full, so a page costs
// the rows it skips, not the whole ledger.
func Timeline(st *vault.State, q TimelineQuery) (TimelinePage, error) {
	if q.Limit <= 0 {
		q.Limit = 100
	}
	end := len(st.Rows) // the index below which the page starts
	if q.Before != "" || q.At != "" {
		arg, verb := q.Before, "before"
		if q.At != "" {
			arg, verb = q.At, "at"
		}
		id, err := st.ResolveEventID(verb, arg)
		if err != nil {
			return TimelinePage{}, err
		}
		end = -1
		for i := len(st.Rows) - 1; i >= 0; i-- {
			if st.Rows[i].ID == id {
				end = i
				break
			}
		}
		if end < 0 {
			return TimelinePage{}, fault.New(vault.ErrNotFound, "%s %s: no such event", verb, arg)
		}
		if q.At != "" {
			end++
		}
	}
	page := TimelinePage{Rows: []*vault.Row{}}
	for i := end - 1; i >= 0; i-- {
		r := st.Rows[i]
		if !q.Filter.Match(r) || (!q.Until.IsZero() && !r.Time().Before(q.Until)) {
			continue
		}
		if q.Memory && IsBookkeeping(r.Kind) && (q.At == "" || i != end-1) {
			continue
		}
		if len(page.Rows) == q.Limit {
			page.Next = page.Rows[len(page.Rows)-1].ID
			break
		}
		r.Status = st.Status(r)
		page.Rows = append(page.Rows, r)
	}
	return page, nil
}

// eventLine is in every event's line of the ledger: a byte search for it
// keeps every event of the segments searched.
const eventLine = `"id":"` + vault.EventIDMarker

// TimelineOf is Timeline read from v's ledger, newest segments first: the
// last segment, then the last 4, 16, … until the page is full (a page
// ends before the oldest segment read when it has a next page) or the id
// it starts from is found; each read adds the corrections of the rows it
// keeps, wherever they are, so every status is the full fold's. Once the
// segments to read would be more than a quarter of the ledger, the cached
// fold of every row (heads.FoldedState) is cheaper, and is read instead.
// A recent page of a large ledger costs a segment or a few, not the
// ledger.
func TimelineOf(v *vault.Vault, q TimelineQuery) (TimelinePage, error) {
	segs, _, err := vault.ListSegments(v.Root)
	if err != nil {
		return TimelinePage{}, err
	}
	n := len(segs)
	for k := 1; 4*k <= n; k *= 4 {
		window := make(map[string]bool, k)
		for _, s := range segs[n-k:] {
			window[s.String()] = true
		}
		st, err := v.LoadStateOf([][]byte{[]byte(eventLine)}, func(c vault.SegCorrections) bool {
			return window[c.Stamp.Path]
		})
		if err != nil {
			return TimelinePage{}, err
		}
		page, err := Timeline(st, q)
		switch {
		case err == nil && page.Next != "":
			return page, nil
		case err != nil && !errors.Is(err, vault.ErrNotFound):
			return TimelinePage{}, err
		}
		// Too few rows, or the starting id is older: read more.
	}
	st, _, err := heads.FoldedState(v)
	if err != nil {
		return TimelinePage{}, err
	}
	return Timeline(st, q)
}
