package vault

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/memvault/memvault/vault/fault"
)

// Problem is one thing verification found wrong, located precisely enough
// for a person to open the file at that line.
type Problem struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
	ID   string `json:"id,omitempty"`
	Msg  string `json:"problem"`
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

// VerifyReport is the result of a full verification.
type VerifyReport struct {
	OK       bool      `json:"ok"`
	Segments int       `json:"segments"`
	Events   int       `json:"events"`
	Tip      string    `json:"tip,omitempty"`
	Problems []Problem `json:"problems"`
	// Torn lists unterminated last lines left by a crash mid-append. They
	// are not events, not problems, and the next write removes them.
	Torn []Problem `json:"torn,omitempty"`
}

// chainChecker walks ledger lines in order and checks each line's hash and
// its prev link. Both the full verification and the cheap check every writer
// runs use it, so the two can never disagree on what a valid line is.
type chainChecker struct {
	prev     string
	problems []Problem
	events   int
}

func (c *chainChecker) line(ll ledgerLine) {
	file := ll.Seg.String()
	switch {
	case ll.Err != nil:
		c.problems = append(c.problems, Problem{File: file, Line: ll.Line, Msg: ll.Err.Error()})
		return // an unreadable line has no hash to chain from; keep the old prev
	case !ll.HashOK:
		c.problems = append(c.problems, Problem{File: file, Line: ll.Line, ID: ll.Event.ID,
			Msg: "hash mismatch: the line was changed after it was written"})
	case ll.Event.Prev != c.prev:
		c.problems = append(c.problems, Problem{File: file, Line: ll.Line, ID: ll.Event.ID,
			Msg: "prev does not match the hash of the event before it"})
	}
	if ll.Event.ID == "" || ll.Event.Kind == "" || ll.Event.TS == "" {
		c.problems = append(c.problems, Problem{File: file, Line: ll.Line, ID: ll.Event.ID,
			Msg: "missing id, kind or ts"})
	}
	c.events++
	c.prev = ll.Event.Hash
}

// Verify checks the whole ledger: every line parses, every hash matches its
// content, every prev names the event before it, ids are unique, every
// reference (linked event, linked node, corrected event) exists, and no stray
// file hides among the segments. It takes no lock: it reads files that are
// only ever appended to or replaced atomically.
func (v *Vault) Verify() (*VerifyReport, error) {
	segs, strays, err := listSegments(v.Root)
	if err != nil {
		return nil, err
	}
	rep := &VerifyReport{Segments: len(segs)}
	for _, s := range strays {
		rep.Problems = append(rep.Problems, Problem{File: s, Msg: "not a ledger segment name (want <dd>[-<n>].jsonl)"})
	}
	var cc chainChecker
	// What is kept per event is its id and position: the duplicate and link
	// checks need them for every event, the rest of an event is dropped
	// with its segment.
	type pos struct{ seg, line int32 }
	problemAt := func(p pos, id string) Problem {
		return Problem{File: segs[p.seg].String(), Line: int(p.line), ID: id}
	}
	seen := make(map[string]pos)
	type ref struct {
		at     pos
		id     string
		target string
		before bool // the target must come earlier in the chain
	}
	var refs []ref
	type nodeEvent struct {
		at   Problem
		node string
		path string
	}
	var created []nodeEvent
	for i, s := range segs {
		lines, torn, err := readSegment(v.Root, s)
		if err != nil {
			return nil, err
		}
		for _, ll := range lines {
			cc.line(ll)
			ev := ll.Event
			if ev == nil {
				continue
			}
			here := pos{int32(i), int32(ll.Line)}
			if first, dup := seen[ev.ID]; dup && ev.ID != "" {
				p := problemAt(here, ev.ID)
				f := problemAt(first, ev.ID)
				p.Msg = fmt.Sprintf("duplicate id, first at %s:%d", f.File, f.Line)
				rep.Problems = append(rep.Problems, p)
			} else {
				seen[ev.ID] = here
			}
			for _, l := range ev.Links {
				refs = append(refs, ref{at: here, id: ev.ID, target: l})
			}
			if ev.Kind == "node.created" && len(ev.Links) > 0 {
				var d struct {
					Path string `json:"path"`
				}
				_ = jsonUnmarshal(ev.Data, &d)
				created = append(created, nodeEvent{at: problemAt(here, ev.ID), node: ev.Links[0], path: d.Path})
			}
			if ck := canonicalKind(ev.Kind); correctionKinds[ck] {
				if len(ev.Links) == 0 && ck != KindDone { // a done that closes nothing is an accomplishment
					p := problemAt(here, ev.ID)
					p.Msg = ev.Kind + " names no event in links"
					rep.Problems = append(rep.Problems, p)
				} else {
					refs = append(refs, ref{at: here, id: ev.ID, target: ev.Links[0], before: true})
				}
			}
		}
		if len(torn) > 0 {
			p := Problem{File: s.String(), Line: len(lines) + 1, Msg: "torn last line (a crash mid-append); the next write removes it"}
			if i == len(segs)-1 {
				rep.Torn = append(rep.Torn, p)
			} else {
				p.Msg = "unterminated line in a closed segment"
				rep.Problems = append(rep.Problems, p)
			}
		}
	}
	nodes, err := v.nodeIDs()
	if err != nil {
		return nil, err
	}
	for _, c := range created {
		rep.Problems = append(rep.Problems, v.verifyNode(c.at, c.node, c.path)...)
	}
	for _, r := range refs {
		p := problemAt(r.at, r.id)
		if strings.HasPrefix(r.target, "n_") {
			if !nodes[r.target] {
				p.Msg = "links to node " + r.target + ", which does not exist"
				rep.Problems = append(rep.Problems, p)
			}
			continue
		}
		target, ok := seen[r.target]
		switch {
		case !ok:
			p.Msg = "links to " + r.target + ", which is not in the ledger"
			rep.Problems = append(rep.Problems, p)
		case r.before && (target.seg > r.at.seg || target.seg == r.at.seg && target.line >= r.at.line):
			p.Msg = "corrects " + r.target + ", which comes after it"
			rep.Problems = append(rep.Problems, p)
		}
	}
	rep.Problems = append(rep.Problems, cc.problems...)
	sortProblems(rep.Problems)
	rep.Events = cc.events
	rep.Tip = cc.prev
	rep.OK = len(rep.Problems) == 0
	return rep, nil
}

