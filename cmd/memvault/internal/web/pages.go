package web

import (
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/continuity"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/heads"
)

// The read pages. Each opens the vault for the request and reads without
// the lock, through the calls its command makes: the overview is
// `memvault status`, `memvault continuity status` and `memvault threads`;
// the timeline is `memvault ledger`; and so on (docs/WEB.md).

// overviewData is the overview: what `memvault status` reports, the live
// sections of the working memory, and the threads with their heads'
// state. A part that cannot be read is named in Problems and the rest
// still shows.
type overviewData struct {
	Root       string
	Status     *ops.Status
	Health     ops.Health
	Continuity *continuity.Continuity
	Threads    []heads.ThreadInfo
	Problems   []string
	// The lists, each the first overviewList of its items, and how many
	// more there are: a large vault holds thousands, which the timeline
	// pages through.
	Commitments, Blockers, Next             []listItem
	MoreCommitments, MoreBlockers, MoreNext int
	// Sessions are the most recently active sessions (overviewSessions),
	// from the rows; the sessions page lists them all.
	Sessions []sessionInfo
}

// overviewSessions is how many sessions the overview shows.
const overviewSessions = 10

// overviewList is how many items of each list the overview shows.
const overviewList = 50

// listItem is an entry of one of the overview's lists.
type listItem struct{ ID, Text, Thread string }

func (s *Server) overview(*http.Request) (*view, error) {
	// The three parts read at once, each with a vault handle of its own
	// (a handle is not shared between goroutines): the working memory
	// from its own cache; the status and the threads from one fold of the
	// ledger, which both only read. On a large vault the fold and the
	// threads' counts are what the page waits for, not their sum.
	var (
		wg       sync.WaitGroup
		st       *ops.Status
		cont     *continuity.Continuity
		info     *heads.HeadsInfo
		errs     [3]error
		root     string
		sessions []sessionInfo
	)
	v, agent, err := s.open(true)
	if err != nil {
		return nil, err
	}
	root = v.Root
	wg.Add(1)
	go func() {
		defer wg.Done()
		v, _, err := s.open(true)
		if err == nil {
			cont, err = continuity.LoadContinuity(v)
		}
		errs[1] = err
	}()
	// The status from the cached fold, not a fold of every segment.
	folded, _, err := heads.FoldedState(v)
	if err != nil {
		errs[0], errs[2] = err, err
	} else {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, _, err := s.open(true)
			if err == nil {
				info, err = heads.HeadsOf(v, folded)
			}
			errs[2] = err
		}()
		st, errs[0] = ops.StatusOf(v, agent, folded)
		sessions = sessionsOf(folded, func(*vault.Row) bool { return true })
		sessions = sessions[:min(len(sessions), overviewSessions)]
	}
	wg.Wait()

	d := &overviewData{Root: root, Status: st, Continuity: cont, Sessions: sessions}
	if errs[0] != nil {
		d.Problems = append(d.Problems, "status: "+errs[0].Error())
		d.Health = ops.NewHealth(v)
	} else {
		d.Health = st.Health
		for _, r := range st.Commitments {
			d.Commitments = append(d.Commitments, listItem{r.ID, r.Text, r.Thread})
		}
		d.Commitments, d.MoreCommitments = capList(d.Commitments)
	}
	if errs[1] != nil {
		d.Problems = append(d.Problems, "working memory: "+errs[1].Error())
		d.Continuity = nil
	} else {
		for _, it := range cont.Blockers {
			d.Blockers = append(d.Blockers, listItem{it.ID, it.Text, it.Thread})
		}
		for _, it := range cont.Next {
			d.Next = append(d.Next, listItem{it.ID, it.Text, it.Thread})
		}
		d.Blockers, d.MoreBlockers = capList(d.Blockers)
		d.Next, d.MoreNext = capList(d.Next)
	}
	if errs[2] != nil {
		d.Problems = append(d.Problems, "threads: "+errs[2].Error())
	} else {
		d.Threads = info.Threads
	}
	return &view{Page: "overview", Title: "Overview", Data: d}, nil
}

// capList keeps the first overviewList items and counts the rest.
func capList(items []listItem) ([]listItem, int) {
	if len(items) <= overviewList {
		return items, 0
	}
	return items[:overviewList], len(items) - overviewList
}

// timelineData is one page of the timeline and the filters that made it.
type timelineData struct {
	Thread, Agent, Kind, Since, Until string
	Bookkeeping                       bool // shown too: the "bookkeeping" toggle
	Rows                              []*vault.Row
	Next                              string // the next page's URL, "" on the last
}

func (s *Server) timeline(r *http.Request) (*view, error) {
	q := r.URL.Query()
	d := &timelineData{Thread: q.Get("thread"), Agent: q.Get("agent"), Kind: q.Get("kind"),
		Since: q.Get("since"), Until: q.Get("until"), Bookkeeping: q.Get("bookkeeping") != ""}
	// Memory first: memvault's bookkeeping (session starts and ends, head
	// renders, imports) only with the toggle, or when the kind names it.
	tq := ops.TimelineQuery{Filter: vault.Filter{Agent: d.Agent, Kind: d.Kind}, Before: q.Get("before"), At: q.Get("at"), Limit: 100,
		Memory: !d.Bookkeeping && d.Kind == ""}
	if d.Thread != "" {
		th, err := vault.ParseThread(d.Thread)
		if err != nil {
			return nil, err
		}
		tq.Filter.Thread = th.String()
	}
	now := time.Now()
	var err error
	if d.Since != "" {
		if tq.Filter.Since, err = ops.ParseSince(d.Since, now); err != nil {
			return nil, err
		}
	}
	if d.Until != "" {
		if tq.Until, err = ops.ParseSince(d.Until, now); err != nil {
			return nil, err
		}
	}
	v, _, err := s.open(true)
	if err != nil {
		return nil, err
	}
	// The newest segments first, as far as the page needs (ops.TimelineOf).
	page, err := ops.TimelineOf(v, tq)
	if err != nil {
		return nil, err
	}
	d.Rows = page.Rows
	if page.Next != "" {
		next := q
		next.Del("at")
		next.Del("token")
		next.Set("before", page.Next)
		d.Next = "/timeline?" + next.Encode()
	}
	title := "Timeline"
	if d.Thread != "" {
		title += " of " + d.Thread
	}
	return &view{Page: "timeline", Title: title, Data: d}, nil
}

// pathArg reads a path element of the route, checked as a name.
func pathArg(r *http.Request, what, name string) (string, error) {
	s := r.PathValue(name)
	if err := fileio.CheckName(what, s); err != nil {
		return "", fault.New(vault.ErrNotFound, "%s %q: no such %s", what, s, what)
	}
	return s, nil
}

// trimmed is s without the spaces around it.
func trimmed(s string) string { return strings.TrimSpace(s) }
