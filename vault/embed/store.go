package embed

// The vector cache, .state/embed-vectors.bin (docs/specs/STORAGE.md): derived,
// never committed, rebuilt from the files and the endpoint. It holds the
// model and the dimensions it was made with (a cache of another model or
// size reads as empty, so a change of either rebuilds it), how far each
// source file is embedded, and per document its index id, agent, thread,
// the hash of the text sent, and its vector, quantised to one signed byte a
// dimension with a scale per vector. The vectors are in the file's tail,
// after a block of their signs (a bit a dimension), so that a search reads
// the signs of every document and the vectors of a few thousand
// (search.go); each vector has its own CRC-32.

import (
	"errors"
	"hash/crc32"
	"hash/fnv"
	"io/fs"
	"maps"
	"math"
	"slices"

	"github.com/memvault/memvault/vault/codec"
	"github.com/memvault/memvault/vault/fileio"
)

const (
	// StoreName is the cache's name: .state/embed-vectors.bin.
	StoreName    = "embed-vectors"
	storeVersion = 2 // 1: the vectors in the body, no signs
	// MaxStoreBytes bounds the cache: past it nothing more is embedded
	// (CatchUp reports it full). 256 MiB is 330,000 vectors of 768
	// dimensions.
	MaxStoreBytes = 256 << 20
)

// Store is the vector cache in memory.
type Store struct {
	Model string
	Dims  int // 0 until the first vector
	// Marks is how far each source file is embedded (as the index's
	// watermarks: a byte offset, 1 for a node file).
	Marks   map[string]int64
	IDs     []string
	Agents  []string
	Threads []string
	Hashes  []uint64
	Scales  []float32
	Sums    []uint32 // the CRC-32 of each vector's bytes
	// Vecs is Dims signed bytes per document; nil in a cache opened for
	// search (Open), whose vectors are read from the file as needed.
	Vecs []byte
	// Bits is each vector reduced to three values a dimension, 2 ×
	// (Dims+7)/8 bytes per document (appendSigns): a plane of the
	// dimensions well above 0, then one of those well below.
	Bits []byte
	// Levels is the magnitude each document's reduced values stand for.
	Levels []float32
	bytes  int64
	// The open file of a cache opened for search, and where its vectors
	// start in the tail.
	dec     *codec.Decoder
	vecBase int
	vecSum  uint32
	// mapped is the file's tail mapped in memory (nil where it could not
	// be): the vectors are read from it, each checked by its CRC-32.
	mapping, mapped []byte
}

// NewStore is an empty cache for model (and dims, 0 when the model says).
func NewStore(model string, dims int) *Store {
	return &Store{Model: model, Dims: dims, Marks: map[string]int64{}}
}

// Len is how many documents have a vector.
func (s *Store) Len() int { return len(s.IDs) }

// Full reports whether the cache reached MaxStoreBytes.
func (s *Store) Full() bool { return s.bytes >= MaxStoreBytes }

// Bytes is about how much the cache takes on disk.
func (s *Store) Bytes() int64 { return s.bytes }

// Hash is the key a text's vector is reused by: the model and the text.
func Hash(model, text string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(model))
	h.Write([]byte{0})
	h.Write([]byte(text))
	return h.Sum64()
}

// Add stores a unit vector for a document; false when its length is not
// the cache's or the cache is full.
func (s *Store) Add(id, agent, thread string, hash uint64, v []float32) bool {
	if s.Dims == 0 {
		s.Dims = len(v)
	}
	if len(v) != s.Dims || s.Full() {
		return false
	}
	var m float32
	for _, x := range v {
		m = max(m, float32(math.Abs(float64(x))))
	}
	scale := m / 127
	at := len(s.Vecs)
	for _, x := range v {
		q := int8(0)
		if scale > 0 {
			q = int8(math.Round(float64(x / scale)))
		}
		s.Vecs = append(s.Vecs, byte(q))
	}
	row := s.Vecs[at:]
	var level float32
	s.Bits, level = appendSigns(s.Bits, row)
	s.Levels = append(s.Levels, level*scale)
	s.IDs, s.Agents, s.Threads = append(s.IDs, id), append(s.Agents, agent), append(s.Threads, thread)
	s.Hashes, s.Scales = append(s.Hashes, hash), append(s.Scales, scale)
	s.Sums = append(s.Sums, crc32.ChecksumIEEE(row))
	s.bytes += int64(s.Dims + len(id) + len(agent) + len(thread) + 16)
	return true
}

