package ops

import (
	"encoding/json"

	"github.com/memvault/memvault/render"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/heads"
)

// What a session's start context carried of what held (docs/LINEAGE.md,
// "Metrics"). A session start records in its session.started event what
// it injected: the ids of the rows and nodes the text shows (shown), and
// its size (injected_chars, injected_tokens, render.Tokens). From those
// and the ledger before the event, two figures per session:
//
//   - context_retention: of the rows in the session's scope that held at
//     its start, the share whose id the context showed;
//   - token_efficiency: the tokens of those rows' texts ÷ the tokens the
//     context injected: how many tokens of memory each injected token
//     stands for.
//
// A row is in a session's scope when it is of the kinds a head shows
// (heads.ContentKinds, a supersede as the kind it replaces), of the
// session's thread or of no thread, written by an agent the session's
// agent may see (its own, the vault's, none), and before the session's
// session.started event in the ledger; it holds at the start when no row
// before the event retracted, superseded or closed it. A session started
// before the event recorded these (no shown in its data) is unknown: left
// out of the totals, its figures null, never 0.

// ContextMetrics are the per-session figures and their totals.
type ContextMetrics struct {
	// Sessions lists every session.started event, in ledger order.
	Sessions []SessionContext `json:"sessions"`
	// Measured counts the starts that recorded their injection; Unknown
	// those that did not (started before memvault recorded it).
	Measured int `json:"measured"`
	Unknown  int `json:"unknown"`
	// Retention is the sum of carried ÷ the sum of held over the measured
	// starts (null when none held any row); Efficiency the sum of the held
	// rows' tokens ÷ the sum of injected tokens (null when nothing was
	// injected).
	Retention  *float64 `json:"context_retention"`
	Efficiency *float64 `json:"token_efficiency"`
}

// SessionContext is one session start's figures; the pointers are null
// when the start recorded no injection, or the ratio has no denominator.
type SessionContext struct {
	Event          string   `json:"event"` // the session.started event
	Session        string   `json:"session"`
	Agent          string   `json:"agent"`
	Thread         string   `json:"thread,omitempty"`
	TS             string   `json:"ts"`
	Known          bool     `json:"known"`             // the start recorded what it injected
	Held           int      `json:"held"`              // rows in scope that held at the start
	Carried        int      `json:"carried"`           // of those, the ones the context showed
	HeldTokens     int      `json:"held_tokens"`       // render.Tokens of the held rows' texts
	InjectedChars  int      `json:"injected_chars"`    //
	InjectedTokens int      `json:"injected_tokens"`   //
	Retention      *float64 `json:"context_retention"` // carried ÷ held
	Efficiency     *float64 `json:"token_efficiency"`  // held_tokens ÷ injected_tokens
	Shown          int      `json:"shown"`             // ids the context showed (rows and nodes)
	Note           string   `json:"note,omitempty"`    // why a figure is null
}

// startData is what a session.started event records.
type startData struct {
	Shown          *[]string `json:"shown"`
	InjectedChars  int       `json:"injected_chars"`
	InjectedTokens int       `json:"injected_tokens"`
}

// contextMetrics folds st's session starts; owner is the vault's agent
// (memvault.toml's agent), whose rows every agent sees; "" sees every row
// as every agent's.
func contextMetrics(st *vault.State, owner string) ContextMetrics {
	cm := ContextMetrics{Sessions: []SessionContext{}}
	pos := make(map[string]int, len(st.Rows))
	for i, r := range st.Rows {
		pos[r.ID] = i
	}
	// before reports whether the row id (a closer) is before position i.
	before := func(id string, i int) bool {
		j, ok := pos[id]
		return id != "" && ok && j < i
	}
	tokens := make([]int, len(st.Rows)) // render.Tokens of a row's text, once: -1 unknown
	var heldSum, carriedSum, heldTok, injTok int
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
		shown := make(map[string]bool, len(*d.Shown))
		for _, id := range *d.Shown {
			shown[id] = true
		}
		for j, r := range st.Rows[:i] {
			if !heads.ContentKinds[r.EffectiveKind()] || (r.Thread != "" && r.Thread != s.Thread) ||
				!(r.Agent == "" || r.Agent == s.Agent || r.Agent == owner || owner == "") ||
				before(r.RetractedBy, i) || before(r.SupersededBy, i) || before(r.ClosedBy, i) {
				continue
			}
			if tokens[j] == 0 {
				tokens[j] = render.Tokens(r.Text) + 1 // stored +1: 0 is "not yet"
			}
			sc.Held++
			sc.HeldTokens += tokens[j] - 1
			if shown[r.ID] {
				sc.Carried++
			}
		}
		sc.Retention = ratio(sc.Carried, sc.Held)
		sc.Efficiency = ratio(sc.HeldTokens, sc.InjectedTokens)
		cm.Measured++
		heldSum, carriedSum, heldTok, injTok = heldSum+sc.Held, carriedSum+sc.Carried, heldTok+sc.HeldTokens, injTok+sc.InjectedTokens
		cm.Sessions = append(cm.Sessions, sc)
	}
	cm.Retention, cm.Efficiency = ratio(carriedSum, heldSum), ratio(heldTok, injTok)
	return cm
}

// ratio is a ÷ b rounded to 4 decimals, or nil when b is 0.
func ratio(a, b int) *float64 {
	if b == 0 {
		return nil
	}
	f := float64(int64(float64(a)/float64(b)*10000+0.5)) / 10000
	return &f
}
