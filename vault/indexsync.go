package vault

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/memvault/memvault/hooks/transcript"
	"github.com/memvault/memvault/index"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// Catching up: when more than catchUpBytes of the vault's files are not in
// the persistent index, recall brings the index up to date under the vault
// lock (if it can get the lock quickly) before searching; a smaller gap is
// searched through a throwaway in-memory index instead. Building that costs
// about 0.2 s per MiB, so the gap is kept small.
const (
	catchUpBytes   = 64 << 10
	indexOpenWait  = 200 * time.Millisecond
	indexLockWait  = 200 * time.Millisecond
	indexBatchDocs = 2000
)

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

// journalFile, in the transcript index's folder, names the transcript parts
// appended to since the index last caught up, one per line. Every append
// goes through a transaction, which writes the name here first, under the
// vault lock; so a reader learns what grew from this short list instead of
// stat-ing every transcript of the vault. A catch-up empties it; a rebuild,
// which lists every file, removes it with the rest of the folder.
const journalFile = "pending"

func (v *Vault) partDir(p indexPart) string { return filepath.Join(v.Root, indexDir, p.name) }

// indexSource is one file the index covers.
type indexSource struct {
	rel  string
	kind byte // 'm' transcript part, 'r' ledger segment, 'n' node, 'd' node folder mark, 'h' head file
	// size is the file's size; for a 'd' mark or an 'h' head, its mtime in
	// nanoseconds, as the watermark to compare.
	size int64
}

// indexSourcesOf lists every file of the given kinds ('r' ledger segments,
// 'm' transcript parts, 'n' nodes), with its size.
func (v *Vault) indexSourcesOf(kinds string) ([]indexSource, error) {
	var out []indexSource
	for _, k := range kinds {
		var got []indexSource
		var err error
		switch k {
		case 'r':
			got, err = v.segmentSources()
		case 'm':
			got, err = v.transcriptSources()
		case 'n':
			got, err = v.nodeSources(nil)
		case 'h':
			got, err = v.headSources()
		}
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rel < out[j].rel })
	return out, nil
}

// changedSources lists the files of part p that may hold text past the
// index's watermarks marks. For the lineage that is every ledger segment (a
// few hundred at most) and the nodes of the month folders that changed; for
// transcripts, the parts the journal names.
func (v *Vault) changedSources(p indexPart, journal []string, marks map[string]int64) ([]indexSource, error) {
	if p == headsPart {
		return v.headSources()
	}
	if p != transcriptPart {
		segs, err := v.segmentSources()
		if err != nil {
			return nil, err
		}
		nodes, err := v.nodeSources(marks)
		return append(segs, nodes...), err
	}
	out := make([]indexSource, 0, len(journal))
	for _, rel := range journal {
		info, err := os.Stat(filepath.Join(v.Root, filepath.FromSlash(rel)))
		if err != nil {
			continue // gone: nothing to index
		}
		out = append(out, indexSource{rel: rel, kind: 'm', size: info.Size()})
	}
	return out, nil
}

// readJournal returns the transcript parts named in the journal, once each.
// A line that is not a transcript part's path is ignored: the journal is a
// cache, and the worst a damaged one does is leave text to the next
// catch-up or reindex.
func (v *Vault) readJournal() []string {
	data, err := os.ReadFile(filepath.Join(v.partDir(transcriptPart), journalFile))
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, rel := range strings.Split(string(data), "\n") {
		if seen[rel] || !isTranscriptPart(rel) {
			continue
		}
		seen[rel] = true
		out = append(out, rel)
	}
	return out
}

// isTranscriptPart reports whether rel has the shape of a transcript part:
// transcripts/<agent>/<file>.jsonl.
func isTranscriptPart(rel string) bool {
	parts := strings.Split(rel, "/")
	return len(parts) == 3 && parts[0] == "transcripts" && CheckName("agent", parts[1]) == nil &&
		strings.HasSuffix(parts[2], ".jsonl") && !strings.HasPrefix(parts[2], ".") && !strings.Contains(parts[2], "\\")
}

// journalAppends notes, before a transaction appends to them, the
// transcript parts it appends to. Without a transcript index there is
// nothing to note: the first recall builds it from every file.
func (v *Vault) journalAppends(rels []string) error {
	if len(rels) == 0 {
		return nil
	}
	dir := v.partDir(transcriptPart)
	if _, err := os.Stat(dir); err != nil {
		return nil
	}
	return fileio.Append(filepath.Join(dir, journalFile), []byte(strings.Join(rels, "\n")+"\n"))
}

