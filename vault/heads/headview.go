package heads

import (
	"sort"
	"strings"

	"github.com/memvault/memvault/render"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/codec"
)

// The prepared view. Decoding 100k folded rows costs more than a render
// may, and a render shows a few hundred of them. So what the heads are
// rendered from is a Derived view too (derived.go), .state/heads-view.bin:
// each section's candidates ranked and cut at the row cap the renderer
// applies (render.RowCap of the budget), every thread's summary, the
// nodes, and the heads' bookkeeping (buildView's output). A thread head's
// candidates, and the session records, are blocks in the file's tail,
// read and decoded only when that head is rendered or a new row of its
// thread arrives, each checked against its own CRC-32.
//
// New lines are applied on top one by one: a new row ranks first in its
// sections, or last in a queue (render.Queue), so a render after one event costs one parsed line. A
// correction (retract, supersede, commitment.close) can bring back rows
// below the cap, so it rebuilds the view from the folded rows; so do other
// budgets than the view was cut for.

// HeadViewFor returns the Derived view for the row caps of cfg: a file
// cut for other caps does not decode, and is rebuilt.
func HeadViewFor(cfg HeadsConfig) *vault.Derived[*viewCache] {
	memCap, threadCap := render.RowCap(cfg.MemoryTokens), render.RowCap(cfg.ThreadTokens)
	return &vault.Derived[*viewCache]{
		Name:    "heads-view",
		Version: 6, // 6: open items (next, blocker, commitment.open) are queues, oldest first
		Rebuild: func(v *vault.Vault, segs []vault.Segment, stamps []vault.SegStamp) (*viewCache, string, bool, error) {
			st, tip, err := FoldedState(v)
			if err != nil {
				return nil, "", false, err
			}
			// A torn last line is not folded, but the stamps count its bytes.
			torn := len(segs) > 0 && vault.EndsTorn(v.Files(), v.SegPath(segs[len(segs)-1]), stamps[len(stamps)-1].Size)
			return newViewCache(st, cfg), tip, torn, nil
		},
		Fold: func(vc *viewCache, ev *vault.Event) (*viewCache, bool) {
			if vault.CorrectionKinds[vault.CanonicalKind(ev.Kind)] && len(ev.Links) > 0 {
				return vc, false // a correction can bring back rows below the cap: rebuild
			}
			vc.apply(ev)
			return vc, !vc.bad
		},
		Encode: encodeView,
		Decode: func(d *codec.Decoder) (*viewCache, bool) { return decodeView(d, memCap, threadCap) },
	}
}

// viewCache is buildView's output with the rows prepared for rendering.
type viewCache struct {
	seq        int // position of the next row
	memCap     int
	threadCap  int
	lastMemory int
	threads    []string
	seen       map[string]bool
	threadLast map[string]int
	heads      map[string]*HeadState
	mem        *render.MemoryParts
	sums       map[string]*render.ThreadSummary
	parts      map[string]*render.ThreadParts // decoded thread blocks
	// src reads the blocks not decoded yet from the file's tail.
	src       *codec.Decoder
	blocks    map[string]codec.TailRef
	sessBlock codec.TailRef
	// sessions are the session records (one session, the threads it wrote
	// content rows to), those of the file's block and those applied on
	// top; sessAdded are the latter. A session may have several records.
	sessions  map[string]map[string]bool // the sessions looked up so far
	sessAdded map[string]map[string]bool
	allSess   map[string]map[string]bool // every session, when built from rows
	bad       bool                       // a block did not decode
	sessBad   bool
	// fallback prepares a thread from the ledger when its block is bad.
	fallback func(key string) *render.ThreadParts
}

// HeadViewOf returns the view heads are rendered from: the prepared view
// through its cache, or with explain the full fold (Explain lists every
// row left out, which the prepared view only counts).
func HeadViewOf(v *vault.Vault, cfg HeadsConfig, explain bool) (*HeadView, error) {
	if explain {
		st, _, err := FoldedState(v)
		if err != nil {
			return nil, err
		}
		vw := BuildView(st, cfg)
		vw.input.Explain = true
		return vw, nil
	}
	vc, err := PreparedView(v, cfg)
	if err != nil {
		return nil, err
	}
	return vc.View(cfg), nil
}

