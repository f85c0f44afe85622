package continuity

import (
	"sort"

	"github.com/memvault/memvault/vault/codec"
	"github.com/memvault/memvault/vault/heads"

	"github.com/memvault/memvault/render"
	"github.com/memvault/memvault/vault"
)

// The protocol's derived state. Folding every protocol event of the ledger
// on each `memvault continuity status` costs far more than the 20 ms the
// command may take at 10k learnings (docs/PERFORMANCE.md), so the fold is
// a Derived view (derived.go), .state/continuity-state.bin. Past the key,
// the file holds:
//
//   - CONTINUITY.md's head bookkeeping, the last audit, and a summary
//     (counts, token sums, learnings-index.md and the render of
//     CONTINUITY.md for the budgets in memvault.toml), which is all that
//     status, budget and an update that changes nothing read;
//   - the whole fold in a compact binary form, decoded only when a command
//     needs the learnings themselves (listing, session start, a write).
//
// Events appended since the key that do not touch the protocol pass by;
// the others are folded on top of the decoded state (a supersede, a done
// or a close retires what it names as it is folded); a retraction
// rebuilds the state from the heads' folded rows, since it can withdraw
// any earlier event, corrections included. The view is
// not saved as it is loaded, since the summary is computed for the
// budgets of the command's configuration: a command saves it when it has
// them (saveIfDirty). A writer saves the state it committed, once it has
// checked that the lines appended since the key are exactly its own.

var contView = &vault.Derived[*contState]{
	Name:    "continuity-state",
	Version: 7, // 7: the audit's outcome as of a day, applied to what a session is shown (issue 34)
	Rebuild: func(v *vault.Vault, segs []vault.Segment, stamps []vault.SegStamp) (*contState, string, bool, error) {
		s, tip, err := foldContState(v)
		if err != nil {
			return nil, "", false, err
		}
		// A torn last line is not folded, but the stamps count its bytes.
		torn := len(segs) > 0 && vault.EndsTorn(v.Files(), v.SegPath(segs[len(segs)-1]), stamps[len(stamps)-1].Size)
		return s, tip, torn, nil
	},
	Fold:   foldContEvent,
	Encode: encodeContState,
	Decode: decodeContState,
}

// contSummary is what a reader of the protocol needs without the
// learnings themselves, computed for one set of budgets (sumKey).
type contSummary struct {
	Key         sumKey
	Learnings   int            // every learning, whatever its status
	Active      int            // active and corrected learnings
	Decisions   int            // active decisions
	LearnTokens int            // the active learnings as listed, one line each
	DecTokens   int            // the active decisions as listed
	IndexBudget int            //
	Index       string         // learnings-index.md for IndexBudget
	Words       int            //
	Render      string         // CONTINUITY.md as rendered for Words
	RenderWords int            //
	Omitted     map[string]int //
	// Root is what a session of the vault's own agent at the project's
	// root is shown of the learnings and decisions in scope (dir ""),
	// the audit's outcome applied: session start reads it without
	// decoding the fold.
	Root *Injection
	// Audit is the audit's outcome as of a day, which Root applies and
	// every session start reads (auditOutcome).
	Audit *auditOutcome
}

// sumKey is the budgets a summary is computed for.
type sumKey struct {
	Index, Words, Learnings, Decisions int
}

func keyOf(cfg ContinuityConfig) sumKey {
	return sumKey{Index: cfg.Budgets["index"], Words: cfg.Words, Learnings: cfg.Budgets["learnings"], Decisions: cfg.Budgets["decisions"]}
}

type contHeadJSON struct {
	Blob      string
	Rendered  bool
	Deferred  []string
	Tokens    []string
	Conflicts []string
}

// contState is the protocol's state as a command gets it: the summary at
// once, the fold decoded when asked for.
type contState struct {
	v         *vault.Vault
	key       vault.Key // what was folded; saved under it, if exact
	lastAudit string
	head      heads.HeadBook
	sum       *contSummary // for the state as it is, or nil
	body      []byte       // the encoded fold, until c is decoded
	c         *Continuity
	dirty     bool // worth writing back
}

// continuityConfigState is the protocol's settings and its derived state,
// what every continuity command starts from.
func continuityConfigState(v *vault.Vault) (ContinuityConfig, *contState, error) {
	cfg, err := loadContinuityConfig(v)
	if err != nil {
		return cfg, nil, err
	}
	st, err := continuityState(v)
	return cfg, st, err
}