// posBefore reports whether ledger position a comes before b in chain order,
// which differs from string order for numbered parts ("22-1" follows "22").
func posBefore(a, b Problem) bool {
	if a.File == b.File {
		return a.Line < b.Line
	}
	sa, oka := segmentFromPath(a.File)
	sb, okb := segmentFromPath(b.File)
	return oka && okb && sa.less(sb)
}

func segmentFromPath(p string) (segment, bool) {
	var y, m int
	parts := strings.Split(p, "/")
	if len(parts) != 4 || parts[0] != "ledger" {
		return segment{}, false
	}
	if _, err := fmt.Sscanf(parts[1]+" "+parts[2], "%d %d", &y, &m); err != nil {
		return segment{}, false
	}
	return parseSegmentName(y, m, parts[3])
}

func sortProblems(ps []Problem) {
	less := func(a, b Problem) bool {
		_, oka := segmentFromPath(a.File)
		_, okb := segmentFromPath(b.File)
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

// verifyNode checks the node a node.created event names: the file is where
// the event says, its front matter parses and names the same id, and the
// transcript span it cites exists.
func (v *Vault) verifyNode(at Problem, id, rel string) []Problem {
	fail := func(msg string) []Problem {
		p := at
		p.Msg = msg
		return []Problem{p}
	}
	if rel == "" {
		return fail("node.created of " + id + " names no path")
	}
	data, err := os.ReadFile(filepath.Join(v.Root, filepath.FromSlash(rel)))
	if err != nil {
		return fail("node " + id + ": " + rel + " is missing")
	}
	n, err := parseNode(data, true)
	switch {
	case err != nil:
		return fail("node " + rel + ": " + err.Error())
	case n.ID != id:
		return fail("node " + rel + " says id " + n.ID + ", the ledger says " + id)
	case n.Span != nil:
		t := TranscriptRef{Agent: n.Agent, Session: n.Session}
		if t.Path() != n.Span.Path {
			return fail("node " + id + " cites " + n.Span.Path + ", not its session's transcript " + t.Path())
		}
		tail, err := v.transcriptTail(t)
		if err != nil || tail.last < n.Span.To {
			return fail(fmt.Sprintf("node %s cites messages %d-%d of %s, which has %d", id, n.Span.From, n.Span.To, n.Span.Path, tail.last))
		}
	}
	return nil
}

// nodeIDs collects the ids of the temporal nodes on disk
// (nodes/<agent>/<yyyy>/<mm>/<id>.md), for reference checks.
func (v *Vault) nodeIDs() (map[string]bool, error) {
	ids := make(map[string]bool)
	root := filepath.Join(v.Root, "nodes")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".md") {
			ids[strings.TrimSuffix(d.Name(), ".md")] = true
		}
		return nil
	})
	if err != nil {
		return nil, fault.IO("read nodes", err)
	}
	return ids, nil
}

