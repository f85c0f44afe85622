package vault

import (
	"encoding/hex"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/gitrepo"
)

// Problem is one thing verification found wrong, located precisely enough
// for a person to open the file at that line.
type Problem struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
	ID   string `json:"id,omitempty"`
	Msg  string `json:"problem"`
	// Commit names what brought a line the history check refuses ("commit
	// <hash>", or "the work tree"): no repair takes it as its own.
	Commit string `json:"commit,omitempty"`
}

func (p Problem) String() string {
	loc := p.File
	if p.Line > 0 {
		loc = fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	if p.ID != "" {
		return fmt.Sprintf("%s: %s (%s)", loc, p.Msg, p.ID)
	}
	return fmt.Sprintf("%s: %s", loc, p.Msg)
}

// VerifyReport is the result of a verification, full or incremental.
type VerifyReport struct {
	OK       bool      `json:"ok"`
	Segments int       `json:"segments"`
	Events   int       `json:"events"`
	Tip      string    `json:"tip,omitempty"`
	Problems []Problem `json:"problems"`
	// Torn lists unterminated last lines left by a crash mid-append. They
	// are not events, not problems, and the next write removes them.
	Torn []Problem `json:"torn,omitempty"`
	// Tips lists the open tips when there is more than one: lines of
	// history a merge brought together, which the next write joins with a
	// ledger.merged event. Not a problem.
	Tips []string `json:"tips,omitempty"`
	// Incremental marks a report of VerifyIncremental, which reads only
	// the segments changed since the last clean check (Rechecked of them)
	// and counts no events.
	Incremental bool `json:"incremental,omitempty"`
	Rechecked   int  `json:"rechecked,omitempty"`
	// Notes are what the history check saw and did not count as a
	// problem: events of an old vault, written before its first policy
	// event, that the default policy refuses. Each is reported once.
	Notes []string `json:"notes,omitempty"`
}

// notes adds what the last history check noted.
func (r *VerifyReport) notes(v *Vault) {
	t := v.trustSlot()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.notes > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d events written before the ledger's first policy event are refused by the default policy; they are kept as written", t.notes))
		t.notes = 0
	}
}

// KindJoin is the event that joins lines of history after two clones'
// ledgers were merged: its data.tips names every open tip it joins, and
// its prev is the first of them.
const KindJoin = "ledger.merged"

// chainChecker walks ledger lines in chain order (segments in order, lines
// in file order) and checks each line's hash and links. The ledger is a
// DAG: each event's prev names an earlier event (the line before it, while
// one clone writes; any earlier line once two clones' segments were
// merged), and a join event names every tip it joins. An event with no
// prev starts a line of history: the first one, or the first of each
// clone of a vault that had no events yet. The events no later event names
// are the open tips; there is one, except between a merge and the next
// write, which joins them. Both the full verification and the check every
// writer runs use it, so the two never disagree on what a valid line is.
type chainChecker struct {
	known map[[32]byte]struct{} // hashes of the events walked, as bytes
	odd   map[string]struct{}   // the hashes that are not 64 hex digits
	// earlier finds a hash among the events before the walk started (the
	// writers' check starts at the first changed segment); nil when the
	// walk starts at the beginning.
	earlier  func(hash string) bool
	tips     []string // the open tips, in the order they appeared
	last     string   // the last event's hash
	problems []Problem
	events   int
}

func newChainChecker() *chainChecker {
	return &chainChecker{known: make(map[[32]byte]struct{}), odd: make(map[string]struct{})}
}

// hashKey is a hash as 32 bytes, so that the hashes of a whole ledger take
// a third of the memory their hex would; false for a hash that is not 64
// hex digits (a damaged line's).
func hashKey(h string) ([32]byte, bool) {
	var k [32]byte
	if len(h) != 64 {
		return k, false
	}
	for i := 0; i < 64; i++ {
		if c := h[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return k, false // upper case too: prev is compared as written
		}
	}
	_, err := hex.Decode(k[:], []byte(h))
	return k, err == nil
}

