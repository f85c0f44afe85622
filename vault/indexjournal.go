package vault

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/memvault/memvault/index"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// The transcript journal, .index/journal, tells a reader which transcript
// parts grew, so that it need not stat every part of the vault. Writers
// append to it under the vault lock; the index catches up from it under the
// index lock alone, so the two run at the same time, and the journal is
// built so that neither loses the other's work:
//
//   - A transaction appends one line per transcript append, before the
//     append, fsynced: "<part>\t<size before>\t<size after>". The line is
//     the writer's intent: a crash after it leaves at worst a line that
//     names text that never came.
//   - The journal is never truncated in place. The index's meta records
//     where it stands (index.JournalMark): Off, the first line it may not
//     cover yet; Seen, the end of what it read. A catch-up reads from Off.
//   - A line is covered when the part's watermark reached its size after.
//     A writer may have written its line and not yet its text when a
//     catch-up reads the line; the catch-up then indexes what is there and
//     leaves Off at that line, so the next one reads it again. Off never
//     moves past a line whose text the index does not hold, whatever a
//     writer does meanwhile.
//   - A catch-up indexes a part only up to the largest size after that the
//     lines it read name: text past it belongs to a line it has not read,
//     which the next catch-up weighs.
//   - A transaction that fails cuts its appends off again. If a catch-up
//     indexed them in between, the part's watermark is past its end, and the
//     next append to the part comes with a size before below the watermark:
//     a line read for the first time (past Seen) that says so lowers the
//     watermark to that size, and the text is indexed again from there (a
//     document id is its offset, so re-indexed lines replace the old
//     documents; one left at an offset that no longer starts a line does not
//     parse when recall reads it back, and is dropped).
//   - Compaction rewrites the journal whole (temp file, rename), only inside
//     a transaction, under the vault lock, so no writer is mid-append. It
//     keeps every line the index meta does not show as covered, clamped to
//     the part's current size (with no writer mid-append, a part short of a
//     line's size after was cut back or torn by a crash: there is no more to
//     wait for), and gives the journal a new generation in its first line. A
//     mark of another generation counts for nothing, so a reader or a
//     catch-up that raced the compaction reads the whole new journal, which
//     holds every line not covered: at worst it reads lines twice. A crash
//     before the rename leaves the old journal; after it, the new one.
//   - A rebuild of the transcript index reads the journal before it lists
//     the parts, so that a line it read names text it either indexed or left
//     for the next catch-up.
const (
	journalName  = "journal" // in .index/
	JournalMagic = "memvault transcript journal "
	// legacyJournal is the journal of earlier memvaults, in the transcript
	// index's folder: one part per line, emptied by each catch-up under the
	// vault lock. It is still read, so that text written by an earlier
	// memvault just before an upgrade is found; a rebuild removes it.
	legacyJournal = "pending"
	// JournalCompactBytes is the journal size at which a writer compacts
	// it: about 200 lines, so a recall that reads it whole (after a
	// compaction, or behind a line that waits) parses little.
	JournalCompactBytes = 16 << 10
)

func (v *Vault) JournalPath() string { return filepath.Join(v.Root, IndexDir, journalName) }

// journalLine is one line of the journal: an append to a transcript part
// from size before to size after. A line of the legacy journal has
// before = after = -1 and off = -1: it is never waited for.
type journalLine struct {
	Rel           string
	Before, After int64
	off           int64 // where the line starts in the journal
}

// JournalRead is what a reader took from the journal.
type JournalRead struct {
	Gen   string
	Lines []journalLine
	end   int64 // end of the last complete line read
	seen  int64 // the mark's Seen if the mark is of this generation, else 0
}

// Mark is the journal mark of an index that covers the lines before off.
func (j JournalRead) Mark(off int64) index.JournalMark {
	return index.JournalMark{Gen: j.Gen, Off: off, Seen: j.end}
}

// ReadJournal reads the journal from mark on (from its start when the mark
// is of another generation), and the legacy journal. A line that does not
// parse is skipped: a torn one is followed by a newline the next writer
// adds, and damage costs at most text a reindex finds.
func (v *Vault) ReadJournal(mark index.JournalMark) JournalRead {
	var j JournalRead
	if data, err := v.Files().ReadFile(filepath.Join(v.PartDir(TranscriptPart), legacyJournal)); err == nil {
		for _, rel := range strings.Split(string(data), "\n") {
			if isTranscriptPart(rel) {
				j.Lines = append(j.Lines, journalLine{Rel: rel, Before: -1, After: -1, off: -1})
			}
		}
	}
	f, err := v.Files().Open(v.JournalPath())
	if err != nil {
		return j
	}
	defer f.Close()
	head := make([]byte, 128)
	n, _ := io.ReadFull(f, head)
	nl := bytes.IndexByte(head[:n], '\n')
	if nl < 0 || !bytes.HasPrefix(head, []byte(JournalMagic)) {
		return j
	}
	j.Gen = string(head[len(JournalMagic):nl])
	start := int64(nl + 1)
	if j.Gen == mark.Gen && mark.Off > start {
		start = mark.Off
	}
	if j.Gen == mark.Gen {
		j.seen = mark.Seen
	}
	data, err := io.ReadAll(io.NewSectionReader(f, start, 1<<40))
	if err != nil {
		return j
	}
	end := bytes.LastIndexByte(data, '\n') + 1
	j.end = start + int64(end)
	for off := 0; off < end; {
		i := bytes.IndexByte(data[off:], '\n')
		if l, ok := parseJournalLine(string(data[off : off+i])); ok {
			l.off = start + int64(off)
			j.Lines = append(j.Lines, l)
		}
		off += i + 1
	}
	return j
}

