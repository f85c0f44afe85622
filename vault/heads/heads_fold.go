package heads

// The heads' bookkeeping, folded from the ledger: each head's last render,
// its deferred refreshes and open conflicts, and the view a refresh renders
// from (which rows each head shows, which heads are stale).

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/memvault/memvault/render"
	"github.com/memvault/memvault/vault"
)

// ContentKinds are the kinds a head shows.
var ContentKinds = map[string]bool{
	"fact": true, "decision": true, "learning": true, "constraint": true, "blocker": true,
	"next": true, "claim": true, "reflection": true, "commitment.open": true,
	"executor.delegated": true, // an executor's verified summary (docs/EXECUTORS.md): a note
}

// HeadEvent is a head.* event as status and the refresh read it.
type HeadEvent struct {
	ID      string          `json:"id"`
	TS      string          `json:"ts"`
	Kind    string          `json:"kind"`
	Agent   string          `json:"agent"`
	Session string          `json:"session,omitempty"`
	Head    string          `json:"head"`
	Text    string          `json:"text"`
	Data    json.RawMessage `json:"data,omitempty"`
	seq     int
}

// HeadState is the bookkeeping of one head: its last render and what is
// still pending for it.
type HeadState struct {
	Head         string      `json:"head"`
	Thread       string      `json:"thread,omitempty"`
	LastRendered *HeadEvent  `json:"last_rendered,omitempty"`
	Deferred     []HeadEvent `json:"deferred"`  // refreshes waiting for a retry
	Conflicts    []HeadEvent `json:"conflicts"` // conflicts not resolved
}

func (h *HeadState) blob() string {
	if h == nil || h.LastRendered == nil {
		return ""
	}
	var d struct {
		Blob string `json:"blob"`
	}
	_ = json.Unmarshal(h.LastRendered.Data, &d)
	return d.Blob
}

// HeadView is the ledger as the heads see it.
type HeadView struct {
	input      render.Input
	Heads      map[string]*HeadState
	Threads    []string       // every thread key seen in the ledger, first appearance first
	ThreadLast map[string]int // row index of each thread's newest content row
	LastMemory int            // row index of the newest row MEMORY.md depends on
	sessionOf  map[string]map[string]bool
	// cache, when set, is the prepared view the heads are rendered from;
	// input then has no Items or Nodes.
	cache *viewCache
}

// SessionWrote reports whether a session wrote content rows to a thread.
func (vw *HeadView) SessionWrote(session, thread string) bool {
	if vw.cache != nil {
		return vw.cache.sessionWrote(session, thread)
	}
	return vw.sessionOf[session][thread]
}

func HeadOf(data json.RawMessage) string {
	var d struct {
		Head string `json:"head"`
	}
	_ = json.Unmarshal(data, &d)
	return d.Head
}

func BuildView(st *vault.State, cfg HeadsConfig) *HeadView {
	vw := &HeadView{Heads: map[string]*HeadState{}, ThreadLast: map[string]int{}, LastMemory: -1,
		sessionOf: map[string]map[string]bool{}}
	vw.input.Threads = cfg.Threads
	vw.input.MemoryTokens = cfg.MemoryTokens
	vw.input.ThreadTokens = cfg.ThreadTokens
	seen := map[string]bool{}
	for i, r := range st.Rows {
		if r.Thread != "" && !seen[r.Thread] {
			seen[r.Thread] = true
			vw.Threads = append(vw.Threads, r.Thread)
		}
		kind := r.EffectiveKind()
		switch {
		case ContentKinds[kind]:
			if r.Thread != "" {
				if vw.sessionOf[r.Session] == nil {
					vw.sessionOf[r.Session] = map[string]bool{}
				}
				vw.sessionOf[r.Session][r.Thread] = true
			}
			// Any content row, current or not, changes what heads show
			// once corrections are applied; the row's index is enough.
			if r.Thread != "" {
				vw.ThreadLast[r.Thread] = i
			}
			vw.LastMemory = i
			if !r.Holds() {
				continue
			}
			vw.input.Items = append(vw.input.Items, itemOf(r, kind))
		case vault.CorrectionKinds[vault.CanonicalKind(r.Kind)] && len(r.Links) > 0:
			// A correction changes the heads of its thread and MEMORY.md.
			if r.Thread != "" {
				vw.ThreadLast[r.Thread] = i
			}
			vw.LastMemory = i
		case r.Kind == "node.created":
			if !r.Current() {
				continue
			}
			n, ok := nodeOf(r)
			if !ok {
				continue
			}
			if r.Thread != "" {
				vw.ThreadLast[r.Thread] = i
			}
			vw.input.Nodes = append(vw.input.Nodes, n)
			vw.LastMemory = i
		case strings.HasPrefix(r.Kind, "head."):
			applyHeadEvent(vw.Heads, r, i)
		}
	}
	return vw
}