func (c *chainChecker) add(h string) {
	if k, ok := hashKey(h); ok {
		c.known[k] = struct{}{}
	} else {
		c.odd[h] = struct{}{}
	}
}

// resume starts the walk after events already checked, which ended with
// the open tips given.
func (c *chainChecker) resume(tips []string, earlier func(string) bool) {
	c.tips = append(c.tips[:0], tips...)
	if n := len(tips); n > 0 {
		c.last = tips[n-1]
	}
	c.earlier = earlier
}

func (c *chainChecker) has(h string) bool {
	if k, ok := hashKey(h); ok {
		if _, ok := c.known[k]; ok {
			return true
		}
	} else if _, ok := c.odd[h]; ok {
		return true
	}
	return c.earlier != nil && c.earlier(h)
}

func (c *chainChecker) line(ll ledgerLine) {
	problem := func(msg string) {
		id := ""
		if ll.Event != nil {
			id = ll.Event.ID
		}
		c.problems = append(c.problems, Problem{File: ll.Seg.String(), Line: ll.Line, ID: id, Msg: msg})
	}
	if ll.Err != nil {
		problem(ll.Err.Error())
		return // an unreadable line has no hash to chain from
	}
	ev := ll.Event
	if !ll.HashOK {
		problem("hash mismatch: the line was changed after it was written")
	}
	if ev.ID == "" || ev.Kind == "" || ev.TS == "" {
		problem("missing id, kind or ts")
	}
	one := [1]string{ev.Prev}
	parents := one[:]
	if ev.Kind == KindJoin {
		tips, ok := JoinTips(ev)
		switch {
		case !ok:
			problem(KindJoin + " names no tips in data.tips")
		case !slices.Contains(tips, ev.Prev):
			problem("prev is not one of the tips the join names")
		default:
			parents = tips
		}
	}
	// An empty prev starts a line of history: the first event, or the
	// first of a clone of a vault that had no events yet.
	if ev.Prev != "" {
		for _, p := range parents {
			if !c.has(p) {
				problem("prev " + shortHash(p) + " names no event before this line (a line lost, moved or changed?)")
				break
			}
		}
	}
	c.tips = slices.DeleteFunc(c.tips, func(t string) bool { return slices.Contains(parents, t) })
	c.tips = append(c.tips, ev.Hash)
	c.add(ev.Hash)
	c.last = ev.Hash
	c.events++
}

