package heads

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/memvault/memvault/merge"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/gitrepo"
)

// The one pipeline that writes a head file. MEMORY.md, the thread heads and
// CONTINUITY.md are all rendered views merged with what people wrote into
// them, and all of them go through the same steps:
//
//	commitHandEdits  an edit nobody committed is committed first, on its
//	                 own (head.edited), so history tells the person's
//	                 change from memvault's; a write of memvault's that a
//	                 kill left uncommitted is committed as memvault's
//	deferHead        a head whose lease someone else holds is left alone;
//	                 one head.deferred per holder asks for a retry
//	mergeInto        read the file, three-way merge it (base: the last
//	                 render, ours: the file, theirs: the new render), again
//	                 if a person saved meanwhile, queue a write that is made
//	                 only if the file still holds what was merged
//	                 (fileio.ReplaceIfSame), put it on record in the heads'
//	                 journal (headjournal.go), then head.rendered and, when
//	                 a section could not be merged, head.conflict
//	retrySaves       a transaction that met a save runs again, reading it
//
// What differs between heads is data, not code: the source recorded in the
// events, the sections that only grow, the base of a file never rendered
// (CONTINUITY.md made from `memvault edit`'s template), and a last step that
// fits the merged file under a cap (CONTINUITY.md's word cap).

// HeadBook is what the pipeline needs to know of a head's history: its last
// render and what is still pending for it.
type HeadBook struct {
	Blob      string          // the git blob of the last render ("" when none)
	Rendered  bool            // a head.rendered exists
	Deferred  []string        // ids of the head.deferred events since then
	Tokens    map[string]bool // the lease tokens of their holders
	Conflicts []string        // ids of head.conflict events not resolved
	// Data holds the data of those head.conflict events, where known
	// (planConflicts reads the others back from the ledger).
	Data map[string]json.RawMessage
}

