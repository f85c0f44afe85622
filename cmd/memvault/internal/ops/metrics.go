package ops

import (
	"encoding/json"
	"slices"
	"sort"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/heads"
)

// Metrics are numbers computed from the ledger alone: no clock, no file
// but the ledger's segments, no configuration but the vault's agent. The same ledger gives the
// same Metrics, in any clone, at any time; ages are measured to the
// ledger's newest event (AsOf), not to now.
type Metrics struct {
	Events      int               `json:"events"`
	First       string            `json:"first,omitempty"`          // the oldest event's time
	AsOf        string            `json:"as_of,omitempty"`          // the newest event's time: ages are measured to it
	Kinds       map[string]int    `json:"kinds"`                    // events per stored kind
	Sources     map[string]int    `json:"sources"`                  // events per source; "none" for events without one
	Agents      map[string]int    `json:"agents"`                   // events per agent
	Commitments CommitmentMetrics `json:"commitments"`              //
	Violations  ViolationMetrics  `json:"violations"`               // events of kind violation
	Claims      ClaimMetrics      `json:"claims"`                   //
	Sessions    SessionMetrics    `json:"sessions"`                 //
	Heads       []HeadFreshness   `json:"heads"`                    // MEMORY.md, then every thread's head, by path
	Threads     int               `json:"threads"`                  // thread keys the ledger names
	Retracted   int               `json:"retracted"`                // events withdrawn by a retract
	Superseded  int               `json:"superseded"`               // events replaced by a newer version
	Unparsed    int               `json:"unparsed_times,omitempty"` // events whose ts does not parse (left out of ages)
	// Context is what each session's start context carried of what held
	// (context_retention, token_efficiency; contextmetrics.go).
	Context ContextMetrics `json:"context"`
}

// CommitmentMetrics count the commitments and how long they stay open.
type CommitmentMetrics struct {
	Open   int `json:"open"`
	Closed int `json:"closed"`
	// Withdrawn: retracted, neither open nor closed. A superseded
	// commitment counts once, as its newest version.
	Withdrawn int `json:"withdrawn"`
	// OpenAges lists the open commitments, the oldest first, each with
	// its age at AsOf.
	OpenAges []CommitmentAge `json:"open_ages"`
	// OldestOpenSeconds is the age of the oldest open commitment.
	OldestOpenSeconds int64 `json:"oldest_open_seconds"`
	// MeanOpenSeconds is the mean age of the open ones.
	MeanOpenSeconds int64 `json:"mean_open_seconds"`
	// MeanClosedSeconds is the mean time from opening to closing of the
	// closed ones.
	MeanClosedSeconds int64 `json:"mean_closed_seconds"`
}

// CommitmentAge is one open commitment and its age.
type CommitmentAge struct {
	ID         string `json:"id"`
	Thread     string `json:"thread,omitempty"`
	Text       string `json:"text"`
	Opened     string `json:"opened"`
	AgeSeconds int64  `json:"age_seconds"`
}

// ViolationMetrics count the events of kind violation (writes a policy
// refused), by source and by the kind the refused write was of
// (data.kind; "unknown" without one).
type ViolationMetrics struct {
	Total    int            `json:"total"`
	BySource map[string]int `json:"by_source"`
	ByKind   map[string]int `json:"by_kind"`
}

// ClaimMetrics count the claim events and those recorded as rejected
// (data.status "rejected"), with the reasons they give (data.reason).
type ClaimMetrics struct {
	Total    int            `json:"total"`
	Rejected int            `json:"rejected"`
	Reasons  map[string]int `json:"rejected_reasons"`
}

// SessionMetrics count sessions: the distinct session keys events name,
// the session.started events, and the session summaries recorded.
type SessionMetrics struct {
	Distinct   int `json:"distinct"`
	Started    int `json:"started"`
	Summarized int `json:"summarized"`
}

// HeadFreshness says where one head stands against the rows after its
// last render, as the ledger records it (head.rendered): fresh, stale
// (rows it shows changed since), or not rendered.
type HeadFreshness struct {
	Head         string `json:"head"`
	Thread       string `json:"thread,omitempty"`
	State        string `json:"state"` // fresh, stale, not rendered
	LastRendered string `json:"last_rendered,omitempty"`
}

// Head states in HeadFreshness.
const (
	HeadFresh       = "fresh"
	HeadStale       = "stale"
	HeadNotRendered = "not rendered"
)

