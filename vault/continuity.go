package vault

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/memvault/memvault/vault/fault"
)

// Continuity: the working-memory protocol (docs/CONTINUITY.md). Its state
// is nothing but ledger events; CONTINUITY.md and learnings-index.md are
// views rendered from them, CONTINUITY.md merged with hand edits like any
// head. This file holds the data model and the fold: events in, goal,
// next actions, learnings and decisions out. The rules that change state
// over time (reinforcement, the ttl ladder, decay, conflicts) live in
// continuity_rules.go, the writers in continuity_write.go, the views in
// continuity_render.go.

// Event kinds of the continuity protocol. Each is documented in docs/API.md.
const (
	KindContinuityGoal    = "continuity.goal"    // text: the active goal; data.phase
	KindContinuityNext    = "continuity.next"    // text: a next action; data.first puts it on top
	KindContinuityDone    = "continuity.done"    // text: an accomplishment; links: the next action it completes
	KindContinuitySession = "continuity.session" // a session ended; data.context, data.files; counts iterations
	KindContinuityAudited = "continuity.audited" // an audit's outcome: data.now and the flags it raised
	KindContinuityRotated = "continuity.rotated" // hand-written lines moved out of CONTINUITY.md to keep its cap
	KindLearningRecorded  = "learning.recorded"
	KindLearningReinforce = "learning.reinforced"
	KindLearningArchived  = "learning.archived"
	KindLearningInvalid   = "learning.invalidated"
	KindLearningCorrected = "learning.corrected"
	KindLearningMeta      = "learning.meta"
	KindDecisionRecorded  = "decision.recorded"
	KindDecisionSuperseed = "decision.superseded"
)

// Learning statuses.
const (
	StatusActive      = "active"
	StatusArchived    = "archived"
	StatusInvalidated = "invalidated"
	StatusCorrected   = "corrected"
	StatusSuperseded  = "superseded"
)

// Audit flags.
const (
	FlagLowConfidence = "LOW_CONFIDENCE"
	FlagConflict      = "CONFLICT"
)

// dateLayout is the form of every protocol date: a calendar day, because
// ttl and decay count whole days.
const dateLayout = "2006-01-02"

// Learning is one error → cause → prevention triple and its life so far.
type Learning struct {
	ID             string   `json:"id"`    // L1, L2, … in order of recording
	Event          string   `json:"event"` // the learning.recorded event
	Date           string   `json:"date"`  // day recorded
	Error          string   `json:"error"`
	Cause          string   `json:"cause,omitempty"`
	Prevention     string   `json:"prevention"`
	Scope          string   `json:"scope"`
	TTL            int      `json:"ttl"` // days, after the ladder
	BaseTTL        int      `json:"base_ttl"`
	ReinforceCount int      `json:"reinforce_count"`
	LastRelevant   string   `json:"last_relevant"`
	Status         string   `json:"status"`
	Flags          []string `json:"flags,omitempty"`     // from the last audit
	StatusBy       string   `json:"status_by,omitempty"` // the event that set a non-active status
	Reason         string   `json:"reason,omitempty"`    // why it was archived, invalidated or corrected
	seq            int      // position in the fold: orders learnings recorded the same day
	rank           int      // scopeRank(Scope), computed once: sorting 10k learnings parses no scope
	tok            int      // render.Tokens of the learning's line in a listing, when tokOK
	tokOK          bool
}

// Decision is one decision and whether it still holds.
type Decision struct {
	ID           string `json:"id"` // D1, D2, …
	Event        string `json:"event"`
	Date         string `json:"date"`
	Decision     string `json:"decision"`
	Rationale    string `json:"rationale"`
	Scope        string `json:"scope"`
	Status       string `json:"status"` // active or superseded
	Supersedes   string `json:"supersedes,omitempty"`
	SupersededBy string `json:"superseded_by,omitempty"`
	seq          int
	rank         int
}

// MetaLearning records that memory itself caused a problem: a learning was
// invalidated because following it went wrong.
type MetaLearning struct {
	ID       string `json:"id"` // M1, M2, …
	Event    string `json:"event"`
	Date     string `json:"date"`
	Affected string `json:"affected"` // the learning's id
	Action   string `json:"action"`   // invalidated
	Reason   string `json:"reason"`
}

// Item is one entry of a live section: a next action, an accomplishment, a
// blocker.
type Item struct {
	ID   string `json:"id"` // the event
	Text string `json:"text"`
	Date string `json:"date"`
}