func (v *Vault) segmentSources() ([]indexSource, error) {
	segs, _, err := listSegments(v.Root)
	if err != nil {
		return nil, err
	}
	var out []indexSource
	for _, s := range segs {
		info, err := os.Stat(v.abs(s.rel()))
		if err != nil {
			return nil, fault.IO("stat "+s.String(), err)
		}
		out = append(out, indexSource{rel: s.String(), kind: 'r', size: info.Size()})
	}
	return out, nil
}

func (v *Vault) transcriptSources() ([]indexSource, error) {
	agents, err := os.ReadDir(filepath.Join(v.Root, "transcripts"))
	if err != nil && !os.IsNotExist(err) {
		return nil, fault.IO("read transcripts", err)
	}
	var out []indexSource
	for _, a := range agents {
		if !a.IsDir() || CheckName("agent", a.Name()) != nil {
			continue
		}
		files, err := os.ReadDir(filepath.Join(v.Root, "transcripts", a.Name()))
		if err != nil {
			return nil, fault.IO("read transcripts/"+a.Name(), err)
		}
		for _, f := range files {
			if f.IsDir() || !strings.HasSuffix(f.Name(), ".jsonl") || strings.HasPrefix(f.Name(), ".") {
				continue
			}
			info, err := f.Info()
			if err != nil {
				continue
			}
			out = append(out, indexSource{rel: "transcripts/" + a.Name() + "/" + f.Name(), kind: 'm', size: info.Size()})
		}
	}
	return out, nil
}

// nodeSources lists node files by month folder (nodes/<agent>/<yyyy>/<mm>),
// each folder followed by a mark of its mtime (kind 'd', size the mtime in
// nanoseconds, named to sort after the folder's files so that it is saved
// with or after them). A node is written once and a new one changes its
// folder's mtime, so with marks (a usable index's watermarks) a folder
// whose mtime the index recorded is not listed at all.
func (v *Vault) nodeSources(marks map[string]int64) ([]indexSource, error) {
	months, err := v.nodeMonthDirs()
	if err != nil {
		return nil, err
	}
	var out []indexSource
	for _, dir := range months {
		p := filepath.Join(v.Root, filepath.FromSlash(dir))
		info, err := os.Stat(p)
		if err != nil {
			return nil, fault.IO("read "+dir, err)
		}
		mark := indexSource{rel: dir + "/" + dirMarkName, kind: 'd', size: info.ModTime().UnixNano()}
		if marks != nil && marks[mark.rel] == mark.size {
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, fault.IO("read "+dir, err)
		}
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".md") && !strings.HasPrefix(e.Name(), ".") {
				out = append(out, indexSource{rel: dir + "/" + e.Name(), kind: 'n', size: 1})
			}
		}
		out = append(out, mark)
	}
	return out, nil
}

// dirMarkName names a node folder's mtime mark among its files; "~" sorts
// after every node file name.
const dirMarkName = "~mtime"

// pending is how many bytes of sources the index has not covered.
func pending(sources []indexSource, marks map[string]int64) int64 {
	var n int64
	for _, s := range sources {
		if s.kind == 'd' || s.kind == 'h' {
			// A node folder that changed is listed by every search until
			// the index records it, and a changed head makes its index
			// stale: either is worth a catch-up at once.
			if s.size != marks[s.rel] {
				n += catchUpBytes + 1
			}
			continue
		}
		if s.size > marks[s.rel] {
			n += s.size - marks[s.rel]
		}
	}
	return n
}

