package vault

import (
	"bytes"
	"encoding/json"
	"hash/crc32"
	"io"
	"path/filepath"

	"github.com/memvault/memvault/vault/codec"
	"github.com/memvault/memvault/vault/fileio"
)

// The derived state. Several views of the ledger (the heads' folded rows,
// the scope retrieval filters by, ...) cost far more to fold from the JSON
// lines than a hook may spend, so each is kept in a file under .state/,
// keyed by the stamp (path, size, mtime, inode) of every ledger segment and
// the hash of the last event folded. Derived owns that key and what follows
// from it; a view only says how to fold one event on top, how to rebuild
// from the whole ledger, and how to encode itself.
//
// A reader compares the stamps: the closed segments must be unchanged and
// the last recorded one may only have grown, its old bytes unchanged (a
// CRC-32 of them is kept, since a line rewritten in place changes the size
// and mtime just as an append does). Then the events appended since
// (the rest of that segment, then every newer one) are read, checked to
// continue the chain from the recorded tip, and folded on top. Anything
// else (a segment replaced or shrunk, a chain that does not continue, an
// event the view cannot fold on top, a file of another version or one
// that does not decode) rebuilds from the ledger. A bad file is never an
// error, only a rebuild.
//
// The file is rewritten after a rebuild, when a segment closed since it
// was written, when more than Every events were folded on top, or when the
// bytes folded on top are at least foldSaveBytes and a quarter of the
// file's body: parsing a ledger line's JSON costs some twenty times what
// encoding and writing as many bytes of the view does, so every load after
// pays the rewrite back; below that, folding the few appended lines again
// costs less than a write. (Before the byte rule, hook after hook folded
// the same 100 to 256 lines into four views each.) It
// is written without fsync (fileio.WriteCache): the CRC-32s of the framing
// (codec.WriteFile) catch a torn or stale one. A fold that saw a torn last
// line is not saved, since the stamps would claim bytes that were not
// folded. Deleting .state/ is always safe.
//
// Past the framing, a view's file holds its key (the ledger tip, the
// stamps, a CRC-32 of the last segment's folded bytes), then the view's
// own encoding.

// snapshotEvery is how many events folded on top make a derived file
// worth rewriting.
const snapshotEvery = 256

// foldSaveBytes is the fewest folded bytes that make a view worth
// rewriting (about the fixed cost of a write: a temporary file, its rename).
const foldSaveBytes = 4 << 10

// Derived is one view of the ledger kept under .state/.
type Derived[T any] struct {
	// Name is the view's name; its file is .state/<Name>.bin.
	Name string
	// Version is the view's format version: a file with another one is
	// rebuilt, so a change of encoding bumps it.
	Version uint64
	// Every is how many events folded on top make the file worth
	// rewriting; 0 means snapshotEvery.
	Every int
	// Rebuild folds the whole ledger, segs at stamps, and returns the tip
	// it folded up to; torn says the last segment ends in a line that is
	// not an event yet, which the fold left out.
	Rebuild func(v *Vault, segs []Segment, stamps []SegStamp) (t T, tip string, torn bool, err error)
	// Fold applies one appended event, stripped of prev and hash. It
	// returns false when the view cannot follow the event without a
	// rebuild (a correction, say); t may then be left half updated.
	Fold func(t T, ev *Event) (T, bool)
	// Encode writes t (marking the encoder bad when it cannot, so nothing
	// is written); Decode reads it back, false when the bytes do not
	// decode. Decode may keep slices of the bytes, and the decoder itself
	// for the blocks of the file's tail.
	Encode func(e *codec.Encoder, t T)
	Decode func(d *codec.Decoder) (T, bool)
}

func (d *Derived[T]) Path(root string) string { return codec.FilePath(root, d.Name) }

// Key is what a view was folded from.
type Key struct {
	Tip    string     // the hash of the last event folded
	Stamps []SegStamp // the segments, as stat'ed before they were read
	// Exact is false when the last segment ends in a torn line: its bytes
	// are in the stamps but it was not folded, so the view must not be
	// saved under this key.
	Exact bool
}

// Load returns the view as of the ledger now, through its file, and what
// it was folded from; it rewrites the file when that is worth it.
func (d *Derived[T]) Load(v *Vault) (T, Key, error) {
	t, key, dirty, err := d.Open(v)
	if err == nil && dirty {
		d.Save(v, t, key)
	}
	return t, key, err
}

// Open is Load without the write, for a view that has more to add before
// it is saved: dirty says the file is worth rewriting.
func (d *Derived[T]) Open(v *Vault) (t T, key Key, dirty bool, err error) {
	segs, stamps, err := v.SegmentStamps()
	if err != nil {
		return t, key, false, err
	}
	if t, key, dirty, ok := d.LoadStamped(v, segs, stamps); ok {
		return t, key, dirty, nil
	}
	t, tip, torn, err := d.Rebuild(v, segs, stamps)
	if err != nil {
		return t, key, false, err
	}
	key = Key{Tip: tip, Stamps: stamps, Exact: !torn}
	return t, key, key.Exact, nil
}