// continuityState returns the protocol's state through its view.
func continuityState(v *vault.Vault) (*contState, error) {
	s, key, dirty, err := contView.Open(v)
	if err != nil {
		return nil, err
	}
	s.v, s.key, s.dirty = v, key, s.dirty || dirty
	return s, nil
}

// foldContState folds the protocol from the heads' folded rows. The
// stamps of its key were taken before the fold: if the ledger grew
// meanwhile, saving notices (Derived.Save stats the segments again) and
// leaves the file.
func foldContState(v *vault.Vault) (*contState, string, error) {
	st, tip, err := heads.FoldedState(v)
	if err != nil {
		return nil, "", err
	}
	c := foldContinuity(st.Rows, nil)
	return &contState{v: v, c: c, lastAudit: c.LastAudit, head: c.head, dirty: true}, tip, nil
}

// foldContEvent folds one appended event on top of the state.
func foldContEvent(s *contState, ev *vault.Event) (*contState, bool) {
	if ev.Kind == "retract" {
		return s, false // it may withdraw any earlier event: rebuild
	}
	if !touchesContinuity(ev) {
		return s, true
	}
	c := s.c
	if c == nil {
		var ok bool
		if c, ok = decodeContinuity(s.body); !ok {
			return s, false
		}
	}
	c.addEvent(ev)
	s.setFold(c)
	s.dirty = true
	return s, true
}

// setFold makes c the state: what was derived from the old one goes.
func (s *contState) setFold(c *Continuity) {
	s.c, s.body, s.sum = c, nil, nil
	s.lastAudit, s.head = c.LastAudit, c.head
}

// full returns the whole fold, decoding it on first use. A body that does
// not decode (its CRC-32 matched, so only a format mismatch) is rebuilt
// from the ledger.
func (s *contState) full() (*Continuity, error) {
	if s.c != nil {
		return s.c, nil
	}
	if c, ok := decodeContinuity(s.body); ok {
		s.c, s.body = c, nil
		return c, nil
	}
	v := s.v
	segs, stamps, err := v.SegmentStamps()
	if err != nil {
		return nil, err
	}
	r, tip, torn, err := contView.Rebuild(v, segs, stamps)
	if err != nil {
		return nil, err
	}
	*s = *r
	s.key = vault.Key{Tip: tip, Stamps: stamps, Exact: !torn}
	return s.c, nil
}

// summary returns the summary for an index budget and a word cap,
// computing it when the cached one was made for others.
func (s *contState) summary(cfg ContinuityConfig) (*contSummary, error) {
	day := today(s.v)
	if s.sum != nil && s.sum.Key == keyOf(cfg) && s.sum.Audit.holds(day) {
		return s.sum, nil
	}
	c, err := s.full()
	if err != nil {
		return nil, err
	}
	s.sum = summarize(c, cfg, day)
	s.dirty = true
	return s.sum, nil
}

// summarize computes what contSummary holds. The token count of each
// learning's line is kept with the learning until the learning changes, so
// after a write only the learnings it touched are formatted again: token
// counts add up line by line, since every line ends in a newline.
//
// The audit as of day is run too (its outcome, not its events): what it
// would take away is left out of Root. It holds until the clock changes
// it (auditOutcome.Changes), so a session start recomputes it at most on
// the days a learning runs out.
func summarize(c *Continuity, cfg ContinuityConfig, day string) *contSummary {
	indexBudget, words := cfg.Budgets["index"], cfg.Words
	s := &contSummary{Key: keyOf(cfg), Learnings: len(c.Learnings), IndexBudget: indexBudget, Words: words}
	for _, l := range c.Learnings {
		if l.Status != vault.StatusActive && l.Status != vault.StatusCorrected {
			continue
		}
		s.Active++
		if !l.tokOK {
			l.tok, l.tokOK = render.Tokens("- "+l.Line()+"\n"), true
		}
		s.LearnTokens += l.tok
	}
	for _, d := range c.Decisions {
		if d.Status == vault.StatusActive {
			s.Decisions++
			s.DecTokens += render.Tokens("- " + d.Line() + "\n")
		}
	}
	s.Index = string(renderLearningsIndex(c, indexBudget))
	doc := renderContinuity(c, words)
	s.Render, s.RenderWords = string(doc.Bytes), doc.Words
	if len(doc.Omitted) > 0 {
		s.Omitted = doc.Omitted
	}
	s.Audit = outcomeOf(c, audit(c, day))
	s.Root = inScope(c, FilterForDir(""), cfg, func(string) bool { return true }, s.Audit)
	return s
}