// ComputeMetrics folds st's rows, in ledger order, into Metrics. owner is
// the vault's agent (memvault.toml's agent, committed with the ledger),
// whose rows every session may be shown; "" counts every row as any
// session's.
func ComputeMetrics(st *vault.State, owner string) *Metrics {
	m := &Metrics{Kinds: map[string]int{}, Sources: map[string]int{}, Agents: map[string]int{},
		Violations:  ViolationMetrics{BySource: map[string]int{}, ByKind: map[string]int{}},
		Claims:      ClaimMetrics{Reasons: map[string]int{}},
		Commitments: CommitmentMetrics{OpenAges: []CommitmentAge{}}}
	var asOf, first time.Time
	sessions := map[string]bool{}
	threads := map[string]bool{}
	for _, r := range st.Rows {
		m.Events++
		m.Kinds[r.Kind]++
		m.Sources[orNone(r.Source)]++
		m.Agents[orNone(r.Agent)]++
		if r.Session != "" {
			sessions[r.Session] = true
		}
		if r.Thread != "" {
			threads[r.Thread] = true
		}
		if t := r.Time(); t.IsZero() {
			m.Unparsed++
		} else {
			if asOf.IsZero() || t.After(asOf) {
				asOf = t
			}
			if first.IsZero() || t.Before(first) {
				first = t
			}
		}
		if r.RetractedBy != "" {
			m.Retracted++
		} else if r.SupersededBy != "" {
			m.Superseded++
		}
		switch kind := r.EffectiveKind(); kind {
		case "violation":
			m.Violations.Total++
			m.Violations.BySource[orNone(r.Source)]++
			m.Violations.ByKind[dataString(r.Data, "kind", "unknown")]++
		case "claim":
			m.Claims.Total++
			if dataString(r.Data, "status", "") == "rejected" {
				m.Claims.Rejected++
				m.Claims.Reasons[dataString(r.Data, "reason", "none given")]++
			}
		case vault.KindSessionStarted:
			m.Sessions.Started++
		case vault.KindNodeCreated:
			if dataString(r.Data, "kind", "") == "session-summary" {
				m.Sessions.Summarized++
			}
		}
	}
	m.Sessions.Distinct = len(sessions)
	m.Threads = len(threads)
	if !asOf.IsZero() {
		m.AsOf, m.First = vault.FormatTS(asOf), vault.FormatTS(first)
	}
	m.commitments(st, asOf)
	m.Heads = headFreshness(st)
	m.Context = contextMetrics(st, owner)
	return m
}

// commitments counts the commitments and measures their ages to asOf.
func (m *Metrics) commitments(st *vault.State, asOf time.Time) {
	var openSum, closedSum int64
	closed := 0 // closed with both times known
	for _, r := range st.Rows {
		// A superseded commitment counts once, as its newest version.
		if r.EffectiveKind() != vault.KindCommitmentOpen || r.SupersededBy != "" {
			continue
		}
		switch {
		case r.RetractedBy != "":
			m.Commitments.Withdrawn++
		case r.ClosedBy != "":
			m.Commitments.Closed++
			if c := st.Get(r.ClosedBy); c != nil && !c.Time().IsZero() && !r.Time().IsZero() {
				closedSum += seconds(c.Time().Sub(r.Time()))
				closed++
			}
		default:
			m.Commitments.Open++
			age := int64(0)
			if !asOf.IsZero() && !r.Time().IsZero() {
				age = seconds(asOf.Sub(r.Time()))
			}
			openSum += age
			m.Commitments.OpenAges = append(m.Commitments.OpenAges,
				CommitmentAge{ID: r.ID, Thread: r.Thread, Text: r.Text, Opened: r.TS, AgeSeconds: age})
		}
	}
	open := m.Commitments.OpenAges
	sort.SliceStable(open, func(i, j int) bool {
		if open[i].AgeSeconds != open[j].AgeSeconds {
			return open[i].AgeSeconds > open[j].AgeSeconds
		}
		return open[i].ID < open[j].ID
	})
	if len(open) > 0 {
		m.Commitments.OldestOpenSeconds = open[0].AgeSeconds
		m.Commitments.MeanOpenSeconds = openSum / int64(len(open))
	}
	if closed > 0 {
		m.Commitments.MeanClosedSeconds = closedSum / int64(closed)
	}
}

// headFreshness says, for MEMORY.md and every thread's head, whether the
// ledger records a render of it since the rows it shows last changed.
// It reads the heads' bookkeeping from the rows alone (heads.BuildView
// without a configuration), never the files on disk.
func headFreshness(st *vault.State) []HeadFreshness {
	vw := heads.BuildView(st, heads.HeadsConfig{})
	state := func(head, thread string) HeadFreshness {
		h := HeadFreshness{Head: head, Thread: thread, State: HeadNotRendered}
		if hs := vw.Heads[head]; hs != nil && hs.LastRendered != nil {
			h.LastRendered = hs.LastRendered.TS
			h.State = HeadFresh
			if vw.Stale(head, thread) {
				h.State = HeadStale
			}
		}
		return h
	}
	out := []HeadFreshness{state(vault.MemoryHead, "")}
	var threads []HeadFreshness
	for _, key := range vw.Threads {
		t, err := vault.ParseThread(key)
		if err != nil {
			continue
		}
		threads = append(threads, state(t.HeadPath().String(), key))
	}
	slices.SortFunc(threads, func(a, b HeadFreshness) int {
		switch {
		case a.Head < b.Head:
			return -1
		case a.Head > b.Head:
			return 1
		}
		return 0
	})
	return append(out, threads...)
}

func seconds(d time.Duration) int64 { return int64(d / time.Second) }

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// dataString is the string at key in an event's data, else def.
func dataString(data json.RawMessage, key, def string) string {
	if len(data) == 0 {
		return def
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return def
	}
	var s string
	if json.Unmarshal(m[key], &s) != nil || s == "" {
		return def
	}
	return s
}
