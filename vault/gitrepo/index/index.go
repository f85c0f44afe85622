// Package index reads and writes git's index file (.git/index): versions 2
// to 4, the split index's link extension and its EWAH bitmaps.
//
// It is bytes in, bytes out: the caller reads the index, hands over the
// entries its commit changed, and writes what comes back through git's
// index.lock. The one file system it touches is the folder of a split
// index's shared files, named by the caller. It is its own package because
// the formats are intricate and fuzzed on their own, and because nothing in
// them is about a vault: the repository that commits is vault/gitrepo.
package index

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"sort"
	"syscall"

	"github.com/memvault/memvault/vault/fault"
)

// writeIndexPatch writes to w git's index file data with the entries for
// changes replaced, inserted or removed, and every other entry copied byte
// for byte.
//
// Decoding the whole index into structs and encoding it again (go-git's
// codec) costs tens of milliseconds on a 10k-file vault, more than the rest
// of a transaction together; a commit touches one or two paths. So the
// entries are walked in place, without a copy or an allocation per entry,
// and the output is written as a few runs of the input between the changed
// entries: the cost is one pass over the names, one SHA-1 and one write.
//
// Versions 2 and 3 are handled here (git writes version 2 unless told
// otherwise). For version 4, whose path names are prefix-compressed, and for
// mandatory extensions other than a split index's link (see split.go),
// it returns errUnsupported and the caller falls back to go-git's
// codec. Optional extensions are dropped: the cached tree (TREE) describes
// trees we just changed, and the offset tables (EOIE, IEOT) would point to
// the wrong bytes; git rebuilds what it wants. Resolve-undo data (REUC) is
// kept.
func writeIndexPatch(w io.Writer, data []byte, changes []Change) error {
	ix, err := parseIndex(data)
	if err != nil {
		return err
	}
	if ix.ext("link") != nil {
		return errUnsupported // a split index: not this function's job
	}
	sorted := sortedChanges(changes)

	// Walk the entries, noting where each change goes: over the entries of
	// its path (all stages: an unmerged path collapses into one stage-0
	// entry, as git add does), or before the first entry that sorts after
	// it.
	type edit struct {
		start, end int // the input bytes the edit replaces; equal for an insert
		entries    int // how many entries those are
		c          Change
	}
	edits := make([]edit, 0, len(sorted))
	k := 0
	ix.each(func(start, end int, name []byte) {
		for k < len(sorted) && string(name) > sorted[k].Path {
			edits = append(edits, edit{start: start, end: start, c: sorted[k]})
			k++
		}
		if k < len(sorted) && string(name) == sorted[k].Path {
			edits = append(edits, edit{start: start, end: end, entries: 1, c: sorted[k]})
			k++
		} else if n := len(edits); n > 0 && edits[n-1].end == start && edits[n-1].entries > 0 &&
			string(name) == edits[n-1].c.Path {
			edits[n-1].end = end // another stage of the same path
			edits[n-1].entries++
		}
	})
	for ; k < len(sorted); k++ {
		edits = append(edits, edit{start: ix.entriesEnd, end: ix.entriesEnd, c: sorted[k]})
	}

	n := ix.count
	encoded := make([][]byte, len(edits))
	for i, e := range edits {
		n -= e.entries
		if !e.c.Deleted {
			encoded[i] = encodeIndexEntry(e.c, e.c.Path)
			n++
		}
	}
	iw := newIndexWriter(w, ix.version, n)
	prev := indexHeaderLen
	for i, e := range edits {
		iw.write(ix.data[prev:e.start])
		iw.write(encoded[i])
		prev = e.end
	}
	iw.write(ix.data[prev:ix.entriesEnd])
	if reuc := ix.ext("REUC"); reuc != nil {
		iw.write(reuc)
	}
	return iw.close()
}

const indexHeaderLen, indexHashLen = 12, 20

// indexData is an index file of version 2 or 3, located but not decoded:
// where its entries end and where each extension is.
type indexData struct {
	data       []byte // the whole file, checksum included
	version    uint32
	count      int
	entriesEnd int
	exts       []indexExt
}

type indexExt struct {
	sig string
	raw []byte // the whole extension: signature, size and data
}

// parseIndex locates the parts of an index file; empty data is an empty
// index. It walks the entries once, without allocating per entry.
func parseIndex(data []byte) (*indexData, error) {
	if len(data) == 0 {
		data = []byte{'D', 'I', 'R', 'C', 0, 0, 0, 2, 0, 0, 0, 0}
		data = append(data, make([]byte, indexHashLen)...)
	}
	if len(data) < indexHeaderLen+indexHashLen || string(data[:4]) != "DIRC" {
		return nil, fmt.Errorf("git: index: bad header")
	}
	ix := &indexData{data: data, version: binary.BigEndian.Uint32(data[4:8]),
		count: int(binary.BigEndian.Uint32(data[8:12]))}
	if ix.version != 2 && ix.version != 3 {
		return nil, errUnsupported
	}
	off, err := ix.walk(nil)
	if err != nil {
		return nil, err
	}
	ix.entriesEnd = off
	body := data[:len(data)-indexHashLen]
	for off+8 <= len(body) {
		sig := body[off : off+4]
		size := int(binary.BigEndian.Uint32(body[off+4 : off+8]))
		if size < 0 || off+8+size > len(body) {
			return nil, fmt.Errorf("git: index: truncated extension")
		}
		if (sig[0] < 'A' || sig[0] > 'Z') && string(sig) != "link" {
			return nil, errUnsupported // mandatory: we cannot keep it correct
		}
		ix.exts = append(ix.exts, indexExt{sig: string(sig), raw: body[off : off+8+size]})
		off += 8 + size
	}
	return ix, nil
}

