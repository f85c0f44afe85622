package recall

// The transcript index's side of the journal of transcript appends: the
// engine writes and compacts the journal (vault/txwrite.go, which also
// holds the protocol between the two); recall reads it from the index's
// mark on, turns its lines into the parts to index, moves the mark, and
// tells the engine's compaction what the index covers.

import (
	"path/filepath"
	"strings"

	"github.com/memvault/memvault/index"
	"github.com/memvault/memvault/vault"
)

// legacyJournal is the journal of earlier memvaults, in the transcript
// index's folder: one part per line, emptied by each catch-up under the
// vault lock. It is still read, so that text written by an earlier
// memvault just before an upgrade is found; a rebuild removes it.
const legacyJournal = "pending"

// journalRead is what a reader took from the journal. A line of the legacy
// journal has Before = After = -1 and Off = -1: it is never waited for.
type journalRead struct {
	gen   string
	lines []vault.JournalLine
	end   int64 // end of the last complete line read
	seen  int64 // the mark's Seen if the mark is of this generation, else 0
}

// mark is the journal mark of an index that covers the lines before off.
func (j journalRead) mark(off int64) index.JournalMark {
	return index.JournalMark{Gen: j.gen, Off: off, Seen: j.end}
}

// readJournal reads the journal from mark on (from its start when the mark
// is of another generation), and the legacy journal.
func readJournal(v *vault.Vault, mark index.JournalMark) journalRead {
	var j journalRead
	if data, err := v.Files().ReadFile(filepath.Join(partDir(v, transcriptPart), legacyJournal)); err == nil {
		for _, rel := range strings.Split(string(data), "\n") {
			if vault.IsTranscriptPart(rel) {
				j.lines = append(j.lines, vault.JournalLine{Rel: rel, Before: -1, After: -1, Off: -1})
			}
		}
	}
	gen, lines, end := v.ReadJournal(mark.Gen, mark.Off)
	j.gen, j.end = gen, end
	j.lines = append(j.lines, lines...)
	if gen == mark.Gen {
		j.seen = mark.Seen
	}
	return j
}

// journalSources turns journal lines into the transcript parts to search
// or index past the watermarks, and the watermarks to start from: marks,
// with a part lowered to a size before that a new line (past j.seen) names
// below its watermark, because the part was cut back and written again
// since. With capped, a part is taken only up to the largest size after its
// lines name. present says which parts exist.
func journalSources(v *vault.Vault, j journalRead, marks map[string]int64, capped bool) (sources []indexSource, from map[string]int64, present map[string]bool) {
	from = marks
	lowered := false
	limit := map[string]int64{} // -1: no limit (a legacy line)
	var order []string
	for _, l := range j.lines {
		cur, known := limit[l.Rel]
		if !known {
			order = append(order, l.Rel)
		}
		if l.After < 0 || known && cur < 0 {
			limit[l.Rel] = -1
		} else {
			limit[l.Rel] = max(cur, l.After)
		}
		if l.Off >= j.seen && l.Before >= 0 && l.Before < from[l.Rel] {
			if !lowered {
				from = make(map[string]int64, len(marks))
				for k, m := range marks {
					from[k] = m
				}
				lowered = true
			}
			from[l.Rel] = l.Before
		}
	}
	present = map[string]bool{}
	for _, rel := range order {
		info, err := v.Files().Stat(filepath.Join(v.Root, filepath.FromSlash(rel)))
		if err != nil {
			continue // gone: nothing to index
		}
		present[rel] = true
		size := info.Size()
		if capped && limit[rel] >= 0 {
			size = min(size, limit[rel])
		}
		sources = append(sources, indexSource{Rel: rel, Kind: 'm', Size: size})
	}
	return sources, from, present
}

// journalWaiting returns the offsets of the lines of j the watermarks marks
// do not cover (a part that is gone needs nothing), in order.
func journalWaiting(j journalRead, marks map[string]int64, present map[string]bool) []int64 {
	var waiting []int64
	for _, l := range j.lines {
		if l.Off >= 0 && present[l.Rel] && marks[l.Rel] < l.After {
			waiting = append(waiting, l.Off)
		}
	}
	return waiting
}

// saveJournalMark moves the transcript index's mark to the first line of j
// its watermarks do not cover (j's end when they cover every line), saves
// the meta, and then tells the engine's compaction which lines it may drop
// (vault.JournalCoverage): in this order, so that the coverage never claims
// more than the saved index holds.
func saveJournalMark(v *vault.Vault, ix *index.Index, j journalRead, present map[string]bool) error {
	waiting := journalWaiting(j, ix.Meta.Watermarks, present)
	off := j.end
	if len(waiting) > 0 {
		off = waiting[0]
	}
	ix.Meta.Journal = j.mark(off)
	if err := ix.SaveMeta(); err != nil {
		return err
	}
	return v.SaveJournalCoverage(vault.JournalCoverage{Gen: j.gen, Seen: j.end, Waiting: waiting})
}
