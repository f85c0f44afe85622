package vault

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/memvault/memvault/hooks/transcript"
	"github.com/memvault/memvault/index"
	"github.com/memvault/memvault/vault/fault"
)

// Catching up: when more than catchUpBytes of the vault's files are not in
// the persistent index, recall brings the index closer, under the index
// lock (if it can get it quickly) and by at most recallCatchUpBytes, before
// searching; what is left, and a smaller gap, is searched through a
// throwaway in-memory index instead. Building that costs about 0.2 s per
// MiB, so the gap is kept small.
//
// recallCatchUpBytes bounds the work a recall does for the index: indexing
// runs at about 2 MiB/s of transcript (BenchmarkCatchUp: 256 KiB a step,
// on a shared 2-core machine), so 512 KiB costs a recall about a quarter of
// a second, which a prompt hook can afford, and it is eight times
// catchUpBytes, so a recall that catches up leaves room for the next few
// prompts. Imports call CatchUpIndex without a bound, the hooks' job runner
// with a small one.
const (
	catchUpBytes       = 64 << 10
	recallCatchUpBytes = 512 << 10
	indexOpenWait      = 200 * time.Millisecond
	indexLockWait      = 200 * time.Millisecond
	indexBatchDocs     = 2000
)

// recallCatchUp is the most a recall indexes before it searches.
func (v *Vault) recallCatchUp() int64 {
	if v.recallStep > 0 {
		return v.recallStep
	}
	return recallCatchUpBytes
}

// The index is two Bleve indexes under .index/, each with its own
// watermarks: lineage (ledger rows and nodes, small, searched on every
// prompt) and transcripts (messages, the bulk). A search of one tier opens
// only the index that holds it, and the transcript index needs no tier
// filter.
type indexPart struct {
	name  string // folder under .index/
	kinds string // source kinds: 'r' ledger segments, 'n' nodes, 'm' transcript parts
}

var (
	lineagePart    = indexPart{name: "lineage", kinds: "rn"}
	transcriptPart = indexPart{name: "transcripts", kinds: "m"}
	// headsPart holds the sections of MEMORY.md and the thread heads. Heads
	// are rewritten, not appended to, so this small index is rebuilt whole
	// whenever one changed; a vault of 200 threads has thousands of
	// sections, too many to index in memory on every recall.
	headsPart  = indexPart{name: "heads", kinds: "h"}
	indexParts = []indexPart{lineagePart, transcriptPart, headsPart}
)

func (v *Vault) partDir(p indexPart) string { return filepath.Join(v.Root, IndexDir, p.name) }

// dirMarkName names a node folder's mtime mark among its files; "~" sorts
// after every node file name.
const dirMarkName = "~mtime"

// docsOf turns the part of a source past its watermark into documents, and
// returns the new watermark (the end of the last complete line).
func (v *Vault) docsOf(s indexSource, from int64) ([]index.Doc, int64, error) {
	p := filepath.Join(v.Root, filepath.FromSlash(s.rel))
	if s.kind == 'n' {
		data, err := v.Files().ReadFile(p)
		if err != nil {
			return nil, from, nil // gone: nothing to index
		}
		n, err := parseNode(data, false)
		if err != nil {
			return nil, 1, nil
		}
		thread := ""
		if len(n.Threads) > 0 {
			thread = n.Threads[0]
		}
		return []index.Doc{{ID: "n|" + s.rel, Text: n.Title + "\n" + n.Body, Tier: TierHeads,
			Agent: n.Agent, Thread: thread, Session: n.Session}}, 1, nil
	}
	f, err := v.Files().Open(p)
	if err != nil {
		return nil, from, nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.NewSectionReader(f, from, s.size-from))
	if err != nil {
		return nil, from, fault.IO("read "+s.rel, err)
	}
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		return nil, from, nil
	}
	data = data[:end+1]
	var docs []index.Doc
	agent, session, prev := "", "", ""
	if s.kind == 'm' {
		agent, session = transcriptOfPart(s.rel)
		prev = previousMessageText(f, from)
	}
	for off := 0; off < len(data); {
		i := bytes.IndexByte(data[off:], '\n')
		raw := data[off : off+i]
		id := fmt.Sprintf("%c|%s|%d", s.kind, s.rel, from+int64(off))
		if s.kind == 'm' {
			id = messageDocID(s.rel, from+int64(off))
		}
		off += i + 1
		switch s.kind {
		case 'r':
			var ev Event
			if json.Unmarshal(raw, &ev) != nil || !recallableKind(ev.Kind) || strings.TrimSpace(ev.Text) == "" {
				continue
			}
			docs = append(docs, index.Doc{ID: id, Text: ev.Text, Tier: TierStructured, Agent: ev.Agent,
				Thread: ev.Thread, Session: ev.Session})
		case 'm':
			m, err := decodeTranscriptLine(raw)
			if err != nil || m.Kind == transcript.KindContext || m.Kind == transcript.KindBoundary ||
				strings.TrimSpace(m.Text) == "" {
				continue
			}
			d := index.Doc{ID: id, Text: m.Text, Context: contextTail(prev), Tier: TierTranscripts, Agent: agent, Session: session}
			if m.Role == transcript.RoleUser || m.Role == transcript.RoleAssistant {
				// Tool and system messages have a tool's or harness's
				// name as speaker: not a person a question is about.
				d.Speaker = m.Speaker
			}
			if !m.TS.IsZero() {
				d.Day = m.TS.UTC().Format(time.DateOnly)
			}
			docs = append(docs, d)
			prev = m.Text
		}
	}
	return docs, from + int64(end) + 1, nil
}