// The write-time check. A full verification reads the whole history, which a
// writer cannot afford on every transaction. Instead the last verified state
// of each segment (size, mtime, inode and the tip hash at its end) is kept in
// .state/ledger-verified.bin; a writer re-checks only the segments whose
// stat no longer matches, which after a writer's own append is none. A hand
// edit changes the mtime (and, for editors that replace files, the inode), so
// it is caught by the next writer. The cache is derived: deleting it costs one
// full chain check. It is not a Derived view: what it keeps is per segment
// and checked line by line with hashes, not folded from appended events,
// but it is written in the same codec and framing (derived.go).

type segStamp struct {
	Path  string `json:"path"`
	Size  int64  `json:"size"`
	Mtime int64  `json:"mtime_ns"`
	Ino   uint64 `json:"ino"`
	Tip   string `json:"tip"`
}

// verifiedFile is .state/<verifiedFile>.bin; bump verifiedVersion when
// its encoding changes.
const (
	verifiedFile    = "ledger-verified"
	verifiedVersion = 1
)

func stampOf(root string, s segment) (segStamp, error) {
	info, err := os.Stat(filepath.Join(root, filepath.FromSlash(s.String())))
	if err != nil {
		return segStamp{}, fault.IO("stat "+s.String(), err)
	}
	st := segStamp{Path: s.String(), Size: info.Size(), Mtime: info.ModTime().UnixNano()}
	if sys, ok := info.Sys().(*syscall.Stat_t); ok {
		st.Ino = sys.Ino
	}
	return st, nil
}

func (v *Vault) loadStamps() []segStamp {
	d, ok := readStateFile(v.Root, verifiedFile, verifiedVersion)
	if !ok {
		return nil
	}
	stamps := decodeStamps(d)
	if !d.done() {
		return nil
	}
	return stamps
}

// saveStamps writes the cache without fsync: lost, stale or torn, it only
// costs a re-check of the segments it no longer vouches for.
func (v *Vault) saveStamps(stamps []segStamp) {
	writeStateFile(v.Root, verifiedFile, verifiedVersion, func(e *encoder) { encodeStamps(e, stamps) })
}

// checkChain verifies the segments that changed since the last check and
// returns their stamps. A torn last line in the last segment is tolerated:
// the writer repairs it.
func (v *Vault) checkChain(segs []segment) (stamps []segStamp, problems []Problem, reread bool, err error) {
	old := v.loadStamps()
	stamps = make([]segStamp, 0, len(segs))
	cc := chainChecker{}
	trusted := true
	for i, s := range segs {
		st, err := stampOf(v.Root, s)
		if err != nil {
			return nil, nil, false, err
		}
		if trusted && i < len(old) && old[i].Path == st.Path && old[i].Size == st.Size &&
			old[i].Mtime == st.Mtime && old[i].Ino == st.Ino {
			st.Tip = old[i].Tip
			cc.prev = st.Tip
			stamps = append(stamps, st)
			continue
		}
		trusted = false
		reread = true
		lines, torn, err := readSegment(v.Root, s)
		if err != nil {
			return nil, nil, false, err
		}
		for _, ll := range lines {
			cc.line(ll)
		}
		if len(torn) > 0 && i < len(segs)-1 {
			cc.problems = append(cc.problems, Problem{File: s.String(), Line: len(lines) + 1,
				Msg: "unterminated line in a closed segment"})
		}
		st.Tip = cc.prev
		stamps = append(stamps, st)
	}
	return stamps, cc.problems, reread || len(old) != len(segs), nil
}
