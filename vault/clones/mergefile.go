package clones

import (
	"bytes"
	"container/heap"
	"encoding/json"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/memvault/memvault/vault/continuity"

	"github.com/memvault/memvault/merge"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// Merging two clones' versions of one vault file, for git's merge driver
// (`memvault merge-driver`) and for sync. Git calls a driver only for a
// file both sides changed since their merge base; what it gets is three
// versions of the file, never the rest of the vault, so every rule here
// works from those bytes alone. The rules per kind of file are in
// docs/specs/STORAGE.md, "Merging clones".

// MergeKind names the rule MergeAs applies to a file.
type MergeKind string

// The kinds of vault file a merge tells apart.
const (
	// MergeLedger unions two ledger segments by event id, in an order both
	// clones compute alike.
	MergeLedger MergeKind = "ledger"
	// MergeTranscript unions two transcript parts by line.
	MergeTranscript MergeKind = "transcript"
	// MergeHead merges a head or CONTINUITY.md section by section.
	MergeHead MergeKind = "head"
	// MergeNode merges a node file; nodes are written once, so only a hand
	// edit on both sides can meet.
	MergeNode MergeKind = "node"
	// MergeRendered picks one side's copy of a render under .rendered/.
	MergeRendered MergeKind = "rendered"
	// MergeText is git's own line merge, for every other file.
	MergeText MergeKind = "text"
)

// MergeKinds lists every kind, for usage messages.
func MergeKinds() []MergeKind {
	return []MergeKind{MergeLedger, MergeTranscript, MergeHead, MergeNode, MergeRendered, MergeText}
}

// MergeKindOf says which rule merges the file at the vault-relative slash
// path p.
func MergeKindOf(p string) MergeKind {
	p = path.Clean(strings.TrimPrefix(p, "./"))
	switch {
	case isSegmentPath(p):
		return MergeLedger
	case strings.HasPrefix(p, "transcripts/") && strings.HasSuffix(p, ".jsonl"):
		return MergeTranscript
	case p == vault.MemoryHead || p == vault.ContinuityHead || strings.HasPrefix(p, "threads/") && strings.HasSuffix(p, ".md"):
		return MergeHead
	case strings.HasPrefix(p, "nodes/") && strings.HasSuffix(p, ".md"):
		return MergeNode
	case strings.HasPrefix(p, vault.RenderedDir+"/"):
		return MergeRendered
	}
	return MergeText
}

// isSegmentPath reports whether p names a ledger segment,
// ledger/<yyyy>/<mm>/<dd>[-<n>].jsonl.
func isSegmentPath(p string) bool {
	parts := strings.Split(p, "/")
	if len(parts) != 4 || parts[0] != "ledger" || len(parts[1]) != 4 || len(parts[2]) != 2 {
		return false
	}
	y, err1 := strconv.Atoi(parts[1])
	m, err2 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil || m < 1 || m > 12 {
		return false
	}
	_, ok := vault.ParseSegmentName(y, m, parts[3])
	return ok
}

// MergeFile merges ours and theirs, two clones' versions of the vault file
// at the slash path p, whose common ancestor is base, with the rule
// MergeKindOf picks. conflict means the result needs a person: it then
// holds git-style conflict markers where the rule could not decide (or
// is the union it could build), and nothing of either side is lost.
func MergeFile(p string, base, ours, theirs []byte) (merged []byte, conflict bool, err error) {
	return MergeAs(MergeKindOf(p), p, base, ours, theirs)
}

// MergeAs is MergeFile with the rule given, for a file a person mapped to
// a driver kind in .gitattributes.
func MergeAs(kind MergeKind, p string, base, ours, theirs []byte) (merged []byte, conflict bool, err error) {
	switch kind {
	case MergeLedger:
		return mergeLedger(base, ours, theirs)
	case MergeTranscript:
		return mergeTranscript(base, ours, theirs)
	case MergeHead, MergeRendered:
		// A head is a render plus a person's edits; so is the merge of two
		// clones' versions, section by section, a section both changed
		// settled by the union of their lines. The copies of the renders
		// under .rendered/ are merged by the same rule, so that the next
		// refresh, whose base they are, sees in the merged head exactly
		// the edits people made on either side, and replaces the rest
		// with the render of the merged ledger.
		var appendOnly []string
		if h := strings.TrimPrefix(path.Clean(p), vault.RenderedDir+"/"); h == vault.ContinuityHead {
			appendOnly = []string{continuity.SecCompleted}
		}
		res, err := merge.Markdown(base, ours, theirs, merge.MarkdownOptions{Peers: true, UnionOnConflict: true, AppendOnly: appendOnly})
		return res.Merged, !res.Clean(), err
	case MergeNode, MergeText:
		// A node is named by its id and written once: the same node on both
		// sides is identical, and the line merge takes a change made on one
		// side only as it is. Only hand edits of one node on both sides can
		// meet, and those are a person's to settle.
		return mergeLines(base, ours, theirs)
	}
	return nil, false, fault.New(vault.ErrInvalid, "merge: unknown kind %q", kind)
}

// ReadMergeVersions reads the three versions git hands its merge driver
// for the file at p (a slash path in the work tree at dir, where git runs
// the driver): files holds the paths of git's temporary copies of base,
// ours and theirs. A symbolic link is refused at each copy (O_NOFOLLOW),
// and at p or any folder above it in the work tree: git writes the merge
// to p, and memvault merges no file of the vault it would not write
// itself. The refusal fails the driver, which git takes for a conflict.
func ReadMergeVersions(dir, p string, files [3]string) (versions [3][]byte, err error) {
	if err := fileio.At(dir).Check(filepath.FromSlash(p)); err != nil {
		return versions, err
	}
	for i, f := range files {
		if !filepath.IsAbs(f) {
			f = filepath.Join(dir, f)
		}
		if versions[i], err = fileio.At(filepath.Dir(f)).ReadFile(filepath.Base(f)); err != nil {
			return versions, err
		}
	}
	return versions, nil
}

// mergeLines is git's line merge, markers and all.
func mergeLines(base, ours, theirs []byte) ([]byte, bool, error) {
	res, err := merge.Lines(base, ours, theirs, merge.Options{})
	return res.Merged, !res.Clean(), err
}

// givingUp is the answer of a rule that met something it cannot merge (a
// line that is not an event, a torn line, one event changed two ways):
// the line merge, as git would have made it without the driver, marked as
// a conflict even where it found none, so a person looks.
func givingUp(base, ours, theirs []byte) ([]byte, bool, error) {
	m, _, err := mergeLines(base, ours, theirs)
	return m, true, err
}

// splitWhole splits data into lines with their newlines; ok is false when
// the last line has none (torn by a crash, or cut by hand).
func splitWhole(data []byte) (lines [][]byte, ok bool) {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return lines, false
		}
		lines = append(lines, data[:i+1])
		data = data[i+1:]
	}
	return lines, true
}

