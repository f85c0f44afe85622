package recall

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

	"github.com/memvault/memvault/index"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/node"
	"github.com/memvault/memvault/vault/transcript"
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
func recallCatchUp(v *vault.Vault) int64 {
	if v.RecallStep > 0 {
		return v.RecallStep
	}
	return recallCatchUpBytes
}

// dirMarkName names a node folder's mtime mark among its files; "~" sorts
// after every node file name.
const dirMarkName = "~mtime"

// docsOf turns the part of a source past its watermark into documents, and
// returns the new watermark (the end of the last complete line).
func docsOf(v *vault.Vault, s indexSource, from int64) ([]index.Doc, int64, error) {
	p := filepath.Join(v.Root, filepath.FromSlash(s.Rel))
	if s.Kind == 'n' {
		data, err := v.Files().ReadFile(p)
		if err != nil {
			return nil, from, nil // gone: nothing to index
		}
		n, err := node.Parse(data, false)
		if err != nil {
			return nil, 1, nil
		}
		thread := ""
		if len(n.Threads) > 0 {
			thread = n.Threads[0]
		}
		return []index.Doc{{ID: "n|" + s.Rel, Text: n.Title + "\n" + n.Body, Tier: TierHeads,
			Agent: n.Agent, Thread: thread, Session: n.Session}}, 1, nil
	}
	f, err := v.Files().Open(p)
	if err != nil {
		return nil, from, nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.NewSectionReader(f, from, s.Size-from))
	if err != nil {
		return nil, from, fault.IO("read "+s.Rel, err)
	}
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		return nil, from, nil
	}
	data = data[:end+1]
	var docs []index.Doc
	agent, session, prev := "", "", ""
	if s.Kind == 'm' {
		agent, session = transcriptOfPart(s.Rel)
		prev = previousMessageText(f, from)
	}
	for off := 0; off < len(data); {
		i := bytes.IndexByte(data[off:], '\n')
		raw := data[off : off+i]
		id := fmt.Sprintf("%c|%s|%d", s.Kind, s.Rel, from+int64(off))
		if s.Kind == 'm' {
			id = messageDocID(s.Rel, from+int64(off))
		}
		off += i + 1
		switch s.Kind {
		case 'r':
			var ev vault.Event
			if json.Unmarshal(raw, &ev) != nil || !recallableKind(ev.Kind) || strings.TrimSpace(ev.Text) == "" {
				continue
			}
			docs = append(docs, index.Doc{ID: id, Text: ev.Text, Tier: TierStructured, Agent: ev.Agent,
				Thread: ev.Thread, Session: ev.Session})
		case 'm':
			m, err := transcript.DecodeLine(raw)
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
	m, err := transcript.DecodeLine(line)
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
func syncIndex(v *vault.Vault, ix *index.Index, sources []indexSource, budget int64, progress func(done, total int64)) (bool, error) {
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
		from := ix.Meta.Watermarks[s.Rel]
		if s.Kind == 'd' {
			if s.Size != from {
				marks[s.Rel] = s.Size
			}
		} else if s.Kind == 'h' {
			if s.Size != from {
				docs := headFileDocs(v, s.Rel)
				for _, d := range docs {
					spent += int64(len(d.Text))
				}
				batch = append(batch, docs...)
				marks[s.Rel] = s.Size
			}
		} else if s.Size > from {
			docs, mark, err := docsOf(v, s, from)
			if err != nil {
				return false, err
			}
			if s.Kind == 'n' {
				for _, d := range docs {
					spent += int64(len(d.Text))
				}
			} else {
				spent += mark - from
			}
			batch = append(batch, docs...)
			marks[s.Rel] = mark
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
func Reindex(v *vault.Vault, progress vault.Progress) (*IndexReport, error) {
	if progress == nil {
		progress = v.Progress
	}
	start := time.Now()
	release, err := v.Lock(vault.Lease{Command: "reindex"}, 0)
	if err != nil {
		return nil, err
	}
	defer release()
	wait, err := v.LockTimeout()
	if err != nil {
		return nil, err
	}
	releaseIndex, err := lockIndex(v, wait)
	if err != nil {
		return nil, err
	}
	defer releaseIndex()
	removeOldIndexLayout(v)
	var all [][]indexSource
	var total int64
	progress.Step("reindex: listing files", "", 0, 0)
	for p := range indexParts {
		sources, err := indexSourcesOf(v, p.kinds())
		if err != nil {
			return nil, err
		}
		all = append(all, sources)
		total += int64(len(sources))
	}
	rep := &IndexReport{}
	var done int64
	for p := range indexParts {
		ix, err := createIndex(v, partDir(v, p))
		if err != nil {
			return nil, fault.IO("index: create", err)
		}
		var step func(int64, int64)
		if progress != nil {
			step = func(d, _ int64) { progress.Step("reindex: indexing files", "files", done+d, total) }
		}
		_, err = syncIndex(v, ix, all[p], 0, step)
		if err == nil {
			progress.Step("reindex: merging the "+p.name()+" index", "", 0, 0)
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
		done += int64(len(all[p]))
		for _, s := range all[p] {
			switch s.Kind {
			case 'd':
			case 'h':
				rep.Files++ // its size is its mtime here
			default:
				rep.Files++
				rep.Bytes += s.Size
			}
		}
	}
	if err := v.Files().Remove(v.JournalPath()); err != nil && !os.IsNotExist(err) {
		return nil, fault.IO("remove the index journal", err)
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// removeOldIndexLayout removes what an older memvault kept in .index/ (one
// index for everything), so that it does not linger beside the new one.
func removeOldIndexLayout(v *vault.Vault) {
	v.Files().RemoveAll(filepath.Join(v.Root, vault.IndexDir, "bleve"))
	v.Files().Remove(filepath.Join(v.Root, vault.IndexDir, "meta.gob"))
}

// CatchUpIndex brings the existing index parts up to date with the files,
// reading at most budget bytes of them per part (no bound when budget is 0),
// under the index lock, which it waits for briefly; it never takes the
// vault lock. It reports whether the index is now up to date. Writers of
// bulk text (imports) and the hooks' job runner call it so that recall finds
// the text indexed; recall catches up by itself, a bounded step at a time.
// The heads index is left to recall, which rebuilds it whole when a head
// changed: a rebuild here would cost more than it saves.
func CatchUpIndex(v *vault.Vault, budget int64) (bool, error) {
	complete := true
	for p := range indexParts {
		if p == headsPart {
			continue
		}
		if _, err := v.Files().Stat(partDir(v, p)); err != nil {
			continue // no index yet: the first recall builds it
		}
		done, err := catchUpPart(v, p, budget, false)
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
func catchUpPart(v *vault.Vault, p indexPart, budget int64, rebuild bool) (bool, error) {
	release, err := lockIndex(v, indexLockWait)
	if err != nil {
		return false, err
	}
	defer release()
	dir := partDir(v, p)
	var ix *index.Index
	rebuild = rebuild || p == headsPart // rewritten files: rebuilt whole
	if !rebuild {
		ix, err = openIndex(v, dir, false, indexOpenWait)
		if errors.Is(err, index.ErrBusy) {
			return false, err
		}
	}
	// The journal is read before the parts are listed: see the
	// journal's protocol in vault/txwrite.go.
	var j journalRead
	if p == transcriptPart {
		var mark index.JournalMark
		if ix != nil {
			mark = ix.Meta.Journal
		}
		j = readJournal(v, mark)
	}
	var sources []indexSource
	var present map[string]bool
	if rebuild || err != nil {
		// A rebuild goes all the way: parts the journal does not name
		// would not be looked at again.
		rebuild, budget = true, 0
		removeOldIndexLayout(v)
		if ix, err = createIndex(v, dir); err != nil {
			return false, fault.IO("index: create", err)
		}
		sources, err = indexSourcesOf(v, p.kinds())
		present = map[string]bool{}
		for _, s := range sources {
			present[s.Rel] = true
		}
	} else if p == transcriptPart {
		sources, ix.Meta.Watermarks, present = journalSources(v, j, ix.Meta.Watermarks, true)
	} else {
		sources, err = changedSources(v, p, ix.Meta.Watermarks)
	}
	if err != nil {
		ix.Close()
		return false, err
	}
	var step func(int64, int64)
	if v.Progress != nil {
		step = func(d, n int64) { v.Progress.Step("index: catching up "+p.name(), "files", d, n) }
	}
	done, err := syncIndex(v, ix, sources, budget, step)
	if err == nil && p == transcriptPart {
		err = saveJournalMark(v, ix, j, present)
	}
	if cerr := ix.Close(); err == nil {
		err = cerr
	}
	return done && err == nil, err
}

// openIndex is index.Open of the index part in dir, which holds no link.
func openIndex(v *vault.Vault, dir string, readOnly bool, wait time.Duration) (*index.Index, error) {
	if err := v.CheckNoLinksBelow(dir); err != nil {
		return nil, err
	}
	return index.Open(dir, readOnly, wait)
}

// createIndex is index.Create in dir, which holds no link: Create empties
// the folder first, which through a link would empty another.
func createIndex(v *vault.Vault, dir string) (*index.Index, error) {
	if err := v.CheckNoLinksBelow(dir); err != nil {
		return nil, err
	}
	return index.Create(dir)
}
