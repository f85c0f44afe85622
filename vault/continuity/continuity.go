package continuity

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/memvault/memvault/vault/heads"

	"github.com/memvault/memvault/vault"
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
	Thread         string   `json:"thread,omitempty"`
	Agent          string   `json:"agent,omitempty"` // who recorded it
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
	Thread       string `json:"thread,omitempty"`
	Agent        string `json:"agent,omitempty"` // who recorded it
	seq          int
	rank         int
	norm         string // normalizeText(Decision), made by key
}

// Key is the decision's text as a repeat is recognised (normalizeText),
// made once: a DECISION: line is compared with every active decision, and
// normalising all of them for each line made a session's summary cost in
// proportion to the decisions ever made.
func (d *Decision) Key() string {
	if d.norm == "" {
		d.norm = NormalizeText(d.Decision)
	}
	return d.norm
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
	ID     string `json:"id"` // the event
	Text   string `json:"text"`
	Date   string `json:"date"`
	Thread string `json:"thread,omitempty"`
}

// Continuity is the protocol's state folded from the ledger.
type Continuity struct {
	Goal      string `json:"goal"`
	Phase     string `json:"phase"`
	Iteration int    `json:"iteration"`
	Updated   string `json:"updated"` // timestamp of the newest protocol event
	Next      []Item `json:"next"`    // priority order
	Done      []Item `json:"done"`    // oldest first
	Blockers  []Item `json:"blockers"`
	// Commitments are the open promises (COMMIT:, memvault commitment):
	// listed with the next actions, closed by DONE: or CLOSE:.
	Commitments []Item   `json:"commitments"`
	Context     []string `json:"context"`
	Files       []string `json:"files"`
	// FileDays is the day each of Files was last written by a session's
	// tools (or set by hand), for their aging (keepFiles).
	FileDays  []string        `json:"-"`
	Learnings []*Learning     `json:"learnings"` // order of recording
	Decisions []*Decision     `json:"decisions"`
	Meta      []*MetaLearning `json:"meta_learnings"`
	LastAudit string          `json:"last_audit,omitempty"` // the --now of the last audit that wrote
	auditKey  string          // the flags of the last audit, to skip writing an identical one
	learnings map[string]*Learning
	decisions map[string]*Decision
	seq       int            // protocol events folded so far (orders learnings and decisions)
	head      heads.HeadBook // CONTINUITY.md's head bookkeeping
	lastL     int            // the highest learning number given (L7: 7)
	lastD     int            // the highest decision number given
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
	Touched    []string `json:"touched,omitempty"` // files a session's edit tools wrote
	Now        string   `json:"now,omitempty"`
	Flags      []string `json:"flags,omitempty"` // "L3 LOW_CONFIDENCE"
}

// protocolKinds are the kinds, after canonicalKind, the protocol folds:
// the vault's content rows it shows (decisions, learnings, next actions,
// blockers, commitments and what closes them) and its own bookkeeping.
func isContinuityKind(k string) bool {
	switch k {
	case "decision", "learning", "next", "blocker", vault.KindDone, "commitment.open", "commitment.close", "supersede":
		return true
	}
	return strings.HasPrefix(k, "continuity.") || strings.HasPrefix(k, "learning.") || strings.HasPrefix(k, "decision.")
}

// Learning returns the learning with id (L3) or recording event id.
func (c *Continuity) Learning(id string) *Learning { return c.learnings[id] }

// Decision returns the decision with id (D3) or recording event id.
func (c *Continuity) Decision(id string) *Decision { return c.decisions[id] }

// foldContinuity builds the protocol's state from rows (corrections already
// applied: a retracted row does not count) and then events not yet in the
// ledger (those of the running transaction).
func foldContinuity(rows []*vault.Row, extra []*vault.Event) *Continuity {
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
	return &Continuity{Next: []Item{}, Done: []Item{}, Blockers: []Item{}, Commitments: []Item{}, Context: []string{}, Files: []string{},
		Learnings: []*Learning{}, Decisions: []*Decision{}, Meta: []*MetaLearning{},
		learnings: map[string]*Learning{}, decisions: map[string]*Decision{},
		head: heads.HeadBook{Tokens: map[string]bool{}}}
}

