package index

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/memvault/memvault/vault/fault"
)

// A split index (git's core.splitIndex) keeps most entries in a shared
// file, .git/sharedindex.<sha1>, and only the entries that changed since in
// .git/index, with a "link" extension naming the shared file and two
// bitmaps: the shared entries deleted, and the shared entries replaced by
// the first entries of .git/index, in order. Entries after the replacements
// are added.
//
// A vault's index grows with its files (30k entries, 2.2 MB at 10k
// sessions), and rewriting it all, with its SHA-1, was a third of a
// remember. So once the index holds Options.SplitFrom entries, Write
// splits it, and from then on writes only the small file: the shared one
// is read (mapped, not copied) to find the positions of the changed paths.
// When the changes reach a fifth of the shared entries, as git's
// splitIndex.maxPercentChange has it by default, a new shared index is
// written. SplitOff (core.splitIndex=false) keeps the index whole, and
// turns a split one back into one file.

// sharedDir is the folder that holds the shared index files: git's own
// folder, which git reads them from. It is the only file system the
// package knows.
type sharedDir string

// sharedIndexExpiry is how long an unused shared index is kept for a reader
// that may still need it; git's splitIndex.sharedIndexExpire defaults to the
// same two weeks.
const sharedIndexExpiry = 14 * 24 * time.Hour

// errReshare says that the changes no longer fit a split index on the
// current shared index.
var errReshare = errors.New("git: index: write a new shared index")

// splitIndex is what a split index changes in its shared index.
type splitIndex struct {
	shared  [indexHashLen]byte
	deleted map[int]bool // positions in the shared index
	// replaced holds the entries that stand for shared entries, by
	// position; they have no name of their own.
	replaced map[int][]byte
	added    []splitEntry // in git's order
}

// splitEntry is an added entry of a split index's own file.
type splitEntry struct {
	name string
	raw  []byte
}

// openSplit reads a split index: its link extension, the shared index it
// names, mapped (the caller unmaps it), and its own entries. Bit positions
// past the shared index's entries are an error, as they are for git.
func (d sharedDir) openSplit(ix *indexData, link []byte) (*splitIndex, *indexData, func(), error) {
	data := link[8:]
	if len(data) < indexHashLen {
		return nil, nil, nil, fmt.Errorf("git: index: link extension too short")
	}
	si := &splitIndex{deleted: map[int]bool{}, replaced: map[int][]byte{}}
	copy(si.shared[:], data)
	data = data[indexHashLen:]
	shared, unmap, err := d.sharedIndex(si.shared)
	if err != nil {
		return nil, nil, nil, err
	}
	fail := func(format string, args ...any) (*splitIndex, *indexData, func(), error) {
		unmap()
		return nil, nil, nil, fmt.Errorf("git: index: "+format, args...)
	}
	var deleted, replaced []int
	if len(data) > 0 {
		var n1, n2 int
		if deleted, n1, err = decodeEWAH(data, shared.count); err != nil {
			return fail("delete bitmap: %v", err)
		}
		if replaced, n2, err = decodeEWAH(data[n1:], shared.count); err != nil {
			return fail("replace bitmap: %v", err)
		}
		if n1+n2 != len(data) {
			return fail("garbage after the link bitmaps")
		}
	}
	if len(replaced) > ix.count {
		return fail("%d replacements for %d entries", len(replaced), ix.count)
	}
	for _, p := range deleted {
		si.deleted[p] = true
	}
	// The own file's entries: the replacements first, in the order of the
	// replace bitmap, then the added ones. A replaced entry that is also
	// deleted is deleted.
	i := 0
	ix.each(func(start, end int, name []byte) {
		if i < len(replaced) {
			if p := replaced[i]; !si.deleted[p] {
				si.replaced[p] = ix.data[start:end]
			}
			i++
			return
		}
		si.added = append(si.added, splitEntry{name: string(name), raw: ix.data[start:end]})
	})
	return si, shared, unmap, nil
}