// sharedTop counts the leading lines a and b share byte for byte.
func sharedTop(a, b [][]byte) int {
	n := 0
	for n < len(a) && n < len(b) && bytes.Equal(a[n], b[n]) {
		n++
	}
	return n
}

// eventLine is one line of a segment being merged.
type eventLine struct {
	raw []byte // with its newline
	ev  *vault.Event
}

// eventLines parses every line of a segment; ok is false when one is torn,
// is not an event with an id, or when two lines carry one id with
// different bytes. A line repeated byte for byte is kept once.
func eventLines(data []byte) (out []eventLine, ok bool) {
	lines, ok := splitWhole(data)
	if !ok {
		return nil, false
	}
	seen := map[string][]byte{}
	for _, l := range lines {
		ev, _, err := vault.ParseLine(bytes.TrimRight(l, "\r\n"))
		if err != nil || ev.ID == "" {
			return nil, false
		}
		if was, dup := seen[ev.ID]; dup {
			if !bytes.Equal(was, l) {
				return nil, false
			}
			continue
		}
		seen[ev.ID] = l
		out = append(out, eventLine{raw: l, ev: ev})
	}
	return out, true
}

// mergeLedger unions two versions of a ledger segment by event id.
//
// The lines both sides hold in the same place at the top stay first, byte
// for byte: that is the history the clones share. Every other event of
// either side follows once, in an order that depends only on the set of
// events, so that two clones merging the same histories, in either
// direction, write identical segments: an event after the event its prev
// names and, for a ledger.merged event, after every tip it joins, when
// those are in the rest of this file; ties broken by timestamp, id, hash.
// Each side's own events keep their order, since each chains onto the one
// before it.
//
// An event both sides hold with different bytes is taken from the side
// that changed it since base (a repaired chain); changed on both sides, or
// any line that is not an event, and the merge gives up to the line merge
// with markers. Base is otherwise ignored: the ledger only grows, and a
// line missing on one side is kept, not deleted.
func mergeLedger(base, ours, theirs []byte) ([]byte, bool, error) {
	x, okx := eventLines(ours)
	y, oky := eventLines(theirs)
	if !okx || !oky {
		return givingUp(base, ours, theirs)
	}
	inBase := map[string][]byte{}
	if lines, _ := splitWhole(base); len(lines) > 0 {
		for _, l := range lines {
			if ev, _, err := vault.ParseLine(bytes.TrimRight(l, "\r\n")); err == nil {
				inBase[ev.ID] = l
			}
		}
	}
	n := sharedTop(rawOfEvents(x), rawOfEvents(y))

	// The rest, one line per id. An id of the shared top cannot come back
	// in either side's rest: eventLines refused a side holding it twice.
	theirsByID := map[string]eventLine{}
	for _, l := range y[n:] {
		theirsByID[l.ev.ID] = l
	}
	var rest []eventLine
	taken := map[string]bool{}
	for _, a := range x[n:] {
		taken[a.ev.ID] = true
		b, both := theirsByID[a.ev.ID]
		switch {
		case !both || bytes.Equal(a.raw, b.raw):
			rest = append(rest, a)
		case bytes.Equal(a.raw, inBase[a.ev.ID]):
			rest = append(rest, b)
		case bytes.Equal(b.raw, inBase[a.ev.ID]):
			rest = append(rest, a)
		default:
			return givingUp(base, ours, theirs)
		}
	}
	for _, b := range y[n:] {
		if !taken[b.ev.ID] {
			rest = append(rest, b)
		}
	}
	ordered, ok := mergeOrder(rest)
	if !ok {
		return givingUp(base, ours, theirs)
	}
	out := make([]byte, 0, len(ours)+len(theirs))
	for _, l := range x[:n] {
		out = append(out, l.raw...)
	}
	for _, l := range ordered {
		out = append(out, l.raw...)
	}
	return out, false, nil
}

