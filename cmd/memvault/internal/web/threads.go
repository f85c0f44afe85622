package web

import (
	"net/http"
	"slices"
	"strings"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/heads"
	"github.com/memvault/memvault/vault/transcript"
)

// The browsing pages (docs/WEB.md): a thread's page (its head rendered,
// its recent memory, the sessions that wrote to it) and the list of
// sessions, each linked from the overview.

// threadRecent is how many memory rows a thread's page shows; the
// timeline, filtered to the thread, pages through the rest.
const threadRecent = 25

// sessionsMax bounds the sessions a page lists, newest first.
const sessionsMax = 200

// sessionInfo is a session as the pages list it: what its rows say (when,
// which threads, how many) and what its transcript holds.
type sessionInfo struct {
	Agent, Session string
	First, Last    string // the ledger times of its first and last rows
	Events         int    // its rows, bookkeeping left out
	Messages       int    // its transcript's messages
	Threads        []string
}

// threadData is a thread's page.
type threadData struct {
	Info     heads.ThreadInfo
	Key      string
	HTML     any // the head rendered (markdown.go)
	Rendered bool
	Rows     []*vault.Row
	More     bool
	Sessions []sessionInfo
}

func (s *Server) thread(r *http.Request) (*view, error) {
	th, err := vault.ParseThread(r.PathValue("kind") + ":" + r.PathValue("slug"))
	if err != nil {
		return nil, fault.New(vault.ErrNotFound, "thread %q: no such thread", r.PathValue("kind")+":"+r.PathValue("slug"))
	}
	v, _, err := s.open(true)
	if err != nil {
		return nil, err
	}
	st, _, err := heads.FoldedState(v)
	if err != nil {
		return nil, err
	}
	info, err := heads.HeadsOf(v, st)
	if err != nil {
		return nil, err
	}
	d := &threadData{Key: th.String()}
	found := false
	for _, ti := range info.Threads {
		if ti.Key == d.Key || slices.Contains(ti.Aliases, d.Key) {
			d.Info, found = ti, true
		}
	}
	if !found && !slices.ContainsFunc(st.Rows, func(row *vault.Row) bool { return row.Thread == d.Key }) {
		return nil, fault.New(vault.ErrNotFound, "thread %s: no such thread", d.Key)
	}
	if !found { // rows, but no head of its own
		d.Info = heads.ThreadInfo{Key: d.Key, Head: th.HeadPath().String(), HeadState: "not rendered"}
	}
	d.Key = d.Info.Key
	if th, err = vault.ParseThread(d.Key); err != nil {
		return nil, err
	}
	text, rendered, err := ops.HeadText(v, th.HeadPath().String(), th)
	if err != nil {
		return nil, err
	}
	d.HTML, d.Rendered = markdownHTML(text, labeler(r)), rendered
	page, err := ops.Timeline(st, ops.TimelineQuery{Filter: vault.Filter{Thread: d.Key}, Limit: threadRecent, Memory: true})
	if err != nil {
		return nil, err
	}
	d.Rows, d.More = page.Rows, page.Next != ""
	sessions := sessionsOf(st, func(row *vault.Row) bool { return row.Thread == d.Key })
	d.Sessions, _ = capSessions(sessions)
	return &view{Page: "thread", Title: "Thread " + d.Key, Data: d}, nil
}

// sessionsOf gathers the sessions of the rows keep accepts, newest last
// row first; bookkeeping rows date a session but are not counted.
func sessionsOf(st *vault.State, keep func(*vault.Row) bool) []sessionInfo {
	at := map[[2]string]int{}
	var out []sessionInfo
	for _, row := range st.Rows {
		if row.Session == "" || !keep(row) {
			continue
		}
		key := [2]string{row.Agent, row.Session}
		i, ok := at[key]
		if !ok {
			i = len(out)
			at[key] = i
			out = append(out, sessionInfo{Agent: row.Agent, Session: row.Session, First: row.TS})
		}
		si := &out[i]
		if row.TS < si.First {
			si.First = row.TS
		}
		if row.TS > si.Last {
			si.Last = row.TS
		}
		if !ops.IsBookkeeping(row.Kind) {
			si.Events++
		}
		if row.Thread != "" && !slices.Contains(si.Threads, row.Thread) {
			si.Threads = append(si.Threads, row.Thread)
		}
	}
	sortSessions(out)
	return out
}

// sortSessions orders sessions by their last activity, newest first.
func sortSessions(list []sessionInfo) {
	slices.SortStableFunc(list, func(a, b sessionInfo) int {
		if c := strings.Compare(b.Last, a.Last); c != 0 {
			return c
		}
		return strings.Compare(a.Session, b.Session)
	})
}

// capSessions keeps the newest sessionsMax sessions and counts the rest.
func capSessions(list []sessionInfo) ([]sessionInfo, int) {
	if len(list) <= sessionsMax {
		return list, 0
	}
	return list[:sessionsMax], len(list) - sessionsMax
}

// sessionsData is the list of sessions.
type sessionsData struct {
	Sessions []sessionInfo
	More     int
}

// sessions lists every session the vault knows, from its rows (the cached
// fold) and its stored transcripts (`memvault sessions`), newest first.
func (s *Server) sessions(*http.Request) (*view, error) {
	v, _, err := s.open(true)
	if err != nil {
		return nil, err
	}
	st, _, err := heads.FoldedState(v)
	if err != nil {
		return nil, err
	}
	list := sessionsOf(st, func(*vault.Row) bool { return true })
	at := map[[2]string]int{}
	for i, si := range list {
		at[[2]string{si.Agent, si.Session}] = i
	}
	stored, err := transcript.Sessions(v.Files())
	if err != nil {
		return nil, err
	}
	for _, t := range stored {
		i, ok := at[[2]string{t.Agent, t.Session}]
		if !ok {
			i = len(list)
			list = append(list, sessionInfo{Agent: t.Agent, Session: t.Session})
		}
		list[i].Messages = t.Messages
	}
	sortSessions(list)
	d := &sessionsData{}
	d.Sessions, d.More = capSessions(list)
	return &view{Page: "sessions", Title: "Sessions", Data: d}, nil
}
