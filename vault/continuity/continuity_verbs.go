package continuity

// The protocol's verbs, each a change inside one ContinuityTx: learn,
// invalidate, correct, decide, goal, next, done, audit and the session end.

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
)

// LearnInput is a learning as recorded by `memvault learn`.
type LearnInput struct {
	Error, Cause, Prevention string
	Scope                    string
	TTL                      int // days; 0 means DefaultLearningTTL
}

// Learn records a learning, or reinforces the one it repeats: same scope,
// same error after normalizeText (docs/CONTINUITY.md, "Reinforcement").
// A reinforcement brings a new cause or prevention when it gives one.
func (ct *ContinuityTx) Learn(in LearnInput) (*Learning, error) {
	if err := vault.CheckText("learn: prevention", in.Prevention, false); err != nil {
		return nil, withHintIfNone(err, "say how to prevent it next time: --prevention P")
	}
	c := ct.state()
	evs, repeats, invalid, err := LearnEvent(c, in, ct.day)
	if err != nil {
		return nil, err
	}
	for _, ev := range evs {
		ct.appendEvent(ev)
	}
	ev := evs[len(evs)-1]
	if repeats != nil {
		nl := ct.state().Learning(repeats.ID)
		why := ""
		if _, w, ok := strings.Cut(ev.Text, " (rewords "); ok {
			why = "; a rewording (" + strings.TrimSuffix(w, ")") + ")"
		}
		ct.say("%s reinforced (%d×, ttl %d days)%s", nl.ID, nl.ReinforceCount, nl.TTL, why)
		return nl, nil
	}
	l := ct.state().Learning(ev.ID)
	ct.say("%s recorded [%s]", l.ID, rowLabel(l.Scope, l.Thread))
	if invalid != nil {
		ct.warn("%s repeats %s, which was invalidated: %s", l.ID, invalid.ID, invalid.Reason)
	}
	return l, nil
}

// LearnEvent builds the events that record in against the fold c: a
// `learning` row, or a `learning.reinforced` of the learning it repeats
// (returned as repeats), after the retraction of its archiving when it was
// archived, so that every view has it back. invalid is an invalidated
// learning it repeats. The prevention may be empty: a plain LEARNED: line
// has none yet.
func LearnEvent(c *Continuity, in LearnInput, day string) (evs []*vault.Event, repeats, invalid *Learning, err error) {
	in.Error, in.Cause, in.Prevention = strings.TrimSpace(in.Error), strings.TrimSpace(in.Cause), strings.TrimSpace(in.Prevention)
	if err := vault.CheckText("learn: error", in.Error, false); err != nil {
		return nil, nil, nil, withHintIfNone(err, "say what failed: memvault learn --error E --prevention P")
	}
	if err := vault.CheckText("learn: prevention", in.Prevention, true); err != nil {
		return nil, nil, nil, err
	}
	if err := vault.CheckText("learn: cause", in.Cause, true); err != nil {
		return nil, nil, nil, err
	}
	sc, err := ParseScope(in.Scope)
	if err != nil {
		return nil, nil, nil, err
	}
	if in.TTL < 0 || in.TTL > 3650 {
		return nil, nil, nil, fault.New(vault.ErrInvalid, "learn: ttl %d: want 1 to 3650 days", in.TTL)
	}
	if l, why := repeatOf(c, sc.String(), in.Error); l != nil {
		if l.Status == vault.StatusInvalidated {
			invalid = l
		} else {
			d := contData{ID: l.ID, Date: day}
			if in.Cause != "" && NormalizeText(in.Cause) != NormalizeText(l.Cause) {
				d.Cause = in.Cause
			}
			if in.Prevention != "" && NormalizeText(in.Prevention) != NormalizeText(l.Prevention) {
				d.Prevention = in.Prevention
			}
			if l.Status == vault.StatusArchived && l.StatusBy != "" {
				evs = append(evs, &vault.Event{Kind: "retract", Text: l.ID + " is relevant again", Links: []string{l.StatusBy}})
			}
			text := l.ID + " reinforced: " + in.Error
			if why != "" {
				text += " (rewords " + l.ID + ": " + why + ")"
			}
			evs = append(evs, protocolEvent(vault.KindLearningReinforce, text, d, l.Event))
			return evs, l, nil, nil
		}
	}
	ttl := in.TTL
	if ttl == 0 {
		ttl = DefaultLearningTTL
	}
	text := in.Error
	if in.Prevention != "" {
		text += " → " + in.Prevention
	}
	d := contData{ID: "L" + strconv.Itoa(c.lastL+1), Date: day, Error: in.Error, Cause: in.Cause,
		Prevention: in.Prevention, Scope: sc.String(), TTL: ttl}
	if text == in.Error {
		d.Error = "" // a plain learning: its text is the error
	}
	return []*vault.Event{protocolEvent("learning", text, d)}, nil, invalid, nil
}

