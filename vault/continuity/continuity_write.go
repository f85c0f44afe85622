package continuity

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/memvault/memvault/vault/heads"

	"github.com/memvault/memvault/merge"
	"github.com/memvault/memvault/vault"
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
var budgetCategories = []string{"memory", "continuity", "learnings", "decisions", "index"}

// loadContinuityConfig is configOf the configuration the vault runs on.
func loadContinuityConfig(v *vault.Vault) (ContinuityConfig, error) {
	return configOf(&v.Config)
}

// configOf is the protocol's part of c, with its defaults filled in.
func configOf(c *vault.Config) (ContinuityConfig, error) {
	b := c.Budgets
	def := func(n, d int) int {
		if n <= 0 {
			return d
		}
		return n
	}
	hc, err := heads.ConfigOf(c)
	if err != nil {
		return ContinuityConfig{}, err
	}
	return ContinuityConfig{
		Words: def(b.ContinuityWords, 500),
		Budgets: map[string]int{"memory": def(b.MemoryTokens, heads.DefaultMemoryTokens), "continuity": def(b.ContinuityTokens, 700),
			"learnings": def(b.LearningsTokens, 1500), "decisions": def(b.DecisionsTokens, 500), "index": def(b.IndexTokens, 100)},
		ContextWindow: def(b.ContextWindow, 200000),
		Lease:         hc.Lease,
	}, nil
}

// ContinuityOptions describe a change to the protocol's state.
type ContinuityOptions struct {
	vault.TxOptions
	// Now is the day the change counts as made (--now): learnings and
	// decisions carry it as their date. Zero means the transaction's clock.
	Now time.Time
	// Trigger is recorded in head.rendered: a command name or session-end.
	Trigger string
	// Thread is the thread the verbs file new rows under (the command
	// line's current thread, docs/RETRIEVAL.md); "" files them as global.
	// An event about an earlier row takes that row's thread instead.
	Thread string
}

// ContinuityResult is what a change did.
type ContinuityResult struct {
	Commit    string           `json:"commit,omitempty"`
	Events    []*vault.Event   `json:"events"`
	Head      string           `json:"head_status"` // rendered, merged, unchanged, conflict, deferred, recreated, empty
	Holder    *heads.HeadLease `json:"holder,omitempty"`
	Conflicts []string         `json:"conflict_sections,omitempty"`
	Rotated   int              `json:"rotated_lines,omitempty"`
	Omitted   map[string]int   `json:"omitted,omitempty"`
	Messages  []string         `json:"messages"` // one line per thing done, for people
	Warnings  []string         `json:"warnings,omitempty"`
}

// ContinuityTx is a transaction of the protocol.
type ContinuityTx struct {
	*vault.Tx
	day    string
	st     *contState // the state before the transaction, through its cache
	err    error      // the state could not be read: the transaction fails
	res    *ContinuityResult
	audit  *AuditReport
	index  bool   // write learnings-index.md even with no learnings
	thread string // ContinuityOptions.Thread
}

// WriteIndex makes the transaction write learnings-index.md even when there
// are no learnings yet (memvault continuity index).
func (ct *ContinuityTx) WriteIndex() { ct.index = true }

// state is the ledger's fold with what this transaction appended so far,
// applied on top as they come. A state that cannot be read fails the
// transaction (UpdateContinuity checks ct.err); meanwhile it reads empty.
func (ct *ContinuityTx) state() *Continuity {
	c, err := TxContinuity(ct.Tx, ct.st)
	if err != nil && ct.err == nil {
		ct.err = err
	}
	return c
}

// txContinuity is the protocol's fold as a transaction sees it: the
// ledger's, with the transaction's own events applied as they come. A
// transaction keeps it in its slot under contSlot.
type txContinuity struct {
	st      *contState
	cur     *Continuity
	applied int
	err     error
}

// contSlot is the key of a transaction's txContinuity.
type contSlot struct{}

// Continuity returns the protocol's fold with the transaction's events
// applied; st, when not nil, is the derived state to start from. Control
// lines read it as the CLI verbs do, so a LEARNED: line reinforces the
// learning it repeats and a DONE: line finds the next action it closes.
func TxContinuity(tx *vault.Tx, st *contState) (*Continuity, error) {
	tc := tx.Slot(contSlot{}, func() any { return &txContinuity{st: st} }).(*txContinuity)
	if tc.err != nil {
		return newContinuity(), tc.err
	}
	if tc.cur == nil {
		if tc.st == nil {
			if tc.st, tc.err = continuityState(tx.Vault()); tc.err != nil {
				return newContinuity(), tc.err
			}
		}
		if tc.cur, tc.err = tc.st.full(); tc.err != nil {
			return newContinuity(), tc.err
		}
	}
	for evs := tx.Events(); tc.applied < len(evs); tc.applied++ {
		tc.cur.addEvent(evs[tc.applied])
	}
	return tc.cur, nil
}

func (ct *ContinuityTx) say(format string, args ...any) {
	ct.res.Messages = append(ct.res.Messages, fmt.Sprintf(format, args...))
}

