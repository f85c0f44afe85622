package vault

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/memvault/memvault/merge"
	"github.com/memvault/memvault/vault/fault"
)

// The writers of the protocol. Every change goes through UpdateContinuity:
// one transaction that appends the protocol's events and then refreshes
// CONTINUITY.md the way heads are refreshed (lease, three-way merge with
// the last render as base, hand edits kept, conflicts recorded) and
// learnings-index.md, all in one commit.

// ContinuityConfig is the part of memvault.toml the protocol reads.
//
//	[budgets]
//	continuity_words = 500     # the cap of CONTINUITY.md
//	continuity_tokens = 700    # token budgets per category, for `continuity budget`
//	learnings_tokens = 1500
//	decisions_tokens = 500
//	index_tokens = 100         # also the size learnings-index.md is rendered to
//	memory_tokens = 1000
//	context_window = 200000
type ContinuityConfig struct {
	Words         int
	Budgets       map[string]int // category → tokens
	ContextWindow int
	Lease         time.Duration
}

// Budget categories, in the order `continuity budget` lists them.
var BudgetCategories = []string{"memory", "continuity", "learnings", "decisions", "index"}

// ContinuityConfig reads the protocol's settings.
func (v *Vault) ContinuityConfig() (ContinuityConfig, error) {
	data, err := os.ReadFile(filepath.Join(v.Root, configFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return ContinuityConfig{}, fault.IO("read "+configFile, err)
	}
	var f struct {
		Budgets struct {
			MemoryTokens     int `toml:"memory_tokens"`
			ContinuityWords  int `toml:"continuity_words"`
			ContinuityTokens int `toml:"continuity_tokens"`
			LearningsTokens  int `toml:"learnings_tokens"`
			DecisionsTokens  int `toml:"decisions_tokens"`
			IndexTokens      int `toml:"index_tokens"`
			ContextWindow    int `toml:"context_window"`
		} `toml:"budgets"`
	}
	if _, err := toml.Decode(string(data), &f); err != nil {
		return ContinuityConfig{}, &Error{Class: ErrInvalid, Msg: configFile + ": " + strings.ReplaceAll(err.Error(), "\n", " "), Err: err}
	}
	b := f.Budgets
	def := func(n, d int) int {
		if n <= 0 {
			return d
		}
		return n
	}
	hc, err := v.HeadsConfig()
	if err != nil {
		return ContinuityConfig{}, err
	}
	return ContinuityConfig{
		Words: def(b.ContinuityWords, 500),
		Budgets: map[string]int{"memory": def(b.MemoryTokens, DefaultMemoryTokens), "continuity": def(b.ContinuityTokens, 700),
			"learnings": def(b.LearningsTokens, 1500), "decisions": def(b.DecisionsTokens, 500), "index": def(b.IndexTokens, 100)},
		ContextWindow: def(b.ContextWindow, 200000),
		Lease:         hc.Lease,
	}, nil
}

// ContinuityOptions describe a change to the protocol's state.
type ContinuityOptions struct {
	TxOptions
	// Now is the day the change counts as made (--now): learnings and
	// decisions carry it as their date. Zero means the transaction's clock.
	Now time.Time
	// Trigger is recorded in head.rendered: a command name or session-end.
	Trigger string
}

// ContinuityResult is what a change did.
type ContinuityResult struct {
	Commit    string         `json:"commit,omitempty"`
	Events    []*Event       `json:"events"`
	Head      string         `json:"head_status"` // rendered, merged, unchanged, conflict, deferred, recreated
	Holder    *HeadLease     `json:"holder,omitempty"`
	Conflicts []string       `json:"conflict_sections,omitempty"`
	Rotated   int            `json:"rotated_lines,omitempty"`
	Omitted   map[string]int `json:"omitted,omitempty"`
	Messages  []string       `json:"messages"` // one line per thing done, for people
	Warnings  []string       `json:"warnings,omitempty"`
}

// ContinuityTx is a transaction of the protocol.
type ContinuityTx struct {
	*Tx
	day     string
	st      *contState  // the state before the transaction, through its cache
	cur     *Continuity // st's fold with the transaction's events applied, once asked for
	applied int         // how many of the transaction's events cur has
	err     error       // the state could not be read: the transaction fails
	res     *ContinuityResult
	audit   *AuditReport
	index   bool // write learnings-index.md even with no learnings
}

// WriteIndex makes the transaction write learnings-index.md even when there
// are no learnings yet (memvault continuity index).
func (ct *ContinuityTx) WriteIndex() { ct.index = true }

// Day is the date the transaction's changes count as made.
func (ct *ContinuityTx) Day() string { return ct.day }

// state is the ledger's fold with what this transaction appended so far,
// applied on top as they come. A state that cannot be read fails the
// transaction (UpdateContinuity checks ct.err); meanwhile it reads empty.
func (ct *ContinuityTx) state() *Continuity {
	if ct.cur == nil {
		c, err := ct.st.full()
		if err != nil {
			ct.err = err
			return newContinuity()
		}
		ct.cur = c
	}
	for ; ct.applied < len(ct.events); ct.applied++ {
		ct.cur.addEvent(ct.events[ct.applied])
	}
	return ct.cur
}

func (ct *ContinuityTx) say(format string, args ...any) {
	ct.res.Messages = append(ct.res.Messages, fmt.Sprintf(format, args...))
}

func (ct *ContinuityTx) warn(format string, args ...any) {
	ct.res.Warnings = append(ct.res.Warnings, fmt.Sprintf(format, args...))
}

func (ct *ContinuityTx) append(kind, text string, d any, links ...string) *Event {
	raw, _ := json.Marshal(d)
	return ct.Append(&Event{Kind: kind, Text: text, Data: raw, Links: links, Source: "cli"})
}

// LoadContinuity returns the protocol's state folded from the ledger,
// through its derived cache (continuity_state.go).
func (v *Vault) LoadContinuity() (*Continuity, error) {
	cfg, s, err := v.continuityConfigState()
	if err != nil {
		return nil, err
	}
	c, err := s.full()
	if err != nil {
		return nil, err
	}
	s.saveIfDirty(cfg)
	return c, nil
}

// UpdateContinuity runs fn in one transaction, then refreshes CONTINUITY.md
// and learnings-index.md in the same commit. The CONTINUITY.md lease is
// taken first: when someone else holds it (memvault edit), the events are
// still recorded and the file's refresh is deferred (head.deferred); the
// next change or session end retries it. If fn fails nothing is written.
func (v *Vault) UpdateContinuity(opts ContinuityOptions, fn func(*ContinuityTx) error) (*ContinuityResult, error) {
	if opts.Agent == "" {
		opts.Agent = v.Config.Agent
	}
	if opts.Command == "" {
		opts.Command = "continuity"
	}
	cfg, err := v.ContinuityConfig()
	if err != nil {
		return nil, err
	}
	rel := mustRel(ContinuityHead)
	lease, holder, took, err := v.AcquireHeadLease(rel, LeaseOwner{Agent: opts.Agent, Session: opts.Session, Command: opts.Command}, cfg.Lease)
	if err != nil {
		return nil, err
	}
	var res *ContinuityResult
	var ct *ContinuityTx
	var r *Result
	var edited map[string]bool
	if lease != nil {
		defer v.ReleaseHeadLease(lease)
		// A hand edit nobody committed is committed first, on its own, as
		// a head refresh does; but a command that is refused must leave
		// the vault as it was, so the command runs once without writing
		// before that commit is made.
		dirty, err := v.uncommitted(rel)
		if err != nil {
			return nil, err
		}
		if dirty {
			probe := func(ct *ContinuityTx) error {
				if err := fn(ct); err != nil {
					return err
				}
				if ct.err != nil {
					return ct.err
				}
				return errDryRun
			}
			if _, err := v.continuityTx(opts, &res, &ct, cfg, took, holder, probe); !errors.Is(err, errDryRun) {
				return nil, err
			}
			if edited, err = v.commitHandEdits(opts.TxOptions, []headTarget{{rel: rel}}, "continuity"); err != nil {
				return nil, err
			}
		}
	}
	// A person who saves CONTINUITY.md while it is being merged makes the
	// write fail rather than be overwritten: run the transaction again,
	// merging with what they saved.
	for attempt := 0; ; attempt++ {
		r, err = v.continuityTx(opts, &res, &ct, cfg, took, holder, fn)
		if !errors.Is(err, errChangedUnderfoot) || attempt == 4 {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	// What was committed is the next command's starting point.
	var final *Continuity
	if len(r.Events) > 0 {
		final = ct.state()
	}
	v.saveAfterWrite(ct.st, final, r.Events, cfg)
	if edited[ContinuityHead] {
		res.Messages = append([]string{"your uncommitted edit of " + ContinuityHead + " was committed first"}, res.Messages...)
	}
	res.Commit = r.Commit
	res.Events = r.Events
	if res.Events == nil {
		res.Events = []*Event{}
	}
	res.Warnings = append(res.Warnings, r.Warnings...)
	return res, nil
}

// errDryRun ends a transaction whose function succeeded without writing
// anything: UpdateContinuity's check that a command will not be refused.
var errDryRun = errors.New("dry run")

// continuityTx is UpdateContinuity's transaction: fn's events, then the
// refresh of CONTINUITY.md and learnings-index.md. It leaves the result and
// the transaction in *resp and *ctp.
func (v *Vault) continuityTx(opts ContinuityOptions, resp **ContinuityResult, ctp **ContinuityTx, cfg ContinuityConfig,
	took *Takeover, holder *HeadLease, fn func(*ContinuityTx) error) (*Result, error) {
	return v.Update(opts.TxOptions, func(tx *Tx) error {
		st, err := v.continuityState()
		if err != nil {
			return err
		}
		day := opts.Now
		if day.IsZero() {
			day = tx.Now()
		}
		*resp = &ContinuityResult{Events: []*Event{}, Messages: []string{}}
		*ctp = &ContinuityTx{Tx: tx, day: day.UTC().Format(dateLayout), st: st, res: *resp}
		ct := *ctp
		if err := fn(ct); err != nil {
			return err
		}
		if ct.err != nil {
			return ct.err
		}
		if took != nil {
			d, _ := json.Marshal(took)
			tx.Append(&Event{Kind: KindHeadTakeover, Source: "continuity", Data: d, Text: ContinuityHead + ": lease taken over: " + took.Reason})
		}
		if err := ct.refresh(cfg, opts.Trigger, holder); err != nil {
			return err
		}
		return ct.err
	})
}

// refresh renders CONTINUITY.md and merges it into the file; it also
// rewrites learnings-index.md when its content changed.
func (ct *ContinuityTx) refresh(cfg ContinuityConfig, trigger string, holder *HeadLease) error {
	v := ct.v
	if trigger == "" {
		trigger = ct.opts.Command
	}
	// Nothing appended yet: the cached summary has both views. Otherwise
	// they are rendered from the state with this transaction's events.
	var index []byte
	var doc *ContinuityDoc
	var hs headBook
	learnings := 0
	if len(ct.events) == 0 {
		sum, err := ct.st.summary(cfg.Budgets["index"], cfg.Words)
		if err != nil {
			return err
		}
		index, doc, hs, learnings = []byte(sum.Index), sum.doc(), ct.st.head, sum.Learnings
	} else {
		c := ct.state()
		index, doc, hs, learnings = renderLearningsIndex(c, cfg.Budgets["index"]), renderContinuity(c, cfg.Words), c.head, len(c.Learnings)
	}
	idxRel := mustRel(LearningsIndexFile)
	if old, err := os.ReadFile(v.abs(idxRel)); err != nil || !bytes.Equal(old, index) {
		if learnings > 0 || err == nil || ct.index {
			ct.WriteFile(idxRel, index)
		}
	}
	rel := mustRel(ContinuityHead)
	if holder != nil {
		ct.res.Head, ct.res.Holder = "deferred", holder
		deferHead(ct.Tx, rel, "", "continuity", trigger, holder, hs)
		return nil
	}
	ct.res.Omitted = doc.Omitted
	m, err := v.mergeInto(ct.Tx, headMerge{rel: rel, source: "continuity", trigger: trigger, theirs: doc.Bytes,
		size: map[string]any{"words": doc.Words}, book: hs, appendOnly: []string{SecCompleted},
		template: templateBase, fit: func(result []byte) []byte { return ct.fitCap(result, doc.Bytes, cfg.Words) }})
	if err != nil {
		return err
	}
	ct.res.Head, ct.res.Conflicts = m.status, m.sections
	return nil
}

// fitCap keeps CONTINUITY.md under its word cap. The render fits by
// construction, so only hand-written lines can push the file over: they
// move to the ledger (continuity.rotated), last first.
func (ct *ContinuityTx) fitCap(result, rendered []byte, capWords int) []byte {
	if countWords(string(result)) <= capWords {
		return result
	}
	result, moved := rotateHandLines(result, rendered, capWords)
	if len(moved) > 0 {
		ct.res.Rotated = len(moved)
		var texts []string
		for _, m := range moved {
			texts = append(texts, m["text"])
		}
		ct.append(KindContinuityRotated, strings.Join(texts, "\n"), map[string]any{"head": ContinuityHead, "lines": moved})
		ct.say("%d hand-written line(s) moved from %s to the ledger to keep it under %d words (memvault ledger --kind %s)",
			len(moved), ContinuityHead, capWords, KindContinuityRotated)
	}
	if n := countWords(string(result)); n > capWords {
		ct.warn("%s: %d words, over its cap of %d: the excess is in sections you marked memvault:keep", ContinuityHead, n, capWords)
	}
	return result
}

// templateBase is the base of the first merge of a file that was never
// rendered: the template it was made from, told apart by its blockers
// heading.
func templateBase(ours []byte) []byte {
	legacy, current := false, false
	for _, l := range strings.Split(string(ours), "\n") {
		switch strings.TrimSpace(strings.ReplaceAll(l, merge.KeepMarker, "")) {
		case "## Blockers":
			legacy = true
		case "## " + SecBlockers:
			current = true
		}
	}
	if legacy && !current {
		return []byte(legacyContinuityTemplate)
	}
	return []byte(continuityTemplate)
}

// refreshContinuityHead refreshes CONTINUITY.md inside a head refresh's
// transaction (a retry of a deferred refresh, from RunDeferred or memvault
// refresh), whose caller holds the file's lease and has committed any
// uncommitted hand edit already.
func (v *Vault) refreshContinuityHead(tx *Tx, trigger string) (*HeadOutcome, error) {
	cfg, st, err := v.continuityConfigState()
	if err != nil {
		return nil, err
	}
	pending := append([]string(nil), st.head.deferred...)
	ct := &ContinuityTx{Tx: tx, day: tx.Now().UTC().Format(dateLayout), st: st,
		res: &ContinuityResult{Events: []*Event{}, Messages: []string{}}}
	if err := ct.refresh(cfg, trigger, nil); err != nil {
		return nil, err
	}
	if ct.err != nil {
		return nil, ct.err
	}
	out := &HeadOutcome{Head: ContinuityHead, Status: ct.res.Head, Sections: ct.res.Conflicts}
	if out.Status != "unchanged" {
		out.Retried = pending
	}
	return out, nil
}

// rotateHandLines removes hand-written lines (lines the render does not
// have) from the bottom of doc up until it fits capWords, skipping
// headings and sections pinned with the keep marker. It returns the lines
// removed, with their section, for the ledger.
func rotateHandLines(doc, rendered []byte, capWords int) ([]byte, []map[string]string) {
	have := map[string]bool{}
	for _, l := range strings.Split(string(rendered), "\n") {
		have[strings.TrimSpace(l)] = true
	}
	lines := strings.Split(string(doc), "\n")
	section := make([]string, len(lines))
	pinned := make([]bool, len(lines))
	cur, pin := "", false
	for i, l := range lines {
		if strings.HasPrefix(l, "#") {
			cur = strings.TrimSpace(strings.ReplaceAll(strings.TrimLeft(l, "# "), merge.KeepMarker, ""))
			pin = strings.Contains(l, merge.KeepMarker)
		}
		section[i], pinned[i] = cur, pin
	}
	words := countWords(string(doc))
	drop := make([]bool, len(lines))
	var moved []map[string]string
	for i := len(lines) - 1; i >= 0 && words > capWords; i-- {
		t := strings.TrimSpace(lines[i])
		if t == "" || have[t] || pinned[i] || strings.HasPrefix(t, "#") || section[i] == "" {
			continue
		}
		drop[i] = true
		words -= countWords(t)
		moved = append(moved, map[string]string{"section": section[i], "text": lines[i]})
	}
	if len(moved) == 0 {
		return doc, nil
	}
	slices.Reverse(moved)
	var out []string
	for i, l := range lines {
		if !drop[i] {
			out = append(out, l)
		}
	}
	return []byte(strings.Join(out, "\n")), moved
}

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

// Phases of the protocol's header.
var Phases = []string{"planning", "executing", "testing", "deploying", "reviewing"}

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