func (vc *viewCache) View(cfg HeadsConfig) *HeadView {
	vw := &HeadView{Heads: vc.heads, Threads: vc.threads, ThreadLast: vc.threadLast,
		LastMemory: vc.lastMemory, cache: vc}
	vw.input.Threads = cfg.Threads
	vw.input.MemoryTokens = cfg.MemoryTokens
	vw.input.ThreadTokens = cfg.ThreadTokens
	return vw
}

// PreparedView loads the prepared view and applies what the ledger gained
// since; anything it cannot apply rebuilds it from the folded rows.
func PreparedView(v *vault.Vault, cfg HeadsConfig) (*viewCache, error) {
	vc, _, err := HeadViewFor(cfg).Load(v)
	if err != nil {
		return nil, err
	}
	vc.fallback = func(key string) *render.ThreadParts {
		st, _, err := FoldedState(v)
		if err != nil {
			return &render.ThreadParts{}
		}
		return render.PrepareThread(BuildView(st, cfg).input, key)
	}
	return vc, nil
}

// newViewCache prepares the full fold.
func newViewCache(st *vault.State, cfg HeadsConfig) *viewCache {
	vw := BuildView(st, cfg)
	in := vw.input
	in.Explain = false
	vc := &viewCache{seq: len(st.Rows), memCap: render.RowCap(cfg.MemoryTokens), threadCap: render.RowCap(cfg.ThreadTokens),
		lastMemory: vw.LastMemory, threads: vw.Threads, threadLast: vw.ThreadLast, heads: vw.Heads,
		mem: render.PrepareMemory(in), parts: render.PrepareThreads(in), allSess: vw.sessionOf}
	vc.index()
	for k, p := range vc.parts {
		p.Summary = vc.sums[k]
	}
	return vc
}

// index builds what the cache derives from its other fields.
func (vc *viewCache) index() {
	vc.seen = make(map[string]bool, len(vc.threads))
	for _, t := range vc.threads {
		vc.seen[t] = true
	}
	vc.sums = make(map[string]*render.ThreadSummary, len(vc.mem.Threads))
	for _, s := range vc.mem.Threads {
		vc.sums[s.Key] = s
	}
	if vc.parts == nil {
		vc.parts = map[string]*render.ThreadParts{}
	}
}

// thread returns the parts of a thread head, decoding its block if needed.
func (vc *viewCache) thread(key string) *render.ThreadParts {
	if p := vc.parts[key]; p != nil {
		return p
	}
	p := &render.ThreadParts{}
	if ref, ok := vc.blocks[key]; ok {
		d, ok := vc.block(ref)
		if ok {
			for k := range p.Sections {
				p.Sections[k] = ranked(d)
			}
			p.Nodes = nodes(d)
		}
		if !ok || !d.AtEnd() {
			// The file went bad under us (it is checked when opened): fold
			// the ledger rather than render from nothing. While the view is
			// still being loaded there is no fallback yet; the load sees
			// vc.bad and rebuilds the view.
			vc.bad = true
			if vc.fallback != nil {
				p = vc.fallback(key)
			} else {
				p = &render.ThreadParts{}
			}
		}
	}
	p.Summary = vc.sums[key]
	vc.parts[key] = p
	return p
}

// raw reads a block of the file's tail and checks its sum.
func (vc *viewCache) raw(ref codec.TailRef) ([]byte, bool) {
	if vc.src == nil {
		return nil, false
	}
	return vc.src.TailBlock(ref)
}

func (vc *viewCache) block(ref codec.TailRef) (*codec.Decoder, bool) {
	b, ok := vc.raw(ref)
	if !ok {
		return nil, false
	}
	return codec.NewDecoder(b), true
}

