package vault

import "path/filepath"

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
