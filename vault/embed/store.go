package embed

// The vector cache, .state/embed-vectors.bin (docs/specs/STORAGE.md): derived,
// never committed, rebuilt from the files and the endpoint. It holds the
// model and the dimensions it was made with (a cache of another model or
// size reads as empty, so a change of either rebuilds it), how far each
// source file is embedded, and per document its index id, agent, thread,
// the hash of the text sent, and its vector, quantised to one signed byte a
// dimension with a scale per vector.

import (
	"container/heap"
	"errors"
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
	storeVersion = 1
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
	Vecs    []byte // Dims signed bytes per document
	bytes   int64
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
	for _, x := range v {
		q := int8(0)
		if scale > 0 {
			q = int8(math.Round(float64(x / scale)))
		}
		s.Vecs = append(s.Vecs, byte(q))
	}
	s.IDs, s.Agents, s.Threads = append(s.IDs, id), append(s.Agents, agent), append(s.Threads, thread)
	s.Hashes, s.Scales = append(s.Hashes, hash), append(s.Scales, scale)
	s.bytes += int64(s.Dims + len(id) + len(agent) + len(thread) + 16)
	return true
}

// Vector is document i's vector, dequantised.
func (s *Store) Vector(i int) []float32 {
	out := make([]float32, s.Dims)
	for j, b := range s.Vecs[i*s.Dims : (i+1)*s.Dims] {
		out[j] = float32(int8(b)) * s.Scales[i]
	}
	return out
}

// Scored is a document of the cache and its cosine similarity to a query.
type Scored struct {
	Index int
	Sim   float32
}

// Search returns the k documents most like the unit vector q among those
// keep accepts, best first (ties by position): a scan of every vector,
// which at the cache's bound is a few hundred milliseconds and at a large
// vault's tens of thousands of messages a few (docs/PERFORMANCE.md).
func (s *Store) Search(q []float32, keep func(i int) bool, k int) []Scored {
	if len(q) != s.Dims || k <= 0 {
		return nil
	}
	// The query is quantised as the documents are, so that the scan is
	// integer multiplications: a third of the float scan's time.
	var m float32
	for _, x := range q {
		m = max(m, float32(math.Abs(float64(x))))
	}
	qs := m / 127
	qq := make([]int32, len(q))
	for j, x := range q {
		if qs > 0 {
			qq[j] = int32(math.Round(float64(x / qs)))
		}
	}
	h := &minHeap{}
	for i := range s.IDs {
		if keep != nil && !keep(i) {
			continue
		}
		row := s.Vecs[i*s.Dims : (i+1)*s.Dims]
		row = row[:len(qq)]
		var a, b, c, d int32
		j := 0
		for ; j+4 <= len(qq); j += 4 {
			a += qq[j] * int32(int8(row[j]))
			b += qq[j+1] * int32(int8(row[j+1]))
			c += qq[j+2] * int32(int8(row[j+2]))
			d += qq[j+3] * int32(int8(row[j+3]))
		}
		for ; j < len(qq); j++ {
			a += qq[j] * int32(int8(row[j]))
		}
		sc := Scored{Index: i, Sim: float32(a+b+c+d) * qs * s.Scales[i]}
		if h.Len() < k {
			heap.Push(h, sc)
		} else if sc.Sim > (*h)[0].Sim {
			(*h)[0] = sc
			heap.Fix(h, 0)
		}
	}
	out := make([]Scored, h.Len())
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = heap.Pop(h).(Scored)
	}
	return out
}

type minHeap []Scored

func (h minHeap) Len() int { return len(h) }
func (h minHeap) Less(i, j int) bool {
	if h[i].Sim != h[j].Sim {
		return h[i].Sim < h[j].Sim
	}
	return h[i].Index > h[j].Index
}
func (h minHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *minHeap) Push(x any)   { *h = append(*h, x.(Scored)) }
func (h *minHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Load reads the cache under root's .state/; an empty cache when there is
// none, when it does not read, or when it was made with another model or
// other dimensions (dims 0: any).
func Load(root, model string, dims int) *Store {
	d, ok := codec.ReadFile(root, StoreName, storeVersion)
	if !ok {
		return NewStore(model, dims)
	}
	s := &Store{Model: d.Str(), Dims: d.Uvarint(), Marks: map[string]int64{}}
	if s.Model != model || dims != 0 && s.Dims != dims || s.Dims > MaxDimensions {
		return NewStore(model, dims)
	}
	for n := d.Count(); n > 0 && !d.Failed(); n-- {
		k := d.Str()
		s.Marks[k] = d.Int64()
	}
	n := d.Count()
	if d.Failed() {
		return NewStore(model, dims)
	}
	s.IDs, s.Agents, s.Threads = make([]string, n), make([]string, n), make([]string, n)
	s.Hashes, s.Scales = make([]uint64, n), make([]float32, n)
	for i := 0; i < n && !d.Failed(); i++ {
		s.IDs[i], s.Agents[i], s.Threads[i] = d.Str(), d.Str(), d.Str()
		s.Hashes[i] = d.Uint64()
		s.Scales[i] = math.Float32frombits(uint32(d.Uint64()))
		s.bytes += int64(s.Dims + len(s.IDs[i]) + len(s.Agents[i]) + len(s.Threads[i]) + 16)
	}
	s.Vecs = d.Bytes()
	if !d.Done() || len(s.Vecs) != n*s.Dims {
		return NewStore(model, dims)
	}
	return s
}

// Save writes the cache (atomically, as every cache: no fsync).
func (s *Store) Save(root string) bool {
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
		}
		e.Bytes(s.Vecs)
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