// doc is the summary's render of CONTINUITY.md as renderContinuity gives it.
func (sum *contSummary) doc() *ContinuityDoc {
	omitted := map[string]int{}
	for k, n := range sum.Omitted {
		omitted[k] = n
	}
	return &ContinuityDoc{Bytes: []byte(sum.Render), Words: sum.RenderWords, Cap: sum.Words, Omitted: omitted}
}

// saveIfDirty writes the state back when a reader or writer made it worth
// it, with the summary for cfg's budgets. It is derived data: a failure
// only costs a rebuild later.
func (s *contState) saveIfDirty(cfg ContinuityConfig) {
	if !s.dirty {
		return
	}
	if _, err := s.summary(cfg); err != nil {
		return
	}
	saveContState(s.v, s)
}

// saveContState writes the state under its key, once it has a summary.
func saveContState(v *vault.Vault, s *contState) {
	if s.sum == nil {
		return
	}
	if s.c != nil {
		s.body = encodeContinuity(s.c)
	}
	if s.body != nil && contView.Save(v, s, s.key) {
		s.dirty = false
	}
}

func encodeContState(e *codec.Encoder, s *contState) {
	e.Str(s.lastAudit)
	h := bookJSON(s.head)
	e.Str(h.Blob)
	e.Bool(h.Rendered)
	e.Strs(h.Deferred)
	e.Strs(h.Tokens)
	e.Strs(h.Conflicts)
	m := s.sum
	for _, n := range [...]int{m.Learnings, m.Active, m.Decisions, m.LearnTokens, m.DecTokens, m.IndexBudget, m.Words, m.RenderWords,
		m.Key.Index, m.Key.Words, m.Key.Learnings, m.Key.Decisions} {
		e.Int64(int64(n))
	}
	e.Str(m.Index)
	e.Str(m.Render)
	e.IntMap(m.Omitted)
	encodeInjection(e, m.Root)
	e.Str(m.Audit.Day)
	e.Str(m.Audit.Changes)
	e.Strs(m.Audit.Gone)
	e.Strs(m.Audit.Flags)
	e.Bytes(s.body)
}

// encodeInjection writes an injection: its rows, text and token count.
func encodeInjection(e *codec.Encoder, inj *Injection) {
	for _, rows := range [][]InjectedRow{inj.Learnings, inj.Decisions} {
		e.Int(len(rows))
		for _, r := range rows {
			e.Str(r.Line)
			e.Str(r.Event)
			e.Str(r.Text)
		}
	}
	e.Str(inj.Text)
	e.Int(inj.Tokens)
}

func decodeInjection(d *codec.Decoder) *Injection {
	inj := &Injection{}
	for _, rows := range []*[]InjectedRow{&inj.Learnings, &inj.Decisions} {
		*rows = make([]InjectedRow, d.Count())
		for i := range *rows {
			(*rows)[i] = InjectedRow{Line: d.Str(), Event: d.Str(), Text: d.Str()}
		}
	}
	inj.Text, inj.Tokens = d.Str(), d.Uvarint()
	return inj
}

// decodeContState reads the summary and keeps the fold's bytes, a slice
// of the file, for decodeContinuity when a command needs them.
func decodeContState(d *codec.Decoder) (*contState, bool) {
	s := &contState{lastAudit: d.Str()}
	var h contHeadJSON
	h.Blob, h.Rendered = d.Str(), d.Bool()
	h.Deferred, h.Tokens, h.Conflicts = d.Strs(), d.Strs(), d.Strs()
	s.head = h.state()
	m := &contSummary{}
	for _, n := range [...]*int{&m.Learnings, &m.Active, &m.Decisions, &m.LearnTokens, &m.DecTokens, &m.IndexBudget, &m.Words, &m.RenderWords,
		&m.Key.Index, &m.Key.Words, &m.Key.Learnings, &m.Key.Decisions} {
		*n = int(d.Int64())
	}
	m.Index, m.Render = d.Str(), d.Str()
	if om := d.IntMap(); len(om) > 0 {
		m.Omitted = om
	}
	m.Root = decodeInjection(d)
	m.Audit = &auditOutcome{Day: d.Str(), Changes: d.Str(), Gone: d.Strs(), Flags: d.Strs()}
	m.Audit.index()
	s.sum, s.body = m, d.Bytes()
	return s, !d.Failed() && s.body != nil
}

