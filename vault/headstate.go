package vault

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/memvault/memvault/render"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// The heads' derived state: the ledger folded into rows, corrections
// applied. Rendering a head needs it, and folding 100k events from JSON
// takes far longer than a render may cost, so it is a Derived view
// (derived.go), .state/heads-state.bin. New events are folded on top as
// rows; a correction builds the id index first, so it can mark the rows it
// corrects, as the full fold does.

var headStateView = &Derived[*State]{
	Name:    "heads-state",
	Version: 2,
	Rebuild: func(v *Vault, segs []segment, _ []segStamp) (*State, string, bool, error) { return v.foldAll(segs) },
	Fold:    foldRow,
	Encode:  encodeRows,
	Decode:  decodeRows,
}

// foldedState returns the ledger folded into rows, through the cache, and
// the tip it was folded up to. The State it returns has no id index unless
// corrections had to be applied; callers only walk its rows.
func (v *Vault) foldedState() (*State, string, error) {
	st, key, err := headStateView.Load(v)
	return st, key.Tip, err
}

// foldRow adds one appended event to decoded rows. The id index is built
// only when a correction needs it: most reads fold a few plain rows.
func foldRow(st *State, ev *Event) (*State, bool) {
	if st.byID == nil && !correctionKinds[ev.Kind] {
		st.Rows = append(st.Rows, &Row{Event: ev})
		return st, true
	}
	if st.byID == nil {
		st.byID = make(map[string]*Row, len(st.Rows)+1)
		for _, r := range st.Rows {
			st.byID[r.ID] = r
		}
	}
	st.add(&Row{Event: ev})
	return st, true
}

func encodeRows(e *encoder, st *State) {
	e.int(len(st.Rows))
	for _, r := range st.Rows {
		for _, s := range [...]string{r.ID, r.TS, r.Agent, r.Session, r.Kind, r.Thread, r.Text,
			r.RetractedBy, r.SupersededBy, r.ClosedBy} {
			e.str(s)
		}
		e.bytes(r.Data)
		e.strs(r.Links)
	}
}

// decodeRows decodes the rows with one allocation per slab: every string
// is a slice of the file.
func decodeRows(d *decoder) (*State, bool) {
	n := d.count()
	events := make([]Event, n)
	rowSlab := make([]Row, n)
	rows := make([]*Row, n)
	for i := range events {
		ev := &events[i]
		r := &rowSlab[i]
		ev.ID, ev.TS, ev.Agent, ev.Session, ev.Kind, ev.Thread, ev.Text = d.str(), d.str(), d.str(), d.str(), d.str(), d.str(), d.str()
		r.RetractedBy, r.SupersededBy, r.ClosedBy = d.str(), d.str(), d.str()
		ev.Data = d.bytes()
		ev.Links = d.strs()
		if d.bad {
			return nil, false
		}
		r.Event = ev
		rows[i] = r
	}
	return &State{Rows: rows}, true
}

// foldAll folds every segment without checking hashes: verification is
// verify's job, and the writer's chain check guards writes. Decoding the
// JSON lines is what a rebuild costs, so it is spread over the CPUs; the
// fold itself runs in ledger order.
func (v *Vault) foldAll(segs []segment) (st *State, tip string, torn bool, err error) {
	var lines [][]byte
	for _, s := range segs {
		data, err := os.ReadFile(filepath.Join(v.Root, filepath.FromSlash(s.String())))
		if err != nil {
			return nil, "", false, fault.IO("read "+s.String(), err)
		}
		torn = len(data) > 0 && data[len(data)-1] != '\n'
		for len(data) > 0 {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				break // an unterminated last line is not an event yet
			}
			lines = append(lines, data[:i])
			data = data[i+1:]
		}
	}
	evs := make([]*Event, len(lines))
	workers := min(runtime.GOMAXPROCS(0), 8, len(lines)/1024+1)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				ev := new(Event)
				if len(bytes.TrimSpace(lines[i])) == 0 || json.Unmarshal(lines[i], ev) != nil || ev.ID == "" {
					continue
				}
				evs[i] = ev
			}
		}(len(lines)*w/workers, len(lines)*(w+1)/workers)
	}
	wg.Wait()
	st = &State{byID: make(map[string]*Row, len(evs)), Rows: make([]*Row, 0, len(evs))}
	rows := make([]Row, len(evs))
	for i, ev := range evs {
		if ev == nil {
			continue
		}
		tip = ev.Hash
		ev.Prev, ev.Hash = "", ""
		rows[i].Event = ev
		st.add(&rows[i])
	}
	return st, tip, torn, nil
}

