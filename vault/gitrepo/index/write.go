package index

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	gitindex "github.com/go-git/go-git/v5/plumbing/format/index"

	"github.com/memvault/memvault/vault/fault"
)

// Change is one path whose entry Write sets or removes. A commit names the
// blob it stored; the stat data lets git trust the entry without reading
// the file again.
type Change struct {
	// Path is slash-separated, relative to the work tree, as git stores it.
	Path string
	// Blob is the committed content; ignored when Deleted.
	Blob plumbing.Hash
	// Deleted removes the path's entries (every stage) instead.
	Deleted bool
	// Stat is the file as written, or nil for zero stat data, which makes
	// git read the file and compare (what a file edited since needs).
	Stat os.FileInfo
}

// SplitMode is git's core.splitIndex, which decides whether Write keeps the
// index in one file or splits it.
type SplitMode int

// The values of core.splitIndex. The caller reads the config; the format
// only needs the answer.
const (
	// SplitAuto is core.splitIndex unset: split from Options.SplitFrom
	// entries, and keep whatever form git chose.
	SplitAuto SplitMode = iota
	// SplitOn is core.splitIndex=true: split at any size.
	SplitOn
	// SplitOff is core.splitIndex=false: one file, joining a split one.
	SplitOff
)

// DefaultSplitFrom is the index size from which SplitAuto splits: below it,
// patching the whole file costs less than a second file to map.
const DefaultSplitFrom = 10000

// Options say which form Write gives the index.
type Options struct {
	Split SplitMode
	// SplitFrom overrides DefaultSplitFrom when positive; tests use a small
	// one to reach the split form with a few files.
	SplitFrom int
	// SharedDir is the folder of the shared index files of a split index:
	// git's folder (.git). Write reads the shared index there and writes a
	// new one there when it reshares.
	SharedDir string
}

// Write writes to w the index data with changes applied: entries of
// changed paths replaced, new ones inserted, deleted ones removed, every
// other entry (a person's staged work included) kept. data may be empty
// (no index yet). The form is kept or chosen by opts: patched whole, split
// on the same shared index, or split on a new one.
//
// Index versions 2 and 3 are patched in place (see writeIndexPatch); version
// 4 and mandatory extensions other than a split index's link go through
// go-git's codec, whole. Nothing is written to w before the form is known,
// so that fallback starts from an empty w.
func Write(w io.Writer, data []byte, changes []Change, opts Options) error {
	err := writeForm(w, data, changes, opts)
	if !errors.Is(err, errUnsupported) {
		return err
	}
	out, err := rewrite(data, changes)
	if err != nil {
		return err
	}
	if _, err := w.Write(out); err != nil {
		return fault.Wrap("git: write index", err)
	}
	return nil
}

// writeForm is Write without the fallback for formats the fast path does
// not handle, which it reports as errUnsupported.
func writeForm(w io.Writer, data []byte, changes []Change, opts Options) error {
	ix, err := parseIndex(data)
	if err != nil {
		return err
	}
	from := opts.SplitFrom
	if from <= 0 {
		from = DefaultSplitFrom
	}
	d := sharedDir(opts.SharedDir)
	link := ix.ext("link")
	switch {
	case link != nil && opts.Split != SplitOff:
		err := d.writeSplitPatch(w, ix, link, changes)
		if !errors.Is(err, errReshare) {
			return err
		}
		whole, err := d.unsplit(ix, link)
		if err != nil {
			return err
		}
		return d.writeSplitOnNewShared(w, whole, changes)
	case link != nil:
		whole, err := d.unsplit(ix, link)
		if err != nil {
			return err
		}
		return writeIndexPatch(w, whole, changes)
	case opts.Split == SplitOn || opts.Split == SplitAuto && ix.count >= from:
		return d.writeSplitOnNewShared(w, data, changes)
	}
	return writeIndexPatch(w, data, changes)
}

// Join returns index data as one file: a split index joined with its
// shared index (found in sharedDir), any other index as it is. A reader
// that decodes the index with go-git, which knows no split index, reads it
// through Join.
func Join(sharedDirPath string, data []byte) ([]byte, error) {
	ix, err := parseIndex(data)
	if err != nil || ix.ext("link") == nil {
		return data, nil // not split; the caller's decoder judges the rest
	}
	return sharedDir(sharedDirPath).unsplit(ix, ix.ext("link"))
}

// rewrite is the slow path of Write for index formats the fast path does
// not handle: decode everything with go-git, change the entries, encode
// everything.
func rewrite(data []byte, changes []Change) ([]byte, error) {
	idx := &gitindex.Index{Version: 2}
	if len(data) > 0 {
		if err := gitindex.NewDecoder(bytes.NewReader(data)).Decode(idx); err != nil {
			return nil, fmt.Errorf("git: read index: %w", err)
		}
	}
	changed := make(map[string]bool, len(changes))
	for _, c := range changes {
		changed[c.Path] = true
	}
	kept := idx.Entries[:0]
	for _, e := range idx.Entries {
		if !changed[e.Name] {
			kept = append(kept, e)
		}
	}
	idx.Entries = kept
	for _, c := range changes {
		if c.Deleted {
			continue
		}
		e := &gitindex.Entry{Name: c.Path, Hash: c.Blob, Mode: filemode.Regular}
		if c.Stat != nil {
			e.Size = uint32(c.Stat.Size())
			e.ModifiedAt = c.Stat.ModTime()
			if sys, ok := c.Stat.Sys().(*syscall.Stat_t); ok {
				e.CreatedAt = changeTime(sys)
				e.Dev, e.Inode = uint32(sys.Dev), uint32(sys.Ino)
				e.UID, e.GID = sys.Uid, sys.Gid
			}
		}
		idx.Entries = append(idx.Entries, e)
	}
	sort.SliceStable(idx.Entries, func(i, j int) bool {
		if idx.Entries[i].Name != idx.Entries[j].Name {
			return idx.Entries[i].Name < idx.Entries[j].Name
		}
		return idx.Entries[i].Stage < idx.Entries[j].Stage
	})
	idx.Cache = nil // describes trees that just changed; git rebuilds it
	var buf bytes.Buffer
	if err := gitindex.NewEncoder(&buf).Encode(idx); err != nil {
		return nil, fmt.Errorf("git: write index: %w", err)
	}
	return buf.Bytes(), nil
}
