package vault

import (
	"encoding/json"
	"strings"
	"time"
)

// Kinds a person or an agent records with `memvault remember`. The ledger
// accepts other kinds from memvault itself (node.created, head.rendered, …);
// the full list is in docs/API.md.
var RememberKinds = []string{"fact", "decision", "learning", "constraint", "blocker", "next", "claim", "reflection"}

// Kinds that correct an earlier event named in links[0].
var correctionKinds = map[string]bool{
	"retract":          true,
	"supersede":        true,
	"commitment.close": true,
}

// Row is an event together with what later events did to it.
type Row struct {
	*Event
	File         string `json:"file,omitempty"`
	Line         int    `json:"line,omitempty"`
	RetractedBy  string `json:"retracted_by,omitempty"`
	SupersededBy string `json:"superseded_by,omitempty"`
	ClosedBy     string `json:"closed_by,omitempty"`
}

// Current reports whether the row still holds: not retracted, not replaced.
func (r *Row) Current() bool { return r.RetractedBy == "" && r.SupersededBy == "" }

// EffectiveKind is the kind a row counts as. A supersede row takes the place
// of the row it replaced, so it counts as that row's kind.
func (r *Row) EffectiveKind() string {
	if r.Kind == "supersede" {
		var d struct {
			Replaces string `json:"replaces_kind"`
		}
		if json.Unmarshal(r.Data, &d) == nil && d.Replaces != "" {
			return d.Replaces
		}
	}
	return r.Kind
}

// State is the ledger folded into rows: the structured memory as it stands.
// It is rebuilt from the ledger alone, so it needs no storage of its own.
type State struct {
	Rows []*Row
	byID map[string]*Row
}

// LoadState reads every segment and folds the events. Torn last lines and
// unreadable lines are skipped; Verify is the place that reports them.
func (v *Vault) LoadState() (*State, error) {
	segs, _, err := listSegments(v.Root)
	if err != nil {
		return nil, err
	}
	st := &State{byID: make(map[string]*Row)}
	for _, s := range segs {
		lines, _, err := readSegment(v.Root, s)
		if err != nil {
			return nil, err
		}
		for _, ll := range lines {
			if ll.Event == nil || ll.Event.ID == "" {
				continue
			}
			st.add(&Row{Event: ll.Event, File: s.String(), Line: ll.Line})
		}
	}
	return st, nil
}

// add folds one event in. Corrections apply to their target; a retracted
// correction is undone, so retracting a close reopens the commitment.
func (st *State) add(r *Row) {
	if _, dup := st.byID[r.ID]; dup {
		return
	}
	st.Rows = append(st.Rows, r)
	st.byID[r.ID] = r
	if !correctionKinds[r.Kind] || len(r.Links) == 0 {
		return
	}
	target := st.byID[r.Links[0]]
	if target == nil {
		return
	}
	switch r.Kind {
	case "retract":
		target.RetractedBy = r.ID
		if correctionKinds[target.Kind] && len(target.Links) > 0 {
			if t2 := st.byID[target.Links[0]]; t2 != nil {
				switch target.Kind {
				case "supersede":
					if t2.SupersededBy == target.ID {
						t2.SupersededBy = ""
					}
				case "commitment.close":
					if t2.ClosedBy == target.ID {
						t2.ClosedBy = ""
					}
				}
			}
		}
	case "supersede":
		target.SupersededBy = r.ID
	case "commitment.close":
		target.ClosedBy = r.ID
	}
}

// Get returns the row with id, or nil.
func (st *State) Get(id string) *Row { return st.byID[id] }

// Filter selects rows for `memvault ledger`.
type Filter struct {
	Kind    string
	Thread  string
	Session string
	Agent   string
	Since   time.Time
	Current bool // only rows that still hold, and no correction events
}

// Match reports whether r passes f.
func (f Filter) Match(r *Row) bool {
	if f.Kind != "" && r.Kind != f.Kind && r.EffectiveKind() != f.Kind {
		return false
	}
	if f.Thread != "" && r.Thread != f.Thread {
		return false
	}
	if f.Session != "" && r.Session != f.Session {
		return false
	}
	if f.Agent != "" && r.Agent != f.Agent {
		return false
	}
	if !f.Since.IsZero() && r.Time().Before(f.Since) {
		return false
	}
	if f.Current && (!r.Current() || r.Kind == "retract" || r.Kind == "commitment.close") {
		return false
	}
	return true
}

// Select returns the rows matching f in ledger order.
func (st *State) Select(f Filter) []*Row {
	var out []*Row
	for _, r := range st.Rows {
		if f.Match(r) {
			out = append(out, r)
		}
	}
	return out
}

// OpenCommitments returns the commitments that are current and not closed.
func (st *State) OpenCommitments() []*Row {
	var out []*Row
	for _, r := range st.Rows {
		if r.EffectiveKind() == "commitment.open" && r.Current() && r.ClosedBy == "" {
			out = append(out, r)
		}
	}
	return out
}

// Threads returns the thread keys that appear in the ledger, in order of
// first appearance.
func (st *State) Threads() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range st.Rows {
		if r.Thread != "" && !seen[r.Thread] {
			seen[r.Thread] = true
			out = append(out, r.Thread)
		}
	}
	return out
}

// KindCounts counts rows by stored kind.
func (st *State) KindCounts() map[string]int {
	m := map[string]int{}
	for _, r := range st.Rows {
		m[r.Kind]++
	}
	return m
}

func isNodeID(id string) bool { return strings.HasPrefix(id, "n_") }