// repeatOf is the learning of scope that a new learning with error errText
// repeats, and why when it is a rewording rather than the same text: the
// same error after NormalizeText first, else the most similar (similar),
// the older on a tie. An active or corrected learning is preferred to an
// archived one, and either to an invalidated one, which is returned only
// so that the caller can warn (it is never reinforced). Superseded
// learnings are history.
func repeatOf(c *Continuity, scope, errText string) (*Learning, string) {
	key := learningKey(scope, errText)
	rank := func(l *Learning) int {
		switch l.Status {
		case vault.StatusActive, vault.StatusCorrected:
			return 0
		case vault.StatusArchived:
			return 1
		}
		return 2
	}
	var best *Learning
	bestWhy, bestExact := "", false
	neg, ws := words(errText)
	for _, l := range c.Learnings {
		if l.Scope != scope || l.Status == vault.StatusSuperseded {
			continue
		}
		exact := learningKey(l.Scope, l.Error) == key
		why := ""
		if !exact {
			ln, lw := words(l.Error)
			ok, w := similarWords(neg, ws, ln, lw)
			if !ok {
				continue
			}
			why = w
		}
		switch {
		case best == nil, rank(l) < rank(best), rank(l) == rank(best) && exact && !bestExact:
			best, bestWhy, bestExact = l, why, exact
		}
	}
	return best, bestWhy
}

// protocolEvent is an event of the protocol with its data.
func protocolEvent(kind, text string, d any, links ...string) *vault.Event {
	raw, _ := json.Marshal(d)
	return &vault.Event{Kind: kind, Text: text, Data: raw, Links: links}
}

func orGlobal(scope string) string {
	if scope == "" {
		return "global"
	}
	return scope
}

func withHintIfNone(err error, hint string) error {
	var e *vault.Error
	if errors.As(err, &e) && e.Hint == "" {
		e.Hint = hint
	}
	return err
}

// findLearning resolves an id (L3 or the recording event's id).
func (ct *ContinuityTx) findLearning(verb, id string) (*Learning, error) {
	l := ct.state().Learning(strings.TrimSpace(id))
	if l == nil {
		e := fault.New(vault.ErrNotFound, "%s %s: no such learning", verb, id)
		return nil, e.WithHint("list learnings with: memvault continuity learnings --all")
	}
	return l, nil
}

// Invalidate marks a learning as proven wrong because following it caused
// a problem, and records a meta-learning so the bad memory is remembered.
func (ct *ContinuityTx) Invalidate(id, why string) (*Learning, error) {
	l, err := ct.findLearning("invalidate", id)
	if err != nil {
		return nil, err
	}
	if l.Status == vault.StatusInvalidated {
		return nil, fault.New(vault.ErrConflict, "invalidate %s: already invalidated", l.ID)
	}
	if err := vault.CheckText("invalidate: why", why, false); err != nil {
		return nil, withHintIfNone(err, "say what went wrong: --why TEXT")
	}
	ct.append(vault.KindLearningInvalid, why, contData{ID: l.ID, Date: ct.day, Reason: "caused a problem"}, l.Event)
	var ids []string
	for _, m := range ct.state().Meta {
		ids = append(ids, m.ID)
	}
	mid := nextID("M", ids)
	ct.append(vault.KindLearningMeta, why, contData{ID: mid, Date: ct.day, Affected: l.ID, Action: "invalidated"}, l.Event)
	ct.say("%s invalidated; meta-learning %s recorded", l.ID, mid)
	return ct.state().Learning(l.ID), nil
}

