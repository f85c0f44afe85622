package vault

// The protocol's verbs, each a change inside one ContinuityTx: learn,
// invalidate, correct, decide, goal, next, done, audit and the session end.

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

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
	if err := checkText("learn: error", in.Error, false); err != nil {
		return nil, withHintIfNone(err, "say what failed: memvault learn --error E --prevention P")
	}
	if err := checkText("learn: prevention", in.Prevention, false); err != nil {
		return nil, withHintIfNone(err, "say how to prevent it next time: --prevention P")
	}
	if err := checkText("learn: cause", in.Cause, true); err != nil {
		return nil, err
	}
	sc, err := ParseScope(in.Scope)
	if err != nil {
		return nil, err
	}
	if in.TTL < 0 || in.TTL > 3650 {
		return nil, fault.New(ErrInvalid, "learn: ttl %d: want 1 to 3650 days", in.TTL)
	}
	c := ct.state()
	key := learningKey(sc.String(), in.Error)
	var invalid *Learning
	for _, l := range c.Learnings {
		if learningKey(l.Scope, l.Error) != key {
			continue
		}
		if l.Status == StatusInvalidated {
			invalid = l
			continue
		}
		d := contData{ID: l.ID, Date: ct.day}
		if in.Cause != "" && normalizeText(in.Cause) != normalizeText(l.Cause) {
			d.Cause = in.Cause
		}
		if normalizeText(in.Prevention) != normalizeText(l.Prevention) {
			d.Prevention = in.Prevention
		}
		ct.append(KindLearningReinforce, l.ID+" reinforced: "+in.Error, d, l.Event)
		nl := ct.state().Learning(l.ID)
		ct.say("%s reinforced (%d×, ttl %d days)", l.ID, nl.ReinforceCount, nl.TTL)
		return nl, nil
	}
	var ids []string
	for _, l := range c.Learnings {
		ids = append(ids, l.ID)
	}
	id := nextID("L", ids)
	ttl := in.TTL
	if ttl == 0 {
		ttl = DefaultLearningTTL
	}
	ct.append(KindLearningRecorded, in.Error+" → "+in.Prevention, contData{ID: id, Date: ct.day, Error: in.Error,
		Cause: in.Cause, Prevention: in.Prevention, Scope: sc.String(), TTL: ttl})
	ct.say("%s recorded [%s]", id, sc)
	if invalid != nil {
		ct.warn("%s repeats %s, which was invalidated: %s", id, invalid.ID, invalid.Reason)
	}
	return ct.state().Learning(id), nil
}

func withHintIfNone(err error, hint string) error {
	var e *Error
	if errors.As(err, &e) && e.Hint == "" {
		e.Hint = hint
	}
	return err
}

