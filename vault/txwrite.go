package vault

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/memvault/memvault/vault/codec"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/gitrepo"
	"github.com/memvault/memvault/vault/tjournal"
)

// How a transaction's queued writes reach the disk: appends to transcript
// parts and whole files, each with the undo that puts the file back if the
// transaction fails before its commit (tx.go runs them: stage → seal →
// commit); and, below, the journal of transcript appends that the search
// index catches up from, written before the appends.

// stage writes the transaction's files: appends to transcript parts, then
// whole files. Guarded writes are checked before anything is written, so
// that a file a person saved meanwhile stops the transaction before it
// changed anything, and again just before each rename; so is a new
// memvault.toml (config.go).
func (tx *Tx) stage(rollback *undo) ([]*gitrepo.Change, error) {
	v := tx.v
	for _, f := range tx.files {
		if !f.guarded {
			continue
		}
		old, err := v.Files().ReadFile(v.Abs(f.rel))
		if existed := err == nil; existed != f.existed || !bytes.Equal(old, f.was) {
			return nil, fmt.Errorf("%s: %w", f.rel, ErrChangedUnderfoot)
		}
	}
	if err := tx.checkConfigWrite(); err != nil {
		return nil, err
	}
	var parts []tjournal.Append
	for _, a := range tx.appends {
		if IsTranscriptPart(a.rel.String()) {
			parts = append(parts, tjournal.Append{Rel: a.rel.String(), N: int64(len(a.data))})
		}
	}
	if err := tjournal.Note(v.Files(), v.Root, parts); err != nil {
		return nil, err
	}
	var changes []*gitrepo.Change
	for _, a := range tx.appends {
		c, err := tx.appendChange(a.rel, a.data, rollback)
		if err != nil {
			return nil, err
		}
		changes = append(changes, c)
	}
	for _, f := range tx.files {
		c, err := tx.writeFile(f, rollback)
		if err != nil {
			return nil, err
		}
		changes = append(changes, c)
	}
	return changes, nil
}

// writeFile writes one whole file atomically and registers its undo. A
// guarded file (a head a person may be saving) is written with
// fileio.ReplaceIfSame, which never replaces bytes it did not compare.
func (tx *Tx) writeFile(f pendingFile, rollback *undo) (*gitrepo.Change, error) {
	p := tx.v.Abs(f.rel)
	old, readErr := tx.v.Files().ReadFile(p)
	existed := readErr == nil
	if f.guarded && (existed != f.existed || !bytes.Equal(old, f.was)) {
		return nil, fmt.Errorf("%s: %w", f.rel, ErrChangedUnderfoot)
	}
	written := f.data
	*rollback = append(*rollback, func() {
		// Undo only what is still ours: a file a person saved after this
		// write holds their text, which must not be replaced by the older
		// one.
		if existed {
			_ = tx.v.Files().ReplaceIfSame(p, old, written, true)
		} else if now, err := tx.v.Files().ReadFile(p); err == nil && bytes.Equal(now, written) {
			tx.v.Files().Remove(p)
		}
	})
	var err error
	if f.guarded {
		err = tx.v.Files().ReplaceIfSame(p, f.data, f.was, f.existed)
		if errors.Is(err, fileio.ErrChanged) {
			err = fmt.Errorf("%s: %w", f.rel, ErrChangedUnderfoot)
		}
	} else {
		err = tx.v.Files().WriteAtomic(p, f.data)
	}
	if err != nil {
		return nil, err
	}
	info, err := tx.v.Files().Stat(p)
	if err != nil {
		return nil, fault.IO("stat "+f.rel.String(), err)
	}
	return &gitrepo.Change{Path: f.rel.String(), Content: f.data, Stat: info}, nil
}

// appendChange appends whole lines to rel, registers the undo, and returns
// the file as it now is, for the commit.
func (tx *Tx) appendChange(rel RelPath, data []byte, rollback *undo) (*gitrepo.Change, error) {
	p := tx.v.Abs(rel)
	before := int64(-1)
	if info, err := tx.v.Files().Stat(p); err == nil {
		before = info.Size()
	}
	*rollback = append(*rollback, func() {
		if before < 0 {
			tx.v.Files().Remove(p)
		} else {
			tx.v.Files().Truncate(p, before)
		}
	})
	if before > 0 && !tjournal.EndsWithNewline(tx.v.Files(), p, before) {
		// A writer killed mid-line (or a crash before its fsync) left a
		// torn line: it stays, as a line no reader takes for a message,
		// and the new lines start on their own instead of joining it.
		data = append([]byte{'\n'}, data...)
	}
	if err := tx.v.Files().Append(p, data); err != nil {
		return nil, err
	}
	content, err := tx.v.Files().ReadFile(p)
	if err != nil {
		return nil, fault.IO("read "+rel.String(), err)
	}
	info, err := tx.v.Files().Stat(p)
	if err != nil {
		return nil, fault.IO("stat "+rel.String(), err)
	}
	return &gitrepo.Change{Path: rel.String(), Content: content, Stat: info}, nil
}

// registerDriverOnce registers git's merge driver in a clone memvault has
// not written to before (no verified stamps yet: a fresh clone, or a
// .state/ deleted). It costs one stat otherwise. A failure is not the
// transaction's: doctor reports a missing driver.
func (v *Vault) registerDriverOnce() {
	if v.Binary == "" {
		return
	}
	if _, err := v.Files().Stat(codec.FilePath(v.Root, verifiedFile)); err == nil {
		return
	}
	_, _ = gitrepo.RegisterMergeDrivers(v.Root, v.Binary)
}

// captureOnly reports whether the transaction only appends to transcripts
// and commits them: what a vault that needs repair still accepts.
func (tx *Tx) captureOnly() bool {
	if len(tx.events) > 0 || len(tx.files) > 0 || tx.join {
		return false
	}
	for _, a := range tx.appends {
		if !IsTranscriptPart(a.rel.String()) {
			return false
		}
	}
	for _, r := range tx.commitPaths {
		if !IsTranscriptPart(r.String()) {
			return false
		}
	}
	return true
}

// undo restores what apply changed, newest first, when a later step fails.
type undo []func()

func (u undo) run() {
	for i := len(u) - 1; i >= 0; i-- {
		u[i]()
	}
}

// The transcript journal is vault/tjournal's; the engine writes it in
// stage, and these name it for the packages above.
const (
	IndexDir            = tjournal.IndexDir
	TranscriptIndexName = tjournal.TranscriptIndexName
	JournalCompactBytes = tjournal.JournalCompactBytes
)

type (
	JournalLine     = tjournal.Line
	JournalCoverage = tjournal.Coverage
)

// JournalPath is the transcript journal's path.
func (v *Vault) JournalPath() string { return tjournal.Path(v.Root) }

// ReadJournal is tjournal.Read of this vault.
func (v *Vault) ReadJournal(gen string, from int64) (string, []JournalLine, int64) {
	return tjournal.Read(v.Files(), v.Root, gen, from)
}

// SaveJournalCoverage is tjournal.SaveCoverage of this vault.
func (v *Vault) SaveJournalCoverage(c JournalCoverage) error {
	return tjournal.SaveCoverage(v.Files(), v.Root, c)
}

// IsTranscriptPart reports whether rel has the shape of a transcript part:
// transcripts/<agent>/<file>.jsonl.
func IsTranscriptPart(rel string) bool { return tjournal.IsTranscriptPart(rel) }