// load reads the file and folds what the ledger gained since. ok is false
// when the view must be rebuilt; dirty says the result is worth writing.
//
// The stamps cannot tell a line rewritten in the last segment from lines
// appended to it (its size and mtime change either way), so the file also
// holds a CRC-32 of the bytes of that segment that were folded: when it
// changed, those bytes are checked before the rest is read as appended.
func (d *Derived[T]) LoadStamped(v *Vault, segs []Segment, stamps []SegStamp) (t T, key Key, dirty, ok bool) {
	dec, ok := codec.ReadFile(v.Root, d.Name, d.Version)
	if !ok {
		return t, key, false, false
	}
	defer func() {
		if !ok {
			dec.Close()
		}
	}()
	body := dec.Left()
	tip := dec.Str()
	old := DecodeStamps(dec)
	lastSum := uint32(dec.Uint64())
	if dec.Failed() || len(old) == 0 || !StampsContinue(old, stamps) {
		return t, key, false, false
	}
	last := len(old) - 1
	if o := old[last]; stamps[last].Size != o.Size || stamps[last].Mtime != o.Mtime {
		if sum, ok := prefixSum(v.Files(), v.SegPath(segs[last]), o.Size); !ok || sum != lastSum {
			return t, key, false, false
		}
	}
	if t, ok = d.Decode(dec); !ok || !dec.Done() {
		return t, key, false, false
	}
	folded := 0
	tip, torn, ok := v.AppendedSince(segs, stamps, old, tip, func(ev *Event) bool {
		t, ok = d.Fold(t, ev)
		folded++
		return ok
	})
	if !ok {
		return t, key, false, false
	}
	every := d.Every
	if every == 0 {
		every = snapshotEvery
	}
	key = Key{Tip: tip, Stamps: stamps, Exact: !torn}
	dirty = key.Exact && (folded > every || len(segs) > len(old)+1 || worthSaving(foldedBytes(stamps, old), body))
	return t, key, dirty, true
}

// foldedBytes is how many ledger bytes a load folded on top of a view
// saved at old: the growth of its last segment and every newer segment.
func foldedBytes(stamps, old []SegStamp) int64 {
	last := len(old) - 1
	n := stamps[last].Size - old[last].Size
	for _, s := range stamps[last+1:] {
		n += s.Size
	}
	return n
}

// worthSaving reports whether folding folded bytes again on every load
// costs more than rewriting a view whose body is body bytes (the rule
// above).
func worthSaving(folded int64, body int) bool {
	return folded >= foldSaveBytes && folded*4 >= int64(body)
}

// Save writes t as the view folded from key. The segments are stat'ed
// again first: if one moved since the stamps were taken, the file would
// claim lines that were not folded, so nothing is written. Errors only
// cost a rebuild later; Save reports whether the file was written.
func (d *Derived[T]) Save(v *Vault, t T, key Key) bool {
	if !key.Exact || len(key.Stamps) == 0 {
		return false
	}
	for _, s := range key.Stamps {
		cur, err := stampOf(v.Root, MustRel(s.Path).seg())
		if err != nil || cur != s {
			return false
		}
	}
	last := key.Stamps[len(key.Stamps)-1]
	lastSum, ok := prefixSum(v.Files(), filepath.Join(v.Root, filepath.FromSlash(last.Path)), last.Size)
	if !ok {
		return false
	}
	return codec.WriteFile(v.Root, d.Name, d.Version, func(e *codec.Encoder) {
		e.Str(key.Tip)
		EncodeStamps(e, key.Stamps)
		e.Uint64(uint64(lastSum))
		d.Encode(e, t)
	})
}

// EncodeStamps writes segment stamps in the encoding every file under
// .state/ keys its content by, so that DecodeStamps reads them back for
// any of them.
func EncodeStamps(e *codec.Encoder, stamps []SegStamp) {
	e.Int(len(stamps))
	for _, s := range stamps {
		encodeStamp(e, s)
	}
}

func encodeStamp(e *codec.Encoder, s SegStamp) {
	e.Str(s.Path)
	e.Int64(s.Size)
	e.Int64(s.Mtime)
	e.Uint64(s.Ino)
	e.Str(s.Tip)
}

func decodeStamp(d *codec.Decoder) SegStamp {
	return SegStamp{Path: d.Str(), Size: d.Int64(), Mtime: d.Int64(), Ino: d.Uint64(), Tip: d.Str()}
}

