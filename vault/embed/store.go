package embed

// The vector cache, .state/embed-vectors.bin (docs/specs/STORAGE.md): derived,
// never committed, rebuilt from the files and the endpoint. It holds the
// model and the dimensions it was made with (a cache of another model or
// size reads as empty, so a change of either rebuilds it), how far each
// source file is embedded, and per document its index id, agent, thread,
// the hash of the text sent, and its vector, quantised to one signed byte a
// dimension with a scale per vector. Since version 3 everything per
// document is in the file's tail as columns of fixed width (the agent and
// the thread as codes into two small tables, the ids one after another),
// so that a recall maps the file and reads a document's fields only when it
// looks at that document, rather than decoding 100,000 ids on each recall;
// then a block of the vectors reduced to bit-planes, so that a search reads
// those of every document and the vectors of a few thousand (search.go);
// each block, and each vector, has its own CRC-32.

import (
	"encoding/binary"
	"hash/crc32"
	"hash/fnv"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/memvault/memvault/vault/codec"
)

const (
	// StoreName is the cache's name: .state/embed-vectors.bin.
	StoreName = "embed-vectors"
	// storeVersion 3: the per-document fields as columns in the tail;
	// 2: in the body, one document after another; 1: the vectors in the
	// body, no bit-planes. Versions 1 and 2 are still read.
	storeVersion = 3
	// MaxStoreBytes bounds the cache: past it nothing more is embedded
	// (CatchUp reports it full). 256 MiB is 330,000 vectors of 768
	// dimensions.
	MaxStoreBytes = 256 << 20
)

// The columns of a document, little-endian, recW bytes a document: the
// hash of its text, its scale, its vector's CRC-32, its level, the codes
// of its agent and thread, and where its id ends in the block of ids (it
// starts where the previous one ends).
const (
	colHash   = 0
	colScale  = 8
	colSum    = 12
	colLevel  = 16
	colAgent  = 20
	colThread = 24
	colIDEnd  = 28
	recW      = 32
)

// Store is the vector cache in memory.
type Store struct {
	Model string
	Dims  int // 0 until the first vector
	// Marks is how far each source file is embedded (as the index's
	// watermarks: a byte offset, 1 for a node file).
	Marks map[string]int64
	// Journal is where the cache stands in the transcript journal
	// (vault/tjournal): every line before Off, in generation Gen, names
	// text the marks cover (docs/RETRIEVAL.md, "When"). Empty: the
	// transcripts are listed.
	Journal JournalMark
	// cols is recW bytes a document (see colHash); ids every document's
	// index id, one after another; agents and threads the tables the
	// columns' codes index. In the mapping for a cache opened for search.
	cols, ids       []byte
	agents, threads []string
	codes           map[string]uint32 // agent and thread codes, "a|"/"t|" + name, while adding
	// Vecs is Dims signed bytes per document; nil in a cache opened for
	// search (Open), whose vectors are read from the file as needed.
	Vecs []byte
	// Bits is each vector reduced to three values a dimension, 2 ×
	// (Dims+7)/8 bytes per document (appendSigns): a plane of the
	// dimensions well above 0, then one of those well below.
	Bits  []byte
	bytes int64
	old   bool // read from a cache of an earlier version
	// The open file of a cache opened for search, and where its vectors
	// start in the tail.
	dec     *codec.Decoder
	vecBase int
	vecSum  uint32
	// mapped is the file's tail mapped in memory (nil where it could not
	// be): the columns, the ids and the bit-planes are read from it; a
	// search reads the vectors it scores exactly with pread (rawRow),
	// each checked by its CRC-32 when it counts.
	mapping, mapped []byte
}

// JournalMark is a place in the transcript journal: its generation and
// the offset of a line.
type JournalMark struct {
	Gen string
	Off int64
}

// NewStore is an empty cache for model (and dims, 0 when the model says).
func NewStore(model string, dims int) *Store {
	return &Store{Model: model, Dims: dims, Marks: map[string]int64{}}
}

// Len is how many documents have a vector.
func (s *Store) Len() int { return len(s.cols) / recW }

// Full reports whether the cache reached MaxStoreBytes.
func (s *Store) Full() bool { return s.bytes >= MaxStoreBytes }

// Bytes is about how much the cache takes on disk.
func (s *Store) Bytes() int64 { return s.bytes }

// Old reports whether the cache was read from a file of an earlier
// version: saving it writes the current one.
func (s *Store) Old() bool { return s.old }

// Hash is the key a text's vector is reused by: the model and the text.
func Hash(model, text string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(model))
	h.Write([]byte{0})
	h.Write([]byte(text))
	return h.Sum64()
}

func (s *Store) u32(i, col int) uint32 { return binary.LittleEndian.Uint32(s.cols[i*recW+col:]) }

// TextHash is the hash of document i's text (Hash).
func (s *Store) TextHash(i int) uint64 { return binary.LittleEndian.Uint64(s.cols[i*recW+colHash:]) }

func (s *Store) scale(i int) float32 { return math.Float32frombits(s.u32(i, colScale)) }
func (s *Store) sum(i int) uint32    { return s.u32(i, colSum) }
func (s *Store) level(i int) float32 { return math.Float32frombits(s.u32(i, colLevel)) }

// idBytes is document i's id in the block of ids (checked when the cache
// was opened: the ends rise and the last is the block's length).
func (s *Store) idBytes(i int) []byte {
	from := uint32(0)
	if i > 0 {
		from = s.u32(i-1, colIDEnd)
	}
	to := s.u32(i, colIDEnd)
	if from > to || int(to) > len(s.ids) {
		return nil
	}
	return s.ids[from:to]
}

// ID is document i's index id.
func (s *Store) ID(i int) string { return string(s.idBytes(i)) }