// Correct fixes a learning that was wrong: it keeps being read, marked
// corrected, with the new cause or prevention.
func (ct *ContinuityTx) Correct(id, cause, prevention, why string) (*Learning, error) {
	l, err := ct.findLearning("correct", id)
	if err != nil {
		return nil, err
	}
	if l.Status == vault.StatusInvalidated {
		return nil, fault.New(vault.ErrConflict, "correct %s: invalidated learnings are not read again; record a new one", l.ID)
	}
	if strings.TrimSpace(cause) == "" && strings.TrimSpace(prevention) == "" {
		return nil, fault.New(vault.ErrInvalid, "correct %s: give the corrected --prevention or --cause", l.ID)
	}
	if err := vault.CheckText("correct: why", why, false); err != nil {
		return nil, withHintIfNone(err, "say what was wrong: --why TEXT")
	}
	ct.append(vault.KindLearningCorrected, why, contData{ID: l.ID, Date: ct.day, Cause: cause, Prevention: prevention}, l.Event)
	ct.say("%s corrected", l.ID)
	return ct.state().Learning(l.ID), nil
}

// DecideInput is a decision as recorded by `memvault decide`.
type DecideInput struct {
	Decision, Rationale, Scope string
	Supersedes                 string // a decision's id
}

// Decide records a decision; one that supersedes another marks it.
func (ct *ContinuityTx) Decide(in DecideInput) (*Decision, error) {
	ev, old, err := DecideEvent(ct.state(), in, ct.day)
	if err != nil {
		return nil, err
	}
	ct.appendEvent(ev)
	dc := ct.state().Decision(ev.ID)
	if old != nil {
		ct.say("%s recorded [%s], supersedes %s", dc.ID, rowLabel(dc.Scope, dc.Thread), old.ID)
	} else {
		ct.say("%s recorded [%s]", dc.ID, rowLabel(dc.Scope, dc.Thread))
	}
	return dc, nil
}

// DecideEvent builds the event that records in against the fold c: a
// `decision` row, or, when it supersedes one, a `supersede` of that row
// that counts as a decision, so every view retires the old one alike.
// The rationale is optional.
func DecideEvent(c *Continuity, in DecideInput, day string) (*vault.Event, *Decision, error) {
	in.Decision, in.Rationale = strings.TrimSpace(in.Decision), strings.TrimSpace(in.Rationale)
	if err := vault.CheckText("decide: decision", in.Decision, false); err != nil {
		return nil, nil, withHintIfNone(err, "say what was decided: memvault decide --decision D --rationale R")
	}
	if err := vault.CheckText("decide: rationale", in.Rationale, true); err != nil {
		return nil, nil, err
	}
	var old *Decision
	if in.Supersedes != "" {
		id := strings.TrimSpace(in.Supersedes)
		old = c.Decision(id)
		if old == nil {
			if c.Learning(id) != nil {
				return nil, nil, fault.New(vault.ErrInvalid, "decide: supersede %s: is a learning, not a decision", id)
			}
			e := fault.New(vault.ErrNotFound, "decide: supersede %s: no such decision", id)
			return nil, nil, e.WithHint("list decisions with: memvault continuity decisions --all")
		}
		if old.Status == vault.StatusSuperseded {
			e := fault.New(vault.ErrConflict, "decide: supersede %s: already superseded by %s", old.ID, old.SupersededBy)
			return nil, nil, e.WithHint("supersede the newer decision instead: --supersedes %s", old.SupersededBy)
		}
		if in.Scope == "" {
			in.Scope = old.Scope
		}
	}
	sc, err := ParseScope(in.Scope)
	if err != nil {
		return nil, nil, err
	}
	d := contData{ID: "D" + strconv.Itoa(c.lastD+1), Date: day, Decision: in.Decision, Rationale: in.Rationale, Scope: sc.String()}
	text := in.Decision
	if in.Rationale != "" {
		text += " (because " + in.Rationale + ")"
	} else {
		d.Decision = "" // its text is the decision
	}
	if old == nil {
		return protocolEvent("decision", text, d), nil, nil
	}
	d.Supersedes = old.ID
	raw, _ := json.Marshal(struct {
		contData
		Replaces string `json:"replaces_kind"`
	}{d, "decision"})
	return &vault.Event{Kind: "supersede", Thread: old.Thread, Text: text, Data: raw, Links: []string{old.Event}}, old, nil
}

