// Package tjournal is the transcript journal, .index/journal, the
// engine writes before each transcript append (vault.Tx's stage) and the
// search index's catch-up reads (vault/recall). The contract is below.
package tjournal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// The transcript journal, .index/journal, tells the search index's reader
// (vault/recall) which transcript parts grew, so that it need not stat
// every part of the vault. Writers append to it under the vault lock; the
// index catches up from it under the index lock alone, so the two run at
// the same time, and the journal is built so that neither loses the
// other's work. The engine writes and compacts the journal; what the index
// holds it never reads: the reader tells it, through a coverage file.
//
//   - A transaction appends one line per transcript append, before the
//     append, fsynced: "<part>\t<size before>\t<size after>". The line is
//     the writer's intent: a crash after it leaves at worst a line that
//     names text that never came.
//   - The journal is never truncated in place: within a generation (named
//     in its first line) a line keeps its offset. The index's meta records
//     where the index stands in it (Off, the first line it may not cover
//     yet; Seen, the end of what it read), and a catch-up reads from Off.
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
//   - After a catch-up has saved the index's meta, it writes the coverage
//     file (Coverage, .index/transcripts/journal-covered): the
//     generation, Seen, and the lines before Seen it found not covered:
//     each of them, not only the first (Off), since a line that waits long
//     (a transaction that failed after writing it, a crash) would otherwise
//     keep every covered line after it through each compaction, where a
//     reader of the new generation takes them for news and indexes their
//     text again. It is written after the meta, so it never claims more than the index
//     holds; the index only gains text afterwards (a part cut back comes
//     with a new line past Seen, which the file does not claim), until it is
//     built again, which removes its folder, the file with it, first. A
//     file lost, torn, or left behind by a crash before the next one
//     claims less, and a compaction keeps more. Both files are written
//     without fsync, in this order, as the index's own files are: a crash
//     of the machine that kept the later rename and lost the earlier could
//     leave the file ahead of the meta, a loss of the kind the index
//     already risks there (its Bleve files are not fsynced either), which
//     a reindex repairs.
//   - Compaction rewrites the journal whole (temp file, rename), only inside
//     a transaction, under the vault lock, so no writer is mid-append. It
//     drops the lines the coverage file of the journal's generation claims,
//     keeps every other line (all of them with no such file), clamped to the
//     part's current size (with no writer mid-append, a part short of a
//     line's size after was cut back or torn by a crash: there is no more to
//     wait for), and gives the journal a new generation in its first line. A
//     mark or coverage file of another generation counts for nothing, so a
//     reader or a catch-up that raced the compaction reads the whole new
//     journal, which holds every line not covered: at worst it reads lines
//     twice, and the coverage file it writes then is of the old generation.
//     A crash before the rename leaves the old journal; after it, the new
//     one. With no transcript index folder, no index is there or being built
//     (a build creates the folder before it lists the parts), and every
//     append a line names is on disk: the build to come lists it, and the
//     compaction keeps no line.
//   - A rebuild of the transcript index reads the journal before it lists
//     the parts, so that a line it read names text it either indexed or left
//     for the next catch-up; it writes the coverage file too.
const (
	// IndexDir is where the derived full-text index lives.
	IndexDir = ".index"
	// TranscriptIndexName is the transcript index's folder under IndexDir:
	// the compaction looks for it, and finds the coverage file in it.
	TranscriptIndexName = "transcripts"
	// JournalCompactBytes is the journal size at which a writer compacts
	// it: about 200 lines, so a recall that reads it whole (after a
	// compaction, or behind a line that waits) parses little.
	JournalCompactBytes = 16 << 10

	journalName   = "journal" // in .index/
	journalMagic  = "memvault transcript journal "
	coverageName  = "journal-covered" // in the transcript index's folder
	coverageMagic = "memvault journal coverage"
)

// Path is the transcript journal's path in the vault at root.
func Path(root string) string { return filepath.Join(root, IndexDir, journalName) }

func coveragePath(root string) string {
	return filepath.Join(root, IndexDir, TranscriptIndexName, coverageName)
}