// docsOf turns the part of a source past its watermark into documents, and
// returns the new watermark (the end of the last complete line).
func (v *Vault) docsOf(s indexSource, from int64) ([]index.Doc, int64, error) {
	p := filepath.Join(v.Root, filepath.FromSlash(s.rel))
	if s.kind == 'n' {
		data, err := os.ReadFile(p)
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
	f, err := os.Open(p)
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
			var m StoredMessage
			if json.Unmarshal(raw, &m) != nil || m.Kind == transcript.KindContext || m.Kind == transcript.KindBoundary ||
				strings.TrimSpace(m.Text) == "" {
				continue
			}
			docs = append(docs, index.Doc{ID: id, Text: m.Text, Context: prev, Tier: TierTranscripts, Agent: agent, Session: session})
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
	var m StoredMessage
	if json.Unmarshal(line, &m) != nil || m.Kind == transcript.KindContext {
		return ""
	}
	return m.Text
}

// syncIndex brings ix up to date with sources, in batches, saving the
// watermarks after each batch so an interrupted sync resumes where it was.
func (v *Vault) syncIndex(ix *index.Index, sources []indexSource, progress func(done, total int)) error {
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
	for i, s := range sources {
		from := ix.Meta.Watermarks[s.rel]
		if s.kind == 'd' {
			if s.size != from {
				marks[s.rel] = s.size
			}
		} else if s.kind == 'h' {
			if s.size != from {
				batch = append(batch, v.headFileDocs(s.rel)...)
				marks[s.rel] = s.size
			}
		} else if s.size > from {
			docs, mark, err := v.docsOf(s, from)
			if err != nil {
				return err
			}
			batch = append(batch, docs...)
			marks[s.rel] = mark
			if len(batch) >= indexBatchDocs {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if progress != nil {
			progress(i+1, len(sources))
		}
	}
	return flush()
}

// IndexReport says what a reindex did.
type IndexReport struct {
	Files     int           `json:"files"`
	Documents uint64        `json:"documents"`
	Bytes     int64         `json:"bytes"`
	Elapsed   time.Duration `json:"elapsed_ns"`
}

// Reindex rebuilds the index from the files, under the vault lock.
func (v *Vault) Reindex(progress func(done, total int)) (*IndexReport, error) {
	start := time.Now()
	release, err := v.lock(Lease{Command: "reindex"}, 0)
	if err != nil {
		return nil, err
	}
	defer release()
	v.removeOldIndexLayout()
	var all [][]indexSource
	total := 0
	for _, p := range indexParts {
		sources, err := v.indexSourcesOf(p.kinds)
		if err != nil {
			return nil, err
		}
		all = append(all, sources)
		total += len(sources)
	}
	rep := &IndexReport{}
	done := 0
	for i, p := range indexParts {
		ix, err := index.Create(v.partDir(p))
		if err != nil {
			return nil, fault.IO("index: create", err)
		}
		var step func(int, int)
		if progress != nil {
			step = func(d, _ int) { progress(done+d, total) }
		}
		err = v.syncIndex(ix, all[i], step)
		if err == nil {
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
		done += len(all[i])
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
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// removeOldIndexLayout removes what an older memvault kept in .index/ (one
// index for everything), so that it does not linger beside the new one.
func (v *Vault) removeOldIndexLayout() {
	os.RemoveAll(filepath.Join(v.Root, indexDir, "bleve"))
	os.Remove(filepath.Join(v.Root, indexDir, "meta.gob"))
}

// searchSet is what a recall searches: per index part, the persistent index
// (when usable) and an in-memory index of what it has not caught up with.
type searchSet struct {
	lineage     []*index.Index // ledger rows and nodes
	heads       []*index.Index // the sections of MEMORY.md and the thread heads
	transcripts []*index.Index
	notes       []string
}

func (s *searchSet) close() {
	for _, ix := range slices.Concat(s.lineage, s.heads, s.transcripts) {
		ix.Close()
	}
}

// note keeps notes for the user, each once: both parts of a deleted index
// say the same thing.
func (s *searchSet) note(notes []string) {
	for _, n := range notes {
		if !slices.Contains(s.notes, n) {
			s.notes = append(s.notes, n)
		}
	}
}

// forTier returns the indexes holding a tier and the tier filter they need:
// the transcript index holds only transcripts.
func (s *searchSet) forTier(tier string) ([]*index.Index, string) {
	switch tier {
	case TierTranscripts:
		return s.transcripts, ""
	case TierHeads:
		return slices.Concat(s.lineage, s.heads), tier
	}
	return s.lineage, tier
}

// searchIndexes opens what a recall of the tiers behind kinds searches
// ('r' rows, 'n' nodes and heads, 'm' transcripts). When an index is
// missing, damaged or of an older mapping, it is rebuilt first if the vault
// lock is free, and the files are searched directly if not; either way the
// caller is told.
func (v *Vault) searchIndexes(kinds string, headFiles bool) (*searchSet, error) {
	set := &searchSet{}
	if strings.ContainsAny(kinds, "rn") {
		ixs, notes, err := v.openPart(lineagePart)
		if err != nil {
			return nil, err
		}
		set.lineage = ixs
		set.note(notes)
	}
	if headFiles {
		ixs, notes, err := v.openPart(headsPart)
		if err != nil {
			set.close()
			return nil, err
		}
		set.heads = ixs
		set.note(notes)
	}
	if strings.Contains(kinds, "m") {
		ixs, notes, err := v.openPart(transcriptPart)
		if err != nil {
			set.close()
			return nil, err
		}
		set.transcripts = ixs
		set.note(notes)
	}
	return set, nil
}

// openPart opens one index part for a search, caught up with the files:
// the persistent index, brought up to date under the vault lock when more
// than catchUpBytes are past its watermarks, and an in-memory index of the
// rest.
func (v *Vault) openPart(p indexPart) ([]*index.Index, []string, error) {
	var notes []string
	dir := v.partDir(p)
	// The journal is read before the index is opened: a catch-up in between
	// empties the journal only after the index and its watermarks hold what
	// it named.
	journal := v.readJournal()
	ix, err := index.Open(dir, true, indexOpenWait)
	switch {
	case errors.Is(err, index.ErrBusy):
		notes = append(notes, "index busy: searching the files directly")
	case err != nil:
		why := "missing"
		if _, serr := os.Stat(dir); serr == nil {
			why = "unusable (" + strings.TrimPrefix(err.Error(), "index unusable: ") + ")"
		}
		if v.tryIndexUpdate(p, true) {
			notes = append(notes, "index "+why+": rebuilt it")
			journal = v.readJournal()
			ix, _ = index.Open(dir, true, indexOpenWait)
		}
		if ix == nil {
			notes = append(notes, "index "+why+": searching the files directly")
		}
	}
	var sources []indexSource
	if ix != nil {
		if sources, err = v.changedSources(p, journal, ix.Meta.Watermarks); err != nil {
			ix.Close()
			return nil, nil, err
		}
		if pending(sources, ix.Meta.Watermarks) > catchUpBytes {
			ix.Close()
			ix = nil
			if !v.tryIndexUpdate(p, false) {
				notes = append(notes, "index behind and the vault busy: searching the rest of the files directly")
			}
			journal = v.readJournal()
			if ix, _ = index.Open(dir, true, indexOpenWait); ix != nil {
				if sources, err = v.changedSources(p, journal, ix.Meta.Watermarks); err != nil {
					ix.Close()
					return nil, nil, err
				}
				// The heads index is rebuilt whole, never caught up: while
				// it is stale the heads are all searched in memory.
				if p == headsPart && pending(sources, ix.Meta.Watermarks) > 0 {
					ix.Close()
					ix = nil
				}
			}
		}
	}
	marks := map[string]int64{}
	if ix != nil {
		marks = ix.Meta.Watermarks
	} else if sources, err = v.indexSourcesOf(p.kinds); err != nil {
		return nil, nil, err
	}
	var out []*index.Index
	if ix != nil {
		out = append(out, ix)
	}
	closeAll := func() {
		for _, x := range out {
			x.Close()
		}
	}
	var docs []index.Doc
	for _, s := range sources {
		if s.kind == 'h' {
			if s.size != marks[s.rel] {
				docs = append(docs, v.headFileDocs(s.rel)...)
			}
			continue
		}
		if s.kind == 'd' || s.size <= marks[s.rel] {
			continue
		}
		d, _, err := v.docsOf(s, marks[s.rel])
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		docs = append(docs, d...)
	}
	// An in-memory index only for what there is: an empty one still costs
	// its setup on every prompt.
	if len(docs) > 0 {
		mem, err := index.NewMemory()
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		out = append(out, mem)
		for i := 0; i < len(docs); i += indexBatchDocs {
			if err := mem.Add(docs[i:min(len(docs), i+indexBatchDocs)]); err != nil {
				closeAll()
				return nil, nil, err
			}
		}
	}
	return out, notes, nil
}

// UpdateIndex brings the index up to date with what was just written, if the
// vault lock is free at once; writers of bulk text (imports) call it so that
// the next recall finds the text indexed. It is best effort: recall catches
// up by itself.
func (v *Vault) UpdateIndex() {
	for _, p := range indexParts {
		if p == headsPart {
			continue // imports do not write heads; a rebuild costs more than it saves here
		}
		if _, err := os.Stat(v.partDir(p)); err != nil {
			continue // no index yet: the first recall builds it
		}
		v.tryIndexUpdate(p, false)
	}
}

// tryIndexUpdate catches index part p up (or rebuilds it) if the vault lock
// can be had at once; it reports whether it did.
func (v *Vault) tryIndexUpdate(p indexPart, rebuild bool) bool {
	release, err := v.lock(Lease{Command: "recall (index update)"}, indexLockWait)
	if err != nil {
		return false
	}
	defer release()
	dir := v.partDir(p)
	var ix *index.Index
	rebuild = rebuild || p == headsPart // rewritten files: rebuilt whole
	if !rebuild {
		ix, err = index.Open(dir, false, indexOpenWait)
	}
	var sources []indexSource
	if rebuild || err != nil {
		v.removeOldIndexLayout()
		if ix, err = index.Create(dir); err != nil {
			return false
		}
		sources, err = v.indexSourcesOf(p.kinds)
	} else {
		// Under the lock no writer can add to the journal: what it names
		// now is all there is to catch up with.
		sources, err = v.changedSources(p, v.readJournal(), ix.Meta.Watermarks)
	}
	if err != nil {
		ix.Close()
		return false
	}
	if err := v.syncIndex(ix, sources, nil); err != nil {
		ix.Close()
		return false
	}
	if err := ix.Close(); err != nil {
		return false
	}
	if p == transcriptPart {
		os.Truncate(filepath.Join(dir, journalFile), 0)
	}
	return true
}

// headSources lists MEMORY.md and the thread heads, each with its mtime.
func (v *Vault) headSources() ([]indexSource, error) {
	files := []string{MemoryHead}
	kinds, _ := os.ReadDir(filepath.Join(v.Root, "threads"))
	for _, k := range kinds {
		if !k.IsDir() {
			continue
		}
		heads, _ := os.ReadDir(filepath.Join(v.Root, "threads", k.Name()))
		for _, h := range heads {
			if strings.HasSuffix(h.Name(), ".md") && !strings.HasPrefix(h.Name(), ".") {
				files = append(files, "threads/"+k.Name()+"/"+h.Name())
			}
		}
	}
	var out []indexSource
	for _, rel := range files {
		info, err := os.Stat(filepath.Join(v.Root, filepath.FromSlash(rel)))
		if err != nil {
			continue
		}
		out = append(out, indexSource{rel: rel, kind: 'h', size: info.ModTime().UnixNano()})
	}
	return out, nil
}

// headFileDocs splits a head file into sections, one document each, for
// the heads tier. Heads belong to every agent (index.AnyAgent).
func (v *Vault) headFileDocs(rel string) []index.Doc {
	data, err := os.ReadFile(filepath.Join(v.Root, filepath.FromSlash(rel)))
	if err != nil {
		return nil
	}
	thread := headThread(rel)
	var docs []index.Doc
	for i, sec := range headSections(string(data)) {
		if strings.TrimSpace(sec.text) == "" {
			continue
		}
		docs = append(docs, index.Doc{ID: fmt.Sprintf("h|%s|%d", rel, i), Text: sec.text, Tier: TierHeads,
			Agent: index.AnyAgent, Thread: thread})
	}
	return docs
}

// headThread is the thread key of a head file ("" for MEMORY.md).
func headThread(rel string) string {
	parts := strings.Split(rel, "/")
	if len(parts) == 3 && parts[0] == "threads" {
		return parts[1] + ":" + strings.TrimSuffix(parts[2], ".md")
	}
	return ""
}

type headSectionText struct {
	text string
	line int
}

// headSections splits markdown at its headings; each section keeps its
// heading line.
func headSections(s string) []headSectionText {
	var out []headSectionText
	cur := headSectionText{line: 1}
	var b strings.Builder
	for i, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "#") && b.Len() > 0 {
			cur.text = b.String()
			out = append(out, cur)
			b.Reset()
			cur = headSectionText{line: i + 1}
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	cur.text = b.String()
	return append(out, cur)
}

// headSection returns section idx of a head file, its thread and line.
func (v *Vault) headSection(rel string, idx int) (string, string, int, error) {
	data, err := os.ReadFile(filepath.Join(v.Root, filepath.FromSlash(rel)))
	if err != nil {
		return "", "", 0, nil
	}
	secs := headSections(string(data))
	if idx < 0 || idx >= len(secs) {
		return "", "", 0, nil
	}
	return secs[idx].text, headThread(rel), secs[idx].line, nil
}