// findLearning resolves an id (L3 or the recording event's id).
func (ct *ContinuityTx) findLearning(verb, id string) (*Learning, error) {
	l := ct.state().Learning(strings.TrimSpace(id))
	if l == nil {
		e := fault.New(ErrNotFound, "%s %s: no such learning", verb, id)
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
	if l.Status == StatusInvalidated {
		return nil, fault.New(ErrConflict, "invalidate %s: already invalidated", l.ID)
	}
	if err := checkText("invalidate: why", why, false); err != nil {
		return nil, withHintIfNone(err, "say what went wrong: --why TEXT")
	}
	ct.append(KindLearningInvalid, why, contData{ID: l.ID, Date: ct.day, Reason: "caused a problem"}, l.Event)
	var ids []string
	for _, m := range ct.state().Meta {
		ids = append(ids, m.ID)
	}
	mid := nextID("M", ids)
	ct.append(KindLearningMeta, why, contData{ID: mid, Date: ct.day, Affected: l.ID, Action: "invalidated"}, l.Event)
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
	if l.Status == StatusInvalidated {
		return nil, fault.New(ErrConflict, "correct %s: invalidated learnings are not read again; record a new one", l.ID)
	}
	if strings.TrimSpace(cause) == "" && strings.TrimSpace(prevention) == "" {
		return nil, fault.New(ErrInvalid, "correct %s: give the corrected --prevention or --cause", l.ID)
	}
	if err := checkText("correct: why", why, false); err != nil {
		return nil, withHintIfNone(err, "say what was wrong: --why TEXT")
	}
	ct.append(KindLearningCorrected, why, contData{ID: l.ID, Date: ct.day, Cause: cause, Prevention: prevention}, l.Event)
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
	if err := checkText("decide: decision", in.Decision, false); err != nil {
		return nil, withHintIfNone(err, "say what was decided: memvault decide --decision D --rationale R")
	}
	if err := checkText("decide: rationale", in.Rationale, false); err != nil {
		return nil, withHintIfNone(err, "say why: --rationale R")
	}
	c := ct.state()
	var old *Decision
	if in.Supersedes != "" {
		id := strings.TrimSpace(in.Supersedes)
		old = c.Decision(id)
		if old == nil {
			if c.Learning(id) != nil {
				return nil, fault.New(ErrInvalid, "decide: supersede %s: is a learning, not a decision", id)
			}
			e := fault.New(ErrNotFound, "decide: supersede %s: no such decision", id)
			return nil, e.WithHint("list decisions with: memvault continuity decisions --all")
		}
		if old.Status == StatusSuperseded {
			e := fault.New(ErrConflict, "decide: supersede %s: already superseded by %s", old.ID, old.SupersededBy)
			return nil, e.WithHint("supersede the newer decision instead: --supersedes %s", old.SupersededBy)
		}
		if in.Scope == "" {
			in.Scope = old.Scope
		}
	}
	sc, err := ParseScope(in.Scope)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, d := range c.Decisions {
		ids = append(ids, d.ID)
	}
	id := nextID("D", ids)
	d := contData{ID: id, Date: ct.day, Decision: in.Decision, Rationale: in.Rationale, Scope: sc.String()}
	var links []string
	if old != nil {
		d.Supersedes = old.ID
		links = []string{old.Event}
	}
	ct.append(KindDecisionRecorded, in.Decision, d, links...)
	if old != nil {
		ct.say("%s recorded [%s], supersedes %s", id, sc, old.ID)
	} else {
		ct.say("%s recorded [%s]", id, sc)
	}
	return ct.state().Decision(id), nil
}

// Goal sets the active goal, the phase, or both.
func (ct *ContinuityTx) Goal(text, phase string) error {
	if phase != "" && !slices.Contains(Phases, phase) {
		e := fault.New(ErrInvalid, "goal: phase %q: unknown", phase)
		return e.WithHint("use one of: %s", strings.Join(Phases, ", "))
	}
	if err := checkText("goal", text, phase != ""); err != nil {
		return withHintIfNone(err, "say what the goal is: memvault goal \"…\"")
	}
	ct.append(KindContinuityGoal, text, contData{Date: ct.day, Phase: phase})
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
	if err := checkText("next", text, false); err != nil {
		return withHintIfNone(err, "say what comes next: memvault next \"…\"")
	}
	ev := ct.append(KindContinuityNext, text, contData{Date: ct.day, First: first})
	ct.say("next action added (%s)", ev.ID)
	return nil
}

// Done records an accomplishment. arg may name a next action by its number
// in Next Actions, or repeat its text (compared after normalizeText): that
// action leaves the queue.
func (ct *ContinuityTx) Done(arg string) error {
	if err := checkText("done", arg, false); err != nil {
		return withHintIfNone(err, "say what was done, or give the number of a next action")
	}
	c := ct.state()
	text, links := arg, []string(nil)
	if n, err := strconv.Atoi(strings.TrimSpace(arg)); err == nil {
		if n < 1 || n > len(c.Next) {
			e := fault.New(ErrNotFound, "done: no next action number %d (there are %d)", n, len(c.Next))
			return e.WithHint("see them with: memvault continuity status")
		}
		text, links = c.Next[n-1].Text, []string{c.Next[n-1].ID}
	} else {
		for _, nx := range c.Next {
			if normalizeText(nx.Text) == normalizeText(arg) {
				links = []string{nx.ID}
				break
			}
		}
	}
	ct.append(KindContinuityDone, text, contData{Date: ct.day}, links...)
	if len(links) > 0 {
		ct.say("done; removed from next actions")
	} else {
		ct.say("done")
	}
	return nil
}

// Audit applies the rules as of the transaction's day. With dryRun it
// only reports. It writes nothing when nothing changed since the last
// audit, so running it at every session start is cheap.
func (ct *ContinuityTx) Audit(dryRun bool) *AuditReport {
	c := ct.state()
	rep := audit(c, ct.day)
	rep.DryRun = dryRun
	ct.audit = rep
	if dryRun || (len(rep.Actions) == 0 && strings.Join(rep.flagStrings(), ",") == c.auditKey) {
		return rep
	}
	for _, a := range rep.Actions {
		switch a.Action {
		case "archive":
			l := c.Learning(a.ID)
			ct.append(KindLearningArchived, a.Reason, contData{ID: a.ID, Date: ct.day, Reason: "ttl"}, l.Event)
		case "invalidate":
			l := c.Learning(a.ID)
			ct.append(KindLearningInvalid, a.Reason, contData{ID: a.ID, Date: ct.day, Reason: "conflict", By: a.By}, l.Event)
		case "supersede":
			d := c.Decision(a.ID)
			ct.append(KindDecisionSuperseed, a.Reason, contData{ID: a.ID, Date: ct.day, By: a.By}, d.Event)
		}
	}
	ct.append(KindContinuityAudited, fmt.Sprintf("audit as of %s: %d change(s), %d flag(s)", ct.day, len(rep.Actions), len(rep.Flags)),
		contData{Now: ct.day, Flags: rep.flagStrings()})
	rep.Written = true
	return rep
}

// SessionEndInput is what a harness hands over when a session ends.
type SessionEndInput struct {
	// Summary is the session's summary; control lines in it (NEXT:,
	// LEARNED:, DECISION:, BLOCKER:, DONE:) are recorded as such.
	Summary string
	Context []string // Working Context lines; nil keeps the last ones
	Files   []string // Files Being Modified; nil keeps the last ones
}

// SessionEnd updates the protocol from a session's summary: Just Completed
// (DONE: lines, else the summary's first line), Next Actions (NEXT:),
// learnings (LEARNED: error | cause | prevention, or error | prevention,
// with an optional leading [scope]), decisions (DECISION: decision |
// rationale), blockers (BLOCKER:). A control line that does not parse is
// skipped with a warning: a session end never fails on its summary.
func (ct *ContinuityTx) SessionEnd(in SessionEndInput) error {
	var done, next, other []string
	for _, raw := range strings.Split(in.Summary, "\n") {
		line := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(raw), "-*"))
		tag, rest, ok := strings.Cut(line, ":")
		rest = strings.TrimSpace(rest)
		switch tag = strings.ToUpper(strings.TrimSpace(tag)); {
		case !ok || strings.Contains(tag, " "):
			if line != "" {
				other = append(other, line)
			}
		case tag == "NEXT" && rest != "":
			next = append(next, rest)
		case tag == "DONE" && rest != "":
			done = append(done, rest)
		case tag == "BLOCKER" && rest != "":
			ct.Append(&Event{Kind: "blocker", Text: rest, Source: "hook"})
		case tag == "LEARNED":
			scope, body := "", rest
			if strings.HasPrefix(body, "[") {
				if i := strings.Index(body, "]"); i > 0 {
					scope, body = body[1:i], strings.TrimSpace(body[i+1:])
				}
			}
			parts := strings.Split(body, "|")
			in := LearnInput{Scope: scope}
			switch len(parts) {
			case 2:
				in.Error, in.Prevention = parts[0], parts[1]
			case 3:
				in.Error, in.Cause, in.Prevention = parts[0], parts[1], parts[2]
			}
			in.Error, in.Cause, in.Prevention = strings.TrimSpace(in.Error), strings.TrimSpace(in.Cause), strings.TrimSpace(in.Prevention)
			if _, err := ct.Learn(in); err != nil {
				ct.warn("LEARNED line skipped: %v (want LEARNED: [scope] error | cause | prevention)", err)
			}
		case tag == "DECISION":
			dec, why, _ := strings.Cut(rest, "|")
			if _, err := ct.Decide(DecideInput{Decision: strings.TrimSpace(dec), Rationale: strings.TrimSpace(why)}); err != nil {
				ct.warn("DECISION line skipped: %v (want DECISION: decision | rationale)", err)
			}
		default:
			other = append(other, line)
		}
	}
	if len(done) == 0 && len(other) > 0 {
		done = []string{clip(other[0], 200)}
	}
	for _, d := range done {
		if err := ct.Done(d); err != nil {
			ct.warn("DONE line skipped: %v", err)
		}
	}
	for _, n := range next {
		if err := ct.Next(n, false); err != nil {
			ct.warn("NEXT line skipped: %v", err)
		}
	}
	ct.append(KindContinuitySession, "session end", contData{Date: ct.day, Context: in.Context, Files: in.Files})
	return nil
}

// UpdateContinuityAtSessionEnd is what the hooks call when a session ends:
// it records the summary's control lines and refreshes CONTINUITY.md (a
// deferred refresh of CONTINUITY.md is retried here too).
func (v *Vault) UpdateContinuityAtSessionEnd(opts TxOptions, in SessionEndInput) (*ContinuityResult, error) {
	if opts.Command == "" {
		opts.Command = "session-end"
	}
	return v.UpdateContinuity(ContinuityOptions{TxOptions: opts, Trigger: "session-end"}, func(ct *ContinuityTx) error {
		return ct.SessionEnd(in)
	})
}