// Line is one line of the journal: an append to the transcript part
// Rel from size Before to size After, starting at offset Off of the journal.
type Line struct {
	Rel           string
	Before, After int64
	Off           int64
}

// Read reads the journal's generation and its complete lines: from
// offset from on when the journal is of generation gen, from its first line
// otherwise. end is the end of the last complete line read. A line that
// does not parse is skipped: a torn one is followed by a newline the next
// writer adds, and damage costs at most text a reindex finds.
func Read(files fileio.Root, root, gen string, from int64) (jgen string, lines []Line, end int64) {
	f, err := files.Open(Path(root))
	if err != nil {
		return "", nil, 0
	}
	defer f.Close()
	head := make([]byte, 128)
	n, _ := io.ReadFull(f, head)
	nl := bytes.IndexByte(head[:n], '\n')
	if nl < 0 || !bytes.HasPrefix(head, []byte(journalMagic)) {
		return "", nil, 0
	}
	jgen = string(head[len(journalMagic):nl])
	start := int64(nl + 1)
	if jgen == gen && from > start {
		start = from
	}
	data, err := io.ReadAll(io.NewSectionReader(f, start, 1<<40))
	if err != nil {
		return jgen, nil, 0
	}
	last := bytes.LastIndexByte(data, '\n') + 1
	for off := 0; off < last; {
		i := bytes.IndexByte(data[off:], '\n')
		if l, ok := parseLine(string(data[off : off+i])); ok {
			l.Off = start + int64(off)
			lines = append(lines, l)
		}
		off += i + 1
	}
	return jgen, lines, start + int64(last)
}

func parseLine(s string) (Line, bool) {
	f := strings.Split(s, "\t")
	if len(f) != 3 || !IsTranscriptPart(f[0]) {
		return Line{}, false
	}
	before, err1 := strconv.ParseInt(f[1], 10, 64)
	after, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || before < 0 || after < before {
		return Line{}, false
	}
	return Line{Rel: f[0], Before: before, After: after}, true
}

// IsTranscriptPart reports whether rel has the shape of a transcript part:
// transcripts/<agent>/<file>.jsonl.
func IsTranscriptPart(rel string) bool {
	parts := strings.Split(rel, "/")
	return len(parts) == 3 && parts[0] == "transcripts" && fileio.CheckName("agent", parts[1]) == nil &&
		strings.HasSuffix(parts[2], ".jsonl") && !strings.HasPrefix(parts[2], ".") && !strings.Contains(parts[2], "\\")
}

// Append is one transcript append a transaction is about to make.
type Append struct {
	Rel string
	N   int64 // bytes appended
}

// Note notes, before a transaction appends to them, the
// transcript parts it appends to and the sizes they go from and to. It runs
// under the vault lock (which is what lets it compact the journal), and
// always, index or not: a rebuild of a missing index may be listing the
// parts at this moment.
func Note(files fileio.Root, root string, apps []Append) error {
	if len(apps) == 0 {
		return nil
	}
	p := Path(root)
	info, err := files.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := files.WriteAtomic(p, []byte(journalMagic+newJournalGen()+"\n")); err != nil {
			return err
		}
	case err != nil:
		return fault.IO("stat "+journalName, err)
	case info.Size() > JournalCompactBytes:
		if err := compact(files, root); err != nil {
			return err
		}
	}
	var b strings.Builder
	if info, err := files.Stat(p); err == nil && info.Size() > 0 && !EndsWithNewline(files, p, info.Size()) {
		b.WriteByte('\n') // a crash tore the last line: do not glue ours to it
	}
	sizes := map[string]int64{}
	for _, a := range apps {
		before, ok := sizes[a.Rel]
		if !ok {
			if info, err := files.Stat(filepath.Join(root, filepath.FromSlash(a.Rel))); err == nil {
				before = info.Size()
			}
		}
		sizes[a.Rel] = before + a.N
		fmt.Fprintf(&b, "%s\t%d\t%d\n", a.Rel, before, before+a.N)
	}
	return files.Append(p, []byte(b.String()))
}