func parseJournalLine(s string) (journalLine, bool) {
	f := strings.Split(s, "\t")
	if len(f) != 3 || !isTranscriptPart(f[0]) {
		return journalLine{}, false
	}
	before, err1 := strconv.ParseInt(f[1], 10, 64)
	after, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || before < 0 || after < before {
		return journalLine{}, false
	}
	return journalLine{Rel: f[0], Before: before, After: after}, true
}

// isTranscriptPart reports whether rel has the shape of a transcript part:
// transcripts/<agent>/<file>.jsonl.
func isTranscriptPart(rel string) bool {
	parts := strings.Split(rel, "/")
	return len(parts) == 3 && parts[0] == "transcripts" && CheckName("agent", parts[1]) == nil &&
		strings.HasSuffix(parts[2], ".jsonl") && !strings.HasPrefix(parts[2], ".") && !strings.Contains(parts[2], "\\")
}

// journalAppend is one transcript append a transaction is about to make.
type journalAppend struct {
	rel string
	n   int64 // bytes appended
}

// journalAppends notes, before a transaction appends to them, the
// transcript parts it appends to and the sizes they go from and to. It runs
// under the vault lock (which is what lets it compact the journal), and
// always, index or not: a rebuild of a missing index may be listing the
// parts at this moment.
func (v *Vault) journalAppends(apps []journalAppend) error {
	if len(apps) == 0 {
		return nil
	}
	p := v.JournalPath()
	info, err := v.Files().Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := v.Files().WriteAtomic(p, []byte(JournalMagic+newJournalGen()+"\n")); err != nil {
			return err
		}
	case err != nil:
		return fault.IO("stat "+journalName, err)
	case info.Size() > JournalCompactBytes:
		if err := v.compactJournal(); err != nil {
			return err
		}
	}
	var b strings.Builder
	if !endsLine(v.Files(), p) {
		b.WriteByte('\n') // a crash tore the last line: do not glue ours to it
	}
	sizes := map[string]int64{}
	for _, a := range apps {
		before, ok := sizes[a.rel]
		if !ok {
			if info, err := v.Files().Stat(filepath.Join(v.Root, filepath.FromSlash(a.rel))); err == nil {
				before = info.Size()
			}
		}
		sizes[a.rel] = before + a.n
		fmt.Fprintf(&b, "%s\t%d\t%d\n", a.rel, before, before+a.n)
	}
	return v.Files().Append(p, []byte(b.String()))
}