// addRow folds one ledger row, corrections already applied to it: a
// retracted row still counts for the order of what follows, a replaced
// decision or learning stays as history, and CONTINUITY.md's head
// bookkeeping reads every row.
func (c *Continuity) addRow(r *vault.Row) {
	c.addHeadEvent(r.Event)
	c.apply(r.Event, r.EffectiveKind(), r.RetractedBy == "", r.SupersededBy)
}

// addEvent folds an event that nothing corrects: one of the running
// transaction, or one appended to the ledger since the derived state was
// written (a retraction there rebuilds the state instead).
func (c *Continuity) addEvent(ev *vault.Event) {
	c.addHeadEvent(ev)
	c.apply(ev, (&vault.Row{Event: ev}).EffectiveKind(), true, "")
}

// addHeadEvent keeps CONTINUITY.md's head bookkeeping.
func (c *Continuity) addHeadEvent(ev *vault.Event) {
	if strings.HasPrefix(ev.Kind, "head.") && heads.HeadOf(ev.Data) == vault.ContinuityHead {
		c.head.Add(ev)
	}
}

// touchesContinuity reports whether folding ev can change the protocol's
// state; the rest of the ledger passes the fold by.
func touchesContinuity(ev *vault.Event) bool {
	if isContinuityKind(vault.CanonicalKind(ev.Kind)) {
		return true
	}
	return strings.HasPrefix(ev.Kind, "head.") && heads.HeadOf(ev.Data) == vault.ContinuityHead
}

// apply folds one event counted as kind. live is false for a retracted
// row, which only takes its place in the order; replacedBy names the row
// that superseded this one, if any: a replaced decision or learning is
// kept as history, a replaced next action or blocker is gone.
func (c *Continuity) apply(ev *vault.Event, kind string, live bool, replacedBy string) {
	if !isContinuityKind(kind) {
		return
	}
	c.seq++
	seq := c.seq
	if !live {
		return
	}
	var d contData
	if len(ev.Data) > 0 {
		_ = json.Unmarshal(ev.Data, &d)
	}
	if d.Date == "" {
		d.Date = dayOf(ev.TS)
	}
	if kind != vault.KindContinuityAudited && kind != vault.KindContinuityRotated {
		c.Updated = ev.TS
	}
	if ev.Kind == "supersede" && replacedBy == "" && len(ev.Links) > 0 {
		c.retire(ev.Links[0], ev.ID) // what the new version replaces, when folded on top
	}
	switch kind {
	case vault.KindContinuityGoal:
		if strings.TrimSpace(ev.Text) != "" {
			c.Goal = ev.Text
		}
		if d.Phase != "" {
			c.Phase = d.Phase
		}
	case "next", "blocker", "commitment.open":
		if replacedBy != "" {
			return
		}
		it := Item{ID: ev.ID, Text: ev.Text, Date: d.Date, Thread: ev.Thread}
		switch {
		case kind == "blocker":
			c.Blockers = append(c.Blockers, it)
		case kind == "commitment.open":
			c.Commitments = append(c.Commitments, it)
		case d.First:
			c.Next = append([]Item{it}, c.Next...)
		default:
			c.Next = append(c.Next, it)
		}
	case vault.KindDone, "commitment.close":
		var closed Item
		if len(ev.Links) > 0 {
			closed, _ = c.close(ev.Links[0])
		}
		text := strings.TrimSpace(ev.Text)
		if closed.ID != "" && (text == "" || kind == "commitment.close") {
			text = closed.Text // what was done is what was promised
		}
		if text != "" {
			c.Done = append(c.Done, Item{ID: ev.ID, Text: text, Date: d.Date, Thread: ev.Thread})
		}
	case vault.KindContinuitySession:
		c.session(d)
	case vault.KindContinuityAudited:
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
	case "learning":
		c.addLearning(ev, d, seq, replacedBy)
	case vault.KindLearningReinforce, vault.KindLearningArchived, vault.KindLearningInvalid, vault.KindLearningCorrected:
		c.learningLife(ev, kind, d)
	case vault.KindLearningMeta:
		c.Meta = append(c.Meta, &MetaLearning{ID: d.ID, Event: ev.ID, Date: d.Date, Affected: d.Affected, Action: d.Action, Reason: ev.Text})
	case "decision":
		c.addDecision(ev, d, seq, replacedBy)
	case vault.KindDecisionSuperseed:
		old := c.decisions[d.ID]
		if old == nil && len(ev.Links) > 0 {
			old = c.decisions[ev.Links[0]]
		}
		if old != nil && old.Status == vault.StatusActive {
			old.Status, old.SupersededBy = vault.StatusSuperseded, d.By
		}
	}
}

