package ops

import (
	"encoding/json"

	"github.com/memvault/memvault/render"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/heads"
)

// What a session's start context carried of what held (docs/API.md,
// "Context retention and token efficiency"). A session start records in
// its session.started event what it injected: the ids of the rows and
// nodes the text shows (shown), and its size (injected_chars,
// injected_tokens, render.Tokens). A session-summary or compaction node
// records in its node.created event the size of its transcript up to its
// span's end (transcript_tokens). From those and the ledger before the
// start, two figures per session:
//
//   - context_retention: of the rows in the session's scope that held at
//     its start, the share whose id the context showed;
//   - token_efficiency: what the context stands for ÷ the tokens it
//     injected, where what it stands for is the tokens of the held rows'
//     texts plus the tokens of the transcripts the nodes in scope
//     summarise (each transcript once, up to the furthest message a node
//     in scope covers).
//
// A row is in a session's scope when it is of the kinds a head shows
// (heads.ContentKinds, a supersede as the kind it replaces), of the
// session's thread or of no thread, written by an agent the session's
// agent may see (its own, the vault's, none), and before the session's
// session.started event in the ledger; it holds at the start when no row
// before the event retracted, superseded or closed it. A node is in scope
// by the same thread, agent and order rule on its node.created event; one
// recorded before memvault measured transcripts (no transcript_tokens) is
// counted in unsized_nodes and its transcript left out: the figure is then
// a lower bound. A session started before the event recorded its
// injection (no shown in its data) is unknown: left out of the totals, its
// figures null, never 0.

// ContextMetrics are the per-session figures and their totals.
type ContextMetrics struct {
	// Sessions lists every session.started event, in ledger order.
	Sessions []SessionContext `json:"sessions"`
	// Measured counts the starts that recorded their injection; Unknown
	// those that did not (started before memvault recorded it).
	Measured int `json:"measured"`
	Unknown  int `json:"unknown"`
	// Retention is the sum of carried ÷ the sum of held over the measured
	// starts (null when none held any row); Efficiency the sum of what
	// they stand for (held_tokens + transcript_tokens) ÷ the sum of
	// injected tokens (null when nothing was injected).
	Retention  *float64 `json:"context_retention"`
	Efficiency *float64 `json:"token_efficiency"`
}

// SessionContext is one session start's figures; the pointers are null
// when the start recorded no injection, or the ratio has no denominator.
type SessionContext struct {
	Event      string `json:"event"` // the session.started event
	Session    string `json:"session"`
	Agent      string `json:"agent"`
	Thread     string `json:"thread,omitempty"`
	TS         string `json:"ts"`
	Known      bool   `json:"known"`       // the start recorded what it injected
	Held       int    `json:"held"`        // rows in scope that held at the start
	Carried    int    `json:"carried"`     // of those, the ones the context showed
	HeldTokens int    `json:"held_tokens"` // render.Tokens of the held rows' texts
	// Transcripts counts the transcripts the nodes in scope summarise,
	// TranscriptTokens their tokens (each up to the furthest message a node
	// in scope covers), UnsizedNodes the nodes in scope recorded without
	// their transcript's size (left out: the figure is a lower bound).
	Transcripts      int      `json:"transcripts"`
	TranscriptTokens int      `json:"transcript_tokens"`
	UnsizedNodes     int      `json:"unsized_nodes"`
	StandsFor        int      `json:"stands_for_tokens"` // held_tokens + transcript_tokens
	InjectedChars    int      `json:"injected_chars"`    //
	InjectedTokens   int      `json:"injected_tokens"`   //
	Retention        *float64 `json:"context_retention"` // carried ÷ held
	Efficiency       *float64 `json:"token_efficiency"`  // stands_for_tokens ÷ injected_tokens
	Shown            int      `json:"shown"`             // ids the context showed (rows and nodes)
	Note             string   `json:"note,omitempty"`    // why a figure is null
}

// startData is what a session.started event records.
type startData struct {
	Shown          *[]string `json:"shown"`
	InjectedChars  int       `json:"injected_chars"`
	InjectedTokens int       `json:"injected_tokens"`
}

// nodeSize is what a node.created event records of a node's transcript.
type nodeSize struct {
	Span *struct {
		Path string `json:"path"`
	} `json:"span"`
	Tokens *int `json:"transcript_tokens"`
}