// endsLine reports whether the file at p is empty or ends with a newline.
func endsLine(fsys fileio.Root, p string) bool {
	f, err := fsys.Open(p)
	if err != nil {
		return true
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || info.Size() == 0 {
		return true
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, info.Size()-1); err != nil {
		return true
	}
	return last[0] == '\n'
}

// compactJournal rewrites the journal with only the lines the transcript
// index does not show as covered, under a new generation. The caller holds
// the vault lock, so no append is in flight (see the comment at the top of
// this file for why that makes it safe without the index lock).
func (v *Vault) compactJournal() error {
	var b strings.Builder
	b.WriteString(JournalMagic + newJournalGen() + "\n")
	if _, err := v.Files().Stat(v.PartDir(TranscriptPart)); errors.Is(err, fs.ErrNotExist) {
		// No transcript index, and none being built: a build creates the
		// folder before it lists the parts, and every append a line names
		// is on disk now, so the build that comes will list it.
		return v.Files().WriteAtomic(v.JournalPath(), []byte(b.String()))
	}
	meta, err := index.ReadMeta(v.PartDir(TranscriptPart))
	if err != nil {
		meta = index.Meta{} // an index being built, or damaged: keep every line
	}
	j := v.ReadJournal(meta.Journal)
	for _, l := range j.Lines {
		if l.off < 0 {
			continue // the legacy journal is left to a rebuild
		}
		info, err := v.Files().Stat(filepath.Join(v.Root, filepath.FromSlash(l.Rel)))
		if err != nil {
			continue // gone: nothing to index
		}
		after := min(l.After, info.Size())
		// A line read before (short of Seen) and covered is done; one not
		// read yet is kept even when covered, for its size before, which
		// may say the part was cut back.
		if l.off < j.seen && meta.Watermarks[l.Rel] >= after {
			continue
		}
		fmt.Fprintf(&b, "%s\t%d\t%d\n", l.Rel, min(l.Before, after), after)
	}
	return v.Files().WriteAtomic(v.JournalPath(), []byte(b.String()))
}

func newJournalGen() string { return strconv.FormatInt(time.Now().UnixNano(), 36) }

// JournalSources turns journal lines into the transcript parts to search or
// index past the watermarks, and the watermarks to start from: marks, with
// a part lowered to a size before that a new line (past j.seen) names below
// its watermark, because the part was cut back and written again since. With
// capped, a part is taken only up to the largest size after its lines name.
// present says which parts exist.
func (v *Vault) JournalSources(j JournalRead, marks map[string]int64, capped bool) (sources []IndexSource, from map[string]int64, present map[string]bool) {
	from = marks
	lowered := false
	limit := map[string]int64{} // -1: no limit (a legacy line)
	var order []string
	for _, l := range j.Lines {
		cur, known := limit[l.Rel]
		if !known {
			order = append(order, l.Rel)
		}
		if l.After < 0 || known && cur < 0 {
			limit[l.Rel] = -1
		} else {
			limit[l.Rel] = max(cur, l.After)
		}
		if l.off >= j.seen && l.Before >= 0 && l.Before < from[l.Rel] {
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
		sources = append(sources, IndexSource{Rel: rel, Kind: 'm', Size: size})
	}
	return sources, from, present
}

// JournalCovered returns the offset of the first line of j the watermarks
// marks do not cover (a part that is gone needs nothing), or j's end.
func JournalCovered(j JournalRead, marks map[string]int64, present map[string]bool) int64 {
	for _, l := range j.Lines {
		if l.off >= 0 && present[l.Rel] && marks[l.Rel] < l.After {
			return l.off
		}
	}
	return j.end
}

// indexLockFile is the index's own lock, apart from the vault's: catching
// up or rebuilding the index takes it, writers of the vault do not, and a
// recall never takes the vault lock. Whoever takes both takes the vault lock
// first (Reindex), and nobody holding the index lock waits for the vault
// lock, so the two cannot deadlock. Like the vault lock, the file is opened
// read-write and never deleted.
const indexLockFile = ".locks/index.lock"

// LockIndex takes the index lock, waiting at most wait.
func (v *Vault) LockIndex(wait time.Duration) (release func(), err error) {
	release, ok, err := flockWait(v.Root, indexLockFile, procLock(v.Root+"\x00index"), wait)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fault.New(ErrBusy, "index busy: another process is catching it up; gave up after %s", wait)
	}
	return release, nil
}

// The search index's layout on disk. The index itself is derived (recall
// catches it up; vault/recall), but its folder, its parts and the journal
// of transcript appends (indexjournal.go) are the engine's: a transaction
// journals what it appends, and compacts the journal against the
// transcript part's meta.

// IndexDir is where the derived full-text index lives.
const IndexDir = ".index"

// The index is two Bleve indexes under .index/, each with its own
// watermarks: lineage (ledger rows and nodes, small, searched on every
// prompt) and transcripts (messages, the bulk). A search of one tier opens
// only the index that holds it, and the transcript index needs no tier
// filter.
type IndexPart struct {
	Name  string // folder under .index/
	Kinds string // source kinds: 'r' ledger segments, 'n' nodes, 'm' transcript parts
}

var (
	LineagePart    = IndexPart{Name: "lineage", Kinds: "rn"}
	TranscriptPart = IndexPart{Name: "transcripts", Kinds: "m"}
	// HeadsPart holds the sections of MEMORY.md and the thread heads. Heads
	// are rewritten, not appended to, so this small index is rebuilt whole
	// whenever one changed; a vault of 200 threads has thousands of
	// sections, too many to index in memory on every recall.
	HeadsPart  = IndexPart{Name: "heads", Kinds: "h"}
	IndexParts = []IndexPart{LineagePart, TranscriptPart, HeadsPart}
)

func (v *Vault) PartDir(p IndexPart) string { return filepath.Join(v.Root, IndexDir, p.Name) }

// IndexSource is one file the index reads: its path, kind and size.
type IndexSource struct {
	Rel  string
	Kind byte // 'm' transcript part, 'r' ledger segment, 'n' node, 'd' node folder mark, 'h' head file
	// Size is the file's size; for a 'd' mark or an 'h' head, its mtime in
	// nanoseconds, as the watermark to compare.
	Size int64
}