// foldLines folds the complete lines of data into st and returns the new
// tip. An unterminated last line is not an event yet.
func foldLines(st *State, data []byte, tip string) string {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		line := data[:i]
		data = data[i+1:]
		ev := new(Event)
		if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, ev) != nil || ev.ID == "" {
			continue
		}
		tip = ev.Hash
		ev.Prev, ev.Hash = "", ""
		st.add(&Row{Event: ev})
	}
	return tip
}

func readFrom(path string, off int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}

// seg turns a segment's RelPath back into a segment; only used on paths
// listSegments produced.
func (r RelPath) seg() segment {
	s, _ := segmentFromPath(r.String())
	return s
}

func putUvarint(buf *bytes.Buffer, x uint64) {
	var tmp [binary.MaxVarintLen64]byte
	buf.Write(tmp[:binary.PutUvarint(tmp[:], x)])
}

func putString(buf *bytes.Buffer, s string) {
	putUvarint(buf, uint64(len(s)))
	buf.WriteString(s)
}

func uvarintString(s string) (uint64, int) {
	var x uint64
	var shift uint
	for i := 0; i < len(s) && i < binary.MaxVarintLen64; i++ {
		b := s[i]
		if b < 0x80 {
			return x | uint64(b)<<shift, i + 1
		}
		x |= uint64(b&0x7f) << shift
		shift += 7
	}
	return 0, 0
}

// The prepared view. Decoding 100k folded rows costs more than a render
// may, and a render shows a few hundred of them. So what the heads are
// rendered from is kept too, in .state/heads-view.bin: each section's
// candidates ranked and cut at the row cap the renderer applies
// (render.RowCap of the budget), every thread's summary, the nodes, and the
// heads' bookkeeping (buildView's output), keyed like the folded rows by the
// segments' stamps and the ledger tip. A thread head's candidates are a
// block of their own, decoded only when that head is rendered or a new row
// of its thread arrives.
//
// New lines are applied on top one by one: a new row ranks first in its
// sections, so a render after one event costs one parsed line. A
// correction (retract, supersede, commitment.close) can bring back rows
// below the cap, so it rebuilds the view from the folded rows; so do other
// budgets than the view was cut for. The view is written after a rebuild,
// when a segment closes, or when more than snapshotEvery events were
// applied on top; without fsync, as it is derived data and every block is
// checked against its CRC-32 when read.

const (
	headViewFile  = ".state/heads-view.bin"
	headViewMagic = "memvault heads-view 2\n"
)

type blockRef struct {
	Off int    `json:"off"`
	Len int    `json:"len"`
	Sum uint32 `json:"crc"`
}

type cachedHeadEvent struct {
	HeadEvent
	Seq int `json:"seq"`
}

type cachedHead struct {
	Head         string            `json:"head"`
	Thread       string            `json:"thread,omitempty"`
	LastRendered *cachedHeadEvent  `json:"last_rendered,omitempty"`
	Deferred     []cachedHeadEvent `json:"deferred"`
	Conflicts    []cachedHeadEvent `json:"conflicts"`
}