// contextMetrics folds st's session starts; owner is the vault's agent
// (memvault.toml's agent), whose rows every agent sees; "" sees every row
// as every agent's.
func contextMetrics(st *vault.State, owner string) ContextMetrics {
	cm := ContextMetrics{Sessions: []SessionContext{}}
	f := contextFold{st: st, owner: owner, pos: make(map[string]int, len(st.Rows)), tokens: make([]int, len(st.Rows)),
		sizes: map[int]*nodeSize{}}
	for i, r := range st.Rows {
		f.pos[r.ID] = i
	}
	var heldSum, carriedSum, standsTok, injTok int
	for i, s := range st.Rows {
		if s.Kind != vault.KindSessionStarted {
			continue
		}
		sc := SessionContext{Event: s.ID, Session: s.Session, Agent: s.Agent, Thread: s.Thread, TS: s.TS}
		var d startData
		if len(s.Data) == 0 || json.Unmarshal(s.Data, &d) != nil || d.Shown == nil {
			sc.Note = "started before memvault recorded what a session start injects"
			cm.Unknown++
			cm.Sessions = append(cm.Sessions, sc)
			continue
		}
		sc.Known, sc.Shown, sc.InjectedChars, sc.InjectedTokens = true, len(*d.Shown), d.InjectedChars, d.InjectedTokens
		f.session(&sc, i, *d.Shown)
		sc.StandsFor = sc.HeldTokens + sc.TranscriptTokens
		sc.Retention = ratio(sc.Carried, sc.Held)
		sc.Efficiency = ratio(sc.StandsFor, sc.InjectedTokens)
		cm.Measured++
		heldSum, carriedSum, standsTok, injTok = heldSum+sc.Held, carriedSum+sc.Carried, standsTok+sc.StandsFor, injTok+sc.InjectedTokens
		cm.Sessions = append(cm.Sessions, sc)
	}
	cm.Retention, cm.Efficiency = ratio(carriedSum, heldSum), ratio(standsTok, injTok)
	return cm
}

// contextFold is what contextMetrics reads each row for once.
type contextFold struct {
	st     *vault.State
	owner  string
	pos    map[string]int    // a row's position by id
	tokens []int             // render.Tokens of a row's text + 1; 0: not yet
	sizes  map[int]*nodeSize // a node.created row's data, decoded once
}

// session counts, for the session started at row i whose context showed
// shown, the rows that held in its scope and the transcripts its nodes
// summarise.
func (f *contextFold) session(sc *SessionContext, i int, shown []string) {
	s := f.st.Rows[i]
	isShown := make(map[string]bool, len(shown))
	for _, id := range shown {
		isShown[id] = true
	}
	// before reports whether the row id (a closer) is before position i.
	before := func(id string) bool {
		j, ok := f.pos[id]
		return id != "" && ok && j < i
	}
	furthest := map[string]int{} // a transcript's tokens up to the furthest message a node covers
	for j, r := range f.st.Rows[:i] {
		if (r.Thread != "" && r.Thread != s.Thread) || !(r.Agent == "" || r.Agent == s.Agent || r.Agent == f.owner || f.owner == "") {
			continue
		}
		if r.Kind == "node.created" {
			f.node(sc, j, furthest)
			continue
		}
		if !heads.ContentKinds[r.EffectiveKind()] || before(r.RetractedBy) || before(r.SupersededBy) || before(r.ClosedBy) {
			continue
		}
		if f.tokens[j] == 0 {
			f.tokens[j] = render.Tokens(r.Text) + 1 // stored +1: 0 is "not yet"
		}
		sc.Held++
		sc.HeldTokens += f.tokens[j] - 1
		if isShown[r.ID] {
			sc.Carried++
		}
	}
	sc.Transcripts = len(furthest)
	for _, t := range furthest {
		sc.TranscriptTokens += t
	}
}

// node counts the node.created row j in scope: its transcript's size
// raises furthest's entry for its path; a node with a span and no size
// is unsized. A node without a span (condensed, self-summary) stands for
// its children's transcripts, counted through their own events.
func (f *contextFold) node(sc *SessionContext, j int, furthest map[string]int) {
	ns, ok := f.sizes[j]
	if !ok {
		ns = &nodeSize{}
		if json.Unmarshal(f.st.Rows[j].Data, ns) != nil {
			ns = &nodeSize{}
		}
		f.sizes[j] = ns
	}
	switch {
	case ns.Span == nil || ns.Span.Path == "":
	case ns.Tokens == nil:
		sc.UnsizedNodes++
	default:
		furthest[ns.Span.Path] = max(furthest[ns.Span.Path], *ns.Tokens)
	}
}

// ratio is a ÷ b rounded to 4 decimals, or nil when b is 0.
func ratio(a, b int) *float64 {
	if b == 0 {
		return nil
	}
	f := float64(int64(float64(a)/float64(b)*10000+0.5)) / 10000
	return &f
}