// Goal sets the active goal, the phase, or both.
func (ct *ContinuityTx) Goal(text, phase string) error {
	if phase != "" && !slices.Contains(Phases, phase) {
		e := fault.New(vault.ErrInvalid, "goal: phase %q: unknown", phase)
		return e.WithHint("use one of: %s", strings.Join(Phases, ", "))
	}
	if err := vault.CheckText("goal", text, phase != ""); err != nil {
		return withHintIfNone(err, "say what the goal is: memvault goal \"…\"")
	}
	ct.append(vault.KindContinuityGoal, text, contData{Date: ct.day, Phase: phase})
	switch {
	case text != "" && phase != "":
		ct.say("goal set; phase %s", phase)
	case text != "":
		ct.say("goal set")
	default:
		ct.say("phase %s", phase)
	}
	return nil
}

// Next adds a next action, at the end of the queue or (first) on top.
func (ct *ContinuityTx) Next(text string, first bool) error {
	if err := vault.CheckText("next", text, false); err != nil {
		return withHintIfNone(err, "say what comes next: memvault next \"…\"")
	}
	ev := ct.appendEvent(NextEvent(text, first, ct.day))
	ct.say("next action added (%s)", ev.ID)
	return nil
}

// NextEvent is the `next` row of a next action.
func NextEvent(text string, first bool, day string) *vault.Event {
	return protocolEvent("next", strings.TrimSpace(text), contData{Date: day, First: first})
}

// Done records something done. arg may name what it closes (DoneEvent's
// rule); anything else is an accomplishment that closes nothing. It says
// which row it closed, so the person or agent sees what "done" meant.
func (ct *ContinuityTx) Done(arg string) error {
	ev, closed, err := DoneEvent(ct.state(), arg, ct.day)
	if err != nil {
		return err
	}
	what := ""
	if closed {
		what = ct.state().OpenKind(ev.Links[0])
	}
	ct.appendEvent(ev)
	if closed {
		ct.say("done; closed %s %s: %s", what, ev.Links[0], safeLine(ev.Text, 120))
	} else {
		ct.say("done")
	}
	return nil
}

// OpenKind names the list an open item id is in: "next action",
// "commitment" or "blocker"; "" when it is in none.
func (c *Continuity) OpenKind(id string) string {
	for _, l := range c.openLists() {
		for _, it := range l.items {
			if it.ID == id {
				return l.name
			}
		}
	}
	return ""
}

type openList struct {
	name  string
	items []Item
}

// openLists are the open items in the order every view shows them: the
// next actions (the queue), the commitments, the blockers.
func (c *Continuity) openLists() []openList {
	return []openList{{"next action", c.Next}, {"commitment", c.Commitments}, {"blocker", c.Blockers}}
}

// doneWordsMin is how many words an open item's text needs before a done
// that starts with it (and goes on) closes it: "deploy" must be named
// exactly, "fix the login bug" is closed by "fix the login bug: tests pass".
const doneWordsMin = 3

