package recall

// The search index's layout under .index/ and its own lock. The index is
// derived: recall builds it and catches it up; the engine only journals the
// transcript appends it reads (vault/txwrite.go).

import (
	"path/filepath"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
)

// The index is two Bleve indexes under .index/, each with its own
// watermarks: lineage (ledger rows and nodes, small, searched on every
// prompt) and transcripts (messages, the bulk), and a third, heads, which
// holds the sections of MEMORY.md and the thread heads. A search of one tier
// opens only the index that holds it, and the transcript index needs no
// tier filter. Heads are rewritten, not appended to, so the heads index is
// rebuilt whole whenever one changed; a vault of 200 threads has thousands
// of sections, too many to index in memory on every recall.
type indexPart int

const (
	lineagePart indexPart = iota
	transcriptPart
	headsPart
	indexParts // how many parts there are: range over it for each part
)

// name is the part's folder under .index/; the transcript index's is the
// engine's to name, since its journal compaction looks for the folder.
func (p indexPart) name() string {
	switch p {
	case lineagePart:
		return "lineage"
	case transcriptPart:
		return vault.TranscriptIndexName
	}
	return "heads"
}

// kinds are the kinds of source the part indexes: 'r' ledger segments, 'n'
// nodes, 'm' transcript parts, 'h' heads.
func (p indexPart) kinds() string {
	switch p {
	case lineagePart:
		return "rn"
	case transcriptPart:
		return "m"
	}
	return "h"
}

// partDir is the folder of index part p.
func partDir(v *vault.Vault, p indexPart) string {
	return filepath.Join(v.Root, vault.IndexDir, p.name())
}

// indexSource is one file the index reads: its path, kind and size.
type indexSource struct {
	Rel  string
	Kind byte // 'm' transcript part, 'r' ledger segment, 'n' node, 'd' node folder mark, 'h' head file
	// Size is the file's size; for a 'd' mark or an 'h' head, its mtime in
	// nanoseconds, as the watermark to compare.
	Size int64
}

// lockIndex takes the index's own lock, .locks/index.lock, apart from the
// vault's, waiting at most wait: catching up or rebuilding the index takes
// it, writers of the vault do not, and a recall never takes the vault lock.
// Whoever takes both takes the vault lock first (Reindex), and nobody
// holding the index lock waits for the vault lock, so the two cannot
// deadlock.
func lockIndex(v *vault.Vault, wait time.Duration) (release func(), err error) {
	release, ok, err := v.LockFile("index", wait)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fault.New(vault.ErrBusy, "index busy: another process is catching it up; gave up after %s", wait)
	}
	return release, nil
}