func rawOfEvents(ls []eventLine) [][]byte {
	out := make([][]byte, len(ls))
	for i, l := range ls {
		out[i] = l.raw
	}
	return out
}

// mergeOrder sorts events so that each comes after the events of the list
// it names (prev, and a join's tips), the earliest (ts, id, hash) first
// among those free to go: Kahn's algorithm with a heap. ok is false on a
// cycle, which only forged hashes can make.
func mergeOrder(ls []eventLine) ([]eventLine, bool) {
	at := make(map[string]int, 2*len(ls))
	for i, l := range ls {
		at[l.ev.Hash] = i
		at[l.ev.ID] = i
	}
	after := make([][]int, len(ls)) // after[i]: the events waiting for i
	waits := make([]int, len(ls))
	for i, l := range ls {
		refs := []string{l.ev.Prev}
		if l.ev.Kind == vault.KindJoin {
			tips, _ := vault.JoinTips(l.ev)
			refs = append(refs, tips...)
		}
		seen := map[int]bool{}
		for _, r := range refs {
			j, ok := at[r]
			if r == "" || !ok || seen[j] {
				continue
			}
			seen[j] = true
			after[j] = append(after[j], i)
			waits[i]++
		}
	}
	h := &mergeHeap{ls: ls}
	for i := range ls {
		if waits[i] == 0 {
			h.idx = append(h.idx, i)
		}
	}
	heap.Init(h)
	out := make([]eventLine, 0, len(ls))
	for h.Len() > 0 {
		i := heap.Pop(h).(int)
		out = append(out, ls[i])
		for _, j := range after[i] {
			if waits[j]--; waits[j] == 0 {
				heap.Push(h, j)
			}
		}
	}
	return out, len(out) == len(ls)
}

// mergeHeap orders free events by timestamp, then id, then hash.
type mergeHeap struct {
	ls  []eventLine
	idx []int
}

