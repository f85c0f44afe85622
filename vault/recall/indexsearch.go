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
		ixs, notes, err := openPart(v, vault.LineagePart)
		if err != nil {
			return nil, err
		}
		set.lineage = ixs
		set.note(notes)
	}
	if headFiles {
		ixs, notes, err := openPart(v, vault.HeadsPart)
		if err != nil {
			set.close()
			return nil, err
		}
		set.heads = ixs
		set.note(notes)
	}
	if strings.Contains(kinds, "m") {
		ixs, notes, err := openPart(v, vault.TranscriptPart)
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
func openPart(v *vault.Vault, p vault.IndexPart) ([]*index.Index, []string, error) {
	var notes []string
	dir := v.PartDir(p)
	ix, err := openIndex(v, dir, true, indexOpenWait)
	switch {
	case errors.Is(err, index.ErrBusy):
		notes = append(notes, "index busy: searching the files directly")
	case err != nil:
		why := "missing"
		if _, serr := v.Files().Stat(dir); serr == nil {
			why = "unusable (" + strings.TrimPrefix(err.Error(), "index unusable: ") + ")"
		}
		// A rebuild is not bounded: searching the whole vault in memory
		// on every recall until a bounded catch-up got through would cost
		// more, each time, than building the index once.
		if _, err := catchUpPart(v, p, 0, true); err == nil {
			notes = append(notes, "index "+why+": rebuilt it")
			ix, _ = openIndex(v, dir, true, indexOpenWait)
		}
		if ix == nil {
			notes = append(notes, "index "+why+": searching the files directly")
		}
	}
	var sources []vault.IndexSource
	var marks map[string]int64
	if ix != nil {
		if sources, marks, err = pastWatermarks(v, p, ix.Meta); err != nil {
			ix.Close()
			return nil, nil, err
		}
		if pending(sources, marks) > catchUpBytes {
			ix.Close()
			ix = nil
			if _, err := catchUpPart(v, p, recallCatchUp(v), false); vault.IsBusy(err) {
				notes = append(notes, "index behind and busy: searching the rest of the files directly")
			}
			if ix, _ = openIndex(v, dir, true, indexOpenWait); ix != nil {
				if sources, marks, err = pastWatermarks(v, p, ix.Meta); err != nil {
					ix.Close()
					return nil, nil, err
				}
				// The heads index is rebuilt whole, never caught up: while
				// it is stale the heads are all searched in memory.
				if p == vault.HeadsPart && pending(sources, marks) > 0 {
					ix.Close()
					ix = nil
				}
			}
		}
	}
	if ix == nil {
		marks = map[string]int64{}
		if sources, err = indexSourcesOf(v, p.Kinds); err != nil {
			return nil, nil, err
		}
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
		if s.Kind == 'h' {
			if s.Size != marks[s.Rel] {
				docs = append(docs, headFileDocs(v, s.Rel)...)
			}
			continue
		}
		if s.Kind == 'd' || s.Size <= marks[s.Rel] {
			continue
		}
		d, _, err := docsOf(v, s, marks[s.Rel])
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