// Continuity is the protocol's state folded from the ledger.
type Continuity struct {
	Goal      string          `json:"goal"`
	Phase     string          `json:"phase"`
	Iteration int             `json:"iteration"`
	Updated   string          `json:"updated"` // timestamp of the newest protocol event
	Next      []Item          `json:"next"`    // priority order
	Done      []Item          `json:"done"`    // oldest first
	Blockers  []Item          `json:"blockers"`
	Context   []string        `json:"context"`
	Files     []string        `json:"files"`
	Learnings []*Learning     `json:"learnings"` // order of recording
	Decisions []*Decision     `json:"decisions"`
	Meta      []*MetaLearning `json:"meta_learnings"`
	LastAudit string          `json:"last_audit,omitempty"` // the --now of the last audit that wrote
	auditKey  string          // the flags of the last audit, to skip writing an identical one
	learnings map[string]*Learning
	decisions map[string]*Decision
	seq       int      // protocol events folded so far (orders learnings and decisions)
	head      headBook // CONTINUITY.md's head bookkeeping
}

// protocol data carried by the events; one struct for all kinds keeps the
// fold to one decode per event.
type contData struct {
	ID         string   `json:"id,omitempty"`
	Date       string   `json:"date,omitempty"`
	Error      string   `json:"error,omitempty"`
	Cause      string   `json:"cause,omitempty"`
	Prevention string   `json:"prevention,omitempty"`
	Scope      string   `json:"scope,omitempty"`
	TTL        int      `json:"ttl,omitempty"`
	Decision   string   `json:"decision,omitempty"`
	Rationale  string   `json:"rationale,omitempty"`
	Supersedes string   `json:"supersedes,omitempty"`
	By         string   `json:"by,omitempty"`
	Reason     string   `json:"reason,omitempty"`
	Affected   string   `json:"affected,omitempty"`
	Action     string   `json:"action,omitempty"`
	Phase      string   `json:"phase,omitempty"`
	First      bool     `json:"first,omitempty"`
	Context    []string `json:"context,omitempty"`
	Files      []string `json:"files,omitempty"`
	Now        string   `json:"now,omitempty"`
	Flags      []string `json:"flags,omitempty"` // "L3 LOW_CONFIDENCE"
}

func isContinuityKind(k string) bool {
	return strings.HasPrefix(k, "continuity.") || strings.HasPrefix(k, "learning.") ||
		strings.HasPrefix(k, "decision.") || k == "blocker"
}

// Learning returns the learning with id (L3) or recording event id.
func (c *Continuity) Learning(id string) *Learning { return c.learnings[id] }

// Decision returns the decision with id (D3) or recording event id.
func (c *Continuity) Decision(id string) *Decision { return c.decisions[id] }

// foldContinuity builds the protocol's state from rows (corrections already
// applied: a retracted row does not count) and then events not yet in the
// ledger (those of the running transaction).
func foldContinuity(rows []*Row, extra []*Event) *Continuity {
	c := newContinuity()
	for _, r := range rows {
		c.addRow(r)
	}
	for _, ev := range extra {
		c.addEvent(ev)
	}
	return c
}

func newContinuity() *Continuity {
	return &Continuity{Next: []Item{}, Done: []Item{}, Blockers: []Item{}, Context: []string{}, Files: []string{},
		Learnings: []*Learning{}, Decisions: []*Decision{}, Meta: []*MetaLearning{},
		learnings: map[string]*Learning{}, decisions: map[string]*Decision{},
		head: headBook{tokens: map[string]bool{}}}
}

// addRow folds one ledger row, corrections already applied to it: a row
// that no longer holds still counts for the order of what follows, and
// CONTINUITY.md's head bookkeeping reads every row.
func (c *Continuity) addRow(r *Row) {
	c.addHeadEvent(r.Event)
	if r.Kind == "blocker" || r.EffectiveKind() == "blocker" {
		if r.Current() {
			c.Blockers = append(c.Blockers, Item{ID: r.ID, Text: r.Text, Date: dayOf(r.TS)})
		}
		return
	}
	c.apply(r.Event, r.Current())
}

// addEvent folds an event that nothing corrects: one of the running
// transaction, or one appended to the ledger since the derived state was
// written (a correction there rebuilds the state instead).
func (c *Continuity) addEvent(ev *Event) {
	c.addHeadEvent(ev)
	if ev.Kind == "blocker" {
		c.Blockers = append(c.Blockers, Item{ID: ev.ID, Text: ev.Text, Date: dayOf(ev.TS)})
		return
	}
	c.apply(ev, true)
}