// saveAfterWrite saves the state a protocol transaction committed. The
// lines appended since the state's key must be exactly the transaction's
// events; otherwise someone else wrote too, and the next reader folds it
// all from the cache as it was.
func saveAfterWrite(v *vault.Vault, s *contState, c *Continuity, events []*vault.Event, cfg ContinuityConfig) {
	if len(events) == 0 {
		s.saveIfDirty(cfg)
		return
	}
	if !s.key.Exact || len(s.key.Stamps) == 0 {
		return
	}
	segs, stamps, err := v.SegmentStamps()
	if err != nil || !vault.StampsContinue(s.key.Stamps, stamps) {
		return
	}
	i := 0
	tip, torn, ok := v.AppendedSince(segs, stamps, s.key.Stamps, s.key.Tip, func(ev *vault.Event) bool {
		if i >= len(events) || ev.ID != events[i].ID {
			return false
		}
		i++
		return true
	})
	if !ok || torn || i != len(events) {
		return
	}
	s.setFold(c)
	s.key, s.dirty = vault.Key{Tip: tip, Stamps: stamps, Exact: true}, true
	s.saveIfDirty(cfg)
}

func bookJSON(h heads.HeadBook) contHeadJSON {
	j := contHeadJSON{Blob: h.Blob, Rendered: h.Rendered, Deferred: h.Deferred, Conflicts: h.Conflicts, Tokens: []string{}}
	for t := range h.Tokens {
		j.Tokens = append(j.Tokens, t)
	}
	sort.Strings(j.Tokens)
	return j
}

func (j contHeadJSON) state() heads.HeadBook {
	h := heads.HeadBook{Blob: j.Blob, Rendered: j.Rendered, Deferred: j.Deferred, Conflicts: j.Conflicts, Tokens: map[string]bool{}}
	for _, t := range j.Tokens {
		h.Tokens[t] = true
	}
	return h
}

// encodeContinuity writes the whole fold: strings as length and bytes,
// numbers as uvarints (none is negative).
func encodeContinuity(c *Continuity) []byte {
	b := codec.Encoder{B: make([]byte, 0, 256+300*len(c.Learnings))}
	str := func(ss ...string) {
		for _, s := range ss {
			b.Str(s)
		}
	}
	num := func(ns ...int) {
		for _, n := range ns {
			b.Int(max(n, 0))
		}
	}
	list := func(ss []string) {
		num(len(ss))
		str(ss...)
	}
	itemList := func(its []Item) {
		num(len(its))
		for _, it := range its {
			str(it.ID, it.Text, it.Date, it.Thread)
		}
	}
	str(c.Goal, c.Phase, c.Updated, c.LastAudit, c.auditKey)
	num(c.Iteration, c.seq)
	itemList(c.Next)
	itemList(c.Done)
	itemList(c.Blockers)
	itemList(c.Commitments)
	list(c.Context)
	list(c.Files)
	list(c.FileDays)
	num(len(c.Learnings))
	for _, l := range c.Learnings {
		str(l.ID, l.Event, l.Date, l.Error, l.Cause, l.Prevention, l.Scope, l.LastRelevant, l.Status, l.StatusBy, l.Reason, l.Thread, l.Agent)
		tok := 0
		if l.tokOK {
			tok = l.tok + 1
		}
		num(l.TTL, l.BaseTTL, l.ReinforceCount, l.seq, l.rank, tok)
		list(l.Flags)
	}
	num(len(c.Decisions))
	for _, d := range c.Decisions {
		str(d.ID, d.Event, d.Date, d.Decision, d.Rationale, d.Scope, d.Status, d.Supersedes, d.SupersededBy, d.Thread, d.Agent)
		num(d.seq, d.rank)
	}
	num(len(c.Meta))
	for _, m := range c.Meta {
		str(m.ID, m.Event, m.Date, m.Affected, m.Action, m.Reason)
	}
	h := bookJSON(c.head)
	str(h.Blob)
	num(map[bool]int{false: 0, true: 1}[h.Rendered])
	list(h.Deferred)
	list(h.Tokens)
	list(h.Conflicts)
	return b.B
}