// DecodeStamps reads what EncodeStamps wrote; nil when the decoder has
// failed or there are none.
func DecodeStamps(d *codec.Decoder) []SegStamp {
	n := d.Count()
	if d.Failed() || n == 0 {
		return nil
	}
	out := make([]SegStamp, n)
	for i := range out {
		out[i] = decodeStamp(d)
	}
	return out
}

// AppendedSince reads the events appended since a cache was written (the
// rest of its last segment, then every newer segment), checks that they
// continue its chain from tip, and hands each to fn, stripped of prev and
// hash. It returns the new tip and whether the last segment ends torn; ok
// is false when the chain does not continue, a file cannot be read, or fn
// refuses an event.
func (v *Vault) AppendedSince(segs []Segment, stamps, old []SegStamp, tip string, fn func(*Event) bool) (newTip string, torn, ok bool) {
	last := len(old) - 1
	for i := last; i < len(segs); i++ {
		var from int64
		if i == last {
			if stamps[i].Size == old[i].Size && stamps[i].Mtime == old[i].Mtime {
				continue
			}
			from = old[i].Size
		}
		tail, err := readFrom(v.Files(), filepath.Join(v.Root, filepath.FromSlash(segs[i].String())), from)
		if err != nil {
			return "", false, false
		}
		torn = len(tail) > 0 && tail[len(tail)-1] != '\n'
		for len(tail) > 0 {
			j := bytes.IndexByte(tail, '\n')
			if j < 0 {
				break
			}
			line := tail[:j]
			tail = tail[j+1:]
			ev := new(Event)
			if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, ev) != nil || ev.ID == "" {
				continue
			}
			if ev.Prev != tip {
				return "", false, false // the chain does not continue from the cache
			}
			tip = ev.Hash
			ev.Prev, ev.Hash = "", ""
			if !fn(ev) {
				return "", false, false
			}
		}
	}
	return tip, torn, true
}

// StampsContinue reports whether the segments recorded in old are the
// first segments of cur, unchanged but for the last one, which may only
// have grown.
func StampsContinue(old, cur []SegStamp) bool {
	if len(old) > len(cur) {
		return false
	}
	last := len(old) - 1
	for i, o := range old {
		c := cur[i]
		if o.Path != c.Path || o.Ino != c.Ino {
			return false
		}
		if i < last && (o.Size != c.Size || o.Mtime != c.Mtime) {
			return false
		}
	}
	return cur[last].Size >= old[last].Size
}

func readFrom(fsys fileio.Root, path string, off int64) ([]byte, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}

func (v *Vault) SegmentStamps() ([]Segment, []SegStamp, error) {
	segs, _, err := ListSegments(v.Root)
	if err != nil {
		return nil, nil, err
	}
	stamps := make([]SegStamp, len(segs))
	for i, s := range segs {
		if stamps[i], err = stampOf(v.Root, s); err != nil {
			return nil, nil, err
		}
	}
	return segs, stamps, nil
}

// TipOf returns the hash of the last complete event of segs, the newest
// segment that has one ("" when none has): the tip a view's Rebuild
// reports when it reads the segments itself rather than through a fold
// that returns one.
func (v *Vault) TipOf(segs []Segment) string {
	tip := ""
	for i := len(segs) - 1; i >= 0 && tip == ""; i-- {
		tip = lastHashOf(v.Files(), v.Abs(segs[i].Rel()))
	}
	return tip
}

// lastHashOf returns the hash of the last complete event of a ledger
// segment ("" when it has none).
func lastHashOf(fsys fileio.Root, path string) string {
	data, err := fsys.ReadFile(path)
	if err != nil {
		return ""
	}
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		return ""
	}
	data = data[:end]
	for len(data) > 0 {
		i := bytes.LastIndexByte(data, '\n')
		var ev struct {
			Hash string `json:"hash"`
		}
		if json.Unmarshal(data[i+1:], &ev) == nil && ev.Hash != "" {
			return ev.Hash
		}
		if i < 0 {
			break
		}
		data = data[:i]
	}
	return ""
}

func (v *Vault) SegPath(s Segment) string {
	return filepath.Join(v.Root, filepath.FromSlash(s.String()))
}

// prefixSum is the CRC-32 of the first n bytes of a file.
func prefixSum(fsys fileio.Root, path string, n int64) (uint32, bool) {
	f, err := fsys.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	h := crc32.NewIEEE()
	if k, err := io.Copy(h, io.LimitReader(f, n)); err != nil || k != n {
		return 0, false
	}
	return h.Sum32(), true
}

func EndsTorn(fsys fileio.Root, path string, size int64) bool {
	if size == 0 {
		return false
	}
	f, err := fsys.Open(path)
	if err != nil {
		return true
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], size-1); err != nil {
		return true
	}
	return b[0] != '\n'
}