type viewHeader struct {
	Tip        string              `json:"tip"`
	Stamps     []segStamp          `json:"stamps"`
	Seq        int                 `json:"seq"`
	MemCap     int                 `json:"mem_cap"`
	ThreadCap  int                 `json:"thread_cap"`
	LastMemory int                 `json:"last_memory"`
	Threads    []string            `json:"threads"`
	ThreadLast map[string]int      `json:"thread_last"`
	Heads      []cachedHead        `json:"heads"`
	Mem        blockRef            `json:"mem"`
	Sessions   blockRef            `json:"sessions"`
	Blocks     map[string]blockRef `json:"blocks"`
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
	// The file blocks not decoded yet are read from: the cache keeps it
	// open (the file is replaced by rename, never rewritten in place), and
	// body, its offset there.
	file      *os.File
	body      int64
	blocks    map[string]blockRef
	sessBlock blockRef
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

// headViewOf returns the view heads are rendered from: the prepared view
// through its cache, or with explain the full fold (Explain lists every
// row left out, which the prepared view only counts).
func (v *Vault) headViewOf(cfg HeadsConfig, explain bool) (*headView, error) {
	if explain {
		st, _, err := v.foldedState()
		if err != nil {
			return nil, err
		}
		vw := buildView(st, cfg)
		vw.input.Explain = true
		return vw, nil
	}
	vc, err := v.preparedView(cfg)
	if err != nil {
		return nil, err
	}
	return vc.view(cfg), nil
}

func (vc *viewCache) view(cfg HeadsConfig) *headView {
	vw := &headView{heads: vc.heads, threads: vc.threads, threadLast: vc.threadLast,
		lastMemory: vc.lastMemory, cache: vc}
	vw.input.Threads = cfg.Threads
	vw.input.MemoryTokens = cfg.MemoryTokens
	vw.input.ThreadTokens = cfg.ThreadTokens
	return vw
}

// preparedView loads the prepared view and applies what the ledger gained
// since; anything it cannot apply rebuilds it from the folded rows.
func (v *Vault) preparedView(cfg HeadsConfig) (*viewCache, error) {
	segs, _, err := listSegments(v.Root)
	if err != nil {
		return nil, err
	}
	stamps := make([]segStamp, len(segs))
	for i, s := range segs {
		if stamps[i], err = stampOf(v.Root, s); err != nil {
			return nil, err
		}
	}
	memCap, threadCap := render.RowCap(cfg.MemoryTokens), render.RowCap(cfg.ThreadTokens)
	if vc, tip, dirty, ok := v.loadHeadView(segs, stamps, memCap, threadCap); ok {
		vc.fallback = func(key string) *render.ThreadParts {
			st, _, err := v.foldedState()
			if err != nil {
				return &render.ThreadParts{}
			}
			return render.PrepareThread(buildView(st, cfg).input, key)
		}
		if dirty {
			v.saveHeadView(vc, tip, stamps)
		}
		return vc, nil
	}
	st, tip, err := v.foldedState()
	if err != nil {
		return nil, err
	}
	vc := newViewCache(st, cfg)
	// foldedState leaves torn lines out and saves only what it folded: save
	// the view at the same stamps only when they still describe the ledger.
	if cur, _, err := listSegments(v.Root); err == nil && len(cur) == len(segs) {
		v.saveHeadView(vc, tip, stamps)
	}
	return vc, nil
}

// newViewCache prepares the full fold.
func newViewCache(st *State, cfg HeadsConfig) *viewCache {
	vw := buildView(st, cfg)
	in := vw.input
	in.Explain = false
	vc := &viewCache{seq: len(st.Rows), memCap: render.RowCap(cfg.MemoryTokens), threadCap: render.RowCap(cfg.ThreadTokens),
		lastMemory: vw.lastMemory, threads: vw.threads, threadLast: vw.threadLast, heads: vw.heads,
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
				p.Sections[k] = d.ranked()
			}
			p.Nodes = d.nodes()
		}
		if !ok || d.bad || d.pos != len(d.s) {
			// The file went bad under us (it is checked when opened): fold
			// the ledger rather than render from nothing.
			vc.bad = true
			p = vc.fallback(key)
		}
	}
	p.Summary = vc.sums[key]
	vc.parts[key] = p
	return p
}

