package codec

import (
	"encoding/binary"
	"os"
	"sort"
	"unsafe"
)

// The codec every derived file under .state/ is written with: uvarints,
// length-prefixed strings and byte runs, and blocks that carry their own
// CRC-32. It is hand-rolled rather than gob or JSON because these files
// are read on the hook paths, where decoding 100k rows through reflection
// costs more than the whole budget; reading back a string costs a slice of
// the file, not an allocation.

// Encoder appends to one growing buffer, which becomes the file, and to
// a tail of blocks read one by one later (tailBlock).
type Encoder struct {
	B    []byte
	tail []byte
	Bad  bool // a view could not encode itself: write nothing
}

// TailRef locates a block of the tail.
type TailRef struct {
	Off, Len int
	Sum      uint32
}

// TailBlock puts p in the tail and returns where it is, for the view to
// encode with its index.
func (e *Encoder) TailBlock(p []byte) TailRef {
	ref := TailRef{Off: len(e.tail), Len: len(p), Sum: Sum(p)}
	e.tail = append(e.tail, p...)
	return ref
}

func (e *Encoder) Ref(r TailRef) {
	e.Int(r.Off)
	e.Int(r.Len)
	e.uv(uint64(r.Sum))
}

func (e *Encoder) uv(x uint64) { e.B = binary.AppendUvarint(e.B, x) }

// Int writes a count or length; negative values never occur in what is
// cached, and would decode as a bad file.
func (e *Encoder) Int(n int) { e.uv(uint64(n)) }

func (e *Encoder) Int64(n int64) { e.uv(uint64(n)) }

func (e *Encoder) Bool(x bool) {
	if x {
		e.B = append(e.B, 1)
	} else {
		e.B = append(e.B, 0)
	}
}

func (e *Encoder) Str(s string) {
	e.uv(uint64(len(s)))
	e.B = append(e.B, s...)
}

func (e *Encoder) Bytes(p []byte) {
	e.uv(uint64(len(p)))
	e.B = append(e.B, p...)
}

func (e *Encoder) Strs(ss []string) {
	e.Int(len(ss))
	for _, s := range ss {
		e.Str(s)
	}
}

// IntMap writes m as a count and its pairs, keys sorted so that equal maps
// encode to equal bytes.
func (e *Encoder) IntMap(m map[string]int) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	e.Int(len(keys))
	for _, k := range keys {
		e.Str(k)
		e.Int(m[k])
	}
}

// Decoder reads what an encoder wrote. s and b are the same bytes, seen
// as a string and as a slice: strings read are substrings of s and byte
// runs are sub-slices of b, so a decoded file costs one allocation for the
// file and one per slab the caller makes, never one per field. The bytes
// must not be written once a decoder holds them. Any malformed input sets
// bad, after which every read returns zero values: callers check bad once
// at the end.
type Decoder struct {
	s   string
	b   []byte
	pos int
	bad bool
	// The file's tail, read a block at a time; nil when it has none.
	tail             *os.File
	tailOff, tailLen int64
}

func (d *Decoder) Ref() TailRef {
	return TailRef{Off: int(d.Int64()), Len: int(d.Int64()), Sum: uint32(d.Uint64())}
}

// TailBlock reads a block of the tail and checks its sum.
func (d *Decoder) TailBlock(r TailRef) ([]byte, bool) {
	if r.Len == 0 {
		return nil, r.Sum == 0 // an empty block leaves no tail to read
	}
	if d.tail == nil || r.Off < 0 || r.Len < 0 || int64(r.Off)+int64(r.Len) > d.tailLen {
		return nil, false
	}
	b := make([]byte, r.Len)
	if _, err := d.tail.ReadAt(b, d.tailOff+int64(r.Off)); err != nil || Sum(b) != r.Sum {
		return nil, false
	}
	return b, true
}

// NewDecoder reads b, which the caller gives up: it is aliased, not copied.
func NewDecoder(b []byte) *Decoder {
	return &Decoder{s: unsafe.String(unsafe.SliceData(b), len(b)), b: b}
}