// DoneEvent builds the `done` row for arg; closed reports that it closes
// an open next action, blocker or commitment, named in its links. The rule
// (docs/LINEAGE.md, "Control lines"; docs/CONTINUITY.md), first match wins:
//
//  1. a number N: the Nth line of Next Actions as CONTINUITY.md numbers
//     them, the next actions in queue order, then the commitments (a
//     number past them is an error);
//  2. an event id (e_…), alone or as the last `e_…` in backquotes, as
//     every head ends a row's line: that open row (an id alone that names
//     nothing open is an error);
//  3. the text of an open row, compared after NormalizeText (case,
//     punctuation and white space do not count): next actions, then
//     commitments, then blockers, each in the order the views show them;
//  4. a text that starts with the whole normalised text of an open row of
//     at least doneWordsMin words, at a word boundary ("fix the login bug:
//     tests pass"): the longest such row, the first in that order on a tie.
//
// Anything else is an accomplishment.
func DoneEvent(c *Continuity, arg, day string) (ev *vault.Event, closed bool, err error) {
	arg = strings.TrimSpace(arg)
	if err := vault.CheckText("done", arg, false); err != nil {
		return nil, false, withHintIfNone(err, "say what was done, or give the number or id of a next action")
	}
	it, err := c.doneTarget(arg)
	if err != nil {
		return nil, false, err
	}
	if it == nil {
		return protocolEvent(vault.KindDone, arg, contData{Date: day}), false, nil
	}
	ev = protocolEvent(vault.KindDone, it.Text, contData{Date: day}, it.ID)
	ev.Thread = it.Thread
	return ev, true, nil
}

// doneTarget is the open row arg names by DoneEvent's rule, or nil.
func (c *Continuity) doneTarget(arg string) (*Item, error) {
	numbered := append(append([]Item(nil), c.Next...), c.Commitments...)
	if n, err := strconv.Atoi(arg); err == nil {
		if n < 1 || n > len(numbered) {
			e := fault.New(vault.ErrNotFound, "done: no next action number %d (there are %d)", n, len(numbered))
			return nil, e.WithHint("see them with: memvault continuity status")
		}
		return &numbered[n-1], nil
	}
	id, alone := "", looksLikeEventID(arg)
	if alone {
		id = arg
	} else if m := quotedIDRE().FindAllStringSubmatch(arg, -1); len(m) > 0 {
		id = m[len(m)-1][1]
	}
	if id != "" {
		for _, l := range c.openLists() {
			for i := range l.items {
				if l.items[i].ID == id {
					return &l.items[i], nil
				}
			}
		}
		if alone {
			e := fault.New(vault.ErrNotFound, "done: %s: no open next action, blocker or commitment has this id", arg)
			return nil, e.WithHint("see what is open with: memvault continuity status")
		}
	}
	key := NormalizeText(arg)
	var best *Item
	bestLen := 0
	for _, l := range c.openLists() {
		for i := range l.items {
			t := NormalizeText(l.items[i].Text)
			switch {
			case t == key:
				return &l.items[i], nil
			case len(t) > bestLen && strings.HasPrefix(key, t+" ") && len(strings.Fields(t)) >= doneWordsMin:
				best, bestLen = &l.items[i], len(t)
			}
		}
	}
	return best, nil
}

// looksLikeEventID reports whether s has the form of an event id (e_…).
func looksLikeEventID(s string) bool {
	return strings.HasPrefix(s, "e_") && !strings.ContainsAny(s, " \t")
}

// quotedIDRE finds an event id in backquotes, as heads end a row's line.
var quotedIDRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("`(e_[0-9a-z]+)`") })