// sessionWrote reports whether a session wrote content rows to a thread.
func (vc *viewCache) sessionWrote(session, thread string) bool {
	if vc.allSess != nil {
		return vc.allSess[session][thread]
	}
	if vc.sessAdded[session][thread] || vc.sessBad {
		return true
	}
	if vc.sessions == nil {
		vc.sessions = map[string]map[string]bool{}
	}
	m, ok := vc.sessions[session]
	if !ok {
		m = map[string]bool{}
		vc.sessions[session] = m
		if vc.sessBlock.Len > 0 {
			d, ok := vc.block(vc.sessBlock)
			if !ok {
				// Unreadable: say yes, which at worst refreshes a head
				// that did not need it.
				vc.bad, vc.sessBad = true, true
				return true
			}
			for ok && d.More() {
				name := d.Str()
				n := d.Uvarint()
				for j := 0; j < n && !d.Failed(); j++ {
					if t := d.Str(); name == session {
						m[t] = true
					}
				}
			}
			if d.Failed() {
				vc.bad, vc.sessBad = true, true
				return true
			}
		}
	}
	return m[thread]
}

// sessionRecords encodes session records, sorted.
func sessionRecords(e *codec.Encoder, m map[string]map[string]bool) {
	names := make([]string, 0, len(m))
	for s := range m {
		names = append(names, s)
	}
	sort.Strings(names)
	for _, s := range names {
		ts := make([]string, 0, len(m[s]))
		for t := range m[s] {
			ts = append(ts, t)
		}
		sort.Strings(ts)
		e.Str(s)
		e.Strs(ts)
	}
}

// apply adds one row that corrects nothing, as buildView would have.
func (vc *viewCache) apply(ev *vault.Event) {
	r := &vault.Row{Event: ev}
	i := vc.seq
	vc.seq++
	if r.Thread != "" && !vc.seen[r.Thread] {
		vc.seen[r.Thread] = true
		vc.threads = append(vc.threads, r.Thread)
	}
	kind := r.EffectiveKind()
	switch {
	case ContentKinds[kind]:
		if r.Thread != "" {
			m := vc.sessAdded
			if vc.allSess != nil {
				m = vc.allSess
			} else if m == nil {
				m = map[string]map[string]bool{}
				vc.sessAdded = m
			}
			if m[r.Session] == nil {
				m[r.Session] = map[string]bool{}
			}
			m[r.Session][r.Thread] = true
			vc.threadLast[r.Thread] = i
		}
		vc.lastMemory = i
		it := itemOf(r, kind)
		if k := render.MemorySection(&it); k >= 0 {
			place(&vc.mem.Sections[k], it, vc.memCap)
		}
		if r.Thread != "" {
			p := vc.thread(r.Thread)
			s := vc.sums[r.Thread]
			if s == nil {
				s = &render.ThreadSummary{Key: r.Thread}
				vc.sums[r.Thread] = s
				vc.mem.Threads = append(vc.mem.Threads, s)
				p.Summary = s
			}
			s.Add(&it, i)
			if k := render.ThreadSection(kind); k >= 0 {
				place(&p.Sections[k], it, vc.threadCap)
			}
		}
	case r.Kind == "node.created":
		n, ok := nodeOf(r)
		if !ok {
			return
		}
		if r.Thread != "" {
			vc.threadLast[r.Thread] = i
			p := vc.thread(r.Thread)
			p.Nodes = append(p.Nodes, n)
		}
		vc.mem.Nodes = append(vc.mem.Nodes, n)
		vc.lastMemory = i
	case strings.HasPrefix(r.Kind, "head."):
		applyHeadEvent(vc.heads, r, i)
	}
}