func (d *Decoder) Uint64() uint64 {
	if d.bad {
		return 0
	}
	x, n := binary.Uvarint(d.b[d.pos:])
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.pos += n
	return x
}

// uv reads a non-negative int. Callers that allocate by it use count.
func (d *Decoder) Uvarint() int {
	x := d.Uint64()
	if x > 1<<40 {
		d.bad = true
		return 0
	}
	return int(x)
}

func (d *Decoder) Int64() int64 { return int64(d.Uint64()) }

func (d *Decoder) Bool() bool {
	if d.bad || d.pos >= len(d.b) || d.b[d.pos] > 1 {
		d.bad = true
		return false
	}
	d.pos++
	return d.b[d.pos-1] == 1
}

// Count reads a number of items that each take at least one byte, so a
// bad count is caught before the caller allocates for it.
func (d *Decoder) Count() int {
	n := d.Uvarint()
	if n > len(d.b)-d.pos {
		d.bad = true
		return 0
	}
	return n
}

func (d *Decoder) Str() string {
	n := d.Uvarint()
	if d.bad || n > len(d.s)-d.pos {
		d.bad = true
		return ""
	}
	out := d.s[d.pos : d.pos+n]
	d.pos += n
	return out
}

// Bytes reads a byte run; nil when it is empty. The result's capacity ends
// with it, so appending to it cannot reach the bytes after.
func (d *Decoder) Bytes() []byte {
	n := d.Uvarint()
	if d.bad || n > len(d.b)-d.pos {
		d.bad = true
		return nil
	}
	if n == 0 {
		return nil
	}
	out := d.b[d.pos : d.pos+n : d.pos+n]
	d.pos += n
	return out
}

func (d *Decoder) Strs() []string {
	n := d.Count()
	if d.bad || n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.Str()
	}
	return out
}

// IntMap reads what encoder.intMap wrote; never nil.
func (d *Decoder) IntMap() map[string]int {
	n := d.Count()
	m := make(map[string]int, n)
	for ; n > 0 && !d.bad; n-- {
		k := d.Str()
		m[k] = d.Uvarint()
	}
	return m
}

// Done reports whether the input decoded cleanly and was read to its end.
func (d *Decoder) Done() bool { return !d.bad && d.pos == len(d.b) }

// Failed reports whether the input was malformed: every read since
// returned zero values.
func (d *Decoder) Failed() bool { return d.bad }

// Fail marks the input malformed, for a caller that finds a value out of
// its range.
func (d *Decoder) Fail() { d.bad = true }

// More reports whether a block decoder has more to read.
func (d *Decoder) More() bool { return !d.bad && d.pos < len(d.s) }

// AtEnd reports whether a block decoder read its whole block cleanly.
func (d *Decoder) AtEnd() bool { return !d.bad && d.pos == len(d.s) }

// Left is how many bytes a block decoder has not read yet.
func (d *Decoder) Left() int { return len(d.s) - d.pos }

// Uint64 writes x as a uvarint, as Decoder.Uint64 reads it.
func (e *Encoder) Uint64(x uint64) { e.uv(x) }

// Tail is what TailBlock put in the tail, to be written after the part
// read at once.
func (e *Encoder) Tail() []byte { return e.tail }

// SetTail gives the decoder the file its tail is read from: n bytes from
// off. The decoder owns f from then on; Close closes it.
func (d *Decoder) SetTail(f *os.File, off, n int64) { d.tail, d.tailOff, d.tailLen = f, off, n }

// TailFile is the file the tail is read from and where the tail lies in
// it (nil when there is none), for a reader that maps it rather than
// read a block at a time; the decoder still owns the file.
func (d *Decoder) TailFile() (f *os.File, off, n int64) { return d.tail, d.tailOff, d.tailLen }

// Close closes the file of the tail, if the decoder has one.
func (d *Decoder) Close() {
	if d.tail != nil {
		d.tail.Close()
		d.tail = nil
	}
}
