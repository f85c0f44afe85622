package vault

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/memvault/memvault/render"
	"github.com/memvault/memvault/vault/fileio"
)

// The protocol's derived state. Folding every protocol event of the ledger
// on each `memvault continuity status` costs far more than the 20 ms the
// command may take at 10k learnings (docs/PERFORMANCE.md), so the fold is
// kept in .state/continuity-state.bin, keyed like the heads' caches
// (headstate.go) by the stamp of every segment and the ledger tip it was
// folded up to. The file has two parts:
//
//   - a JSON header: the key, CONTINUITY.md's head bookkeeping, the last
//     audit, and a summary (counts, token sums, learnings-index.md and the
//     render of CONTINUITY.md for the budgets in memvault.toml), which is
//     all that status, budget and an update that changes nothing read;
//   - the whole fold in a compact binary form, checked by a CRC-32 and
//     decoded only when a command needs the learnings themselves (listing,
//     session start, a write).
//
// The stamps cannot tell a line rewritten in the open segment from lines
// appended to it (its size and time change either way), so the key also
// holds a CRC-32 of the bytes of the last segment that were folded; when
// that segment changed, its old bytes are checked first, and an edit
// rebuilds from the segments themselves, not from the heads' cache, which
// shares the blind spot.
//
// A reader takes the events appended since through appendedSince, the
// heads' reader: events that do not touch the protocol pass by, the others
// are folded on top of the decoded state, and a correction (retract,
// supersede, commitment.close) rebuilds the state from the heads' folded
// rows, since it can withdraw any earlier event. Anything else that does
// not match (a segment replaced or rewritten, a chain that does not
// continue, a file that does not decode) rebuilds too. A writer saves the
// state it committed, once it has checked that the lines appended since
// the key are exactly its own. Deleting .state/ is always safe.

const (
	contStateFile  = ".state/continuity-state.bin"
	contStateMagic = "memvault continuity-state 1\n"
)

// contSummary is what a reader of the protocol needs without the
// learnings themselves, computed for one index budget and one word cap.
type contSummary struct {
	Learnings   int            `json:"learnings"`       // every learning, whatever its status
	Active      int            `json:"active"`          // active and corrected learnings
	Decisions   int            `json:"decisions"`       // active decisions
	LearnTokens int            `json:"learn_tokens"`    // the active learnings as listed, one line each
	DecTokens   int            `json:"decision_tokens"` // the active decisions as listed
	IndexBudget int            `json:"index_budget"`
	Index       string         `json:"index"` // learnings-index.md for IndexBudget
	Words       int            `json:"words"`
	Render      string         `json:"render"` // CONTINUITY.md as rendered for Words
	RenderWords int            `json:"render_words"`
	Omitted     map[string]int `json:"omitted,omitempty"`
}

type contHeader struct {
	Tip       string       `json:"tip"`
	Stamps    []segStamp   `json:"stamps"`
	LastAudit string       `json:"last_audit"`
	Head      contHeadJSON `json:"head"`
	Sum       *contSummary `json:"summary"`
	Body      blockRef     `json:"body"`
	LastSum   uint32       `json:"last_crc"` // CRC-32 of the last segment's first Stamps[last].Size bytes
}

type contHeadJSON struct {
	Blob      string   `json:"blob"`
	Rendered  bool     `json:"rendered"`
	Deferred  []string `json:"deferred"`
	Tokens    []string `json:"tokens"`
	Conflicts []string `json:"conflicts"`
}

// contState is the protocol's state as a command gets it: the summary at
// once, the fold decoded when asked for.
type contState struct {
	v         *Vault
	tip       string
	stamps    []segStamp
	key       bool // tip and stamps say exactly what was folded: the state may be saved under them
	lastAudit string
	head      headBook
	sum       *contSummary // for the state as it is, or nil
	body      []byte       // the encoded fold, until c is decoded
	c         *Continuity
	dirty     bool // worth writing back
}

// continuityConfigState is the protocol's settings and its derived state,
// what every continuity command starts from.
func (v *Vault) continuityConfigState() (ContinuityConfig, *contState, error) {
	cfg, err := v.ContinuityConfig()
	if err != nil {
		return cfg, nil, err
	}
	st, err := v.continuityState()
	return cfg, st, err
}