// sharedIndex maps the shared index a split index names. The caller unmaps
// it with the returned function.
func (d sharedDir) sharedIndex(sum [indexHashLen]byte) (*indexData, func(), error) {
	p := filepath.Join(string(d), "sharedindex."+hex.EncodeToString(sum[:]))
	data, unmap, err := mapFile(p)
	if err != nil {
		return nil, nil, fault.Wrap("git: read shared index", err)
	}
	ix, err := parseIndex(data)
	if err == nil && len(ix.exts) > 0 && ix.ext("link") != nil {
		err = fmt.Errorf("git: index: the shared index is itself split")
	}
	if err == nil && !bytes.Equal(data[len(data)-indexHashLen:], sum[:]) {
		err = fmt.Errorf("git: index: %s does not match its name", filepath.Base(p))
	}
	if err != nil {
		unmap()
		return nil, nil, err
	}
	// Keep it fresh, as git does, so that git's expiry of unused shared
	// indexes never takes the one in use.
	if info, err := os.Stat(p); err == nil && time.Since(info.ModTime()) > 24*time.Hour {
		now := time.Now()
		_ = os.Chtimes(p, now, now)
	}
	return ix, unmap, nil
}

// mapFile maps a file read-only; a large index is then walked without
// being copied into the heap.
func mapFile(p string) ([]byte, func(), error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if info.Size() == 0 || info.Size() > 1<<31 {
		data, err := io.ReadAll(f)
		return data, func() {}, err
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(info.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		data, err := io.ReadAll(f)
		return data, func() {}, err
	}
	return data, func() { _ = syscall.Munmap(data) }, nil
}

// writeSplitPatch writes a split index on the same shared index, with
// changes applied, or returns errReshare when that does not fit.
func (d sharedDir) writeSplitPatch(w io.Writer, ix *indexData, link []byte, changes []Change) error {
	si, shared, unmap, err := d.openSplit(ix, link)
	if err != nil {
		return err
	}
	defer unmap()

	deleted, byPos, added := si.deleted, si.replaced, si.added

	// Where each changed path is in the shared index. A path with more
	// than one entry there (a conflict) is left to a new shared index.
	sorted := sortedChanges(changes)
	at := make([]int, len(sorted))
	for i := range at {
		at[i] = -1
	}
	conflict := false
	k, pos := 0, 0
	shared.each(func(_, _ int, name []byte) {
		for k < len(sorted) && string(name) > sorted[k].Path {
			k++
		}
		if k < len(sorted) && string(name) == sorted[k].Path {
			if at[k] >= 0 {
				conflict = true
			}
			at[k] = pos
		}
		pos++
	})
	if conflict {
		return errReshare
	}

	for i, c := range sorted {
		added = slices.DeleteFunc(added, func(e splitEntry) bool { return e.name == c.Path })
		p := at[i]
		switch {
		case p >= 0 && c.Deleted:
			deleted[p] = true
			delete(byPos, p)
		case p >= 0:
			delete(deleted, p)
			byPos[p] = encodeIndexEntry(c, "")
		case !c.Deleted:
			added = append(added, splitEntry{name: c.Path, raw: encodeIndexEntry(c, c.Path)})
		}
	}
	if 5*(len(byPos)+len(deleted)+len(added)) > shared.count {
		return errReshare
	}
	slices.SortStableFunc(added, func(a, b splitEntry) int { return strings.Compare(a.name, b.name) })

	replaced := make([]int, 0, len(byPos))
	for p := range byPos {
		replaced = append(replaced, p)
	}
	slices.Sort(replaced)
	dels := make([]int, 0, len(deleted))
	for p := range deleted {
		dels = append(dels, p)
	}
	slices.Sort(dels)

	iw := newIndexWriter(w, ix.version, len(replaced)+len(added))
	for _, p := range replaced {
		iw.write(byPos[p])
	}
	for _, e := range added {
		iw.write(e.raw)
	}
	iw.write(linkExtension(si.shared, dels, replaced))
	if reuc := ix.ext("REUC"); reuc != nil {
		iw.write(reuc)
	}
	return iw.close()
}

// writeSplitOnNewShared writes whole, a complete index, with changes
// applied, as a new shared index, and to w the split index that links to
// it.
func (d sharedDir) writeSplitOnNewShared(w io.Writer, whole []byte, changes []Change) error {
	var full bytes.Buffer
	if err := writeIndexPatch(&full, whole, changes); err != nil {
		return err
	}
	ix, err := parseIndex(full.Bytes())
	if err != nil {
		return err
	}
	// The shared index holds the entries only; resolve-undo data stays in
	// the own file. Not through fileio: the file is named by the hash of
	// what streams into it, known only at the end, and its temporary name
	// is git's sharedindex_, which the expiry below removes when left.
	f, err := os.CreateTemp(string(d), "sharedindex_")
	if err != nil {
		return fault.Wrap("git: write shared index", err)
	}
	tmp := f.Name()
	bw := bufio.NewWriterSize(f, 64<<10)
	sw := newIndexWriter(bw, ix.version, ix.count)
	sw.write(ix.data[indexHeaderLen:ix.entriesEnd])
	sum, err := sw.closeSum()
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	name := "sharedindex." + hex.EncodeToString(sum)
	if err == nil {
		err = os.Rename(tmp, filepath.Join(string(d), name))
	}
	if err != nil {
		os.Remove(tmp)
		return fault.Wrap("git: write shared index", err)
	}
	d.expireSharedIndexes(name)

	var shared [indexHashLen]byte
	copy(shared[:], sum)
	iw := newIndexWriter(w, ix.version, 0)
	iw.write(linkExtension(shared, nil, nil))
	if reuc := ix.ext("REUC"); reuc != nil {
		iw.write(reuc)
	}
	return iw.close()
}

// expireSharedIndexes removes the shared indexes other than keep that no
// one has used for sharedIndexExpiry, and the temporary files of shared
// indexes whose writer was killed an hour or more ago.
func (d sharedDir) expireSharedIndexes(keep string) {
	entries, err := os.ReadDir(string(d))
	if err != nil {
		return
	}
	for _, e := range entries {
		var age time.Duration
		switch name := e.Name(); {
		case strings.HasPrefix(name, "sharedindex.") && name != keep:
			age = sharedIndexExpiry
		case strings.HasPrefix(name, "sharedindex_"):
			age = time.Hour
		default:
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > age {
			os.Remove(filepath.Join(string(d), e.Name()))
		}
	}
}

// unsplit returns the complete index a split index stands for, as one
// file's data.
func (d sharedDir) unsplit(ix *indexData, link []byte) ([]byte, error) {
	si, shared, unmap, err := d.openSplit(ix, link)
	if err != nil {
		return nil, err
	}
	defer unmap()
	deleted, byPos, added := si.deleted, si.replaced, si.added

	n := len(added)
	for p := range shared.count {
		if !deleted[p] {
			n++
		}
	}
	var out bytes.Buffer
	iw := newIndexWriter(&out, shared.version, n)
	pos, a := 0, 0
	shared.each(func(start, end int, name []byte) {
		for a < len(added) && added[a].name < string(name) {
			iw.write(added[a].raw)
			a++
		}
		switch {
		case deleted[pos]:
		case byPos[pos] != nil:
			iw.write(withName(byPos[pos], name))
		default:
			iw.write(shared.data[start:end])
		}
		pos++
	})
	for ; a < len(added); a++ {
		iw.write(added[a].raw)
	}
	if reuc := ix.ext("REUC"); reuc != nil {
		iw.write(reuc)
	}
	if err := iw.close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// withName returns a replacement entry, which has no name of its own, with
// the name of the shared entry it replaces.
func withName(raw, name []byte) []byte {
	fixed := 62
	flags := binary.BigEndian.Uint16(raw[60:62])
	if flags&0x4000 != 0 {
		fixed = 64
	}
	length := (fixed + len(name) + 8) &^ 7
	b := make([]byte, length)
	copy(b, raw[:fixed])
	nameLen := min(len(name), 0xFFF)
	binary.BigEndian.PutUint16(b[60:62], flags&^0xFFF|uint16(nameLen))
	copy(b[fixed:], name)
	return b
}

// linkExtension encodes a split index's link extension.
func linkExtension(shared [indexHashLen]byte, deleted, replaced []int) []byte {
	data := append([]byte(nil), shared[:]...)
	data = append(data, encodeEWAH(deleted)...)
	data = append(data, encodeEWAH(replaced)...)
	ext := make([]byte, 8, 8+len(data))
	copy(ext, "link")
	binary.BigEndian.PutUint32(ext[4:], uint32(len(data)))
	return append(ext, data...)
}

// EWAH is the compressed bitmap git uses in the link extension: a sequence
// of marker words, each saying how many 64-bit words of all-zero or
// all-one bits come next (bits 1 to 32, the bit value in bit 0) and how
// many literal words follow it (bits 33 to 63). Serialized: the bitmap's
// size in bits and the number of words (32-bit, big-endian), the words
// (64-bit, big-endian), and the index of the last marker word (32-bit).

// decodeEWAH returns the positions of the bits set, in order, and the
// number of bytes the bitmap took. A bit at limit or past it is an error:
// a bitmap names entries of an index of limit entries.
func decodeEWAH(data []byte, limit int) ([]int, int, error) {
	if len(data) < 8 {
		return nil, 0, fmt.Errorf("ewah: too short")
	}
	words := int(binary.BigEndian.Uint32(data[4:8]))
	size := 8 + 8*words + 4
	if words < 0 || len(data) < size {
		return nil, 0, fmt.Errorf("ewah: %d words do not fit in %d bytes", words, len(data))
	}
	word := func(i int) uint64 { return binary.BigEndian.Uint64(data[8+8*i:]) }
	past := func(p int) error { return fmt.Errorf("ewah: bit %d past the %d entries", p, limit) }
	var set []int
	pos := 0
	for i := 0; i < words; {
		marker := word(i)
		i++
		run := int(marker >> 1 & 0xFFFFFFFF)
		literals := int(marker >> 33)
		if marker&1 != 0 && run > 0 {
			if pos+64*run > limit {
				return nil, 0, past(pos + 64*run - 1)
			}
			for b := range 64 * run {
				set = append(set, pos+b)
			}
		}
		pos += 64 * run
		if i+literals > words {
			return nil, 0, fmt.Errorf("ewah: literal words past the end")
		}
		for range literals {
			for w := word(i); w != 0; w &= w - 1 {
				if p := pos + bits.TrailingZeros64(w); p < limit {
					set = append(set, p)
				} else {
					return nil, 0, past(p)
				}
			}
			i++
			pos += 64
		}
	}
	return set, size, nil
}

// encodeEWAH encodes the bitmap with the bits at positions set (ascending,
// no repeats): a marker word before each group of consecutive literal
// words, counting the all-zero words skipped.
func encodeEWAH(set []int) []byte {
	var buf []uint64
	last := 0 // the index of the last marker word
	next := 0 // the word the bitmap has reached
	for i := 0; i < len(set); {
		wi := set[i] / 64
		var w uint64
		for ; i < len(set) && set[i]/64 == wi; i++ {
			w |= 1 << (set[i] % 64)
		}
		if len(buf) == 0 || wi > next || buf[last]>>33 == 1<<31-1 {
			buf = append(buf, uint64(wi-next)<<1)
			last = len(buf) - 1
		}
		buf[last] += 1 << 33
		buf = append(buf, w)
		next = wi + 1
	}
	if len(buf) == 0 {
		buf = []uint64{0}
	}
	size := 0
	if len(set) > 0 {
		size = set[len(set)-1] + 1
	}
	out := make([]byte, 8+8*len(buf)+4)
	binary.BigEndian.PutUint32(out[0:], uint32(size))
	binary.BigEndian.PutUint32(out[4:], uint32(len(buf)))
	for i, w := range buf {
		binary.BigEndian.PutUint64(out[8+8*i:], w)
	}
	binary.BigEndian.PutUint32(out[8+8*len(buf):], uint32(last))
	return out
}