// itemOf is the row r, counted as kind, as the heads render it. The full
// fold (BuildView) and the view cache (viewCache.apply) both take an item
// from here, so that the two cannot drift.
func itemOf(r *vault.Row, kind string) render.Item {
	it := render.Item{ID: r.ID, Kind: kind, Thread: r.Thread, Text: r.Text, TS: r.TS, Agent: r.Agent, Session: r.Session}
	if kind == render.KindNext && bytes.Contains(r.Data, []byte(`"first"`)) {
		// `next --first`: on top of the queue, as the protocol's fold
		// puts it (continuity.Continuity.Next).
		var d struct {
			First bool `json:"first"`
		}
		_ = json.Unmarshal(r.Data, &d)
		it.First = d.First
	}
	return it
}

// place adds a row newer than every row of a section, where a full
// prepare ranks it (render.Queue): at the end of a queue, else first.
func place(r *render.Ranked, it render.Item, max int) {
	if q, top := render.Queue(&it); q && !top {
		r.Append(it, max)
		return
	}
	r.Push(it, max)
}

// nodeOf is the node a node.created row records, as the heads render it;
// false when the row names no node. The full fold (BuildView) and the view
// cache's replay of new rows (viewCache.apply) both take a node from here,
// so that the two cannot drift.
func nodeOf(r *vault.Row) (render.Node, bool) {
	if len(r.Links) == 0 {
		return render.Node{}, false
	}
	var d struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(r.Data, &d)
	n := render.Node{ID: r.Links[0], Kind: d.Kind, Session: r.Session, TS: r.TS, Text: r.Text}
	if r.Thread != "" {
		n.Threads = []string{r.Thread}
	}
	return n, true
}

// applyHeadEvent folds a head.* row, at row index i, into the heads'
// bookkeeping.
func applyHeadEvent(heads map[string]*HeadState, r *vault.Row, i int) {
	head := HeadOf(r.Data)
	if head == "" {
		return
	}
	h := heads[head]
	if h == nil {
		h = &HeadState{Head: head, Deferred: []HeadEvent{}, Conflicts: []HeadEvent{}}
		if strings.HasPrefix(head, "threads/") {
			if parts := strings.Split(strings.TrimSuffix(head, ".md"), "/"); len(parts) == 3 {
				h.Thread = parts[1] + ":" + parts[2]
			}
		}
		heads[head] = h
	}
	he := HeadEvent{ID: r.ID, TS: r.TS, Kind: r.Kind, Agent: r.Agent, Session: r.Session,
		Head: head, Text: r.Text, Data: r.Data, seq: i}
	switch r.Kind {
	case vault.KindHeadRendered:
		h.LastRendered = &he
		h.Deferred = h.Deferred[:0]
		var d struct {
			Conflicts int      `json:"conflicts"`
			Settled   []string `json:"settled"`
		}
		_ = json.Unmarshal(r.Data, &d)
		h.Conflicts = standing(h.Conflicts, d.Conflicts, d.Settled, func(e HeadEvent) string { return e.ID })
	case vault.KindHeadDeferred:
		h.Deferred = append(h.Deferred, he)
	case vault.KindHeadConflict:
		h.Conflicts = append(h.Conflicts, he)
	case vault.KindHeadResolved:
		h.Conflicts = h.Conflicts[:0]
	}
}

// Stale reports whether a head's rows changed since its last render.
func (vw *HeadView) Stale(head, thread string) bool {
	h := vw.Heads[head]
	last := -1
	if h != nil && h.LastRendered != nil {
		last = h.LastRendered.seq
	}
	if thread == "" {
		return vw.LastMemory > last
	}
	i, ok := vw.ThreadLast[thread]
	return ok && i > last
}

// HasThread reports whether key is a thread of the vault: seen in the
// ledger or declared in memvault.toml.
func (vw *HeadView) HasThread(key string) bool {
	if _, ok := vw.ThreadLast[key]; ok {
		return true
	}
	for _, t := range vw.Threads {
		if t == key {
			return true
		}
	}
	for _, t := range vw.input.Threads {
		if t.Key == key {
			return true
		}
	}
	return false
}

// HeadStates lists the bookkeeping of every head that has any, sorted by
// path, from st's rows.
func HeadStates(st *vault.State) []HeadState {
	return sortedStates(BuildView(st, HeadsConfig{}).Heads)
}

// HeadStatesOf is HeadStates read through the prepared view, the cache
// the heads are rendered from (held to the full fold by
// TestDerivedMatchesFullFold): for status, `memvault resolve` and the web
// view, which would otherwise pass over every row and decode every node
// and head event. st, v's folded state, answers when the configuration
// does not parse or the view cannot be read.
func HeadStatesOf(v *vault.Vault, st *vault.State) []HeadState {
	if cfg, err := LoadHeadsConfig(v); err == nil {
		if vc, err := PreparedView(v, cfg); err == nil {
			return sortedStates(vc.heads)
		}
	}
	return HeadStates(st)
}

func sortedStates(heads map[string]*HeadState) []HeadState {
	out := make([]HeadState, 0, len(heads))
	for _, h := range heads {
		out = append(out, *h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Head < out[j].Head })
	return out
}