// addLearning folds a learning row. A plain one (LEARNED: text, remember
// --kind learning) has its text as the error and no prevention yet.
func (c *Continuity) addLearning(ev *vault.Event, d contData, seq int, replacedBy string) {
	l := &Learning{ID: d.ID, Event: ev.ID, Date: d.Date, Error: d.Error, Cause: d.Cause, Prevention: d.Prevention,
		Scope: d.Scope, BaseTTL: d.TTL, LastRelevant: d.Date, Status: vault.StatusActive, Thread: ev.Thread, Agent: ev.Agent, seq: seq, rank: scopeRank(d.Scope)}
	if l.Error == "" {
		l.Error = strings.TrimSpace(ev.Text)
	}
	if l.Scope == "" {
		l.Scope, l.rank = ScopeGlobal, scopeRank(ScopeGlobal)
	}
	if l.BaseTTL <= 0 {
		l.BaseTTL = DefaultLearningTTL
	}
	if l.ID == "" || c.learnings[l.ID] != nil {
		l.ID = nextShortID("L", &c.lastL) // a short id seen twice (merged histories) gets a new one
	}
	noteShortID(l.ID, "L", &c.lastL)
	l.TTL = ladderTTL(l.BaseTTL, 0)
	if ev.Kind == "supersede" && len(ev.Links) > 0 && d.Scope == "" {
		if old := c.learnings[ev.Links[0]]; old != nil {
			l.Scope, l.rank = old.Scope, old.rank
		}
	}
	if replacedBy != "" {
		l.Status, l.StatusBy = vault.StatusSuperseded, replacedBy
	}
	c.Learnings = append(c.Learnings, l)
	c.learnings[l.ID] = l
	c.learnings[ev.ID] = l
}

// addDecision folds a decision row: `memvault decide`, a DECISION: line,
// `remember --kind decision`, or a supersede of one (the new version).
func (c *Continuity) addDecision(ev *vault.Event, d contData, seq int, replacedBy string) {
	dc := &Decision{ID: d.ID, Event: ev.ID, Date: d.Date, Decision: d.Decision, Rationale: d.Rationale,
		Scope: d.Scope, Status: vault.StatusActive, Supersedes: d.Supersedes, Thread: ev.Thread, Agent: ev.Agent, seq: seq, rank: scopeRank(d.Scope)}
	if dc.Decision == "" {
		dc.Decision = strings.TrimSpace(ev.Text)
	}
	if dc.Scope == "" && ev.Kind != "supersede" {
		dc.Scope, dc.rank = ScopeGlobal, scopeRank(ScopeGlobal)
	}
	if dc.ID == "" || c.decisions[dc.ID] != nil {
		dc.ID = nextShortID("D", &c.lastD)
	}
	noteShortID(dc.ID, "D", &c.lastD)
	old := c.decisions[d.Supersedes] // the legacy form: a decision.recorded naming what it supersedes
	if ev.Kind == "supersede" && len(ev.Links) > 0 {
		old = c.decisions[ev.Links[0]]
	}
	if dc.Scope == "" && old != nil {
		dc.Scope, dc.rank = old.Scope, old.rank
	} else if dc.Scope == "" {
		dc.Scope, dc.rank = ScopeGlobal, scopeRank(ScopeGlobal)
	}
	if old != nil {
		dc.Supersedes = old.ID
		// In a full fold the old row is marked already, by this event's id.
		if old.Status == vault.StatusActive || old.SupersededBy == ev.ID {
			old.Status, old.SupersededBy = vault.StatusSuperseded, dc.ID
		}
	}
	if replacedBy != "" {
		dc.Status = vault.StatusSuperseded
		if by := c.decisions[replacedBy]; by != nil {
			dc.SupersededBy = by.ID
		} else {
			dc.SupersededBy = replacedBy
		}
	}
	c.Decisions = append(c.Decisions, dc)
	c.decisions[dc.ID] = dc
	c.decisions[ev.ID] = dc
}