// Audit applies the rules as of the transaction's day. With dryRun it
// only reports. It writes nothing when nothing changed since the last
// audit that day, so running it at every session end is cheap: at most one
// continuity.audited a day when nothing changes.
func (ct *ContinuityTx) Audit(dryRun bool) *AuditReport {
	c := ct.state()
	rep := c.Audit(ct.day, ct.Vault())
	rep.DryRun = dryRun
	ct.audit = rep
	if dryRun || (len(rep.Actions) == 0 && strings.Join(rep.flagStrings(), ",") == c.auditKey && c.LastAudit == ct.day) {
		return rep
	}
	for _, a := range rep.Actions {
		switch a.Action {
		case "archive":
			l := c.Learning(a.ID)
			ct.append(vault.KindLearningArchived, a.Reason, contData{ID: a.ID, Date: ct.day, Reason: "ttl"}, l.Event)
		case "invalidate":
			l := c.Learning(a.ID)
			ct.append(vault.KindLearningInvalid, a.Reason, contData{ID: a.ID, Date: ct.day, Reason: "conflict", By: a.By}, l.Event)
		case "reinforce":
			// A rewording: the older learning is reinforced as of the
			// newer's day, in the newer's words for its prevention; the
			// newer one is archived, pointing at it.
			l, dup := c.Learning(a.ID), c.Learning(a.By)
			d := contData{ID: l.ID, Date: dup.LastRelevant}
			if dup.Prevention != "" && NormalizeText(dup.Prevention) != NormalizeText(l.Prevention) {
				d.Prevention = dup.Prevention
			}
			ct.append(vault.KindLearningReinforce, l.ID+" reinforced: "+dup.Error, d, l.Event)
			ct.append(vault.KindLearningArchived, a.Reason, contData{ID: dup.ID, Date: ct.day, Reason: "duplicate", By: l.ID}, dup.Event)
		case "supersede":
			d := c.Decision(a.ID)
			ct.append(vault.KindDecisionSuperseed, a.Reason, contData{ID: a.ID, Date: ct.day, By: a.By}, d.Event)
		}
	}
	ct.append(vault.KindContinuityAudited, fmt.Sprintf("audit as of %s: %d change(s), %d flag(s)", ct.day, len(rep.Actions), len(rep.Flags)),
		contData{Now: ct.day, Flags: rep.flagStrings()})
	rep.Written = true
	return rep
}

// SessionEndInput is what a harness hands over when a session ends. The
// session's control lines (DONE:, NEXT:, DECISION:, …) are not in it:
// they were recorded from the transcript as the session went, once each.
type SessionEndInput struct {
	Context []string // Working Context lines; nil keeps the last ones
	Files   []string // Files Being Modified; nil keeps the last ones
	// Touched are the files the session's edit tools wrote, listed first
	// in Files Being Modified, before those of earlier sessions that have
	// not aged out (keepFiles). UpdateContinuityAtSessionEnd reads them
	// from the session's transcript when neither this nor Files is given.
	Touched []string
}

// SessionEnd counts the session (Iteration), keeps its working context,
// and runs the audit, which writes only when something changed.
func (ct *ContinuityTx) SessionEnd(in SessionEndInput) error {
	ct.append(vault.KindContinuitySession, "session end", contData{Date: ct.day, Context: in.Context, Files: in.Files, Touched: in.Touched})
	ct.Audit(false)
	return nil
}

// UpdateContinuityAtSessionEnd is what the hooks call when a session ends:
// it counts the session, audits, and refreshes CONTINUITY.md (a deferred
// refresh of CONTINUITY.md is retried here too).
func UpdateContinuityAtSessionEnd(v *vault.Vault, opts vault.TxOptions, in SessionEndInput) (*ContinuityResult, error) {
	if opts.Command == "" {
		opts.Command = "session-end"
	}
	if in.Files == nil && in.Touched == nil && opts.Session != "" {
		in.Touched = sessionFiles(v, opts.Agent, opts.Session)
	}
	return UpdateContinuity(v, ContinuityOptions{TxOptions: opts, Trigger: "session-end"}, func(ct *ContinuityTx) error {
		return ct.SessionEnd(in)
	})
}