// continuityState returns the protocol's state through its cache.
func (v *Vault) continuityState() (*contState, error) {
	segs, stamps, err := v.segmentStamps()
	if err != nil {
		return nil, err
	}
	s, ok, edited := v.loadContState(segs, stamps)
	switch {
	case ok:
		return s, nil
	case edited:
		return v.rebuildFromSegments(segs, stamps)
	}
	return v.rebuildContState(segs, stamps)
}

func (v *Vault) segmentStamps() ([]segment, []segStamp, error) {
	segs, _, err := listSegments(v.Root)
	if err != nil {
		return nil, nil, err
	}
	stamps := make([]segStamp, len(segs))
	for i, s := range segs {
		if stamps[i], err = stampOf(v.Root, s); err != nil {
			return nil, nil, err
		}
	}
	return segs, stamps, nil
}

// rebuildContState folds the protocol from the heads' folded rows. The
// stamps were taken before the fold: if the ledger grew meanwhile, saving
// notices (saveContState stats the segments again) and leaves the cache.
func (v *Vault) rebuildContState(segs []segment, stamps []segStamp) (*contState, error) {
	st, tip, err := v.foldedState()
	if err != nil {
		return nil, err
	}
	return v.newContState(st, tip, segs, stamps), nil
}

// rebuildFromSegments folds the protocol from the segments themselves, for
// a ledger edited in a way the stamps do not show.
func (v *Vault) rebuildFromSegments(segs []segment, stamps []segStamp) (*contState, error) {
	st, tip, _, err := v.foldAll(segs)
	if err != nil {
		return nil, err
	}
	return v.newContState(st, tip, segs, stamps), nil
}

func (v *Vault) newContState(st *State, tip string, segs []segment, stamps []segStamp) *contState {
	c := foldContinuity(st.Rows, nil)
	s := &contState{v: v, tip: tip, stamps: stamps, c: c, lastAudit: c.LastAudit, head: c.head, dirty: true}
	// A torn last line is not folded, but the stamps count its bytes.
	s.key = len(segs) > 0 && !endsTorn(v.segPath(segs[len(segs)-1]), stamps[len(stamps)-1].Size)
	return s
}

func (v *Vault) segPath(s segment) string {
	return filepath.Join(v.Root, filepath.FromSlash(s.String()))
}

// prefixSum is the CRC-32 of the first n bytes of a file.
func prefixSum(path string, n int64) (uint32, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	h := crc32.NewIEEE()
	if k, err := io.Copy(h, io.LimitReader(f, n)); err != nil || k != n {
		return 0, false
	}
	return h.Sum32(), true
}

func endsTorn(path string, size int64) bool {
	if size == 0 {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return true
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], size-1); err != nil {
		return true
	}
	return b[0] != '\n'
}

// loadContState reads the cache and brings it up to date with what the
// ledger gained since; ok is false when it has to be rebuilt, and edited
// says the last segment's old bytes changed.
func (v *Vault) loadContState(segs []segment, stamps []segStamp) (s *contState, ok, edited bool) {
	data, err := os.ReadFile(filepath.Join(v.Root, contStateFile))
	if err != nil {
		return nil, false, false
	}
	hdr, body, err := decodeContFile(data)
	if err != nil || hdr.Sum == nil || len(hdr.Stamps) == 0 || len(hdr.Stamps) > len(segs) || !stampsContinue(hdr.Stamps, stamps) {
		return nil, false, false
	}
	last := len(hdr.Stamps) - 1
	if old := hdr.Stamps[last]; stamps[last].Size != old.Size || stamps[last].Mtime != old.Mtime {
		if sum, ok := prefixSum(v.segPath(segs[last]), old.Size); !ok || sum != hdr.LastSum {
			return nil, false, true
		}
	}
	s = &contState{v: v, stamps: stamps, lastAudit: hdr.LastAudit, head: hdr.Head.state(), sum: hdr.Sum, body: body}
	var fresh []*Event
	seen := 0
	tip, torn, ok := v.appendedSince(segs, stamps, hdr.Stamps, hdr.Tip, func(ev *Event) bool {
		if correctionKinds[ev.Kind] {
			return false // it may withdraw any earlier event: rebuild
		}
		seen++
		if touchesContinuity(ev) {
			fresh = append(fresh, ev)
		}
		return true
	})
	if !ok {
		return nil, false, false
	}
	s.tip, s.key = tip, !torn
	if len(fresh) > 0 {
		c, ok := decodeContinuity(s.body)
		if !ok {
			return nil, false, false
		}
		for _, ev := range fresh {
			c.addEvent(ev)
		}
		s.setFold(c)
		s.dirty = true
	}
	// Events that pass the protocol by cost a parsed line each; rewrite the
	// file only when they add up or a segment closed.
	if seen > snapshotEvery || len(segs) > len(hdr.Stamps)+1 {
		s.dirty = true
	}
	return s, true, false
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
	segs, stamps, err := s.v.segmentStamps()
	if err != nil {
		return nil, err
	}
	r, err := s.v.rebuildContState(segs, stamps)
	if err != nil {
		return nil, err
	}
	*s = *r
	return s.c, nil
}