// addHeadEvent keeps CONTINUITY.md's head bookkeeping.
func (c *Continuity) addHeadEvent(ev *Event) {
	if strings.HasPrefix(ev.Kind, "head.") && headOf(ev.Data) == ContinuityHead {
		c.head.add(ev)
	}
}

// touchesContinuity reports whether folding ev can change the protocol's
// state; the rest of the ledger passes the fold by.
func touchesContinuity(ev *Event) bool {
	if isContinuityKind(ev.Kind) || ev.Kind == "supersede" {
		return true
	}
	return strings.HasPrefix(ev.Kind, "head.") && headOf(ev.Data) == ContinuityHead
}

// apply folds one protocol event; current is false for a row a later
// retract or supersede withdrew, which only takes its place in the order.
func (c *Continuity) apply(ev *Event, current bool) {
	if !isContinuityKind(ev.Kind) && ev.Kind != "supersede" {
		return
	}
	c.seq++
	seq := c.seq
	if ev.Kind == "blocker" || ev.Kind == "supersede" {
		// Blockers are the vault's own kind (memvault remember --kind
		// blocker, BLOCKER: lines); a superseded one shows its new text.
		return
	}
	if !current {
		return
	}
	var d contData
	if len(ev.Data) > 0 {
		_ = json.Unmarshal(ev.Data, &d)
	}
	if d.Date == "" && len(ev.TS) >= 10 {
		d.Date = ev.TS[:10]
	}
	if strings.HasPrefix(ev.Kind, "continuity.") && ev.Kind != KindContinuityAudited && ev.Kind != KindContinuityRotated {
		c.Updated = ev.TS
	}
	switch ev.Kind {
	case KindContinuityGoal:
		if strings.TrimSpace(ev.Text) != "" {
			c.Goal = ev.Text
		}
		if d.Phase != "" {
			c.Phase = d.Phase
		}
	case KindContinuityNext:
		it := Item{ID: ev.ID, Text: ev.Text, Date: d.Date}
		if d.First {
			c.Next = append([]Item{it}, c.Next...)
		} else {
			c.Next = append(c.Next, it)
		}
	case KindContinuityDone:
		for _, l := range ev.Links {
			for i, n := range c.Next {
				if n.ID == l {
					c.Next = append(c.Next[:i:i], c.Next[i+1:]...)
					break
				}
			}
		}
		if strings.TrimSpace(ev.Text) != "" {
			c.Done = append(c.Done, Item{ID: ev.ID, Text: ev.Text, Date: d.Date})
		}
	case KindContinuitySession:
		c.Iteration++
		if d.Context != nil {
			c.Context = d.Context
		}
		if d.Files != nil {
			c.Files = d.Files
		}
	case KindContinuityAudited:
		c.LastAudit = d.Now
		c.auditKey = strings.Join(d.Flags, ",")
		flags := map[string][]string{}
		for _, f := range d.Flags {
			id, flag, _ := strings.Cut(f, " ")
			flags[id] = append(flags[id], flag)
		}
		for _, l := range c.Learnings {
			l.Flags = flags[l.ID]
			l.tokOK = false
		}
	case KindLearningRecorded:
		l := &Learning{ID: d.ID, Event: ev.ID, Date: d.Date, Error: d.Error, Cause: d.Cause, Prevention: d.Prevention,
			Scope: d.Scope, BaseTTL: d.TTL, LastRelevant: d.Date, Status: StatusActive, seq: seq, rank: scopeRank(d.Scope)}
		if l.BaseTTL <= 0 {
			l.BaseTTL = DefaultLearningTTL
		}
		if l.ID == "" || c.learnings[l.ID] != nil {
			l.ID = ev.ID // a short id seen twice (merged histories): the event id names it
		}
		l.TTL = ladderTTL(l.BaseTTL, 0)
		c.Learnings = append(c.Learnings, l)
		c.learnings[l.ID] = l
		c.learnings[ev.ID] = l
	case KindLearningReinforce, KindLearningArchived, KindLearningInvalid, KindLearningCorrected:
		l := c.learningOf(ev, d)
		if l == nil {
			return
		}
		l.tokOK = false
		switch ev.Kind {
		case KindLearningReinforce:
			l.ReinforceCount++
			if d.Date > l.LastRelevant {
				l.LastRelevant = d.Date
			}
			if d.Cause != "" {
				l.Cause = d.Cause
			}
			if d.Prevention != "" {
				l.Prevention = d.Prevention
			}
			l.TTL = ladderTTL(l.BaseTTL, l.ReinforceCount)
			if l.Status == StatusArchived {
				l.Status, l.StatusBy, l.Reason = StatusActive, "", ""
			}
		case KindLearningArchived:
			l.Status, l.StatusBy, l.Reason = StatusArchived, ev.ID, ev.Text
		case KindLearningInvalid:
			l.Status, l.StatusBy, l.Reason = StatusInvalidated, ev.ID, ev.Text
		case KindLearningCorrected:
			if d.Cause != "" {
				l.Cause = d.Cause
			}
			if d.Prevention != "" {
				l.Prevention = d.Prevention
			}
			l.Status, l.StatusBy, l.Reason = StatusCorrected, ev.ID, ev.Text
			if d.Date > l.LastRelevant {
				l.LastRelevant = d.Date
			}
		}
	case KindLearningMeta:
		c.Meta = append(c.Meta, &MetaLearning{ID: d.ID, Event: ev.ID, Date: d.Date, Affected: d.Affected, Action: d.Action, Reason: ev.Text})
	case KindDecisionRecorded:
		dc := &Decision{ID: d.ID, Event: ev.ID, Date: d.Date, Decision: d.Decision, Rationale: d.Rationale,
			Scope: d.Scope, Status: StatusActive, Supersedes: d.Supersedes, seq: seq, rank: scopeRank(d.Scope)}
		if dc.ID == "" || c.decisions[dc.ID] != nil {
			dc.ID = ev.ID
		}
		c.Decisions = append(c.Decisions, dc)
		c.decisions[dc.ID] = dc
		c.decisions[ev.ID] = dc
		if old := c.decisions[d.Supersedes]; old != nil && old.Status == StatusActive {
			old.Status, old.SupersededBy = StatusSuperseded, dc.ID
		}
	case KindDecisionSuperseed:
		old := c.decisions[d.ID]
		if old == nil && len(ev.Links) > 0 {
			old = c.decisions[ev.Links[0]]
		}
		if old != nil && old.Status == StatusActive {
			old.Status, old.SupersededBy = StatusSuperseded, d.By
		}
	}
}