// previousMessageText returns the text of the message that ends just before
// offset from in a transcript part ("" at the start of a part).
func previousMessageText(f *os.File, from int64) string {
	if from == 0 {
		return ""
	}
	start := max(0, from-(256<<10))
	buf := make([]byte, from-start)
	if _, err := f.ReadAt(buf, start); err != nil {
		return ""
	}
	buf = bytes.TrimSuffix(buf, []byte("\n"))
	line := buf[bytes.LastIndexByte(buf, '\n')+1:]
	m, err := decodeTranscriptLine(line)
	if err != nil || m.Kind == transcript.KindContext {
		return ""
	}
	return m.Text
}

// syncIndex brings ix up to date with sources, in batches, saving the
// watermarks after each batch so an interrupted sync resumes where it was.
// With a budget above 0 it starts no new source once it has read that many
// bytes (so it reads at most the budget and one file: transcript parts and
// ledger segments are closed by size), and reports whether it got through.
func (v *Vault) syncIndex(ix *index.Index, sources []indexSource, budget int64, progress func(done, total int64)) (bool, error) {
	var batch []index.Doc
	marks := map[string]int64{}
	flush := func() error {
		if len(batch) > 0 {
			if err := ix.Add(batch); err != nil {
				return fmt.Errorf("index: %w", err)
			}
			batch = batch[:0]
		}
		for k, m := range marks {
			ix.Meta.Watermarks[k] = m
		}
		marks = map[string]int64{}
		return ix.SaveMeta()
	}
	var spent int64
	for i, s := range sources {
		if budget > 0 && spent >= budget {
			return false, flush()
		}
		from := ix.Meta.Watermarks[s.rel]
		if s.kind == 'd' {
			if s.size != from {
				marks[s.rel] = s.size
			}
		} else if s.kind == 'h' {
			if s.size != from {
				docs := v.headFileDocs(s.rel)
				for _, d := range docs {
					spent += int64(len(d.Text))
				}
				batch = append(batch, docs...)
				marks[s.rel] = s.size
			}
		} else if s.size > from {
			docs, mark, err := v.docsOf(s, from)
			if err != nil {
				return false, err
			}
			if s.kind == 'n' {
				for _, d := range docs {
					spent += int64(len(d.Text))
				}
			} else {
				spent += mark - from
			}
			batch = append(batch, docs...)
			marks[s.rel] = mark
			if len(batch) >= indexBatchDocs {
				if err := flush(); err != nil {
					return false, err
				}
			}
		}
		if progress != nil {
			progress(int64(i+1), int64(len(sources)))
		}
	}
	return true, flush()
}

// IndexReport says what a reindex did.
type IndexReport struct {
	Files     int           `json:"files"`
	Documents uint64        `json:"documents"`
	Bytes     int64         `json:"bytes"`
	Elapsed   time.Duration `json:"elapsed_ns"`
}