// appendSigns appends a quantised vector reduced to -1, 0 and +1 a
// dimension: a value counts when its magnitude is at least half the
// vector's mean magnitude (so a sparse vector keeps exactly its non-zero
// dimensions, a dense one about two thirds). It returns the magnitude
// the reduced values stand for: the mean of those that count.
func appendSigns(bits, row []byte) ([]byte, float32) {
	var total int
	for _, b := range row {
		total += abs8(b)
	}
	t := max(1, (total+len(row))/(2*max(len(row), 1)))
	nb := (len(row) + 7) / 8
	at := len(bits)
	bits = append(bits, make([]byte, 2*nb)...)
	var sum, n int
	for j, b := range row {
		if a := abs8(b); a >= t {
			plane := 0
			if int8(b) < 0 {
				plane = nb
			}
			bits[at+plane+j/8] |= 1 << (j % 8)
			sum, n = sum+a, n+1
		}
	}
	if n == 0 {
		return bits, 0
	}
	return bits, float32(sum) / float32(n)
}

func abs8(b byte) int {
	if x := int(int8(b)); x < 0 {
		return -x
	} else {
		return x
	}
}

// Vector is document i's vector, dequantised; nil when it does not read.
func (s *Store) Vector(i int) []float32 {
	row, ok := s.row(i)
	if !ok {
		return nil
	}
	out := make([]float32, s.Dims)
	for j, b := range row {
		out[j] = float32(int8(b)) * s.Scales[i]
	}
	return out
}

// row is document i's quantised vector: from memory, or read from the
// file of a cache opened for search and checked against its CRC-32.
func (s *Store) row(i int) ([]byte, bool) {
	if s.Vecs != nil {
		return s.Vecs[i*s.Dims : (i+1)*s.Dims], true
	}
	if s.dec == nil {
		return nil, false
	}
	return s.block(s.dec, codec.TailRef{Off: s.vecBase + i*s.Dims, Len: s.Dims, Sum: s.Sums[i]})
}

// Load reads the whole cache under root's .state/, its vectors in memory:
// an empty cache when there is none, when it does not read, or when it
// was made with another model or other dimensions (dims 0: any). A cache
// of version 1 is read as well, so an upgrade does not embed again.
func Load(root, model string, dims int) *Store {
	s := Open(root, model, dims)
	if s.dec == nil {
		return s
	}
	defer s.Close()
	vecs, ok := s.block(s.dec, codec.TailRef{Off: s.vecBase, Len: len(s.IDs) * s.Dims, Sum: s.vecSum})
	if !ok {
		return NewStore(model, dims)
	}
	// Copied out of the mapping, which Close lets go of.
	s.Vecs, s.Bits = slices.Clone(vecs), slices.Clone(s.Bits)
	return s
}

// Open reads the cache for search: everything but the vectors, which
// Search reads from the file as it needs them (Close the store after).
// A cache of version 1 is read whole, as Load reads it.
func Open(root, model string, dims int) *Store {
	d, ok := codec.ReadFile(root, StoreName, storeVersion)
	if !ok {
		if d, ok := codec.ReadFile(root, StoreName, 1); ok {
			return loadV1(d, model, dims)
		}
		return NewStore(model, dims)
	}
	s, ok := decodeMeta(d, model, dims, true)
	if !ok {
		d.Close()
		return NewStore(model, dims)
	}
	bitsRef, vecRef := d.Ref(), d.Ref()
	n := len(s.IDs)
	s.mapping, s.mapped = mapTail(d)
	s.Bits, ok = s.block(d, bitsRef)
	if !ok || !d.Done() || len(s.Bits) != n*2*((s.Dims+7)/8) || len(s.Levels) != n || vecRef.Len != n*s.Dims || vecRef.Off != bitsRef.Off+bitsRef.Len {
		s.dec = d
		s.Close()
		return NewStore(model, dims)
	}
	s.dec, s.vecBase, s.vecSum = d, vecRef.Off, vecRef.Sum
	return s
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
	return b, crc32.ChecksumIEEE(b) == r.Sum
}