func (c *Continuity) learningOf(ev *Event, d contData) *Learning {
	if l := c.learnings[d.ID]; l != nil && d.ID != "" {
		return l
	}
	if len(ev.Links) > 0 {
		return c.learnings[ev.Links[0]]
	}
	return nil
}

func dayOf(ts string) string {
	if len(ts) >= 10 {
		return ts[:10]
	}
	return ts
}

// nextID is the next short id with prefix: one more than the highest seen.
func nextID(prefix string, ids []string) string {
	n := 0
	for _, id := range ids {
		if k, err := strconv.Atoi(strings.TrimPrefix(id, prefix)); err == nil && strings.HasPrefix(id, prefix) && k > n {
			n = k
		}
	}
	return prefix + strconv.Itoa(n+1)
}

// sortLearnings orders learnings smallest scope first, then most recently
// relevant, then newest recorded: the order an agent should read them in.
func sortLearnings(ls []*Learning) {
	sort.SliceStable(ls, func(i, j int) bool { return readFirst(ls[i], ls[j]) })
}

// readFirst is sortLearnings' order. seq is unique, so the order is total
// and the first k of a selection are the first k of the sort.
func readFirst(a, b *Learning) bool {
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	if a.LastRelevant != b.LastRelevant {
		return a.LastRelevant > b.LastRelevant
	}
	return a.seq > b.seq
}

// ParseDate reads a --now value: a day (2026-03-21) or an RFC 3339 time.
func ParseDate(s string) (time.Time, error) {
	if t, err := time.Parse(dateLayout, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	e := fault.New(ErrInvalid, "now %q: not a date", s)
	return time.Time{}, e.WithHint("give a day as YYYY-MM-DD, e.g. --now 2026-03-21")
}

// days between two protocol dates (b - a); malformed dates count as 0.
func daysBetween(a, b string) int {
	ta, err1 := time.Parse(dateLayout, dayOf(a))
	tb, err2 := time.Parse(dateLayout, dayOf(b))
	if err1 != nil || err2 != nil {
		return 0
	}
	return int(tb.Sub(ta).Hours() / 24)
}