// raw reads a block of the file and checks its sum.
func (vc *viewCache) raw(ref blockRef) ([]byte, bool) {
	if vc.file == nil || ref.Off < 0 || ref.Len < 0 || ref.Len > 1<<30 {
		return nil, false
	}
	b := make([]byte, ref.Len)
	if _, err := vc.file.ReadAt(b, vc.body+int64(ref.Off)); err != nil || crc32.ChecksumIEEE(b) != ref.Sum {
		return nil, false
	}
	return b, true
}

func (vc *viewCache) block(ref blockRef) (*decoder, bool) {
	b, ok := vc.raw(ref)
	if !ok {
		return nil, false
	}
	return newDecoder(b), true
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
			for ok && !d.bad && d.pos < len(d.s) {
				name := d.str()
				n := d.uv()
				for j := 0; j < n && !d.bad; j++ {
					if t := d.str(); name == session {
						m[t] = true
					}
				}
			}
			if d.bad {
				vc.bad, vc.sessBad = true, true
				return true
			}
		}
	}
	return m[thread]
}

// sessionRecords encodes session records, sorted.
func sessionRecords(buf *bytes.Buffer, m map[string]map[string]bool) {
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
		putString(buf, s)
		putUvarint(buf, uint64(len(ts)))
		for _, t := range ts {
			putString(buf, t)
		}
	}
}