// Add folds one head event of this head into the book. It is the fold
// applyHeadEvent makes of every head; TestHeadBookFoldsLikeHeadState holds
// the two to the same answer.
func (h *HeadBook) Add(ev *vault.Event) {
	switch ev.Kind {
	case vault.KindHeadRendered:
		var d struct {
			Blob      string   `json:"blob"`
			Conflicts int      `json:"conflicts"`
			Settled   []string `json:"settled"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		h.Blob, h.Rendered = d.Blob, true
		h.Deferred, h.Tokens = nil, map[string]bool{}
		h.Conflicts = standing(h.Conflicts, d.Conflicts, d.Settled, func(id string) string { return id })
		for id := range h.Data {
			if !slices.Contains(h.Conflicts, id) {
				delete(h.Data, id)
			}
		}
	case vault.KindHeadDeferred:
		h.Deferred = append(h.Deferred, ev.ID)
		if h.Tokens == nil {
			h.Tokens = map[string]bool{}
		}
		h.Tokens[holderToken(ev.Data)] = true
	case vault.KindHeadConflict:
		h.Conflicts = append(h.Conflicts, ev.ID)
		if h.Data == nil {
			h.Data = map[string]json.RawMessage{}
		}
		h.Data[ev.ID] = ev.Data
	case vault.KindHeadResolved:
		h.Conflicts, h.Data = nil, nil
	}
}

// standing is what is left of the unresolved conflicts ids after a
// head.rendered that says n stand and names the settled ones: none when n
// is 0, else all but the settled (a head.rendered before issue 34 names
// none). id names an element of ids.
func standing[T any](ids []T, n int, settled []string, id func(T) string) []T {
	if n == 0 {
		return ids[:0]
	}
	return slices.DeleteFunc(ids, func(x T) bool { return slices.Contains(settled, id(x)) })
}

// book is the pipeline's view of a head's bookkeeping.
func (h *HeadState) book() HeadBook {
	b := HeadBook{Tokens: map[string]bool{}}
	if h == nil {
		return b
	}
	if h.LastRendered != nil {
		b.Blob, b.Rendered = h.blob(), true
	}
	for _, d := range h.Deferred {
		b.Deferred = append(b.Deferred, d.ID)
		b.Tokens[holderToken(d.Data)] = true
	}
	for _, c := range h.Conflicts {
		b.Conflicts = append(b.Conflicts, c.ID)
		if b.Data == nil {
			b.Data = map[string]json.RawMessage{}
		}
		b.Data[c.ID] = c.Data
	}
	return b
}

func holderToken(data json.RawMessage) string {
	var d struct {
		Holder struct {
			Token string `json:"token"`
		} `json:"holder"`
	}
	_ = json.Unmarshal(data, &d)
	return d.Holder.Token
}

// HeadMerge describes the refresh of one head file.
type HeadMerge struct {
	Rel     vault.RelPath
	thread  string // the thread a thread head belongs to, for the events
	Source  string // the events' source: "refresh" or "continuity"
	Trigger string // what asked for the refresh, recorded in head.rendered
	Theirs  []byte // the new render
	// Size is recorded in head.rendered's data beside the blobs: the
	// render's tokens for a head, its words for CONTINUITY.md.
	Size       map[string]any
	Book       HeadBook
	AppendOnly []string // sections merged as a union of lines
	// Template, when set, is the base of a file that was never rendered:
	// the text a person started from.
	Template func(ours []byte) []byte
	// Fit, when set, may shorten the result before it is written; a file
	// left as it is (it holds conflict markers) is never passed to it.
	Fit func(result []byte) []byte
	// merged is RefreshOptions.merged, a test's.
	merged func(head string)
}

// mergeOutcome is what mergeInto did to a head.
type mergeOutcome struct {
	Status   string   // rendered, recreated, merged, conflict, unchanged
	Sections []string // the sections left in conflict; "(whole file)" when the file was left as it is
	retried  []string // the head.deferred events this refresh settled
}

// MergeInto merges the new render of m.rel with the file and queues, in tx,
// the write and the events that record it.
func MergeInto(v *vault.Vault, tx *vault.Tx, m HeadMerge) (mergeOutcome, error) {
	head := m.Rel.String()
	renderedRel := vault.MustRel(vault.RenderedDir, head)
	theirsBlob := gitrepo.BlobHash(m.Theirs)
	f, err := mergeFile(v, m, renderedRel, theirsBlob)
	if err != nil || f.status == "unchanged" || f.status == "empty" {
		return mergeOutcome{Status: f.status}, err
	}
	if m.Fit != nil && f.whole == "" {
		f.result = m.Fit(f.result)
	}
	// The render is redacted already; a person's edit saved after
	// commitHandEdits ran is not, and the refresh commits it.
	if clean, counts := v.Redact(string(f.result)); len(counts) > 0 {
		f.result = []byte(clean)
	}
	plan := planConflicts(v, m, f)
	if f.status == "" {
		switch {
		case plan.record:
			f.status = "conflict"
		case bytes.Equal(f.result, m.Theirs):
			f.status = "rendered"
		default:
			f.status = "merged"
		}
	}
	writeHead := !f.exists || !bytes.Equal(f.result, f.ours)
	writeRendered := theirsBlob != m.Book.Blob || !renderedIs(v, renderedRel, theirsBlob)
	if writeHead {
		tx.WriteFileIfUnchanged(m.Rel, f.result, f.ours, f.exists)
	}
	if writeRendered {
		tx.WriteFile(renderedRel, m.Theirs)
	}
	out, ev := recordMerge(tx, m, f, plan, theirsBlob)
	if writeHead || writeRendered {
		// On record before anything is written: a process killed before
		// its commit leaves bytes the next transaction knows for its own.
		w := vault.HeadWrite{Head: head, Event: ev.ID, Existed: f.exists, Before: f.ours, After: f.result, Wrote: writeHead}
		if writeRendered {
			was, err := v.Files().ReadFile(v.Abs(renderedRel))
			w.Rendered = &vault.RenderedWrite{Existed: err == nil, Before: was, After: m.Theirs}
		}
		if err := v.JournalHeadWrite(tx, w); err != nil {
			return mergeOutcome{}, err
		}
	}
	return out, nil
}

// mergedFile is a head file read and merged with the new render.
type mergedFile struct {
	exists    bool
	ours      []byte // the file as it was read
	result    []byte // what the file is to hold
	conflicts []merge.SectionConflict
	whole     string // why the file was left as it is, when it was
	status    string // set when the file's state alone decides it
}

// mergeFile reads m's file and merges it with the render. A person may save
// the file while it is merged: when it changed meanwhile, it merges again
// with what they saved (up to five times).
func mergeFile(v *vault.Vault, m HeadMerge, renderedRel vault.RelPath, theirsBlob string) (mergedFile, error) {
	head := m.Rel.String()
	for attempt := 0; ; attempt++ {
		var f mergedFile
		data, err := readHeadFile(v, m.Rel)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return f, fault.IO("read "+head, err)
		default:
			f.exists, f.ours = true, data
		}
		if len(f.ours) > 0 && theirsBlob == m.Book.Blob && len(m.Book.Deferred) == 0 && renderedIs(v, renderedRel, m.Book.Blob) {
			f.status = "unchanged"
			return f, nil
		}
		switch {
		case f.exists && len(f.ours) == 0:
			// Most likely truncated by an editor that has not written it
			// yet: merged, it would read as a person deleting every
			// section, and written over, the editor's bytes could go
			// nowhere. Left as it is; a person who wants it rendered
			// again deletes it.
			f.status = "empty"
			return f, nil
		case !f.exists:
			f.result, f.status = m.Theirs, "rendered"
			if m.Book.Rendered {
				f.status = "recreated"
			}
		case hasConflictMarkers(f.ours):
			f.result, f.whole = f.ours, "the file holds conflict markers; it was left as it is"
		default:
			base := baseOf(v, m.Book.Blob, renderedRel)
			if base == nil && !m.Book.Rendered && m.Template != nil {
				base = m.Template(f.ours)
			}
			opts := merge.MarkdownOptions{AppendOnly: m.AppendOnly,
				Options: merge.Options{OursLabel: "your edit", BaseLabel: "last render", TheirsLabel: "new render"}}
			base, ours := dropPlaceholders(base, f.ours) // a base rendered with "- none" (placeholders.go)
			res, err := merge.Markdown(base, ours, m.Theirs, opts)
			if err == nil && len(res.Sections) > 0 {
				res, err = settle(v, renderedRel, m.Book.Blob, base, ours, m.Theirs, opts, res.Sections)
			}
			if err != nil {
				return f, fmt.Errorf("merge %s: %w", head, err)
			}
			f.result, f.conflicts = res.Merged, res.Sections
		}
		if m.merged != nil {
			m.merged(head)
		}
		again, _ := v.Files().ReadFile(v.Abs(m.Rel))
		if !f.exists || bytes.Equal(again, f.ours) || attempt >= 5 {
			return f, nil
		}
	}
}

// settle merges again a file whose merge with the new render conflicts,
// in ways that find no conflict where nobody made one: first as the save
// of an older render (staleSave), then with a side that only inserted
// lines taken with its lines put into the other's version
// (merge.MarkdownOptions.KeepInsertions: a person's line beside a row the
// render dropped, a new row beside a line the person changed), and what
// still conflicts row by row (MergeRows, with headRowKey): the person's
// text for the rows they changed, the render's other rows beside it, so a
// conflict never freezes a section. The stale save goes first: a buffer
// that misses the render's last rows would otherwise read as the person
// deleting them.
func settle(v *vault.Vault, renderedRel vault.RelPath, last string, base, ours, theirs []byte, opts merge.MarkdownOptions, conflicts []merge.SectionConflict) (merge.Result, error) {
	if r, ok := staleSave(v, renderedRel, last, base, ours, theirs, opts, conflicts); ok {
		return r, nil
	}
	opts.KeepInsertions, opts.MergeRows, opts.RowKey = true, true, headRowKey
	if older := staleBase(v, renderedRel, last, base, ours); older != nil {
		base = older // the render the person's editor loaded (staleBase)
	}
	return merge.Markdown(base, ours, theirs, opts)
}

// staleSave merges again when the file is a save of an older render: an
// editor opened the head, memvault rendered it again while the person
// typed, and their save carried the older render's text of sections they
// never touched. Against the last render those sections look edited and
// conflict with the new one, though nobody edited them. The older renders
// along the first-parent history (at most staleRenders distinct ones,
// within staleCommits commits, newest first) are tried as the base
// instead; the first one the file merges with cleanly is the one the
// editor started from, and its merge is taken: the person's own lines are
// kept, the new render wins where they kept the old text. It reports
// false when none merges cleanly. It is looked for only when the merge
// against the last render conflicts, so a clean refresh reads no history.
//
// A file that holds a line the last render brought (a row that was not in
// the older render) is no save of that older render: it was read after
// the last render. Without that check a row closed since (the render drops
// it, the person wrote a line beside it) read as the person's insertion
// into the older render's empty section, and stayed. Nor is it one when it
// lacks the older render's text of a section that conflicted: then the
// person edited that section, and the conflict is theirs (holdsSections).
func staleSave(v *vault.Vault, renderedRel vault.RelPath, last string, base, ours, theirs []byte, opts merge.MarkdownOptions, conflicts []merge.SectionConflict) (merge.Result, bool) {
	const staleRenders, staleCommits = 8, 256
	seen := map[string]bool{last: true}
	oursLines := lineSet(ours)
	tried, walked := 0, 0
	var found merge.Result
	ok := false
	_ = v.Log(func(c gitrepo.CommitInfo) bool {
		walked++
		blob, there, err := v.Repo.BlobAt(c.Hash, renderedRel.String())
		if err == nil && there && !seen[blob] {
			seen[blob] = true
			tried++
			if older, read := v.Repo.Blob(blob); read {
				opts.Options.BaseLabel = "an earlier render"
				older, _ = dropPlaceholders(older, nil)
				if seesLaterRender(oursLines, base, older) || !holdsSections(older, conflicts) {
					return tried < staleRenders && walked < staleCommits
				}
				if r, err := merge.Markdown(older, ours, theirs, opts); err == nil && len(r.Sections) == 0 {
					found, ok = r, true
					return false
				}
			}
		}
		return tried < staleRenders && walked < staleCommits
	})
	return found, ok
}

// holdsSections reports whether render holds, as they stand, our text of
// every conflicting section: a section the person edited is never
// explained away by an older render that merely lacks it.
func holdsSections(render []byte, conflicts []merge.SectionConflict) bool {
	for _, c := range conflicts {
		if c.Ours == nil || !bytes.Contains(render, c.Ours) {
			return false
		}
	}
	return true
}

// lineSet is the set of a text's lines that hold more than white space.
func lineSet(b []byte) map[string]bool {
	out := map[string]bool{}
	for _, l := range bytes.Split(b, []byte("\n")) {
		if t := bytes.TrimSpace(l); len(t) > 0 {
			out[string(t)] = true
		}
	}
	return out
}

// seesLaterRender reports whether a file (its lines, ours) holds a line of
// the last render (base) that the older render lacks.
func seesLaterRender(ours map[string]bool, base, older []byte) bool {
	was := lineSet(older)
	for l := range lineSet(base) {
		if !was[l] && ours[l] {
			return true
		}
	}
	return false
}

// readHead reads a head that a person may be saving at this moment. An
// empty file is read again a few times, two milliseconds apart: it is
// most likely one an editor has just truncated and is about to write.
func readHeadFile(v *vault.Vault, rel vault.RelPath) ([]byte, error) {
	data, err := v.Files().ReadFile(v.Abs(rel))
	for wait := 0; err == nil && len(data) == 0 && wait < 3; wait++ {
		time.Sleep(2 * time.Millisecond)
		data, err = v.Files().ReadFile(v.Abs(rel))
	}
	return data, err
}

// renderedIs reports whether the copy of the last render under .rendered/
// is the render head.rendered names: after a merge of two clones it is the
// merge of both sides' renders, and the head must be merged again even if
// the new render is the one recorded last.
func renderedIs(v *vault.Vault, rel vault.RelPath, blob string) bool {
	data, err := v.Files().ReadFile(v.Abs(rel))
	return err == nil && gitrepo.BlobHash(data) == blob
}

// DeferHead records that a head's refresh met a lease held by someone
// else. One head.deferred per holder is enough: it reports false when the
// holder's deferral is already on record.
func DeferHead(tx *vault.Tx, rel vault.RelPath, thread, source, trigger string, holder *HeadLease, book HeadBook) bool {
	if book.Tokens[holder.Token] {
		return false
	}
	head := rel.String()
	d, _ := json.Marshal(map[string]any{"head": head, "trigger": trigger, "holder": holder})
	tx.Append(&vault.Event{Kind: vault.KindHeadDeferred, Thread: thread, Source: source, Data: d,
		Text: head + ": lease held by " + holder.String()})
	return true
}

// CommitHandEdits commits, on its own, each of targets whose file differs
// from what the branch holds: a person's edit nobody committed, recorded
// as head.edited (via names the step that found them). It commits the
// bytes it read and recorded, and only if the file still holds them when
// the commit is made: a save in between makes it read and try again. A
// head that memvault itself wrote, whose event is in the ledger but whose
// commit never landed (a process killed in between, headjournal.go), is
// committed as memvault's, with no head.edited. A credential in a hand
// edit is redacted before the commit, in the file too. It returns the
// heads it committed as hand edits, and a line for each it redacted.
func CommitHandEdits(v *vault.Vault, opts vault.TxOptions, targets []HeadTarget, via string) (map[string]bool, []string, error) {
	var dirty []HeadTarget
	for _, t := range targets {
		if changed, err := Uncommitted(v, t.Rel); err != nil {
			return nil, nil, err
		} else if changed || v.ReadHeadJournal(t.Rel.String()) != nil {
			dirty = append(dirty, t)
		}
	}
	edited := map[string]bool{}
	if len(dirty) == 0 {
		return edited, nil, nil
	}
	var settled, redacted []string
	err := RetrySaves(func() error {
		clear(edited)
		settled, redacted = settled[:0], redacted[:0]
		_, err := v.Update(opts, func(tx *vault.Tx) error { return commitHandEditsTx(v, tx, dirty, via, edited, &settled, &redacted) })
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	// The commit holds them now (or HEAD already did): their journal
	// records are done with. The caller's lease keeps other writers of
	// these heads away meanwhile.
	for _, p := range settled {
		v.Files().Remove(p)
	}
	return edited, redacted, nil
}

// commitHandEditsTx is commitHandEdits' transaction. The file is read
// again here, under the vault lock: a transaction killed before its seal
// has been undone by now (Update settles the journal first).
func commitHandEditsTx(v *vault.Vault, tx *vault.Tx, dirty []HeadTarget, via string, edited map[string]bool, settled, redacted *[]string) error {
	var segs []vault.Segment
	var handPaths, ownPaths []string
	for _, t := range dirty {
		head := t.Rel.String()
		// The one place where a hand edit's bytes are read before they
		// are committed: what is committed, and what head.edited names,
		// is exactly data.
		data, err := readHeadFile(v, t.Rel)
		exists := err == nil
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fault.IO("read "+head, err)
		}
		if w := v.ReadHeadJournal(head); w != nil {
			if segs == nil {
				if segs, _, err = vault.ListSegments(v.Root); err != nil {
					return err
				}
			}
			if seg, ok := v.SegmentOf(segs, w.Event); ok {
				// Sealed, not committed: the files are memvault's.
				*settled = append(*settled, v.HeadJournalPath(head))
				if lines, err := v.Files().ReadFile(v.Abs(seg.Rel())); err == nil && bytes.HasSuffix(lines, []byte("\n")) {
					tx.CommitFile(seg.Rel()) // not a torn line, which the next writer repairs
				}
				if w.Rendered != nil {
					tx.CommitFile(vault.MustRel(vault.RenderedDir, head))
				}
				if exists && w.Wrote && bytes.Equal(data, w.After) {
					tx.WriteFileIfUnchanged(t.Rel, data, data, true)
					ownPaths = append(ownPaths, head)
					continue
				}
			}
		}
		if len(data) == 0 {
			continue // gone: rendered again; empty: being saved, or left so by hand (mergeFile)
		}
		if committed, ok, err := v.Repo.BlobAt("", head); err != nil {
			return err
		} else if ok && committed == gitrepo.BlobHash(data) {
			continue // committed meanwhile, or the bytes of an undone write
		}
		// A credential a person typed is redacted like any text that
		// reaches the vault: the file is rewritten with the markers (only
		// if it still holds what was read) and the commit never sees it.
		clean, counts := v.Redact(string(data))
		fields := map[string]any{"head": head, "blob": gitrepo.BlobHash([]byte(clean)), "via": via}
		text := "hand edit of " + head
		if len(counts) > 0 {
			fields["redacted"] = counts
			kinds := slices.Sorted(maps.Keys(counts))
			text += " (credentials redacted: " + strings.Join(kinds, ", ") + ")"
			*redacted = append(*redacted, fmt.Sprintf("%s: your edit held a credential (%s); it was replaced by [REDACTED:…] in the file and never committed", head, strings.Join(kinds, ", ")))
		}
		tx.WriteFileIfUnchanged(t.Rel, []byte(clean), data, true)
		d, _ := json.Marshal(fields)
		tx.Append(&vault.Event{Kind: vault.KindHeadEdited, Thread: t.Thread, Text: text, Data: d, Source: via})
		handPaths = append(handPaths, head)
		edited[head] = true
	}
	switch {
	case len(handPaths) > 0:
		tx.Subject("head.edited: hand edit of " + strings.Join(handPaths, ", "))
	case len(ownPaths) > 0:
		tx.Subject("head.rendered: " + strings.Join(ownPaths, ", ") + " as written by a process killed before its commit")
	}
	return nil
}

// headRetries bounds how many times a head's transaction runs again after
// a save it met (errChangedUnderfoot): each run reads the file again and
// merges with what was saved.
const headRetries = 5

// RetrySaves runs try until it does not fail with errChangedUnderfoot, at
// most headRetries times, pausing a little longer each time (a few
// milliseconds, with jitter) so that a burst of saves can end. A file saved
// again every time is reported as busy; nothing was written.
func RetrySaves(try func() error) error {
	var err error
	for attempt := range headRetries {
		if err = try(); !errors.Is(err, vault.ErrChangedUnderfoot) {
			return err
		}
		if attempt < headRetries-1 {
			time.Sleep(time.Duration(1+rand.IntN(3)) * time.Millisecond << attempt)
		}
	}
	return &fault.Error{Class: vault.ErrBusy, Err: err,
		Msg:  fmt.Sprintf("%v, %d times in a row; nothing was written", err, headRetries),
		Hint: "run it again once the file is not being saved any more"}
}

// hasConflictMarkers reports lines that look like leftover conflict
// markers: merging around them would bury them deeper.
func hasConflictMarkers(b []byte) bool {
	for _, l := range bytes.Split(b, []byte("\n")) {
		if bytes.HasPrefix(l, []byte("<<<<<<< ")) || bytes.HasPrefix(l, []byte(">>>>>>> ")) ||
			bytes.Equal(bytes.TrimRight(l, "\r"), []byte("<<<<<<<")) || bytes.Equal(bytes.TrimRight(l, "\r"), []byte(">>>>>>>")) {
			return true
		}
	}
	return false
}