// decodeView reads the view's index; the blocks stay in the tail. ok is
// false when the view was cut for other row caps.
func decodeView(d *codec.Decoder, memCap, threadCap int) (*viewCache, bool) {
	vc := &viewCache{seq: d.Uvarint(), memCap: d.Uvarint(), threadCap: d.Uvarint(), lastMemory: int(d.Int64()),
		threads: d.Strs(), heads: map[string]*HeadState{}, src: d}
	if d.Failed() || vc.memCap != memCap || vc.threadCap != threadCap {
		return nil, false
	}
	vc.threadLast = d.IntMap()
	for n := d.Count(); n > 0 && !d.Failed(); n-- {
		h := &HeadState{Head: d.Str(), Thread: d.Str(), Deferred: []HeadEvent{}, Conflicts: []HeadEvent{}}
		if d.Bool() {
			e := headEvent(d)
			h.LastRendered = &e
		}
		for k := d.Count(); k > 0 && !d.Failed(); k-- {
			h.Deferred = append(h.Deferred, headEvent(d))
		}
		for k := d.Count(); k > 0 && !d.Failed(); k-- {
			h.Conflicts = append(h.Conflicts, headEvent(d))
		}
		vc.heads[h.Head] = h
	}
	vc.mem = &render.MemoryParts{}
	for k := range vc.mem.Sections {
		vc.mem.Sections[k] = ranked(d)
	}
	for n := d.Count(); n > 0 && !d.Failed(); n-- {
		vc.mem.Threads = append(vc.mem.Threads, summary(d))
	}
	vc.mem.Nodes = nodes(d)
	vc.sessBlock = d.Ref()
	if n := d.Count(); n > 0 {
		vc.blocks = make(map[string]codec.TailRef, n)
		for ; n > 0 && !d.Failed(); n-- {
			k := d.Str()
			vc.blocks[k] = d.Ref()
		}
	}
	if d.Failed() {
		return nil, false
	}
	vc.index()
	return vc, true
}

func encodeHeadEvent(e *codec.Encoder, h *HeadEvent) {
	for _, s := range [...]string{h.ID, h.TS, h.Kind, h.Agent, h.Session, h.Head, h.Text} {
		e.Str(s)
	}
	e.Bytes(h.Data)
	e.Int64(int64(h.seq))
}

func headEvent(d *codec.Decoder) HeadEvent {
	h := HeadEvent{ID: d.Str(), TS: d.Str(), Kind: d.Str(), Agent: d.Str(), Session: d.Str(), Head: d.Str(), Text: d.Str()}
	h.Data = d.Bytes()
	h.seq = int(d.Int64())
	return h
}