// JoinTips returns the tips a join event names.
func JoinTips(ev *Event) ([]string, bool) {
	var d struct {
		Tips []string `json:"tips"`
	}
	if JSONUnmarshal(ev.Data, &d) != nil || len(d.Tips) < 2 {
		return nil, false
	}
	return d.Tips, true
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// Verify checks the whole ledger: every line parses, every hash matches its
// content, every prev names the event before it, ids are unique, every
// reference (linked event, linked node, corrected event) exists, and no stray
// file hides among the segments. It takes no lock: it reads files that are
// only ever appended to or replaced atomically. Every symbolic link below
// the vault, or committed in HEAD, is a problem too (symlinks.go). A clean
// verification is saved as the verified stamps the writers' check and
// VerifyIncremental start from, in a clone memvault has written to
// (saveCheckedStamps).
func (v *Vault) Verify() (*VerifyReport, error) { return v.withLinks(v.verifyDisk) }

// verifyDisk is Verify of the ledger in the work tree.
func (v *Vault) verifyDisk() (*VerifyReport, error) {
	segs, strays, err := ListSegments(v.Root)
	if err != nil {
		return nil, err
	}
	// The stamps are taken before the segments are read: a segment that
	// changes in between no longer matches its stamp, so the next check
	// reads it again.
	stamps := make([]verifiedStamp, len(segs))
	for i, s := range segs {
		ss, err := v.verifiedStampOf(s)
		if err != nil {
			return nil, err
		}
		stamps[i] = ss
	}
	read := diskSegment(v.Root)
	var heads map[string]string
	rep, err := v.verifyWith(segs, strays, read, true, func(blobs map[string]string) ([]Problem, error) {
		if p := v.mergeInProgress(); p != nil {
			return []Problem{*p}, nil
		}
		var err error
		heads, err = v.ledgerBlobs("")
		if err != nil {
			return nil, err
		}
		hist, err := v.holdHistory(v.loadStamps(), segs)
		if err != nil {
			return nil, err
		}
		held, err := v.heldAgainst("", segs, nil, true, false, read, blobs)
		return append(held, hist...), err
	}, stamps)
	if err != nil {
		return nil, err
	}
	if rep.OK {
		for i := range stamps {
			stamps[i].Head = heads[stamps[i].Path]
		}
		v.saveCheckedStamps(verifiedCache{stamps: stamps})
	}
	return rep, nil
}

// diskSegment reads a segment from the work tree.
func diskSegment(root string) func(Segment) ([]byte, error) {
	return func(s Segment) ([]byte, error) {
		data, err := fileio.At(root).ReadFile(filepath.Join(root, filepath.FromSlash(s.String())))
		if err != nil {
			return nil, fault.IO("read "+s.String(), err)
		}
		return data, nil
	}
}

// parsedSegment is one segment read and split into lines, with the git
// blob hash of its bytes (for the check against HEAD).
type parsedSegment struct {
	lines []ledgerLine
	torn  []byte
	blob  string
	err   error
}

func parseSegment(s Segment, read func(Segment) ([]byte, error)) parsedSegment {
	data, err := read(s)
	if err != nil {
		return parsedSegment{err: err}
	}
	lines, torn, _ := splitSegmentWith(s, data, parseLineForChain)
	return parsedSegment{lines: lines, torn: torn, blob: gitrepo.BlobHash(data)}
}

// verifyWorkers is how many goroutines read and parse segments, and check
// nodes, ahead of the walk.
func verifyWorkers() int { return max(2, min(runtime.GOMAXPROCS(0), 8)) }

// prefetchSegments reads and parses segments in order of segs, in
// workers goroutines, at most window of them read and not yet taken. next
// returns them in order; stop ends the reading early. Memory is bounded by
// the window, not the ledger.
func prefetchSegments(segs []Segment, read func(Segment) ([]byte, error), workers, window int) (next func() parsedSegment, stop func()) {
	results := make([]chan parsedSegment, len(segs))
	for i := range results {
		results[i] = make(chan parsedSegment, 1)
	}
	slots := make(chan struct{}, window)
	jobs := make(chan int)
	done := make(chan struct{})
	go func() {
		defer close(jobs)
		for i := range segs {
			select {
			case slots <- struct{}{}:
			case <-done:
				return
			}
			select {
			case jobs <- i:
			case <-done:
				return
			}
		}
	}()
	for range workers {
		go func() {
			for i := range jobs {
				results[i] <- parseSegment(segs[i], read)
			}
		}()
	}
	i := 0
	next = func() parsedSegment {
		p := <-results[i]
		results[i] = nil
		i++
		<-slots
		return p
	}
	var once sync.Once
	return next, func() { once.Do(func() { close(done) }) }
}

// verifyWith is Verify over segments read by read (the work tree's, or
// those staged for the next commit: VerifyStaged), held against
// committed history by committed, which is given the blob hash of every
// segment as it was read. With concurrent, segments are read and parsed
// ahead of the walk on several cores; read must then be safe to call from
// several goroutines. When stamps is not nil, it is given the open tips
// after each segment.
func (v *Vault) verifyWith(segs []Segment, strays []string, read func(Segment) ([]byte, error), concurrent bool,
	committed func(blobs map[string]string) ([]Problem, error), stamps []verifiedStamp) (*VerifyReport, error) {
	w := &ledgerWalk{segs: segs, rep: &VerifyReport{Segments: len(segs)}, seen: make(map[string]walkPos)}
	for _, s := range strays {
		w.rep.Problems = append(w.rep.Problems, Problem{File: s, Msg: "not a ledger segment name (want <dd>[-<n>].jsonl)"})
	}
	cc := newChainChecker()
	// Nodes are checked by workers while the ledger is walked: each check
	// reads a node file and the end of a transcript, independent of the
	// chain.
	w.nodes = newNodeChecks(v, verifyWorkers())
	defer w.nodes.stop()
	next := func(i int) parsedSegment { return parseSegment(segs[i], read) }
	if concurrent && len(segs) > 1 {
		n := verifyWorkers()
		fetch, stop := prefetchSegments(segs, read, n, n+2)
		defer stop()
		next = func(int) parsedSegment { return fetch() }
	}
	blobs := make(map[string]string, len(segs))
	for i, s := range segs {
		ps := next(i)
		if ps.err != nil {
			return nil, ps.err
		}
		blobs[s.String()] = ps.blob
		v.Progress.Step("verify: checking the ledger", "segments", int64(i+1), int64(len(segs)))
		for _, ll := range ps.lines {
			cc.line(ll)
			if ll.Event != nil {
				w.event(walkPos{int32(i), int32(ll.Line)}, ll.Event)
			}
		}
		if len(ps.torn) > 0 {
			w.torn(i, len(ps.lines))
		}
		if stamps != nil {
			stamps[i].Tip, stamps[i].Tips = cc.last, slices.Clone(cc.tips)
		}
	}
	v.Progress.Step("verify: checking nodes and links", "", 0, 0)
	nodeIDs, err := v.NodeIDs()
	if err != nil {
		return nil, err
	}
	w.rep.Problems = append(w.rep.Problems, w.nodes.wait()...)
	w.checkRefs(nodeIDs)
	w.rep.Problems = append(w.rep.Problems, cc.problems...)
	v.Progress.Step("verify: holding the ledger against HEAD", "", 0, 0)
	held, err := committed(blobs)
	if err != nil {
		return nil, err
	}
	w.hold(held)
	rep := w.rep
	sortProblems(rep.Problems)
	rep.Events = cc.events
	rep.Tip = cc.last
	if len(cc.tips) > 1 {
		rep.Tips = cc.tips
	}
	rep.OK = len(rep.Problems) == 0
	return rep, nil
}

// walkPos is where an event is: its segment's index and its line. What
// verify keeps per event is its id and position: the duplicate and link
// checks need them for every event, the rest of an event is dropped with
// its segment.
type walkPos struct{ seg, line int32 }

// walkRef is a link of an event, checked once every event is known.
type walkRef struct {
	at     walkPos
	id     string
	target string
	before bool // the target must come earlier in the chain
}

// ledgerWalk is what verify gathers while it walks the ledger.
type ledgerWalk struct {
	segs  []Segment
	rep   *VerifyReport
	seen  map[string]walkPos
	refs  []walkRef
	nodes *nodeChecks
}

func (w *ledgerWalk) problemAt(p walkPos, id string) Problem {
	return Problem{File: w.segs[p.seg].String(), Line: int(p.line), ID: id}
}

// event checks one event: its id is new, its node's file is queued for a
// check, and its links and correction targets are kept for checkRefs.
func (w *ledgerWalk) event(here walkPos, ev *Event) {
	if first, dup := w.seen[ev.ID]; dup && ev.ID != "" {
		p := w.problemAt(here, ev.ID)
		f := w.problemAt(first, ev.ID)
		p.Msg = fmt.Sprintf("duplicate id, first at %s:%d", f.File, f.Line)
		w.rep.Problems = append(w.rep.Problems, p)
	} else {
		w.seen[ev.ID] = here
	}
	for _, l := range ev.Links {
		w.refs = append(w.refs, walkRef{at: here, id: ev.ID, target: l})
	}
	if ev.Kind == "node.created" && len(ev.Links) > 0 {
		var d struct {
			Path string `json:"path"`
		}
		_ = JSONUnmarshal(ev.Data, &d)
		w.nodes.check(w.problemAt(here, ev.ID), ev.Links[0], d.Path)
	}
	if ck := CanonicalKind(ev.Kind); CorrectionKinds[ck] {
		if len(ev.Links) == 0 && ck != KindDone { // a done that closes nothing is an accomplishment
			p := w.problemAt(here, ev.ID)
			p.Msg = ev.Kind + " names no event in links"
			w.rep.Problems = append(w.rep.Problems, p)
		} else if len(ev.Links) > 0 {
			w.refs = append(w.refs, walkRef{at: here, id: ev.ID, target: ev.Links[0], before: true})
		}
	}
}

// torn reports segment i's torn last line: the next write removes it from
// the last segment; in a closed one it is damage.
func (w *ledgerWalk) torn(i, lines int) {
	p := Problem{File: w.segs[i].String(), Line: lines + 1, Msg: "torn last line (a crash mid-append); the next write removes it"}
	if i == len(w.segs)-1 {
		w.rep.Torn = append(w.rep.Torn, p)
		return
	}
	p.Msg = "unterminated line in a closed segment"
	w.rep.Problems = append(w.rep.Problems, p)
}

// checkRefs checks every link: a node that exists, an event in the ledger,
// and a correction's target earlier in the chain.
func (w *ledgerWalk) checkRefs(nodeIDs map[string]bool) {
	for _, r := range w.refs {
		p := w.problemAt(r.at, r.id)
		if strings.HasPrefix(r.target, "n_") {
			if !nodeIDs[r.target] {
				p.Msg = "links to node " + r.target + ", which does not exist"
				w.rep.Problems = append(w.rep.Problems, p)
			}
			continue
		}
		target, ok := w.seen[r.target]
		switch {
		case !ok:
			p.Msg = "links to " + r.target + ", which is not in the ledger"
			w.rep.Problems = append(w.rep.Problems, p)
		case r.before && (target.seg > r.at.seg || target.seg == r.at.seg && target.line >= r.at.line):
			p.Msg = "corrects " + r.target + ", which comes after it"
			w.rep.Problems = append(w.rep.Problems, p)
		}
	}
}

// hold adds what holding the ledger against HEAD found. A line changed
// after its commit fails its hash too: one problem, saying that HEAD still
// has the line.
func (w *ledgerWalk) hold(held []Problem) {
	for _, h := range held {
		merged := false
		for i, p := range w.rep.Problems {
			if p.File == h.File && p.Line == h.Line && p.ID == h.ID && h.Line > 0 {
				w.rep.Problems[i].Msg += "; HEAD holds the line as committed (memvault repair restores it)"
				merged = true
				break
			}
		}
		if !merged {
			w.rep.Problems = append(w.rep.Problems, h)
		}
	}
}

// posBefore reports whether ledger position a comes before b in chain order,
// which differs from string order for numbered parts ("22-1" follows "22").
func posBefore(a, b Problem) bool {
	if a.File == b.File {
		return a.Line < b.Line
	}
	sa, oka := SegmentFromPath(a.File)
	sb, okb := SegmentFromPath(b.File)
	return oka && okb && sa.Less(sb)
}

func SegmentFromPath(p string) (Segment, bool) {
	var y, m int
	parts := strings.Split(p, "/")
	if len(parts) != 4 || parts[0] != "ledger" {
		return Segment{}, false
	}
	if _, err := fmt.Sscanf(parts[1]+" "+parts[2], "%d %d", &y, &m); err != nil {
		return Segment{}, false
	}
	return ParseSegmentName(y, m, parts[3])
}

func sortProblems(ps []Problem) {
	less := func(a, b Problem) bool {
		_, oka := SegmentFromPath(a.File)
		_, okb := SegmentFromPath(b.File)
		if a.File != b.File && !(oka && okb) {
			return a.File < b.File
		}
		return posBefore(a, b)
	}
	for i := 1; i < len(ps); i++ { // insertion sort: stable, and lists are short
		for j := i; j > 0 && less(ps[j], ps[j-1]); j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
}