// compact rewrites the journal without the lines the coverage file
// claims, under a new generation. The caller holds the vault lock, so no
// append is in flight (see the comment on the journal above for why that
// makes it safe without the index lock).
func compact(files fileio.Root, root string) error {
	var b strings.Builder
	b.WriteString(journalMagic + newJournalGen() + "\n")
	if _, err := files.Stat(filepath.Dir(coveragePath(root))); errors.Is(err, fs.ErrNotExist) {
		// No transcript index, and none being built: the build to come
		// lists every part.
		return files.WriteAtomic(Path(root), []byte(b.String()))
	}
	gen, lines, _ := Read(files, root, "", 0)
	c, ok := readCoverage(files, root)
	for _, l := range lines {
		if ok && c.Gen == gen && c.covers(l.Off) {
			continue
		}
		info, err := files.Stat(filepath.Join(root, filepath.FromSlash(l.Rel)))
		if err != nil {
			continue // gone: nothing to index
		}
		after := min(l.After, info.Size())
		fmt.Fprintf(&b, "%s\t%d\t%d\n", l.Rel, min(l.Before, after), after)
	}
	return files.WriteAtomic(Path(root), []byte(b.String()))
}

func newJournalGen() string { return strconv.FormatInt(time.Now().UnixNano(), 36) }

// Coverage is what the index's reader tells the journal's
// compaction: of the journal of generation Gen, the index holds the text of
// every line before Seen but those starting at the offsets Waiting
// (ascending). Lines from Seen on it has not read.
type Coverage struct {
	Gen     string
	Seen    int64
	Waiting []int64
}

// covers reports whether the line at off is one the index holds.
func (c Coverage) covers(off int64) bool {
	_, waiting := slices.BinarySearch(c.Waiting, off)
	return off < c.Seen && !waiting
}

// SaveCoverage leaves c in the transcript index's folder for the
// next compaction. Call it only after the index's meta that covers c is
// saved (see the comment on the journal above). It is a cache: a crash
// may lose it, which only makes a compaction keep more. A journal without
// a generation (none yet) needs none.
func SaveCoverage(files fileio.Root, root string, c Coverage) error {
	if c.Gen == "" || strings.ContainsAny(c.Gen, "\t\n") {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\t%s\t%d\t", coverageMagic, c.Gen, c.Seen)
	for i, off := range c.Waiting {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(off, 10))
	}
	b.WriteByte('\n')
	return files.WriteCache(coveragePath(root), []byte(b.String()))
}

// readCoverage reads the coverage file; ok is false when there is
// none, or it does not parse (a crash of the machine may leave it torn),
// and then no line counts as covered.
func readCoverage(files fileio.Root, root string) (c Coverage, ok bool) {
	data, err := files.ReadFile(coveragePath(root))
	s, whole := strings.CutSuffix(string(data), "\n")
	f := strings.Split(s, "\t")
	if err != nil || !whole || len(f) != 4 || f[0] != coverageMagic || f[1] == "" || strings.Contains(s, "\n") {
		return Coverage{}, false
	}
	c.Gen = f[1]
	if c.Seen, err = strconv.ParseInt(f[2], 10, 64); err != nil {
		return Coverage{}, false
	}
	for w := range strings.SplitSeq(f[3], ",") {
		if w == "" && f[3] == "" {
			break
		}
		off, err := strconv.ParseInt(w, 10, 64)
		if err != nil || off >= c.Seen || len(c.Waiting) > 0 && off <= c.Waiting[len(c.Waiting)-1] {
			return Coverage{}, false
		}
		c.Waiting = append(c.Waiting, off)
	}
	return c, true
}

// EndsWithNewline reports whether the file at p, of size bytes, ends with
// a newline; a file it cannot read counts as ending with one (the append
// reports the error).
func EndsWithNewline(files fileio.Root, p string, size int64) bool {
	f, err := files.Open(p)
	if err != nil {
		return true
	}
	defer f.Close()
	b := []byte{0}
	if _, err := f.ReadAt(b, size-1); err != nil {
		return true
	}
	return b[0] == '\n'
}
