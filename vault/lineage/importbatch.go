package lineage

import (
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/transcript"
)

// One batch of an import: which import it belongs to, where in the
// transcript it goes, what of it is stored already and is left out, and
// the import's state once it lands.

// importID names one import: the transcript, the source and its state
// file, with the ids a deduplicating import skips once read.
type importID struct {
	t      transcript.Ref
	format transcript.Format
	source string
	path   string
	known  map[string]bool
}

// restartImport starts reading the source from its beginning, deduplicating
// against what t holds, under the vault lock; st becomes the state it wrote,
// or the one it found when another process got there first (st was no
// longer what the restart was decided on).
func restartImport(v *vault.Vault, opts vault.TxOptions, id *importID, st *importState) error {
	id.known = nil
	_, err := v.Update(opts, func(tx *vault.Tx) error {
		cur := loadImport(v, id.t, id.path, nil)
		if cur.fresh != st.fresh || !cur.fresh && cur.Cursor != st.Cursor {
			*st = cur
			return nil
		}
		// The source's path is for people reading .state/; it is
		// redacted, as it names the session (a harness's file name).
		source, _ := v.Redact(id.source)
		next := importState{Source: source, Format: id.format, Agent: id.t.Agent, Sess: id.t.Session}
		next.Unrecorded, next.Prompts = cur.Unrecorded, cur.Prompts
		var err error
		if next.Dedupe, err = startDedupe(v, id.t, id.path); err != nil {
			return err
		}
		if err := saveImport(v, id.path, next); err != nil {
			return err
		}
		*st = next
		return nil
	})
	return err
}

// appendBatch appends one window's messages under the vault lock: it reads
// the import's state again (another process may have moved it on), leaves
// out what is stored already (a batch a killed process appended, ids of a
// deduplicating import, prompts a hook stored), queues the rest and writes
// the state with the batch pending. It returns the batch it wrote, nil when
// it had nothing to append and wrote the state as it is after the batch.
func appendBatch(tx *vault.Tx, id *importID, b *importBatchIn, size int64, rep *ImportReport) (*importBatch, error) {
	v, t := tx.Vault(), id.t
	st := loadImport(v, t, id.path, nil)
	if st.fresh || st.Cursor != b.from {
		return nil, errStaleImport
	}
	before, seen, err := storedBefore(tx, id, &st)
	if err != nil {
		return nil, err
	}
	// A copy: the state as it is before the batch is written too, and its
	// counts must not take in the batch's.
	rec := importRecord{}
	if u := st.Unrecorded; u != nil {
		rec = importRecord{From: u.From, To: u.To, Messages: u.Messages}
		mergeStats(&rec.Stats, u.Stats)
	}
	mergeStats(&rec.Stats, b.stats)
	msgs := seen.leaveOut(b.msgs, &rec, rep)
	after := progressAfter(v, id, &st, b, &rec, seen.prompts)
	if len(msgs) == 0 {
		st.importProgress = after
		return nil, saveImport(v, id.path, st)
	}
	from, to, err := tx.AppendMessages(t, msgs)
	if err != nil {
		return nil, err
	}
	rec.add(from, to, len(msgs))
	rep.addSpan(from, to, len(msgs))
	end, _ := tx.TranscriptEnd(t)
	after.Prompts.At = end
	batch := &importBatch{Before: before, End: end, Last: msgs[len(msgs)-1].ID, After: after}
	st.Pending = batch
	return batch, saveImport(v, id.path, st)
}

// storedMessages is what a window's messages are checked against before
// they are appended: the hook prompts stored (prompts) or still spooled
// (waiting), the messages a killed process's batch stored (resumed: id to
// number), and the ids a deduplicating import skips (known).
type storedMessages struct {
	prompts *promptMatch
	waiting map[string][]string
	resumed map[string]int
	known   map[string]bool
}

// storedBefore returns where the batch goes, after the transcript as it is
// on disk and what this transaction queued (the spool's fold), and what is
// stored already that the batch must leave out.
func storedBefore(tx *vault.Tx, id *importID, st *importState) (transcript.Pos, *storedMessages, error) {
	v, t := tx.Vault(), id.t
	tail, err := transcript.EndOf(v.Files(), t)
	if err != nil {
		return transcript.Pos{}, nil, err
	}
	before := transcript.Pos{Part: tail.Part, Off: tail.Size}
	prompts, err := foldPrompts(v, t, st.Prompts, before)
	if err != nil {
		return transcript.Pos{}, nil, err
	}
	queued := tx.Queued(t, tail)
	for _, m := range queued {
		prompts.see(m)
	}
	if end, ok := tx.TranscriptEnd(t); ok {
		before = end
	}
	seen := &storedMessages{prompts: prompts, waiting: waitingPrompts(v, t, prompts, queued)}
	if st.Resume != nil {
		if seen.resumed, err = resumedIDs(v, t, st.Resume); err != nil {
			return transcript.Pos{}, nil, err
		}
	}
	if st.Dedupe {
		if id.known == nil {
			if id.known, err = knownIDs(v, t, id.path); err != nil {
				return transcript.Pos{}, nil, err
			}
		}
		seen.known = id.known
	}
	return before, seen, nil
}

// leaveOut returns the messages of msgs that are not stored already,
// counting the others: as added by this import when a killed batch stored
// them (in rec and rep), as duplicates otherwise. A hook prompt it matches
// is used up, so it matches one message only.
func (s *storedMessages) leaveOut(msgs []transcript.Message, rec *importRecord, rep *ImportReport) []transcript.Message {
	out := msgs[:0:0]
	for _, m := range msgs {
		if n, ok := s.resumed[m.ID]; ok {
			// Stored by a batch whose process was killed before it could
			// say so: added by this import all the same.
			rec.add(n, n, 1)
			rep.addSpan(n, n, 1)
			continue
		}
		if s.known[m.ID] {
			rep.Duplicates++
			continue
		}
		// A prompt the prompt-submit hook stored already, or spooled, is
		// the same message under another id: keep the first.
		if m.Role == transcript.RoleUser && s.prompts.take(m.Text) {
			rep.Duplicates++
			continue
		}
		if k := promptKey(m.Text); m.Role == transcript.RoleUser && len(s.waiting[k]) > 0 {
			s.prompts.Taken[s.waiting[k][0]] = true
			s.waiting[k] = s.waiting[k][1:]
			rep.Duplicates++
			continue
		}
		out = append(out, m)
	}
	return out
}

// progressAfter is the import's progress once batch b has landed: read up
// to b's end, with rec unrecorded and prompts left to match. Reading past
// a killed batch's span ends the resume; reaching the source's end ends
// deduplication, and its list of known ids is dropped.
func progressAfter(v *vault.Vault, id *importID, st *importState, b *importBatchIn, rec *importRecord, prompts *promptMatch) importProgress {
	after := st.importProgress
	after.Cursor = b.next
	after.Unrecorded = rec
	after.Prompts = prompts
	if after.Resume != nil && b.next.Offset >= after.Resume.Until {
		after.Resume = nil
	}
	if st.Dedupe && b.eof {
		after.Dedupe = false
		dropKnown(v, id.path)
	}
	return after
}
