package embed

// The vector cache's file: Open (for search, the file mapped), Load (whole,
// to add to it), Save, and the reading of the earlier versions.

import (
	"errors"
	"hash/crc32"
	"io/fs"
	"maps"
	"math"
	"slices"

	"github.com/memvault/memvault/vault/codec"
	"github.com/memvault/memvault/vault/fileio"
)

// row is document i's quantised vector: from memory, or read from the
// file of a cache opened for search and checked against its CRC-32.
func (s *Store) row(i int) ([]byte, bool) {
	if s.Vecs != nil {
		return s.Vecs[i*s.Dims : (i+1)*s.Dims], true
	}
	if s.dec == nil {
		return nil, false
	}
	return s.block(s.dec, codec.TailRef{Off: s.vecBase + i*s.Dims, Len: s.Dims, Sum: s.sum(i)})
}

// rawRow is row without the check, sound reports whether it passes: a
// search checks only the rows that would enter its best k (Search). From
// a cache opened for search the row is read from the file into buf
// (pread), not from the mapping: the exact step's rows are scattered
// over the file, and each one read through the mapping made the kernel
// map, then unmap, the sixteen pages around it: a third of a recall's
// page faults at 330,000 vectors.
func (s *Store) rawRow(i int, buf []byte) ([]byte, bool) {
	if s.Vecs != nil {
		return s.Vecs[i*s.Dims : (i+1)*s.Dims], true
	}
	if s.dec == nil {
		return nil, false
	}
	f, off, n := s.dec.TailFile()
	at := int64(s.vecBase) + int64(i)*int64(s.Dims)
	if f == nil || at < 0 || at+int64(s.Dims) > n {
		return nil, false
	}
	buf = buf[:s.Dims]
	if _, err := f.ReadAt(buf, off+at); err != nil {
		return nil, false
	}
	return buf, true
}

// sound reports whether document i's row, as rawRow returned it, is the
// one its CRC-32 was written for.
func (s *Store) sound(i int, row []byte) bool {
	return s.Vecs != nil || crc32.ChecksumIEEE(row) == s.sum(i)
}

// Load reads the whole cache under root's .state/, its vectors in memory:
// an empty cache when there is none, when it does not read, or when it
// was made with another model or other dimensions (dims 0: any). A cache
// of version 1 or 2 is read as well, so an upgrade does not embed again.
func Load(root, model string, dims int) *Store {
	s := Open(root, model, dims)
	if s.dec == nil {
		return s
	}
	defer s.Close()
	vecs, ok := s.block(s.dec, codec.TailRef{Off: s.vecBase, Len: s.Len() * s.Dims, Sum: s.vecSum})
	if !ok {
		return NewStore(model, dims)
	}
	// Copied out of the mapping, which Close lets go of.
	s.Vecs, s.Bits = slices.Clone(vecs), slices.Clone(s.Bits)
	s.cols, s.ids = slices.Clone(s.cols), slices.Clone(s.ids)
	return s
}

// Open reads the cache for search: its marks and tables, with the
// documents' columns, bit-planes and vectors left in the file, mapped,
// read as a search needs them (Close the store after). A cache of
// version 1 or 2 is read whole, as Load reads it.
func Open(root, model string, dims int) *Store {
	d, ok := codec.ReadFile(root, StoreName, storeVersion)
	if !ok {
		for _, version := range []uint64{2, 1} {
			if d, ok := codec.ReadFile(root, StoreName, version); ok {
				return loadOld(d, model, dims, version)
			}
		}
		return NewStore(model, dims)
	}
	s := &Store{Model: d.Str(), Dims: d.Uvarint(), Marks: map[string]int64{}, dec: d}
	if s.Model != model || dims != 0 && s.Dims != dims || s.Dims > MaxDimensions || !s.openTail(d) {
		s.Close()
		return NewStore(model, dims)
	}
	return s
}

// openTail reads the rest of a cache of the current version: the marks,
// the journal mark, the size, the tables, and where the columns, the ids, the bit-planes
// and the vectors are in the tail, each block checked by its CRC-32 but
// the vectors, which are checked one by one as a search reads them.
func (s *Store) openTail(d *codec.Decoder) bool {
	for n := d.Count(); n > 0 && !d.Failed(); n-- {
		k := d.Str()
		s.Marks[k] = d.Int64()
	}
	s.Journal = JournalMark{Gen: d.Str(), Off: d.Int64()}
	s.bytes = d.Int64()
	n := d.Uvarint() // the documents are in the tail: bounded by the columns' length below
	s.agents, s.threads = d.Strs(), d.Strs()
	colsRef, idsRef, bitsRef, vecRef := d.Ref(), d.Ref(), d.Ref(), d.Ref()
	if !d.Done() || n < 0 || n > MaxStoreBytes || colsRef.Len != n*recW || vecRef.Len != n*s.Dims || vecRef.Off != bitsRef.Off+bitsRef.Len {
		return false
	}
	s.mapping, s.mapped = mapTail(d)
	var ok1, ok2, ok3 bool
	s.cols, ok1 = s.block(d, colsRef)
	s.ids, ok2 = s.block(d, idsRef)
	s.Bits, ok3 = s.block(d, bitsRef)
	if !ok1 || !ok2 || !ok3 || len(s.Bits) != n*2*((s.Dims+7)/8) {
		return false
	}
	var end uint32
	for i := range n {
		e := s.u32(i, colIDEnd)
		if e < end {
			return false
		}
		end = e
	}
	s.vecBase, s.vecSum = vecRef.Off, vecRef.Sum
	return int(end) == len(s.ids)
}