// Agent is document i's agent ("" when its code is not in the table).
func (s *Store) Agent(i int) string { return entry(s.agents, s.u32(i, colAgent)) }

// Thread is document i's thread.
func (s *Store) Thread(i int) string { return entry(s.threads, s.u32(i, colThread)) }

func entry(tab []string, c uint32) string {
	if int(c) < len(tab) {
		return tab[c]
	}
	return ""
}

// Split is, for each of prefixes, the positions of the documents whose
// id begins with it and whose agent agent accepts (nil: any), in order:
// every tier's documents of a recall in one pass over the cache, made in
// parts at once as the first step of a search is (search.go).
func (s *Store) Split(prefixes []string, agent func(string) bool) [][]int {
	okAgent := weigh(s.agents, agent)
	n := s.Len()
	parts := min(runtime.GOMAXPROCS(0), maxParts, max(1, n/minPart))
	// Which list each document goes to, counted per part; then the lists
	// made at their size (grown by appending, they were most of a
	// recall's page faults), each part filling its stretch of them.
	which := make([]uint8, n)
	count := make([][]int, parts)
	var wg sync.WaitGroup
	for p := range parts {
		from, to := p*n/parts, (p+1)*n/parts
		wg.Go(func() { count[p] = s.classify(prefixes, okAgent, from, which[from:to]) })
	}
	wg.Wait()
	at := make([][]int, parts) // where part p starts in each list
	size := make([]int, len(prefixes))
	for p := range parts {
		at[p] = slices.Clone(size)
		for l, c := range count[p] {
			size[l] += c
		}
	}
	out := make([][]int, len(prefixes))
	for l := range out {
		out[l] = make([]int, size[l])
	}
	for p := range parts {
		from := p * n / parts
		wg.Go(func() {
			next := at[p]
			for j, l := range which[from : (p+1)*n/parts] {
				if l != none {
					out[l][next[l]] = from + j
					next[l]++
				}
			}
		})
	}
	wg.Wait()
	return out
}

// classify sets which[j] to the list of document from+j (none: in no
// list) and counts each list's documents.
func (s *Store) classify(prefixes []string, okAgent []bool, from int, which []uint8) []int {
	count := make([]int, len(prefixes))
	start := uint32(0)
	if from > 0 {
		start = s.u32(from-1, colIDEnd)
	}
	for j := range which {
		end := s.u32(from+j, colIDEnd)
		id := s.ids[start:end] // checked when the cache was opened: the ends rise
		start = end
		which[j] = none
		if a := s.u32(from+j, colAgent); int(a) >= len(okAgent) || !okAgent[a] {
			continue
		}
		for l, prefix := range prefixes {
			if hasPrefix(id, prefix) {
				which[j] = uint8(l)
				count[l]++
				break
			}
		}
	}
	return count
}

// hasPrefix is bytes.HasPrefix for the short prefixes of Split, without
// a call to compare two bytes.
func hasPrefix(id []byte, prefix string) bool {
	if len(id) < len(prefix) {
		return false
	}
	for k := range len(prefix) {
		if id[k] != prefix[k] {
			return false
		}
	}
	return true
}

// none is Split's mark of a document in no list; it takes fewer
// prefixes than that.
const none = 255

// InThreads is the positions of pos whose document's thread thread
// accepts.
func (s *Store) InThreads(pos []int, thread func(string) bool) []int {
	ok := weigh(s.threads, thread)
	var out []int
	for _, i := range pos {
		if t := s.u32(i, colThread); int(t) < len(ok) && ok[t] {
			out = append(out, i)
		}
	}
	return out
}

func weigh(tab []string, f func(string) bool) []bool {
	ok := make([]bool, len(tab))
	for i, name := range tab {
		ok[i] = f == nil || f(name)
	}
	return ok
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
	s.addDoc(id, agent, thread, hash, scale, crc32.ChecksumIEEE(row), level*scale)
	return true
}

// addDoc appends a document's columns and id (its vector and bit-planes
// are the caller's).
func (s *Store) addDoc(id, agent, thread string, hash uint64, scale float32, sum uint32, level float32) {
	s.ids = append(s.ids, id...)
	var r [recW]byte
	binary.LittleEndian.PutUint64(r[colHash:], hash)
	binary.LittleEndian.PutUint32(r[colScale:], math.Float32bits(scale))
	binary.LittleEndian.PutUint32(r[colSum:], sum)
	binary.LittleEndian.PutUint32(r[colLevel:], math.Float32bits(level))
	binary.LittleEndian.PutUint32(r[colAgent:], s.code(&s.agents, "a|", agent))
	binary.LittleEndian.PutUint32(r[colThread:], s.code(&s.threads, "t|", thread))
	binary.LittleEndian.PutUint32(r[colIDEnd:], uint32(len(s.ids)))
	s.cols = append(s.cols, r[:]...)
	s.bytes += int64(s.Dims + len(id) + len(agent) + len(thread) + 16)
}

// code is name's code in tab, added when it is new.
func (s *Store) code(tab *[]string, kind, name string) uint32 {
	if s.codes == nil {
		s.codes = make(map[string]uint32, len(s.agents)+len(s.threads))
		for c, a := range s.agents {
			s.codes["a|"+a] = uint32(c)
		}
		for c, t := range s.threads {
			s.codes["t|"+t] = uint32(c)
		}
	}
	c, ok := s.codes[kind+name]
	if !ok {
		c = uint32(len(*tab))
		*tab = append(*tab, name)
		s.codes[kind+name] = c
	}
	return c
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
	sc := s.scale(i)
	for j, b := range row {
		out[j] = float32(int8(b)) * sc
	}
	return out
}