func (h *mergeHeap) Len() int { return len(h.idx) }
func (h *mergeHeap) Less(a, b int) bool {
	x, y := h.ls[h.idx[a]].ev, h.ls[h.idx[b]].ev
	if x.TS != y.TS {
		return x.TS < y.TS
	}
	if x.ID != y.ID {
		return x.ID < y.ID
	}
	return x.Hash < y.Hash
}
func (h *mergeHeap) Swap(a, b int) { h.idx[a], h.idx[b] = h.idx[b], h.idx[a] }
func (h *mergeHeap) Push(v any)    { h.idx = append(h.idx, v.(int)) }
func (h *mergeHeap) Pop() any {
	v := h.idx[len(h.idx)-1]
	h.idx = h.idx[:len(h.idx)-1]
	return v
}

// transcriptLine is one stored message of a transcript part being merged.
type transcriptLine struct {
	raw []byte
	n   int
	id  string
	ts  string
}

// transcriptLines parses a part's lines; ok is false when one is torn or is
// not a stored message (a JSON object with a sequence number).
func transcriptLines(data []byte) (out []transcriptLine, ok bool) {
	lines, ok := splitWhole(data)
	if !ok {
		return nil, false
	}
	for _, l := range lines {
		var m struct {
			N  int             `json:"n"`
			ID string          `json:"id"`
			TS json.RawMessage `json:"ts"`
		}
		if json.Unmarshal(l, &m) != nil || m.N <= 0 {
			return nil, false
		}
		out = append(out, transcriptLine{raw: l, n: m.N, id: m.ID, ts: string(m.TS)})
	}
	return out, true
}

// mergeTranscript unions two versions of a transcript part by line.
//
// The lines both sides hold at the top stay first; every other line of
// either side follows once, ordered by sequence number, timestamp, message
// id and bytes, which keeps each side's own order (its numbers increase)
// and gives both clones the same file. A line base holds that one side
// replaced with another line of the same message id is dropped, since that
// side rewrote it; a message both sides stored differently otherwise stays
// twice, so nothing either side recorded is lost. Two clones appending to
// one session number their new messages alike, so numbers can repeat after
// a merge; readers go by position within the file.
func mergeTranscript(base, ours, theirs []byte) ([]byte, bool, error) {
	x, okx := transcriptLines(ours)
	y, oky := transcriptLines(theirs)
	if !okx || !oky {
		return givingUp(base, ours, theirs)
	}
	baseLines, _ := splitWhole(base)
	inBase := map[string]bool{}
	for _, l := range baseLines {
		inBase[string(l)] = true
	}
	// What each side holds, whole: lines, and its lines of each id that
	// base does not have (its rewrites).
	type side struct {
		has   map[string]bool
		fresh map[string]bool
	}
	sideOf := func(ls []transcriptLine) side {
		s := side{has: map[string]bool{}, fresh: map[string]bool{}}
		for _, l := range ls {
			s.has[string(l.raw)] = true
			if !inBase[string(l.raw)] && l.id != "" {
				s.fresh[l.id] = true
			}
		}
		return s
	}
	sx, sy := sideOf(x), sideOf(y)
	rewritten := func(l transcriptLine, by side) bool {
		return inBase[string(l.raw)] && !by.has[string(l.raw)] && l.id != "" && by.fresh[l.id]
	}

	n := sharedTop(rawOfMessages(x), rawOfMessages(y))
	seen := map[string]bool{}
	var out []byte
	for _, l := range x[:n] {
		seen[string(l.raw)] = true
		out = append(out, l.raw...)
	}
	var rest []transcriptLine
	for _, l := range append(append([]transcriptLine(nil), x[n:]...), y[n:]...) {
		k := string(l.raw)
		if seen[k] || rewritten(l, sx) || rewritten(l, sy) {
			continue
		}
		seen[k] = true
		rest = append(rest, l)
	}
	sort.Slice(rest, func(i, j int) bool {
		a, b := rest[i], rest[j]
		switch {
		case a.n != b.n:
			return a.n < b.n
		case a.ts != b.ts:
			return a.ts < b.ts
		case a.id != b.id:
			return a.id < b.id
		}
		return bytes.Compare(a.raw, b.raw) < 0
	})
	for _, l := range rest {
		out = append(out, l.raw...)
	}
	if out == nil {
		out = []byte{}
	}
	return out, false, nil
}

func rawOfMessages(ls []transcriptLine) [][]byte {
	out := make([][]byte, len(ls))
	for i, l := range ls {
		out[i] = l.raw
	}
	return out
}