// decodeMeta reads what the body holds before the vectors: the model,
// the dimensions, the marks and each document's id, agent, thread, hash,
// scale (and, from version 2, its vector's CRC-32).
func decodeMeta(d *codec.Decoder, model string, dims int, sums bool) (*Store, bool) {
	s := &Store{Model: d.Str(), Dims: d.Uvarint(), Marks: map[string]int64{}}
	if s.Model != model || dims != 0 && s.Dims != dims || s.Dims > MaxDimensions {
		return nil, false
	}
	for n := d.Count(); n > 0 && !d.Failed(); n-- {
		k := d.Str()
		s.Marks[k] = d.Int64()
	}
	n := d.Count()
	if d.Failed() {
		return nil, false
	}
	s.IDs, s.Agents, s.Threads = make([]string, n), make([]string, n), make([]string, n)
	s.Hashes, s.Scales, s.Sums, s.Levels = make([]uint64, n), make([]float32, n), make([]uint32, n), make([]float32, n)
	for i := 0; i < n && !d.Failed(); i++ {
		s.IDs[i], s.Agents[i], s.Threads[i] = d.Str(), d.Str(), d.Str()
		s.Hashes[i] = d.Uint64()
		s.Scales[i] = math.Float32frombits(uint32(d.Uint64()))
		if sums {
			s.Sums[i] = uint32(d.Uint64())
			s.Levels[i] = math.Float32frombits(uint32(d.Uint64()))
		}
		s.bytes += int64(s.Dims + len(s.IDs[i]) + len(s.Agents[i]) + len(s.Threads[i]) + 16)
	}
	return s, !d.Failed()
}

func loadV1(d *codec.Decoder, model string, dims int) *Store {
	defer d.Close()
	s, ok := decodeMeta(d, model, dims, false)
	if !ok {
		return NewStore(model, dims)
	}
	s.Vecs = d.Bytes()
	if !d.Done() || len(s.Vecs) != len(s.IDs)*s.Dims {
		return NewStore(model, dims)
	}
	s.Vecs = slices.Clone(s.Vecs)
	for i := range s.IDs {
		row := s.Vecs[i*s.Dims : (i+1)*s.Dims]
		var level float32
		s.Bits, level = appendSigns(s.Bits, row)
		s.Levels[i] = level * s.Scales[i]
		s.Sums[i] = crc32.ChecksumIEEE(row)
	}
	return s
}

// Close lets go of the file of a cache opened for search.
func (s *Store) Close() {
	if s.mapping != nil {
		unmap(s.mapping)
		s.mapping, s.mapped = nil, nil
		if s.Vecs == nil {
			s.Bits = nil // it was in the mapping
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
	if len(s.Vecs) != len(s.IDs)*s.Dims || len(s.Bits) != len(s.IDs)*2*((s.Dims+7)/8) || len(s.Levels) != len(s.IDs) {
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
		e.Int(len(s.IDs))
		for i, id := range s.IDs {
			e.Str(id)
			e.Str(s.Agents[i])
			e.Str(s.Threads[i])
			e.Uint64(s.Hashes[i])
			e.Uint64(uint64(math.Float32bits(s.Scales[i])))
			e.Uint64(uint64(s.Sums[i]))
			e.Uint64(uint64(math.Float32bits(s.Levels[i])))
		}
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
