package vault

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"syscall"
)

// patchIndex returns git's index file data with the entries for changes
// replaced, inserted or removed, and every other entry copied byte for
// byte. It is writeIndexPatch into memory.
func patchIndex(data []byte, changes []*fileChange) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeIndexPatch(&buf, data, changes); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

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
// indexes with a mandatory extension such as a split index, it returns
// errIndexUnsupported and the caller falls back to go-git's codec.
// Optional extensions are dropped: the cached tree (TREE) describes trees we
// just changed, and the offset tables (EOIE, IEOT) would point to the wrong
// bytes; git rebuilds what it wants. Resolve-undo data (REUC) is kept.
func writeIndexPatch(w io.Writer, data []byte, changes []*fileChange) error {
	const headerLen, hashLen = 12, 20
	if len(data) == 0 {
		data = []byte{'D', 'I', 'R', 'C', 0, 0, 0, 2, 0, 0, 0, 0}
		data = append(data, make([]byte, hashLen)...)
	}
	if len(data) < headerLen+hashLen || string(data[:4]) != "DIRC" {
		return fmt.Errorf("git: index: bad header")
	}
	version := binary.BigEndian.Uint32(data[4:8])
	if version != 2 && version != 3 {
		return errIndexUnsupported
	}
	count := int(binary.BigEndian.Uint32(data[8:12]))
	body := data[:len(data)-hashLen]

	// One change per path, the last one queued winning, in git's order.
	byPath := make(map[string]*fileChange, len(changes))
	for _, c := range changes {
		byPath[c.path] = c
	}
	sorted := make([]*fileChange, 0, len(byPath))
	for _, c := range byPath {
		sorted = append(sorted, c)
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].path < sorted[j].path })

	// Walk the entries, noting where each change goes: over the entries of
	// its path (all stages: an unmerged path collapses into one stage-0
	// entry, as git add does), or before the first entry that sorts after
	// it.
	type edit struct {
		start, end int // the input bytes the edit replaces; equal for an insert
		entries    int // how many entries those are
		c          *fileChange
	}
	edits := make([]edit, 0, len(sorted))
	k := 0
	off := headerLen
	for range count {
		if off+62 > len(body) {
			return fmt.Errorf("git: index: truncated entry")
		}
		flags := binary.BigEndian.Uint16(body[off+60 : off+62])
		fixed := 62
		if flags&0x4000 != 0 {
			if version < 3 {
				return fmt.Errorf("git: index: extended flag in version 2")
			}
			fixed = 64
		}
		nameStart := off + fixed
		nul := bytes.IndexByte(body[nameStart:], 0)
		if nul < 0 {
			return fmt.Errorf("git: index: unterminated path")
		}
		// Entries are padded with 1 to 8 NULs to a multiple of 8 bytes.
		length := (fixed + nul + 8) &^ 7
		if off+length > len(body) {
			return fmt.Errorf("git: index: truncated entry")
		}
		name := body[nameStart : nameStart+nul]
		for k < len(sorted) && string(name) > sorted[k].path {
			edits = append(edits, edit{start: off, end: off, c: sorted[k]})
			k++
		}
		if k < len(sorted) && string(name) == sorted[k].path {
			edits = append(edits, edit{start: off, end: off + length, entries: 1, c: sorted[k]})
			k++
		} else if n := len(edits); n > 0 && edits[n-1].end == off && edits[n-1].entries > 0 &&
			string(name) == edits[n-1].c.path {
			edits[n-1].end += length // another stage of the same path
			edits[n-1].entries++
		}
		off += length
	}
	entriesEnd := off
	for ; k < len(sorted); k++ {
		edits = append(edits, edit{start: entriesEnd, end: entriesEnd, c: sorted[k]})
	}

	// Keep the extensions that stay valid, drop the rest.
	var exts [][]byte
	for off+8 <= len(body) {
		sig := body[off : off+4]
		size := int(binary.BigEndian.Uint32(body[off+4 : off+8]))
		if off+8+size > len(body) {
			return fmt.Errorf("git: index: truncated extension")
		}
		if sig[0] < 'A' || sig[0] > 'Z' {
			return errIndexUnsupported // mandatory: we cannot keep it correct
		}
		if string(sig) == "REUC" {
			exts = append(exts, body[off:off+8+size])
		}
		off += 8 + size
	}

	n := count
	encoded := make([][]byte, len(edits))
	for i, e := range edits {
		n -= e.entries
		if !e.c.deleted {
			encoded[i] = encodeIndexEntry(e.c)
			n++
		}
	}
	header := slices.Clone(data[:headerLen])
	binary.BigEndian.PutUint32(header[8:12], uint32(n))

	sum := sha1.New()
	out := io.MultiWriter(w, sum)
	write := func(b []byte) error {
		if _, err := out.Write(b); err != nil {
			return gitIOErr("git: write index", err)
		}
		return nil
	}
	if err := write(header); err != nil {
		return err
	}
	prev := headerLen
	for i, e := range edits {
		if err := write(body[prev:e.start]); err != nil {
			return err
		}
		if err := write(encoded[i]); err != nil {
			return err
		}
		prev = e.end
	}
	if err := write(body[prev:entriesEnd]); err != nil {
		return err
	}
	for _, x := range exts {
		if err := write(x); err != nil {
			return err
		}
	}
	if _, err := w.Write(sum.Sum(nil)); err != nil {
		return gitIOErr("git: write index", err)
	}
	return nil
}

var errIndexUnsupported = errors.New("git: index: format not handled by the fast path")

// encodeIndexEntry writes a version 2 index entry for a committed file, with
// the stat data of the file as memvault wrote it, so git status trusts it
// without re-reading the file.
func encodeIndexEntry(c *fileChange) []byte {
	name := []byte(c.path)
	length := (62 + len(name) + 8) &^ 7
	b := make([]byte, length)
	var ctimeS, ctimeN, mtimeS, mtimeN, dev, ino, uid, gid, size uint32
	if c.stat != nil {
		mt := c.stat.ModTime()
		mtimeS, mtimeN = uint32(mt.Unix()), uint32(mt.Nanosecond())
		size = uint32(c.stat.Size())
		if sys, ok := c.stat.Sys().(*syscall.Stat_t); ok {
			ctimeS, ctimeN = uint32(sys.Ctim.Sec), uint32(sys.Ctim.Nsec)
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
	copy(b[40:60], c.blob[:])
	nameLen := len(name)
	if nameLen > 0xFFF {
		nameLen = 0xFFF
	}
	be.PutUint16(b[60:], uint16(nameLen))
	copy(b[62:], name)
	return b
}