func (ct *ContinuityTx) warn(format string, args ...any) {
	ct.res.Warnings = append(ct.res.Warnings, fmt.Sprintf(format, args...))
}

func (ct *ContinuityTx) append(kind, text string, d any, links ...string) *vault.Event {
	return ct.appendEvent(protocolEvent(kind, text, d, links...))
}

// appendEvent appends an event of a protocol verb, with the transaction's
// source (the command line's, or the MCP server's).
// An event about an earlier row takes that row's thread, so the thread
// head that shows the row is refreshed (a global row's stays global); a
// new row takes the transaction's thread.
func (ct *ContinuityTx) appendEvent(ev *vault.Event) *vault.Event {
	ev.Source = ct.Source()
	if ev.Thread == "" {
		if len(ev.Links) > 0 {
			ev.Thread = ct.state().ThreadOf(ev.Links[0])
		} else {
			ev.Thread = ct.thread
		}
	}
	return ct.Append(ev)
}

// LoadContinuity returns the protocol's state folded from the ledger,
// through its derived cache (continuity_state.go).
func LoadContinuity(v *vault.Vault) (*Continuity, error) {
	cfg, s, err := continuityConfigState(v)
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
func UpdateContinuity(v *vault.Vault, opts ContinuityOptions, fn func(*ContinuityTx) error) (*ContinuityResult, error) {
	if opts.Agent == "" {
		opts.Agent = v.Config.Agent
	}
	if opts.Command == "" {
		opts.Command = "continuity"
	}
	if opts.Thread != "" {
		th, err := vault.ParseThread(opts.Thread)
		if err != nil {
			return nil, err
		}
		opts.Thread = th.String()
	}
	cfg, err := loadContinuityConfig(v)
	if err != nil {
		return nil, err
	}
	rel := vault.MustRel(vault.ContinuityHead)
	lease, holder, took, err := heads.AcquireHeadLease(v, rel, heads.LeaseOwner{Agent: opts.Agent, Session: opts.Session, Command: opts.Command}, cfg.Lease)
	if err != nil {
		return nil, err
	}
	var res *ContinuityResult
	var ct *ContinuityTx
	var r *vault.Result
	var edited map[string]bool
	var redacted []string // hand edits whose credentials were redacted
	if lease != nil {
		defer heads.ReleaseHeadLease(v, lease)
		// A hand edit nobody committed is committed first, on its own, as
		// a head refresh does; but a command that is refused must leave
		// the vault as it was, so the command runs once without writing
		// before that commit is made.
		dirty, err := heads.Uncommitted(v, rel)
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
			if _, err := continuityTx(v, opts, &res, &ct, cfg, took, holder, probe); !errors.Is(err, errDryRun) {
				return nil, err
			}
			if edited, redacted, err = heads.CommitHandEdits(v, opts.TxOptions, []heads.HeadTarget{{Rel: rel}}, "continuity"); err != nil {
				return nil, err
			}
		}
	}
	// A person who saves CONTINUITY.md while it is being merged makes the
	// write fail rather than be overwritten: run the transaction again,
	// merging with what they saved.
	err = heads.RetrySaves(func() (err error) {
		r, err = continuityTx(v, opts, &res, &ct, cfg, took, holder, fn)
		return err
	})
	if err != nil {
		return nil, err
	}
	// What was committed is the next command's starting point.
	var final *Continuity
	if len(r.Events) > 0 {
		final = ct.state()
	}
	saveAfterWrite(v, ct.st, final, r.Events, cfg)
	if edited[vault.ContinuityHead] {
		res.Messages = append([]string{"your uncommitted edit of " + vault.ContinuityHead + " was committed first"}, res.Messages...)
	}
	res.Commit = r.Commit
	res.Events = r.Events
	if res.Events == nil {
		res.Events = []*vault.Event{}
	}
	res.Warnings = append(append(res.Warnings, redacted...), r.Warnings...)
	return res, nil
}

// errDryRun ends a transaction whose function succeeded without writing
// anything: UpdateContinuity's check that a command will not be refused.
var errDryRun = errors.New("dry run")

// continuityTx is UpdateContinuity's transaction: fn's events, then the
// refresh of CONTINUITY.md and learnings-index.md. It leaves the result and
// the transaction in *resp and *ctp.
func continuityTx(v *vault.Vault, opts ContinuityOptions, resp **ContinuityResult, ctp **ContinuityTx, cfg ContinuityConfig,
	took *heads.Takeover, holder *heads.HeadLease, fn func(*ContinuityTx) error) (*vault.Result, error) {
	return v.Update(opts.TxOptions, func(tx *vault.Tx) error {
		st, err := continuityState(v)
		if err != nil {
			return err
		}
		day := opts.Now
		if day.IsZero() {
			day = tx.Now()
		}
		*resp = &ContinuityResult{Events: []*vault.Event{}, Messages: []string{}}
		*ctp = &ContinuityTx{Tx: tx, day: day.UTC().Format(dateLayout), st: st, res: *resp, thread: opts.Thread}
		ct := *ctp
		if err := fn(ct); err != nil {
			return err
		}
		if ct.err != nil {
			return ct.err
		}
		if took != nil {
			d, _ := json.Marshal(took)
			tx.Append(&vault.Event{Kind: vault.KindHeadTakeover, Source: "continuity", Data: d, Text: vault.ContinuityHead + ": lease taken over: " + took.Reason})
		}
		if err := ct.refresh(cfg, opts.Trigger, holder); err != nil {
			return err
		}
		return ct.err
	})
}

