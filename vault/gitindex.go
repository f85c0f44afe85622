package vault

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"syscall"
)

// patchIndex returns git's index file data with the entries for changes
// replaced, inserted or removed, and every other entry copied byte for byte.
//
// Decoding the whole index into structs and encoding it again (go-git's
// codec) costs tens of milliseconds on a 10k-file vault, more than the rest
// of a transaction together; a commit touches one or two paths, so patching
// the byte stream keeps the cost at one read, one SHA-1 and one write.
//
// Versions 2 and 3 are handled here (git writes version 2 unless told
// otherwise). For version 4, whose path names are prefix-compressed, and for
// indexes with a mandatory extension such as a split index, it returns
// errIndexUnsupported and the caller falls back to go-git's codec.
// Optional extensions are dropped: the cached tree (TREE) describes trees we
// just changed, and the offset tables (EOIE, IEOT) would point to the wrong
// bytes; git rebuilds what it wants. Resolve-undo data (REUC) is kept.
func patchIndex(data []byte, changes []*fileChange) ([]byte, error) {
	const headerLen, hashLen = 12, 20
	if len(data) == 0 {
		data = []byte{'D', 'I', 'R', 'C', 0, 0, 0, 2, 0, 0, 0, 0}
		data = append(data, make([]byte, hashLen)...)
	}
	if len(data) < headerLen+hashLen || string(data[:4]) != "DIRC" {
		return nil, fmt.Errorf("git: index: bad header")
	}
	version := binary.BigEndian.Uint32(data[4:8])
	if version != 2 && version != 3 {
		return nil, errIndexUnsupported
	}
	count := int(binary.BigEndian.Uint32(data[8:12]))
	body := data[:len(data)-hashLen]

	type span struct {
		start, end int // the whole entry, padding included
		name       string
		stage      int
	}
	entries := make([]span, 0, count)
	off := headerLen
	for range count {
		if off+62 > len(body) {
			return nil, fmt.Errorf("git: index: truncated entry")
		}
		flags := binary.BigEndian.Uint16(body[off+60 : off+62])
		fixed := 62
		if flags&0x4000 != 0 {
			if version < 3 {
				return nil, fmt.Errorf("git: index: extended flag in version 2")
			}
			fixed = 64
		}
		nameStart := off + fixed
		nul := bytes.IndexByte(body[nameStart:], 0)
		if nul < 0 {
			return nil, fmt.Errorf("git: index: unterminated path")
		}
		// Entries are padded with 1 to 8 NULs to a multiple of 8 bytes.
		length := (fixed + nul + 8) &^ 7
		if off+length > len(body) {
			return nil, fmt.Errorf("git: index: truncated entry")
		}
		entries = append(entries, span{start: off, end: off + length,
			name: string(body[nameStart : nameStart+nul]), stage: int(flags>>12) & 3})
		off += length
	}

	// Keep the extensions that stay valid, drop the rest.
	var exts []byte
	for off+8 <= len(body) {
		sig := body[off : off+4]
		size := int(binary.BigEndian.Uint32(body[off+4 : off+8]))
		if off+8+size > len(body) {
			return nil, fmt.Errorf("git: index: truncated extension")
		}
		if sig[0] < 'A' || sig[0] > 'Z' {
			return nil, errIndexUnsupported // mandatory: we cannot keep it correct
		}
		if string(sig) == "REUC" {
			exts = append(exts, body[off:off+8+size]...)
		}
		off += 8 + size
	}

	byPath := make(map[string]*fileChange, len(changes))
	for _, c := range changes {
		byPath[c.path] = c
	}
	var inserts []*fileChange
	for _, c := range changes {
		if c.deleted {
			continue
		}
		i := sort.Search(len(entries), func(i int) bool { return entries[i].name >= c.path })
		if i == len(entries) || entries[i].name != c.path {
			inserts = append(inserts, c)
		}
	}
	sort.Slice(inserts, func(i, j int) bool { return inserts[i].path < inserts[j].path })

	out := bytes.NewBuffer(make([]byte, 0, len(data)+len(changes)*128))
	out.Write(data[:headerLen])
	n := 0
	emit := func(c *fileChange) {
		out.Write(encodeIndexEntry(c))
		n++
	}
	k := 0
	done := make(map[string]bool)
	for _, e := range entries {
		for k < len(inserts) && inserts[k].path < e.name {
			emit(inserts[k])
			k++
		}
		c, changed := byPath[e.name]
		switch {
		case !changed:
			out.Write(body[e.start:e.end])
			n++
		case c.deleted || done[e.name]:
		default:
			// Replace the entry; an unmerged path (stages 1 to 3) collapses
			// into one stage-0 entry, as git add does.
			emit(c)
			done[e.name] = true
		}
	}
	for ; k < len(inserts); k++ {
		emit(inserts[k])
	}
	out.Write(exts)
	res := out.Bytes()
	binary.BigEndian.PutUint32(res[8:12], uint32(n))
	sum := sha1.Sum(res)
	return append(res, sum[:]...), nil
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
