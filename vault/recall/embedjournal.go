package recall

// Which sources hold documents the vector cache has no vector for yet,
// found without listing every transcript part (docs/RETRIEVAL.md, "When"):
// the cache keeps a mark in the transcript journal (vault/tjournal), as
// the transcript index does, and a catch-up looks only at the parts the
// journal names past it. Where the mark is of another generation (the
// journal was compacted, or the cache has none yet) the transcripts are
// listed, as a rebuild lists them, and the mark is set from there.

import (
	"path/filepath"
	"sort"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/embed"
)

// embedPending is what a catch-up of the vectors has to embed, and what
// it read of the journal to know.
type embedPending struct {
	sources []indexSource
	gen     string
	lines   []vault.JournalLine
	end     int64
	present map[string]bool // the transcript parts looked at that exist
	// stamp is, where there was no journal, the modification time of its
	// folder (.index/) before it was looked for: an append creates the
	// journal first, and a reindex removes it, either of which changes
	// the folder's time. 0 when it could not be read.
	stamp int64
}

// pendingSources is the sources with documents st has no vector for yet:
// a node file not yet embedded, a ledger segment or transcript part grown
// past its mark. The journal is read before the parts are looked at (as
// the index reads it: vault/tjournal's protocol), so that no text written
// meanwhile is taken as covered.
func pendingSources(v *vault.Vault, st *embed.Store) (embedPending, error) {
	var stamp int64
	if info, err := v.Files().Stat(filepath.Dir(v.JournalPath())); err == nil {
		stamp = info.ModTime().UnixNano()
	}
	gen, lines, end := v.ReadJournal(st.Journal.Gen, st.Journal.Off)
	p := embedPending{gen: gen, lines: lines, end: end, present: map[string]bool{}, stamp: stamp}
	// No journal (none written since a reindex removed it): as known as
	// the folder's time is unchanged since the mark was set.
	known := gen != "" && gen == st.Journal.Gen || gen == "" && st.Journal.Gen == "" && stamp != 0 && st.Journal.Off == stamp
	kinds := "rnm"
	if known {
		kinds = "rn"
	}
	sources, err := indexSourcesOf(v, kinds)
	if err != nil {
		return p, err
	}
	if known {
		for _, l := range lines {
			if _, seen := p.present[l.Rel]; seen {
				continue
			}
			info, err := v.Files().Stat(filepath.Join(v.Root, filepath.FromSlash(l.Rel)))
			p.present[l.Rel] = err == nil
			if err == nil {
				sources = append(sources, indexSource{Rel: l.Rel, Kind: 'm', Size: info.Size()})
			}
		}
		// In the order of a listing, so that the documents are added in
		// the same order as they would have been (a search's ties go to
		// the earlier).
		sort.Slice(sources, func(i, j int) bool { return sources[i].Rel < sources[j].Rel })
	}
	for _, s := range sources {
		if s.Kind == 'm' {
			p.present[s.Rel] = true
		}
		from := st.Marks[s.Rel]
		if s.Kind == 'd' || s.Kind == 'n' && from > 0 || s.Kind != 'n' && s.Size <= from {
			continue
		}
		p.sources = append(p.sources, s)
	}
	return p, nil
}

// mark is where st stands in the journal once its marks are what they
// are: at the first line read whose text they do not cover (a part that
// exists, embedded to less than the size the line says it grew to; its
// writer may not have written the text yet), else at the end read. No
// journal: the time of its folder (no mark where that was not read).
func (p embedPending) mark(st *embed.Store) embed.JournalMark {
	if p.gen == "" {
		return embed.JournalMark{Off: p.stamp}
	}
	for _, l := range p.lines {
		if p.present[l.Rel] && st.Marks[l.Rel] < l.After {
			return embed.JournalMark{Gen: p.gen, Off: l.Off}
		}
	}
	return embed.JournalMark{Gen: p.gen, Off: p.end}
}