// ext returns the extension with signature sig, nil if there is none.
func (ix *indexData) ext(sig string) []byte {
	for _, e := range ix.exts {
		if e.sig == sig {
			return e.raw
		}
	}
	return nil
}

// each calls fn with the bytes and the path of each entry, in order.
func (ix *indexData) each(fn func(start, end int, name []byte)) {
	_, _ = ix.walk(fn) // parseIndex walked it already: it cannot fail
}

func (ix *indexData) walk(fn func(start, end int, name []byte)) (int, error) {
	body := ix.data[:len(ix.data)-indexHashLen]
	off := indexHeaderLen
	for range ix.count {
		if off+62 > len(body) {
			return 0, fmt.Errorf("git: index: truncated entry")
		}
		flags := binary.BigEndian.Uint16(body[off+60 : off+62])
		fixed := 62
		if flags&0x4000 != 0 {
			if ix.version < 3 {
				return 0, fmt.Errorf("git: index: extended flag in version 2")
			}
			fixed = 64
		}
		nameStart := off + fixed
		if nameStart > len(body) {
			return 0, fmt.Errorf("git: index: truncated entry")
		}
		nul := bytes.IndexByte(body[nameStart:], 0)
		if nul < 0 {
			return 0, fmt.Errorf("git: index: unterminated path")
		}
		// Entries are padded with 1 to 8 NULs to a multiple of 8 bytes.
		length := (fixed + nul + 8) &^ 7
		if off+length > len(body) {
			return 0, fmt.Errorf("git: index: truncated entry")
		}
		if fn != nil {
			fn(off, off+length, body[nameStart:nameStart+nul])
		}
		off += length
	}
	return off, nil
}

// sortedChanges returns one change per path, the last one queued winning,
// in git's order.
func sortedChanges(changes []Change) []Change {
	byPath := make(map[string]Change, len(changes))
	for _, c := range changes {
		byPath[c.Path] = c
	}
	sorted := make([]Change, 0, len(byPath))
	for _, c := range byPath {
		sorted = append(sorted, c)
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	return sorted
}

// indexWriter writes an index file: the header, then what write is given,
// then the SHA-1 of it all. The first write error is kept and returned by
// close.
type indexWriter struct {
	w   io.Writer
	sum hash.Hash
	err error
}

func newIndexWriter(w io.Writer, version uint32, count int) *indexWriter {
	iw := &indexWriter{w: w, sum: sha1.New()}
	var header [indexHeaderLen]byte
	copy(header[:], "DIRC")
	binary.BigEndian.PutUint32(header[4:], version)
	binary.BigEndian.PutUint32(header[8:], uint32(count))
	iw.write(header[:])
	return iw
}

func (iw *indexWriter) write(b []byte) {
	if iw.err != nil {
		return
	}
	iw.sum.Write(b)
	if _, err := iw.w.Write(b); err != nil {
		iw.err = fault.Wrap("git: write index", err)
	}
}

// close writes the checksum and returns it.
func (iw *indexWriter) close() error {
	_, err := iw.closeSum()
	return err
}

func (iw *indexWriter) closeSum() ([]byte, error) {
	sum := iw.sum.Sum(nil)
	if iw.err == nil {
		if _, err := iw.w.Write(sum); err != nil {
			iw.err = fault.Wrap("git: write index", err)
		}
	}
	return sum, iw.err
}

var errUnsupported = errors.New("git: index: format not handled by the fast path")

// encodeIndexEntry writes a version 2 index entry for a committed file, with
// the stat data of the file as memvault wrote it, so git status trusts it
// without re-reading the file.
//
// name is the path the entry carries: c.Path, or "" for the replacement of
// a shared index's entry in a split index.
func encodeIndexEntry(c Change, name string) []byte {
	length := (62 + len(name) + 8) &^ 7
	b := make([]byte, length)
	var ctimeS, ctimeN, mtimeS, mtimeN, dev, ino, uid, gid, size uint32
	if c.Stat != nil {
		mt := c.Stat.ModTime()
		mtimeS, mtimeN = uint32(mt.Unix()), uint32(mt.Nanosecond())
		size = uint32(c.Stat.Size())
		if sys, ok := c.Stat.Sys().(*syscall.Stat_t); ok {
			ct := changeTime(sys)
			ctimeS, ctimeN = uint32(ct.Unix()), uint32(ct.Nanosecond())
			dev, ino, uid, gid = uint32(sys.Dev), uint32(sys.Ino), sys.Uid, sys.Gid
		}
	}
	be := binary.BigEndian
	be.PutUint32(b[0:], ctimeS)
	be.PutUint32(b[4:], ctimeN)
	be.PutUint32(b[8:], mtimeS)
	be.PutUint32(b[12:], mtimeN)
	be.PutUint32(b[16:], dev)
	be.PutUint32(b[20:], ino)
	be.PutUint32(b[24:], 0o100644)
	be.PutUint32(b[28:], uid)
	be.PutUint32(b[32:], gid)
	be.PutUint32(b[36:], size)
	copy(b[40:60], c.Blob[:])
	nameLen := len(name)
	if nameLen > 0xFFF {
		nameLen = 0xFFF
	}
	be.PutUint16(b[60:], uint16(nameLen))
	copy(b[62:], name)
	return b
}