// refresh renders CONTINUITY.md and merges it into the file; it also
// rewrites learnings-index.md when its content changed.
func (ct *ContinuityTx) refresh(cfg ContinuityConfig, trigger string, holder *heads.HeadLease) error {
	v := ct.Vault()
	if trigger == "" {
		trigger = ct.Command()
	}
	// Nothing appended yet: the cached summary has both views. Otherwise
	// they are rendered from the state with this transaction's events.
	var index []byte
	var doc *ContinuityDoc
	var hs heads.HeadBook
	learnings := 0
	if len(ct.Events()) == 0 {
		sum, err := ct.st.summary(cfg)
		if err != nil {
			return err
		}
		index, doc, hs, learnings = []byte(sum.Index), sum.doc(), ct.st.head, sum.Learnings
	} else {
		c := ct.state()
		index, doc, hs, learnings = renderLearningsIndex(c, cfg.Budgets["index"]), renderContinuity(c, cfg.Words), c.head, len(c.Learnings)
	}
	idxRel := vault.MustRel(LearningsIndexFile)
	if old, err := v.Files().ReadFile(v.Abs(idxRel)); err != nil || !bytes.Equal(old, index) {
		if learnings > 0 || err == nil || ct.index {
			ct.WriteFile(idxRel, index)
		}
	}
	rel := vault.MustRel(vault.ContinuityHead)
	if holder != nil {
		ct.res.Head, ct.res.Holder = "deferred", holder
		heads.DeferHead(ct.Tx, rel, "", "continuity", trigger, holder, hs)
		return nil
	}
	ct.res.Omitted = doc.Omitted
	m, err := heads.MergeInto(v, ct.Tx, heads.HeadMerge{Rel: rel, Source: "continuity", Trigger: trigger, Theirs: doc.Bytes,
		Size: map[string]any{"words": doc.Words}, Book: hs, AppendOnly: []string{SecCompleted},
		Template: templateBase, Fit: func(result []byte) []byte { return ct.fitCap(result, doc.Bytes, cfg.Words) }})
	if err != nil {
		return err
	}
	ct.res.Head, ct.res.Conflicts = m.Status, m.Sections
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
		ct.append(vault.KindContinuityRotated, strings.Join(texts, "\n"), map[string]any{"head": vault.ContinuityHead, "lines": moved})
		ct.say("%d hand-written line(s) moved from %s to the ledger to keep it under %d words (memvault ledger --kind %s)",
			len(moved), vault.ContinuityHead, capWords, vault.KindContinuityRotated)
	}
	if n := countWords(string(result)); n > capWords {
		ct.warn("%s: %d words, over its cap of %d: the excess is in sections you marked memvault:keep", vault.ContinuityHead, n, capWords)
	}
	return result
}

// templateBase is the base of the first merge of a file that was never
// rendered: the template it was made from, told apart by its blockers
// heading and by the "- none" lines of the second one.
func templateBase(ours []byte) []byte {
	legacy, current, none := false, false, false
	for _, l := range strings.Split(string(ours), "\n") {
		switch strings.TrimSpace(strings.ReplaceAll(l, merge.KeepMarker, "")) {
		case "## Blockers":
			legacy = true
		case "## " + SecBlockers:
			current = true
		case "- none", "- none: set one with memvault goal", "Current Iteration: 0":
			none = true
		}
	}
	switch {
	case legacy && !current:
		return []byte(legacyContinuityTemplate)
	case none:
		return []byte(noneContinuityTemplate)
	}
	return Template()
}

// RefreshHead refreshes CONTINUITY.md inside a head refresh's
// transaction (a retry of a deferred refresh, from RunDeferred or memvault
// refresh), whose caller holds the file's lease and has committed any
// uncommitted hand edit already.
func RefreshHead(v *vault.Vault, tx *vault.Tx, trigger string) (*heads.HeadOutcome, error) {
	cfg, st, err := continuityConfigState(v)
	if err != nil {
		return nil, err
	}
	pending := append([]string(nil), st.head.Deferred...)
	ct := &ContinuityTx{Tx: tx, day: tx.Now().UTC().Format(dateLayout), st: st,
		res: &ContinuityResult{Events: []*vault.Event{}, Messages: []string{}}}
	if err := ct.refresh(cfg, trigger, nil); err != nil {
		return nil, err
	}
	if ct.err != nil {
		return nil, ct.err
	}
	out := &heads.HeadOutcome{Head: vault.ContinuityHead, Status: ct.res.Head, Sections: ct.res.Conflicts}
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

// Phases of the protocol's header.
var Phases = []string{"planning", "executing", "testing", "deploying", "reviewing"}
