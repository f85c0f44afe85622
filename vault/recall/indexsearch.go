package recall

// The indexes a search reads: each part's persistent index, opened
// read-only and caught up within a bound, and an in-memory index of what
// it has not caught up with.

import (
	"errors"
	"slices"
	"strings"

	"github.com/memvault/memvault/index"
	"github.com/memvault/memvault/vault"
)

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
// missing, damaged or of an older mapping, it is rebuilt first if the index
// lock is free, and the files are searched directly if not; either way the
// caller is told. It never takes the vault lock.
func searchIndexes(v *vault.Vault, kinds string, headFiles bool) (*searchSet, error) {
	set := &searchSet{}
	if strings.ContainsAny(kinds, "rn") {
		ixs, notes, err := openPart(v, lineagePart)
		if err != nil {
			return nil, err
		}
		set.lineage = ixs
		set.note(notes)
	}
	if headFiles {
		ixs, notes, err := openPart(v, headsPart)
		if err != nil {
			set.close()
			return nil, err
		}
		set.heads = ixs
		set.note(notes)
	}
	if strings.Contains(kinds, "m") {
		ixs, notes, err := openPart(v, transcriptPart)
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
// the persistent index, brought closer by at most recallCatchUpBytes under
// the index lock when more than catchUpBytes are past its watermarks, and
// an in-memory index of the rest.
func openPart(v *vault.Vault, p indexPart) ([]*index.Index, []string, error) {
	o := &partOpen{v: v, p: p, dir: partDir(v, p)}
	o.open()
	if o.ix != nil {
		if err := o.catchUp(); err != nil {
			return nil, nil, err
		}
	}
	if o.ix == nil {
		o.marks = map[string]int64{}
		var err error
		if o.sources, err = indexSourcesOf(v, p.kinds()); err != nil {
			return nil, nil, err
		}
	}
	var out []*index.Index
	if o.ix != nil {
		out = append(out, o.ix)
	}
	closeAll := func() {
		for _, x := range out {
			x.Close()
		}
	}
	docs, err := o.unindexedDocs()
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	// An in-memory index only for what there is: an empty one still costs
	// its setup on every prompt.
	if len(docs) > 0 {
		mem, err := memoryIndexOf(docs)
		if mem != nil {
			out = append(out, mem)
		}
		if err != nil {
			closeAll()
			return nil, nil, err
		}
	}
	return out, o.notes, nil
}

// partOpen is openPart under way: the part, its persistent index while it
// is usable, the sources past what that index covers with the watermarks
// to read them from, and the notes for the user.
type partOpen struct {
	v       *vault.Vault
	p       indexPart
	dir     string
	ix      *index.Index
	sources []indexSource
	marks   map[string]int64
	notes   []string
}

// open opens the part's persistent index read-only. A busy one is not
// waited for: the files are searched directly. A missing or unusable one
// is rebuilt first when the index lock is free; failing that, the files
// are searched directly too.
func (o *partOpen) open() {
	ix, err := openIndex(o.v, o.dir, true, indexOpenWait)
	switch {
	case errors.Is(err, index.ErrBusy):
		o.notes = append(o.notes, "index busy: searching the files directly")
	case err != nil:
		why := "missing"
		if _, serr := o.v.Files().Stat(o.dir); serr == nil {
			why = "unusable (" + strings.TrimPrefix(err.Error(), "index unusable: ") + ")"
		}
		// A rebuild is not bounded: searching the whole vault in memory
		// on every recall until a bounded catch-up got through would cost
		// more, each time, than building the index once.
		if _, err := catchUpPart(o.v, o.p, 0, true); err == nil {
			// A new vault's first search builds the index: nothing broke.
			built := "index " + why + ": rebuilt it"
			if why == "missing" {
				built = "no search index yet: built it"
			}
			o.notes = append(o.notes, built)
			ix, _ = openIndex(o.v, o.dir, true, indexOpenWait)
		}
		if ix == nil {
			o.notes = append(o.notes, "index "+why+": searching the files directly")
		}
	}
	o.ix = ix
}

// catchUp finds what of the part is past the open index's watermarks.
// When that is more than catchUpBytes, the index is closed, caught up by
// at most recallCatchUp under the index lock (the files are searched
// directly if the lock is busy), and opened again; it may then be gone
// (o.ix nil), as is the heads index while it is stale: it is rebuilt whole,
// never caught up, so the heads are all searched in memory meanwhile.
func (o *partOpen) catchUp() error {
	var err error
	if o.sources, o.marks, err = pastWatermarks(o.v, o.p, o.ix.Meta); err != nil {
		o.ix.Close()
		return err
	}
	if pending(o.sources, o.marks) <= catchUpBytes {
		return nil
	}
	o.ix.Close()
	o.ix = nil
	if _, err := catchUpPart(o.v, o.p, recallCatchUp(o.v), false); vault.IsBusy(err) {
		o.notes = append(o.notes, "index behind and busy: searching the rest of the files directly")
	}
	if o.ix, _ = openIndex(o.v, o.dir, true, indexOpenWait); o.ix == nil {
		return nil
	}
	if o.sources, o.marks, err = pastWatermarks(o.v, o.p, o.ix.Meta); err != nil {
		o.ix.Close()
		return err
	}
	if o.p == headsPart && pending(o.sources, o.marks) > 0 {
		o.ix.Close()
		o.ix = nil
	}
	return nil
}

// unindexedDocs reads the documents the index does not hold: each source
// from its watermark on, and each head file whose mtime moved, whole (a
// head is rewritten, not appended to). A node folder mark has none.
func (o *partOpen) unindexedDocs() ([]index.Doc, error) {
	var docs []index.Doc
	for _, s := range o.sources {
		if s.Kind == 'h' {
			if s.Size != o.marks[s.Rel] {
				docs = append(docs, headFileDocs(o.v, s.Rel)...)
			}
			continue
		}
		if s.Kind == 'd' || s.Size <= o.marks[s.Rel] {
			continue
		}
		d, _, err := docsOf(o.v, s, o.marks[s.Rel])
		if err != nil {
			return nil, err
		}
		docs = append(docs, d...)
	}
	return docs, nil
}

// memoryIndexOf builds an in-memory index of docs, indexBatchDocs at a
// time. When adding fails it returns the index with the error, for the
// caller to close with the others.
func memoryIndexOf(docs []index.Doc) (*index.Index, error) {
	mem, err := index.NewMemory()
	if err != nil {
		return nil, err
	}
	for i := 0; i < len(docs); i += indexBatchDocs {
		if err := mem.Add(docs[i:min(len(docs), i+indexBatchDocs)]); err != nil {
			return mem, err
		}
	}
	return mem, nil
}