// encodeView writes the view: its index in the part read at once, the
// session records and every thread's block in the tail. Blocks never
// decoded are copied from the old file; one that no longer reads makes the
// encoding bad, and nothing is written.
func encodeView(e *codec.Encoder, vc *viewCache) {
	if vc.bad {
		e.Bad = true
		return
	}
	e.Int(vc.seq)
	e.Int(vc.memCap)
	e.Int(vc.threadCap)
	e.Int64(int64(vc.lastMemory))
	e.Strs(vc.threads)
	e.IntMap(vc.threadLast)
	heads := make([]string, 0, len(vc.heads))
	for h := range vc.heads {
		heads = append(heads, h)
	}
	sort.Strings(heads)
	e.Int(len(heads))
	for _, name := range heads {
		h := vc.heads[name]
		e.Str(h.Head)
		e.Str(h.Thread)
		e.Bool(h.LastRendered != nil)
		if h.LastRendered != nil {
			encodeHeadEvent(e, h.LastRendered)
		}
		e.Int(len(h.Deferred))
		for i := range h.Deferred {
			encodeHeadEvent(e, &h.Deferred[i])
		}
		e.Int(len(h.Conflicts))
		for i := range h.Conflicts {
			encodeHeadEvent(e, &h.Conflicts[i])
		}
	}
	for k := range vc.mem.Sections {
		putRanked(e, &vc.mem.Sections[k])
	}
	e.Int(len(vc.mem.Threads))
	for _, s := range vc.mem.Threads {
		putSummary(e, s)
	}
	putNodes(e, vc.mem.Nodes)

	var blk codec.Encoder
	if vc.allSess != nil {
		sessionRecords(&blk, vc.allSess)
	} else {
		if vc.sessBlock.Len > 0 {
			b, ok := vc.raw(vc.sessBlock)
			if !ok {
				e.Bad = true
				return
			}
			blk.B = append(blk.B, b...)
		}
		sessionRecords(&blk, vc.sessAdded)
	}
	e.Ref(e.TailBlock(blk.B))
	keys := make([]string, 0, len(vc.blocks)+len(vc.parts))
	for k := range vc.blocks {
		keys = append(keys, k)
	}
	for k := range vc.parts {
		if _, ok := vc.blocks[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	e.Int(len(keys))
	for _, k := range keys {
		e.Str(k)
		if p := vc.parts[k]; p != nil {
			blk.B = blk.B[:0]
			for j := range p.Sections {
				putRanked(&blk, &p.Sections[j])
			}
			putNodes(&blk, p.Nodes)
			e.Ref(e.TailBlock(blk.B))
			continue
		}
		b, ok := vc.raw(vc.blocks[k])
		if !ok {
			e.Bad = true
			return
		}
		e.Ref(e.TailBlock(b))
	}
	if vc.bad {
		e.Bad = true
	}
}

// Ranked lists keep what rendering reads of an item: id, kind, thread and
// text.
func putRanked(e *codec.Encoder, r *render.Ranked) {
	e.Int(r.More)
	e.Int(len(r.Items))
	for i := range r.Items {
		it := &r.Items[i]
		e.Str(it.ID)
		e.Str(it.Kind)
		e.Str(it.Thread)
		e.Str(it.Text)
	}
}

func putSummary(e *codec.Encoder, s *render.ThreadSummary) {
	e.Str(s.Key)
	e.Int(s.Last)
	e.Str(s.LastItem.TS)
	e.Str(s.LastItem.Agent)
	e.Str(s.LastItem.Session)
	e.IntMap(s.Counts)
	e.Int(s.Blockers)
	e.Int(s.Open)
	if s.Next == nil {
		e.Bool(false)
		return
	}
	e.Bool(true)
	e.Str(s.Next.ID)
	e.Str(s.Next.Text)
}

func putNodes(e *codec.Encoder, nodes []render.Node) {
	e.Int(len(nodes))
	for _, n := range nodes {
		e.Str(n.ID)
		e.Str(n.Kind)
		e.Str(n.Session)
		e.Str(n.TS)
		e.Str(n.Text)
		e.Int(len(n.Threads))
		for _, t := range n.Threads {
			e.Str(t)
		}
	}
}

func ranked(d *codec.Decoder) render.Ranked {
	r := render.Ranked{More: d.Uvarint()}
	n := d.Uvarint()
	if d.Failed() || n > d.Left() {
		d.Fail()
		return r
	}
	r.Items = make([]render.Item, n)
	for i := range r.Items {
		it := &r.Items[i]
		it.ID, it.Kind, it.Thread, it.Text = d.Str(), d.Str(), d.Str(), d.Str()
	}
	return r
}

func summary(d *codec.Decoder) *render.ThreadSummary {
	s := &render.ThreadSummary{Key: d.Str(), Last: d.Uvarint()}
	s.LastItem.Thread = s.Key
	s.LastItem.TS, s.LastItem.Agent, s.LastItem.Session = d.Str(), d.Str(), d.Str()
	s.Counts = d.IntMap()
	if d.Failed() {
		return s
	}
	s.Blockers, s.Open = d.Uvarint(), d.Uvarint()
	if d.Bool() {
		s.Next = &render.Item{Kind: render.KindNext, Thread: s.Key}
		s.Next.ID, s.Next.Text = d.Str(), d.Str()
	}
	return s
}

func nodes(d *codec.Decoder) []render.Node {
	n := d.Uvarint()
	if d.Failed() || n > d.Left() {
		d.Fail()
		return nil
	}
	if n == 0 {
		return nil
	}
	out := make([]render.Node, n)
	for i := range out {
		nd := &out[i]
		nd.ID, nd.Kind, nd.Session, nd.TS, nd.Text = d.Str(), d.Str(), d.Str(), d.Str(), d.Str()
		k := d.Uvarint()
		if d.Failed() || k > d.Left() {
			d.Fail()
			return nil
		}
		if k > 0 {
			nd.Threads = make([]string, k)
			for j := range nd.Threads {
				nd.Threads[j] = d.Str()
			}
		}
	}
	return out
}