// retire takes the row a supersede replaces out of the live lists, or
// marks the decision or learning superseded.
func (c *Continuity) retire(id, by string) {
	if _, ok := c.close(id); ok {
		return
	}
	if dc := c.decisions[id]; dc != nil && dc.Status == vault.StatusActive {
		dc.Status, dc.SupersededBy = vault.StatusSuperseded, by
	}
	if l := c.learnings[id]; l != nil && l.Status != vault.StatusSuperseded {
		l.Status, l.StatusBy = vault.StatusSuperseded, by
	}
}

// ThreadOf is the thread of the row id names, if the fold knows it.
func (c *Continuity) ThreadOf(id string) string {
	if l := c.learnings[id]; l != nil {
		return l.Thread
	}
	if dc := c.decisions[id]; dc != nil {
		return dc.Thread
	}
	for _, list := range [][]Item{c.Next, c.Blockers, c.Commitments} {
		for _, it := range list {
			if it.ID == id {
				return it.Thread
			}
		}
	}
	return ""
}

// close takes the next action, blocker or commitment id out of its list.
func (c *Continuity) close(id string) (Item, bool) {
	for _, list := range []*[]Item{&c.Next, &c.Blockers, &c.Commitments} {
		for i, it := range *list {
			if it.ID == id {
				*list = append((*list)[:i:i], (*list)[i+1:]...)
				return it, true
			}
		}
	}
	return Item{}, false
}

// learningLife folds an event of a learning's life: reinforced, archived,
// invalidated, corrected.
func (c *Continuity) learningLife(ev *vault.Event, kind string, d contData) {
	l := c.learningOf(ev, d)
	if l == nil {
		return
	}
	l.tokOK = false
	switch kind {
	case vault.KindLearningReinforce:
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
		if l.Status == vault.StatusArchived {
			l.Status, l.StatusBy, l.Reason = vault.StatusActive, "", ""
		}
	case vault.KindLearningArchived:
		l.Status, l.StatusBy, l.Reason = vault.StatusArchived, ev.ID, ev.Text
	case vault.KindLearningInvalid:
		l.Status, l.StatusBy, l.Reason = vault.StatusInvalidated, ev.ID, ev.Text
	case vault.KindLearningCorrected:
		if d.Cause != "" {
			l.Cause = d.Cause
		}
		if d.Prevention != "" {
			l.Prevention = d.Prevention
		}
		l.Status, l.StatusBy, l.Reason = vault.StatusCorrected, ev.ID, ev.Text
		if d.Date > l.LastRelevant {
			l.LastRelevant = d.Date
		}
	}
}

// nextShortID is the short id after *last (D4 after D3), and records it.
func nextShortID(prefix string, last *int) string {
	*last++
	return prefix + strconv.Itoa(*last)
}

// noteShortID raises *last to id's number, so that ids given later do not
// repeat one folded already.
func noteShortID(id, prefix string, last *int) {
	if k, err := strconv.Atoi(strings.TrimPrefix(id, prefix)); err == nil && strings.HasPrefix(id, prefix) && k > *last {
		*last = k
	}
}

func (c *Continuity) learningOf(ev *vault.Event, d contData) *Learning {
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
	e := fault.New(vault.ErrInvalid, "now %q: not a date", s)
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