// summary returns the summary for an index budget and a word cap,
// computing it when the cached one was made for others.
func (s *contState) summary(indexBudget, words int) (*contSummary, error) {
	if s.sum != nil && s.sum.IndexBudget == indexBudget && s.sum.Words == words {
		return s.sum, nil
	}
	c, err := s.full()
	if err != nil {
		return nil, err
	}
	s.sum = summarize(c, indexBudget, words)
	s.dirty = true
	return s.sum, nil
}

// summarize computes what contSummary holds. The token count of each
// learning's line is kept with the learning until the learning changes, so
// after a write only the learnings it touched are formatted again: token
// counts add up line by line, since every line ends in a newline.
func summarize(c *Continuity, indexBudget, words int) *contSummary {
	s := &contSummary{Learnings: len(c.Learnings), IndexBudget: indexBudget, Words: words}
	for _, l := range c.Learnings {
		if l.Status != StatusActive && l.Status != StatusCorrected {
			continue
		}
		s.Active++
		if !l.tokOK {
			l.tok, l.tokOK = render.Tokens("- "+l.Line()+"\n"), true
		}
		s.LearnTokens += l.tok
	}
	for _, d := range c.Decisions {
		if d.Status == StatusActive {
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
	if _, err := s.summary(cfg.Budgets["index"], cfg.Words); err != nil {
		return
	}
	s.v.saveContState(s)
}

// saveContState writes the cache under the state's key. It stats the
// segments again first and refuses if anything moved: the state must not
// claim lines it did not fold.
func (v *Vault) saveContState(s *contState) {
	if !s.key || len(s.stamps) == 0 || s.sum == nil {
		return
	}
	for _, st := range s.stamps {
		cur, err := stampOf(v.Root, mustRel(st.Path).seg())
		if err != nil || cur != st {
			return
		}
	}
	last := s.stamps[len(s.stamps)-1]
	lastSum, ok := prefixSum(filepath.Join(v.Root, filepath.FromSlash(last.Path)), last.Size)
	if !ok {
		return
	}
	body := s.body
	if s.c != nil {
		body = encodeContinuity(s.c)
	}
	if body == nil {
		return
	}
	hdr := contHeader{Tip: s.tip, Stamps: s.stamps, LastAudit: s.lastAudit, Head: s.head.json(), Sum: s.sum,
		Body: blockRef{Len: len(body), Sum: crc32.ChecksumIEEE(body)}, LastSum: lastSum}
	hb, err := json.Marshal(hdr)
	if err != nil {
		return
	}
	var out bytes.Buffer
	out.Grow(len(contStateMagic) + binary.MaxVarintLen64 + len(hb) + len(body))
	out.WriteString(contStateMagic)
	putUvarint(&out, uint64(len(hb)))
	out.Write(hb)
	out.Write(body)
	if fileio.WriteAtomic(filepath.Join(v.Root, contStateFile), out.Bytes()) == nil {
		s.dirty = false
	}
}

// saveAfterWrite saves the state a protocol transaction committed. The
// lines appended since the state's key must be exactly the transaction's
// events; otherwise someone else wrote too, and the next reader folds it
// all from the cache as it was.
func (v *Vault) saveAfterWrite(s *contState, c *Continuity, events []*Event, cfg ContinuityConfig) {
	if len(events) == 0 {
		s.saveIfDirty(cfg)
		return
	}
	if !s.key || len(s.stamps) == 0 {
		return
	}
	segs, stamps, err := v.segmentStamps()
	if err != nil || !stampsContinue(s.stamps, stamps) {
		return
	}
	i := 0
	tip, torn, ok := v.appendedSince(segs, stamps, s.stamps, s.tip, func(ev *Event) bool {
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
	s.tip, s.stamps, s.dirty = tip, stamps, true
	s.saveIfDirty(cfg)
}

var errBadContState = errors.New("continuity state: malformed")

// decodeContFile splits the cache into its header and its body, checking
// the body's length and CRC-32.
func decodeContFile(data []byte) (contHeader, []byte, error) {
	var hdr contHeader
	if !bytes.HasPrefix(data, []byte(contStateMagic)) {
		return hdr, nil, errBadContState
	}
	rest := data[len(contStateMagic):]
	hl, n := binary.Uvarint(rest)
	if n <= 0 || hl > uint64(len(rest)-n) {
		return hdr, nil, errBadContState
	}
	if err := json.Unmarshal(rest[n:n+int(hl)], &hdr); err != nil {
		return hdr, nil, errBadContState
	}
	body := rest[n+int(hl):]
	if hdr.Body.Len != len(body) || crc32.ChecksumIEEE(body) != hdr.Body.Sum {
		return hdr, nil, errBadContState
	}
	return hdr, body, nil
}

func (h headBook) json() contHeadJSON {
	j := contHeadJSON{Blob: h.blob, Rendered: h.rendered, Deferred: h.deferred, Conflicts: h.conflicts, Tokens: []string{}}
	for t := range h.tokens {
		j.Tokens = append(j.Tokens, t)
	}
	sort.Strings(j.Tokens)
	return j
}

func (j contHeadJSON) state() headBook {
	h := headBook{blob: j.Blob, rendered: j.Rendered, deferred: j.Deferred, conflicts: j.Conflicts, tokens: map[string]bool{}}
	for _, t := range j.Tokens {
		h.tokens[t] = true
	}
	return h
}

// encodeContinuity writes the whole fold: strings as length and bytes,
// numbers as uvarints (none is negative).
func encodeContinuity(c *Continuity) []byte {
	var b bytes.Buffer
	b.Grow(256 + 300*len(c.Learnings))
	str := func(ss ...string) {
		for _, s := range ss {
			putString(&b, s)
		}
	}
	num := func(ns ...int) {
		for _, n := range ns {
			putUvarint(&b, uint64(max(n, 0)))
		}
	}
	list := func(ss []string) {
		num(len(ss))
		str(ss...)
	}
	itemList := func(its []Item) {
		num(len(its))
		for _, it := range its {
			str(it.ID, it.Text, it.Date)
		}
	}
	str(c.Goal, c.Phase, c.Updated, c.LastAudit, c.auditKey)
	num(c.Iteration, c.seq)
	itemList(c.Next)
	itemList(c.Done)
	itemList(c.Blockers)
	list(c.Context)
	list(c.Files)
	num(len(c.Learnings))
	for _, l := range c.Learnings {
		str(l.ID, l.Event, l.Date, l.Error, l.Cause, l.Prevention, l.Scope, l.LastRelevant, l.Status, l.StatusBy, l.Reason)
		tok := 0
		if l.tokOK {
			tok = l.tok + 1
		}
		num(l.TTL, l.BaseTTL, l.ReinforceCount, l.seq, l.rank, tok)
		list(l.Flags)
	}
	num(len(c.Decisions))
	for _, d := range c.Decisions {
		str(d.ID, d.Event, d.Date, d.Decision, d.Rationale, d.Scope, d.Status, d.Supersedes, d.SupersededBy)
		num(d.seq, d.rank)
	}
	num(len(c.Meta))
	for _, m := range c.Meta {
		str(m.ID, m.Event, m.Date, m.Affected, m.Action, m.Reason)
	}
	h := c.head.json()
	str(h.Blob)
	num(map[bool]int{false: 0, true: 1}[h.Rendered])
	list(h.Deferred)
	list(h.Tokens)
	list(h.Conflicts)
	return b.Bytes()
}

// num reads a number (decoder.uv reads lengths, bounded by the block).
func (d *decoder) num() int {
	if d.bad {
		return 0
	}
	x, n := uvarintString(d.s[d.pos:])
	if n <= 0 || x > 1<<40 {
		d.bad = true
		return 0
	}
	d.pos += n
	return int(x)
}

// decodeContinuity reads what encodeContinuity wrote; ok is false when it
// does not decode to the end. The learnings and decisions are allocated in
// one slab each, and every string is a slice of one copy of the body.
func decodeContinuity(body []byte) (*Continuity, bool) {
	if body == nil {
		return nil, false
	}
	d := &decoder{s: string(body)}
	count := func() int {
		n := d.uv()
		if n > len(d.s)-d.pos {
			d.bad = true
			return 0
		}
		return n
	}
	list := func(keepNil bool) []string {
		n := count()
		if n == 0 && keepNil {
			return nil
		}
		out := make([]string, n)
		for i := range out {
			out[i] = d.str()
		}
		return out
	}
	items := func() []Item {
		out := make([]Item, count())
		for i := range out {
			out[i] = Item{ID: d.str(), Text: d.str(), Date: d.str()}
		}
		return out
	}
	c := newContinuity()
	c.Goal, c.Phase, c.Updated, c.LastAudit, c.auditKey = d.str(), d.str(), d.str(), d.str(), d.str()
	c.Iteration, c.seq = d.num(), d.num()
	c.Next, c.Done, c.Blockers = items(), items(), items()
	c.Context, c.Files = list(false), list(false)
	ls := make([]Learning, count())
	c.Learnings = make([]*Learning, len(ls))
	c.learnings = make(map[string]*Learning, 2*len(ls))
	for i := range ls {
		l := &ls[i]
		l.ID, l.Event, l.Date, l.Error, l.Cause, l.Prevention = d.str(), d.str(), d.str(), d.str(), d.str(), d.str()
		l.Scope, l.LastRelevant, l.Status, l.StatusBy, l.Reason = d.str(), d.str(), d.str(), d.str(), d.str()
		l.TTL, l.BaseTTL, l.ReinforceCount, l.seq, l.rank = d.num(), d.num(), d.num(), d.num(), d.num()
		if tok := d.num(); tok > 0 {
			l.tok, l.tokOK = tok-1, true
		}
		l.Flags = list(true)
		c.Learnings[i] = l
		// The fold's map, rebuilt in the fold's order: the short id, then
		// the event id.
		c.learnings[l.ID] = l
		c.learnings[l.Event] = l
	}
	ds := make([]Decision, count())
	c.Decisions = make([]*Decision, len(ds))
	c.decisions = make(map[string]*Decision, 2*len(ds))
	for i := range ds {
		dc := &ds[i]
		dc.ID, dc.Event, dc.Date, dc.Decision, dc.Rationale = d.str(), d.str(), d.str(), d.str(), d.str()
		dc.Scope, dc.Status, dc.Supersedes, dc.SupersededBy = d.str(), d.str(), d.str(), d.str()
		dc.seq, dc.rank = d.num(), d.num()
		c.Decisions[i] = dc
		c.decisions[dc.ID] = dc
		c.decisions[dc.Event] = dc
	}
	c.Meta = make([]*MetaLearning, count())
	for i := range c.Meta {
		c.Meta[i] = &MetaLearning{ID: d.str(), Event: d.str(), Date: d.str(), Affected: d.str(), Action: d.str(), Reason: d.str()}
	}
	var h contHeadJSON
	h.Blob = d.str()
	h.Rendered = d.num() == 1
	h.Deferred, h.Tokens, h.Conflicts = list(true), list(true), list(true)
	c.head = h.state()
	if d.bad || d.pos != len(d.s) {
		return nil, false
	}
	return c, true
}