// block is a block of the tail: in the mapping, or read from the file;
// false when its CRC-32 fails.
func (s *Store) block(d *codec.Decoder, r codec.TailRef) ([]byte, bool) {
	if s.mapped == nil || r.Len == 0 {
		return d.TailBlock(r)
	}
	if r.Off < 0 || r.Len < 0 || r.Off+r.Len > len(s.mapped) {
		return nil, false
	}
	b := s.mapped[r.Off : r.Off+r.Len : r.Off+r.Len]
	return b, codec.Sum(b) == r.Sum
}

// loadOld reads a cache of version 1 or 2 whole. Both hold per document,
// in the body, its id, agent, thread, hash and scale; version 2 also its
// vector's CRC-32 and its level, with the bit-planes and the vectors in
// the tail, where version 1 has the vectors in the body.
func loadOld(d *codec.Decoder, model string, dims int, version uint64) *Store {
	defer d.Close()
	s := &Store{Model: d.Str(), Dims: d.Uvarint(), Marks: map[string]int64{}, old: true}
	if s.Model != model || dims != 0 && s.Dims != dims || s.Dims > MaxDimensions {
		return NewStore(model, dims)
	}
	for n := d.Count(); n > 0 && !d.Failed(); n-- {
		k := d.Str()
		s.Marks[k] = d.Int64()
	}
	n := d.Count()
	type doc struct {
		id, agent, thread string
		hash              uint64
		scale, level      float32
		sum               uint32
	}
	docs := make([]doc, 0, min(n, 1<<20))
	for i := 0; i < n && !d.Failed(); i++ {
		x := doc{id: d.Str(), agent: d.Str(), thread: d.Str(), hash: d.Uint64(), scale: math.Float32frombits(uint32(d.Uint64()))}
		if version == 2 {
			x.sum, x.level = uint32(d.Uint64()), math.Float32frombits(uint32(d.Uint64()))
		}
		docs = append(docs, x)
	}
	if d.Failed() {
		return NewStore(model, dims)
	}
	if version == 1 {
		s.Vecs = slices.Clone(d.Bytes())
		if !d.Done() || len(s.Vecs) != n*s.Dims {
			return NewStore(model, dims)
		}
		for i := range docs {
			row := s.Vecs[i*s.Dims : (i+1)*s.Dims]
			var level float32
			s.Bits, level = appendSigns(s.Bits, row)
			docs[i].level, docs[i].sum = level*docs[i].scale, crc32.ChecksumIEEE(row)
		}
	} else {
		bitsRef, vecRef := d.Ref(), d.Ref()
		bits, ok1 := d.TailBlock(bitsRef)
		vecs, ok2 := d.TailBlock(vecRef)
		if !ok1 || !ok2 || !d.Done() || len(bits) != n*2*((s.Dims+7)/8) || len(vecs) != n*s.Dims {
			return NewStore(model, dims)
		}
		s.Bits, s.Vecs = slices.Clone(bits), slices.Clone(vecs)
	}
	for _, x := range docs {
		s.addDoc(x.id, x.agent, x.thread, x.hash, x.scale, x.sum, x.level)
	}
	return s
}

// Close lets go of the file of a cache opened for search.
func (s *Store) Close() {
	if s.mapping != nil {
		unmap(s.mapping)
		s.mapping, s.mapped = nil, nil
		if s.Vecs == nil {
			s.Bits, s.cols, s.ids = nil, nil, nil // they were in the mapping
		}
	}
	if s.dec != nil {
		s.dec.Close()
		s.dec = nil
	}
}

// Save writes the cache (atomically, as every cache: no fsync); false
// when it was not written, or when the store does not hold its vectors
// (a cache opened for search).
func (s *Store) Save(root string) bool {
	n := s.Len()
	if len(s.Vecs) != n*s.Dims || len(s.Bits) != n*2*((s.Dims+7)/8) || len(s.cols) != n*recW {
		return false
	}
	return codec.WriteFile(root, StoreName, storeVersion, func(e *codec.Encoder) {
		e.Str(s.Model)
		e.Int(s.Dims)
		e.Int(len(s.Marks))
		for _, k := range slices.Sorted(maps.Keys(s.Marks)) {
			e.Str(k)
			e.Int64(s.Marks[k])
		}
		e.Str(s.Journal.Gen)
		e.Int64(s.Journal.Off)
		e.Int64(s.bytes)
		e.Int(n)
		e.Strs(s.agents)
		e.Strs(s.threads)
		e.Ref(e.TailBlock(s.cols))
		e.Ref(e.TailBlock(s.ids))
		e.Ref(e.TailBlock(s.Bits))
		e.Ref(e.TailBlock(s.Vecs))
	})
}

// Remove deletes the cache file.
func Remove(root string) error {
	err := fileio.At(root).Remove(codec.FilePath(root, StoreName))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