// num reads a number (decoder.uv reads lengths, bounded by the block).
func num(d *codec.Decoder) int {
	if d.Failed() {
		return 0
	}
	x := d.Uint64()
	if x > 1<<40 {
		d.Fail()
		return 0
	}
	return int(x)
}

// decodeContinuity reads what encodeContinuity wrote; ok is false when it
// does not decode to the end. The learnings and decisions are allocated in
// one slab each, and every string is a slice of the body.
func decodeContinuity(body []byte) (*Continuity, bool) {
	if body == nil {
		return nil, false
	}
	d := codec.NewDecoder(body)
	count := d.Count
	list := func(keepNil bool) []string {
		n := count()
		if n == 0 && keepNil {
			return nil
		}
		out := make([]string, n)
		for i := range out {
			out[i] = d.Str()
		}
		return out
	}
	items := func() []Item {
		out := make([]Item, count())
		for i := range out {
			out[i] = Item{ID: d.Str(), Text: d.Str(), Date: d.Str(), Thread: d.Str()}
		}
		return out
	}
	c := newContinuity()
	c.Goal, c.Phase, c.Updated, c.LastAudit, c.auditKey = d.Str(), d.Str(), d.Str(), d.Str(), d.Str()
	c.Iteration, c.seq = num(d), num(d)
	c.Next, c.Done, c.Blockers, c.Commitments = items(), items(), items(), items()
	c.Context, c.Files, c.FileDays = list(false), list(false), list(false)
	ls := make([]Learning, count())
	c.Learnings = make([]*Learning, len(ls))
	c.learnings = make(map[string]*Learning, 2*len(ls))
	for i := range ls {
		l := &ls[i]
		l.ID, l.Event, l.Date, l.Error, l.Cause, l.Prevention = d.Str(), d.Str(), d.Str(), d.Str(), d.Str(), d.Str()
		l.Scope, l.LastRelevant, l.Status, l.StatusBy, l.Reason, l.Thread, l.Agent = d.Str(), d.Str(), d.Str(), d.Str(), d.Str(), d.Str(), d.Str()
		l.TTL, l.BaseTTL, l.ReinforceCount, l.seq, l.rank = num(d), num(d), num(d), num(d), num(d)
		if tok := num(d); tok > 0 {
			l.tok, l.tokOK = tok-1, true
		}
		l.Flags = list(true)
		c.Learnings[i] = l
		// The fold's map, rebuilt in the fold's order: the short id, then
		// the event id.
		c.learnings[l.ID] = l
		c.learnings[l.Event] = l
		noteShortID(l.ID, "L", &c.lastL)
	}
	ds := make([]Decision, count())
	c.Decisions = make([]*Decision, len(ds))
	c.decisions = make(map[string]*Decision, 2*len(ds))
	for i := range ds {
		dc := &ds[i]
		dc.ID, dc.Event, dc.Date, dc.Decision, dc.Rationale = d.Str(), d.Str(), d.Str(), d.Str(), d.Str()
		dc.Scope, dc.Status, dc.Supersedes, dc.SupersededBy, dc.Thread, dc.Agent = d.Str(), d.Str(), d.Str(), d.Str(), d.Str(), d.Str()
		dc.seq, dc.rank = num(d), num(d)
		c.Decisions[i] = dc
		c.decisions[dc.ID] = dc
		c.decisions[dc.Event] = dc
		noteShortID(dc.ID, "D", &c.lastD)
	}
	c.Meta = make([]*MetaLearning, count())
	for i := range c.Meta {
		c.Meta[i] = &MetaLearning{ID: d.Str(), Event: d.Str(), Date: d.Str(), Affected: d.Str(), Action: d.Str(), Reason: d.Str()}
	}
	var h contHeadJSON
	h.Blob = d.Str()
	h.Rendered = num(d) == 1
	h.Deferred, h.Tokens, h.Conflicts = list(true), list(true), list(true)
	c.head = h.state()
	if !d.AtEnd() {
		return nil, false
	}
	return c, true
}