// Reindex rebuilds the index from the files. It takes the vault lock, then
// the index lock: with no writer and no catch-up running, the rebuild holds
// every line the journal names, and the journal is removed (the next writer
// starts a new one, whose generation no index mark names). It reports its
// steps to progress, or to the vault's Progress when progress is nil.
func (v *Vault) Reindex(progress Progress) (*IndexReport, error) {
	if progress == nil {
		progress = v.Progress
	}
	start := time.Now()
	release, err := v.Lock(Lease{Command: "reindex"}, 0)
	if err != nil {
		return nil, err
	}
	defer release()
	wait, err := v.LockTimeout()
	if err != nil {
		return nil, err
	}
	releaseIndex, err := v.lockIndex(wait)
	if err != nil {
		return nil, err
	}
	defer releaseIndex()
	v.removeOldIndexLayout()
	var all [][]indexSource
	var total int64
	progress.Step("reindex: listing files", "", 0, 0)
	for _, p := range indexParts {
		sources, err := v.indexSourcesOf(p.kinds)
		if err != nil {
			return nil, err
		}
		all = append(all, sources)
		total += int64(len(sources))
	}
	rep := &IndexReport{}
	var done int64
	for i, p := range indexParts {
		ix, err := v.createIndex(v.partDir(p))
		if err != nil {
			return nil, fault.IO("index: create", err)
		}
		var step func(int64, int64)
		if progress != nil {
			step = func(d, _ int64) { progress.Step("reindex: indexing files", "files", done+d, total) }
		}
		_, err = v.syncIndex(ix, all[i], 0, step)
		if err == nil {
			progress.Step("reindex: merging the "+p.name+" index", "", 0, 0)
			if err = ix.Compact(); err != nil {
				err = fmt.Errorf("index: merge segments: %w", err)
			}
		}
		if err != nil {
			ix.Close()
			return nil, err
		}
		n, _ := ix.Count()
		rep.Documents += n
		ix.Close()
		done += int64(len(all[i]))
		for _, s := range all[i] {
			switch s.kind {
			case 'd':
			case 'h':
				rep.Files++ // its size is its mtime here
			default:
				rep.Files++
				rep.Bytes += s.size
			}
		}
	}
	if err := v.Files().Remove(v.journalPath()); err != nil && !os.IsNotExist(err) {
		return nil, fault.IO("remove the index journal", err)
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// removeOldIndexLayout removes what an older memvault kept in .index/ (one
// index for everything), so that it does not linger beside the new one.
func (v *Vault) removeOldIndexLayout() {
	v.Files().RemoveAll(filepath.Join(v.Root, IndexDir, "bleve"))
	v.Files().Remove(filepath.Join(v.Root, IndexDir, "meta.gob"))
}

// CatchUpIndex brings the existing index parts up to date with the files,
// reading at most budget bytes of them per part (no bound when budget is 0),
// under the index lock, which it waits for briefly; it never takes the
// vault lock. It reports whether the index is now up to date. Writers of
// bulk text (imports) and the hooks' job runner call it so that recall finds
// the text indexed; recall catches up by itself, a bounded step at a time.
// The heads index is left to recall, which rebuilds it whole when a head
// changed: a rebuild here would cost more than it saves.
func (v *Vault) CatchUpIndex(budget int64) (bool, error) {
	complete := true
	for _, p := range indexParts {
		if p == headsPart {
			continue
		}
		if _, err := v.Files().Stat(v.partDir(p)); err != nil {
			continue // no index yet: the first recall builds it
		}
		done, err := v.catchUpPart(p, budget, false)
		if err != nil {
			return false, err
		}
		complete = complete && done
	}
	return complete, nil
}

// catchUpPart catches index part p up, by at most budget bytes (0: no
// bound), or rebuilds it, under the index lock; it reports whether the part
// is up to date. The heads part is always rebuilt whole.
func (v *Vault) catchUpPart(p indexPart, budget int64, rebuild bool) (bool, error) {
	release, err := v.lockIndex(indexLockWait)
	if err != nil {
		return false, err
	}
	defer release()
	dir := v.partDir(p)
	var ix *index.Index
	rebuild = rebuild || p == headsPart // rewritten files: rebuilt whole
	if !rebuild {
		ix, err = v.openIndex(dir, false, indexOpenWait)
		if errors.Is(err, index.ErrBusy) {
			return false, err
		}
	}
	// The journal is read before the parts are listed: see indexjournal.go.
	var j journalRead
	if p == transcriptPart {
		var mark index.JournalMark
		if ix != nil {
			mark = ix.Meta.Journal
		}
		j = v.readJournal(mark)
	}
	var sources []indexSource
	var present map[string]bool
	if rebuild || err != nil {
		// A rebuild goes all the way: parts the journal does not name
		// would not be looked at again.
		rebuild, budget = true, 0
		v.removeOldIndexLayout()
		if ix, err = v.createIndex(dir); err != nil {
			return false, fault.IO("index: create", err)
		}
		sources, err = v.indexSourcesOf(p.kinds)
		present = map[string]bool{}
		for _, s := range sources {
			present[s.rel] = true
		}
	} else if p == transcriptPart {
		sources, ix.Meta.Watermarks, present = v.journalSources(j, ix.Meta.Watermarks, true)
	} else {
		sources, err = v.changedSources(p, ix.Meta.Watermarks)
	}
	if err != nil {
		ix.Close()
		return false, err
	}
	var step func(int64, int64)
	if v.Progress != nil {
		step = func(d, n int64) { v.Progress.Step("index: catching up "+p.name, "files", d, n) }
	}
	done, err := v.syncIndex(ix, sources, budget, step)
	if err == nil && p == transcriptPart {
		ix.Meta.Journal = j.mark(journalCovered(j, ix.Meta.Watermarks, present))
		err = ix.SaveMeta()
	}
	if cerr := ix.Close(); err == nil {
		err = cerr
	}
	return done && err == nil, err
}