// apply adds one row that corrects nothing, as buildView would have.
func (vc *viewCache) apply(ev *Event) {
	r := &Row{Event: ev}
	i := vc.seq
	vc.seq++
	if r.Thread != "" && !vc.seen[r.Thread] {
		vc.seen[r.Thread] = true
		vc.threads = append(vc.threads, r.Thread)
	}
	kind := r.EffectiveKind()
	switch {
	case contentKinds[kind]:
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
		it := render.Item{ID: r.ID, Kind: kind, Thread: r.Thread, Text: r.Text, TS: r.TS, Agent: r.Agent, Session: r.Session}
		if k := render.MemorySection(&it); k >= 0 {
			vc.mem.Sections[k].Push(it, vc.memCap)
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
				p.Sections[k].Push(it, vc.threadCap)
			}
		}
	case r.Kind == "node.created":
		if len(r.Links) == 0 {
			return
		}
		var d struct {
			Kind string `json:"kind"`
		}
		_ = json.Unmarshal(r.Data, &d)
		n := render.Node{ID: r.Links[0], Kind: d.Kind, Session: r.Session, TS: r.TS, Text: r.Text}
		if r.Thread != "" {
			n.Threads = []string{r.Thread}
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

// loadHeadView reads the prepared view and applies what the ledger gained
// since. ok is false when it is missing, stale or cannot be brought up to
// date without the folded rows; dirty says it should be rewritten.
func (v *Vault) loadHeadView(segs []segment, stamps []segStamp, memCap, threadCap int) (vc *viewCache, tip string, dirty, ok bool) {
	f, err := os.Open(filepath.Join(v.Root, headViewFile))
	if err != nil {
		return nil, "", false, false
	}
	keep := false
	defer func() {
		if !keep {
			f.Close()
		}
	}()
	head := make([]byte, 64<<10)
	k, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF {
		return nil, "", false, false
	}
	head = head[:k]
	if !bytes.HasPrefix(head, []byte(headViewMagic)) {
		return nil, "", false, false
	}
	hl, n := binary.Uvarint(head[len(headViewMagic):])
	if n <= 0 || hl > 1<<30 {
		return nil, "", false, false
	}
	start := len(headViewMagic) + n
	body := int64(start) + int64(hl)
	if int64(len(head)) < body {
		more := make([]byte, body)
		copy(more, head)
		if _, err := f.ReadAt(more[len(head):], int64(len(head))); err != nil {
			return nil, "", false, false
		}
		head = more
	}
	var hdr viewHeader
	if json.Unmarshal(head[start:body], &hdr) != nil || hdr.MemCap != memCap || hdr.ThreadCap != threadCap {
		return nil, "", false, false
	}
	if len(hdr.Stamps) == 0 || !stampsContinue(hdr.Stamps, stamps) {
		return nil, "", false, false
	}
	vc = &viewCache{seq: hdr.Seq, memCap: hdr.MemCap, threadCap: hdr.ThreadCap, lastMemory: hdr.LastMemory,
		threads: hdr.Threads, threadLast: hdr.ThreadLast, file: f, body: body, blocks: hdr.Blocks,
		sessBlock: hdr.Sessions, heads: map[string]*HeadState{}}
	if vc.threadLast == nil {
		vc.threadLast = map[string]int{}
	}
	for _, h := range hdr.Heads {
		vc.heads[h.Head] = h.state()
	}
	d, ok := vc.block(hdr.Mem)
	if !ok {
		return nil, "", false, false
	}
	vc.mem = &render.MemoryParts{}
	for k := range vc.mem.Sections {
		vc.mem.Sections[k] = d.ranked()
	}
	ns := d.uv()
	for j := 0; j < ns && !d.bad; j++ {
		vc.mem.Threads = append(vc.mem.Threads, d.summary())
	}
	vc.mem.Nodes = d.nodes()
	if d.bad || d.pos != len(d.s) {
		return nil, "", false, false
	}
	vc.index()

	applied := 0
	tip, torn, ok := v.appendedSince(segs, stamps, hdr.Stamps, hdr.Tip, func(ev *Event) bool {
		if correctionKinds[ev.Kind] {
			return false // a correction can bring back rows below the cap: rebuild
		}
		vc.apply(ev)
		applied++
		return true
	})
	if !ok {
		return nil, "", false, false
	}
	if vc.bad {
		return nil, "", false, false
	}
	dirty = !torn && (applied > snapshotEvery || len(segs) > len(hdr.Stamps)+1)
	keep = true
	return vc, tip, dirty, true
}

// appendedSince reads the events appended since a cache was written (the
// rest of its last segment, then every newer segment), checks that they
// continue its chain from tip, and hands each to fn, stripped of prev and
// hash. It returns the new tip and whether the last segment ends torn; ok
// is false when the chain does not continue, a file cannot be read, or fn
// refuses an event.
func (v *Vault) appendedSince(segs []segment, stamps, old []segStamp, tip string, fn func(*Event) bool) (newTip string, torn, ok bool) {
	last := len(old) - 1
	for i := last; i < len(segs); i++ {
		var from int64
		if i == last {
			if stamps[i].Size == old[i].Size && stamps[i].Mtime == old[i].Mtime {
				continue
			}
			from = old[i].Size
		}
		tail, err := readFrom(filepath.Join(v.Root, filepath.FromSlash(segs[i].String())), from)
		if err != nil {
			return "", false, false
		}
		torn = len(tail) > 0 && tail[len(tail)-1] != '\n'
		for len(tail) > 0 {
			j := bytes.IndexByte(tail, '\n')
			if j < 0 {
				break
			}
			line := tail[:j]
			tail = tail[j+1:]
			ev := new(Event)
			if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, ev) != nil || ev.ID == "" {
				continue
			}
			if ev.Prev != tip {
				return "", false, false // the chain does not continue from the cache
			}
			tip = ev.Hash
			ev.Prev, ev.Hash = "", ""
			if !fn(ev) {
				return "", false, false
			}
		}
	}
	return tip, torn, true
}

// stampsContinue reports whether the segments recorded in old are the
// first segments of cur, unchanged but for the last one, which may only
// have grown.
func stampsContinue(old, cur []segStamp) bool {
	if len(old) > len(cur) {
		return false
	}
	last := len(old) - 1
	for i, o := range old {
		c := cur[i]
		if o.Path != c.Path || o.Ino != c.Ino {
			return false
		}
		if i < last && (o.Size != c.Size || o.Mtime != c.Mtime) {
			return false
		}
	}
	return cur[last].Size >= old[last].Size
}

func (h cachedHead) state() *HeadState {
	ev := func(c cachedHeadEvent) HeadEvent {
		e := c.HeadEvent
		e.seq = c.Seq
		return e
	}
	s := &HeadState{Head: h.Head, Thread: h.Thread, Deferred: []HeadEvent{}, Conflicts: []HeadEvent{}}
	if h.LastRendered != nil {
		e := ev(*h.LastRendered)
		s.LastRendered = &e
	}
	for _, c := range h.Deferred {
		s.Deferred = append(s.Deferred, ev(c))
	}
	for _, c := range h.Conflicts {
		s.Conflicts = append(s.Conflicts, ev(c))
	}
	return s
}

func cacheHead(h *HeadState) cachedHead {
	ev := func(e HeadEvent) cachedHeadEvent { return cachedHeadEvent{HeadEvent: e, Seq: e.seq} }
	c := cachedHead{Head: h.Head, Thread: h.Thread, Deferred: []cachedHeadEvent{}, Conflicts: []cachedHeadEvent{}}
	if h.LastRendered != nil {
		e := ev(*h.LastRendered)
		c.LastRendered = &e
	}
	for _, e := range h.Deferred {
		c.Deferred = append(c.Deferred, ev(e))
	}
	for _, e := range h.Conflicts {
		c.Conflicts = append(c.Conflicts, ev(e))
	}
	return c
}

// saveHeadView writes the prepared view. Errors only cost a rebuild later.
func (v *Vault) saveHeadView(vc *viewCache, tip string, stamps []segStamp) {
	if len(stamps) == 0 || vc.bad {
		return
	}
	for _, s := range stamps {
		cur, err := stampOf(v.Root, mustRel(s.Path).seg())
		if err != nil || cur != s {
			return
		}
	}
	hdr := viewHeader{Tip: tip, Stamps: stamps, Seq: vc.seq, MemCap: vc.memCap, ThreadCap: vc.threadCap,
		LastMemory: vc.lastMemory, Threads: vc.threads, ThreadLast: vc.threadLast, Blocks: map[string]blockRef{}}
	heads := make([]string, 0, len(vc.heads))
	for h := range vc.heads {
		heads = append(heads, h)
	}
	sort.Strings(heads)
	for _, h := range heads {
		hdr.Heads = append(hdr.Heads, cacheHead(vc.heads[h]))
	}
	var body bytes.Buffer
	add := func(b []byte) blockRef {
		ref := blockRef{Off: body.Len(), Len: len(b), Sum: crc32.ChecksumIEEE(b)}
		body.Write(b)
		return ref
	}
	var buf bytes.Buffer
	for k := range vc.mem.Sections {
		putRanked(&buf, &vc.mem.Sections[k])
	}
	putUvarint(&buf, uint64(len(vc.mem.Threads)))
	for _, s := range vc.mem.Threads {
		putSummary(&buf, s)
	}
	putNodes(&buf, vc.mem.Nodes)
	hdr.Mem = add(buf.Bytes())
	buf.Reset()
	if vc.allSess != nil {
		sessionRecords(&buf, vc.allSess)
	} else {
		if vc.sessBlock.Len > 0 {
			b, ok := vc.raw(vc.sessBlock)
			if !ok {
				return
			}
			buf.Write(b)
		}
		sessionRecords(&buf, vc.sessAdded)
	}
	hdr.Sessions = add(buf.Bytes())
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
	for _, k := range keys {
		if p := vc.parts[k]; p != nil {
			buf.Reset()
			for j := range p.Sections {
				putRanked(&buf, &p.Sections[j])
			}
			putNodes(&buf, p.Nodes)
			hdr.Blocks[k] = add(buf.Bytes())
			continue
		}
		b, ok := vc.raw(vc.blocks[k])
		if !ok {
			return
		}
		hdr.Blocks[k] = add(b)
	}
	if vc.bad {
		return
	}
	hb, err := json.Marshal(hdr)
	if err != nil {
		return
	}
	var out bytes.Buffer
	out.Grow(len(headViewMagic) + binary.MaxVarintLen64 + len(hb) + body.Len())
	out.WriteString(headViewMagic)
	putUvarint(&out, uint64(len(hb)))
	out.Write(hb)
	out.Write(body.Bytes())
	_ = fileio.WriteCache(filepath.Join(v.Root, headViewFile), out.Bytes())
}

// Ranked lists keep what rendering reads of an item: id, kind, thread and
// text.
func putRanked(buf *bytes.Buffer, r *render.Ranked) {
	putUvarint(buf, uint64(r.More))
	putUvarint(buf, uint64(len(r.Items)))
	for i := range r.Items {
		it := &r.Items[i]
		putString(buf, it.ID)
		putString(buf, it.Kind)
		putString(buf, it.Thread)
		putString(buf, it.Text)
	}
}

func putSummary(buf *bytes.Buffer, s *render.ThreadSummary) {
	putString(buf, s.Key)
	putUvarint(buf, uint64(s.Last))
	putString(buf, s.LastItem.TS)
	putString(buf, s.LastItem.Agent)
	putString(buf, s.LastItem.Session)
	kinds := make([]string, 0, len(s.Counts))
	for k := range s.Counts {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	putUvarint(buf, uint64(len(kinds)))
	for _, k := range kinds {
		putString(buf, k)
		putUvarint(buf, uint64(s.Counts[k]))
	}
	putUvarint(buf, uint64(s.Blockers))
	putUvarint(buf, uint64(s.Open))
	if s.Next == nil {
		buf.WriteByte(0)
		return
	}
	buf.WriteByte(1)
	putString(buf, s.Next.ID)
	putString(buf, s.Next.Text)
}

func putNodes(buf *bytes.Buffer, nodes []render.Node) {
	putUvarint(buf, uint64(len(nodes)))
	for _, n := range nodes {
		putString(buf, n.ID)
		putString(buf, n.Kind)
		putString(buf, n.Session)
		putString(buf, n.TS)
		putString(buf, n.Text)
		putUvarint(buf, uint64(len(n.Threads)))
		for _, t := range n.Threads {
			putString(buf, t)
		}
	}
}

func (d *decoder) ranked() render.Ranked {
	r := render.Ranked{More: d.uv()}
	n := d.uv()
	if d.bad || n > len(d.s)-d.pos {
		d.bad = true
		return r
	}
	r.Items = make([]render.Item, n)
	for i := range r.Items {
		it := &r.Items[i]
		it.ID, it.Kind, it.Thread, it.Text = d.str(), d.str(), d.str(), d.str()
	}
	return r
}

func (d *decoder) summary() *render.ThreadSummary {
	s := &render.ThreadSummary{Key: d.str(), Last: d.uv()}
	s.LastItem.Thread = s.Key
	s.LastItem.TS, s.LastItem.Agent, s.LastItem.Session = d.str(), d.str(), d.str()
	n := d.uv()
	if d.bad || n > len(d.s)-d.pos {
		d.bad = true
		return s
	}
	s.Counts = make(map[string]int, n)
	for j := 0; j < n; j++ {
		k := d.str()
		s.Counts[k] = d.uv()
	}
	s.Blockers, s.Open = d.uv(), d.uv()
	if d.bad || d.pos >= len(d.s) {
		d.bad = true
		return s
	}
	has := d.s[d.pos]
	d.pos++
	if has == 1 {
		s.Next = &render.Item{Kind: render.KindNext, Thread: s.Key}
		s.Next.ID, s.Next.Text = d.str(), d.str()
	}
	return s
}

func (d *decoder) nodes() []render.Node {
	n := d.uv()
	if d.bad || n > len(d.s)-d.pos {
		d.bad = true
		return nil
	}
	if n == 0 {
		return nil
	}
	out := make([]render.Node, n)
	for i := range out {
		nd := &out[i]
		nd.ID, nd.Kind, nd.Session, nd.TS, nd.Text = d.str(), d.str(), d.str(), d.str(), d.str()
		k := d.uv()
		if d.bad || k > len(d.s)-d.pos {
			d.bad = true
			return nil
		}
		if k > 0 {
			nd.Threads = make([]string, k)
			for j := range nd.Threads {
				nd.Threads[j] = d.str()
			}
		}
	}
	return out
}
