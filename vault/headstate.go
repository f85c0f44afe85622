package vault

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// The heads' derived state. Rendering a head needs the whole ledger folded
// (corrections applied), and folding 100k events from JSON takes far longer
// than the 50 ms a render may cost. So the folded rows are kept in
// .state/heads-state.bin, in a compact binary form, together with the stamp
// (size, mtime, inode) of every segment and the ledger tip they were folded
// up to. A reader checks the stamps: closed segments must be unchanged and
// the last one may only have grown; the lines past the recorded end are
// read and folded on top. Anything else (a segment replaced, shrunk, a
// chain that does not continue from the recorded tip, a file that does not
// decode) means a full rebuild from the ledger. The file is rewritten when
// it was rebuilt or when more than snapshotEvery events were folded on top,
// so a render after a few new events costs a few parsed lines, not a
// rewrite. Deleting .state/ is always safe.

const (
	headStateFile  = ".state/heads-state.bin"
	headStateMagic = "memvault heads-state 1\n"
	snapshotEvery  = 256
)

type headStateHeader struct {
	Tip    string     `json:"tip"`
	Stamps []segStamp `json:"stamps"`
	Rows   int        `json:"rows"`
}

// foldedState returns the ledger folded into rows, through the cache, and
// the tip it was folded up to. The State it returns has no id index unless
// corrections had to be applied; callers only walk its rows.
func (v *Vault) foldedState() (*State, string, error) {
	segs, _, err := listSegments(v.Root)
	if err != nil {
		return nil, "", err
	}
	stamps := make([]segStamp, len(segs))
	for i, s := range segs {
		if stamps[i], err = stampOf(v.Root, s); err != nil {
			return nil, "", err
		}
	}
	if st, tip, dirty, ok := v.loadHeadState(segs, stamps); ok {
		if dirty {
			v.saveHeadState(st, tip, stamps)
		}
		return st, tip, nil
	}
	st, tip, torn, err := v.foldAll(segs)
	if err != nil {
		return nil, "", err
	}
	// A torn last line is not folded, so the stamps would claim more than
	// was read: leave the cache for a later reader.
	if !torn {
		v.saveHeadState(st, tip, stamps)
	}
	return st, tip, nil
}

// foldAll folds every segment without checking hashes: verification is
// verify's job, and the writer's chain check guards writes.
func (v *Vault) foldAll(segs []segment) (st *State, tip string, torn bool, err error) {
	st = &State{byID: make(map[string]*Row)}
	for _, s := range segs {
		data, err := os.ReadFile(filepath.Join(v.Root, filepath.FromSlash(s.String())))
		if err != nil {
			return nil, "", false, ioErr("read "+s.String(), err)
		}
		tip = foldLines(st, data, tip)
		torn = len(data) > 0 && data[len(data)-1] != '\n'
	}
	return st, tip, torn, nil
}

// foldLines folds the complete lines of data into st and returns the new
// tip. An unterminated last line is not an event yet.
func foldLines(st *State, data []byte, tip string) string {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		line := data[:i]
		data = data[i+1:]
		ev := new(Event)
		if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, ev) != nil || ev.ID == "" {
			continue
		}
		tip = ev.Hash
		ev.Prev, ev.Hash = "", ""
		st.add(&Row{Event: ev})
	}
	return tip
}

// loadHeadState reads the cache and folds what the ledger gained since.
// ok is false when the cache is missing or stale; dirty says it should be
// rewritten.
func (v *Vault) loadHeadState(segs []segment, stamps []segStamp) (st *State, tip string, dirty, ok bool) {
	data, err := os.ReadFile(filepath.Join(v.Root, headStateFile))
	if err != nil {
		return nil, "", false, false
	}
	hdr, rows, err := decodeHeadState(data)
	if err != nil || len(hdr.Stamps) == 0 || len(hdr.Stamps) > len(segs) {
		return nil, "", false, false
	}
	last := len(hdr.Stamps) - 1
	for i, old := range hdr.Stamps {
		cur := stamps[i]
		if old.Path != cur.Path || old.Ino != cur.Ino {
			return nil, "", false, false
		}
		if i < last && (old.Size != cur.Size || old.Mtime != cur.Mtime) {
			return nil, "", false, false
		}
	}
	if stamps[last].Size < hdr.Stamps[last].Size {
		return nil, "", false, false
	}
	st = &State{Rows: rows}
	tip = hdr.Tip
	// What was appended since: the rest of the last recorded segment, then
	// every newer segment.
	var fresh []*Event
	torn := false
	for i := last; i < len(segs); i++ {
		var from int64
		if i == last {
			if stamps[i].Size == hdr.Stamps[i].Size && stamps[i].Mtime == hdr.Stamps[i].Mtime {
				continue
			}
			from = hdr.Stamps[i].Size
		}
		tail, err := readFrom(filepath.Join(v.Root, filepath.FromSlash(segs[i].String())), from)
		if err != nil {
			return nil, "", false, false
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
				return nil, "", false, false // the chain does not continue from the cache
			}
			tip = ev.Hash
			ev.Prev, ev.Hash = "", ""
			fresh = append(fresh, ev)
		}
	}
	if len(fresh) > 0 {
		plain := true
		for _, ev := range fresh {
			plain = plain && !correctionKinds[ev.Kind]
		}
		if !plain {
			st.byID = make(map[string]*Row, len(st.Rows)+len(fresh))
			for _, r := range st.Rows {
				st.byID[r.ID] = r
			}
		}
		for _, ev := range fresh {
			if plain {
				st.Rows = append(st.Rows, &Row{Event: ev})
			} else {
				st.add(&Row{Event: ev})
			}
		}
	}
	// Only a segment that closed, or many events folded on top, are worth a
	// rewrite; otherwise the next reader folds the same few lines again.
	dirty = !torn && (len(fresh) > snapshotEvery || len(segs) > len(hdr.Stamps)+1)
	return st, tip, dirty, true
}

func readFrom(path string, off int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}

// saveHeadState writes the cache. It is derived data: a failure only costs
// a rebuild next time, so errors are dropped.
func (v *Vault) saveHeadState(st *State, tip string, stamps []segStamp) {
	if len(stamps) == 0 {
		return
	}
	// Record each segment at the size that was folded: re-stat now and
	// refuse to save if anything moved, rather than claim lines not folded.
	for _, s := range stamps {
		cur, err := stampOf(v.Root, mustRel(s.Path).seg())
		if err != nil || cur != s {
			return
		}
	}
	var buf bytes.Buffer
	buf.WriteString(headStateMagic)
	hdr, _ := json.Marshal(headStateHeader{Tip: tip, Stamps: stamps, Rows: len(st.Rows)})
	putUvarint(&buf, uint64(len(hdr)))
	buf.Write(hdr)
	for _, r := range st.Rows {
		for _, s := range []string{r.ID, r.TS, r.Agent, r.Session, r.Kind, r.Thread, r.Text,
			r.RetractedBy, r.SupersededBy, r.ClosedBy} {
			putString(&buf, s)
		}
		putUvarint(&buf, uint64(len(r.Data)))
		buf.Write(r.Data)
		putUvarint(&buf, uint64(len(r.Links)))
		for _, l := range r.Links {
			putString(&buf, l)
		}
	}
	_ = os.MkdirAll(filepath.Join(v.Root, ".state"), dirPerm)
	_ = WriteFileAtomic(filepath.Join(v.Root, headStateFile), buf.Bytes())
}

// seg turns a segment's RelPath back into a segment; only used on paths
// listSegments produced.
func (r RelPath) seg() segment {
	s, _ := segmentFromPath(r.String())
	return s
}

func putUvarint(buf *bytes.Buffer, x uint64) {
	var tmp [binary.MaxVarintLen64]byte
	buf.Write(tmp[:binary.PutUvarint(tmp[:], x)])
}

func putString(buf *bytes.Buffer, s string) {
	putUvarint(buf, uint64(len(s)))
	buf.WriteString(s)
}

var errBadHeadState = errors.New("heads state: malformed")

// decodeHeadState decodes the cache with one allocation per slab: every
// string is a slice of one copy of the file.
func decodeHeadState(data []byte) (headStateHeader, []*Row, error) {
	var hdr headStateHeader
	if !bytes.HasPrefix(data, []byte(headStateMagic)) {
		return hdr, nil, errBadHeadState
	}
	s := string(data[len(headStateMagic):])
	raw := data[len(headStateMagic):]
	pos := 0
	uv := func() (uint64, bool) {
		x, n := uvarintString(s[pos:])
		if n <= 0 {
			return 0, false
		}
		pos += n
		return x, true
	}
	str := func() (string, bool) {
		n, ok := uv()
		if !ok || uint64(len(s)-pos) < n {
			return "", false
		}
		out := s[pos : pos+int(n)]
		pos += int(n)
		return out, true
	}
	hl, ok := uv()
	if !ok || uint64(len(s)-pos) < hl {
		return hdr, nil, errBadHeadState
	}
	if err := json.Unmarshal(raw[pos:pos+int(hl)], &hdr); err != nil || hdr.Rows < 0 || hdr.Rows > len(s) {
		return hdr, nil, errBadHeadState
	}
	pos += int(hl)
	events := make([]Event, hdr.Rows)
	rowSlab := make([]Row, hdr.Rows)
	rows := make([]*Row, hdr.Rows)
	for i := range events {
		ev := &events[i]
		r := &rowSlab[i]
		var fields [10]string
		for k := range fields {
			if fields[k], ok = str(); !ok {
				return hdr, nil, errBadHeadState
			}
		}
		ev.ID, ev.TS, ev.Agent, ev.Session, ev.Kind, ev.Thread, ev.Text = fields[0], fields[1], fields[2], fields[3], fields[4], fields[5], fields[6]
		r.RetractedBy, r.SupersededBy, r.ClosedBy = fields[7], fields[8], fields[9]
		dn, ok := uv()
		if !ok || uint64(len(s)-pos) < dn {
			return hdr, nil, errBadHeadState
		}
		if dn > 0 {
			ev.Data = raw[pos : pos+int(dn) : pos+int(dn)]
			pos += int(dn)
		}
		nl, ok := uv()
		if !ok || nl > uint64(len(s)-pos) {
			return hdr, nil, errBadHeadState
		}
		if nl > 0 {
			ev.Links = make([]string, nl)
			for k := range ev.Links {
				if ev.Links[k], ok = str(); !ok {
					return hdr, nil, errBadHeadState
				}
			}
		}
		r.Event = ev
		rows[i] = r
	}
	if pos != len(s) {
		return hdr, nil, fmt.Errorf("%w: %d trailing bytes", errBadHeadState, len(s)-pos)
	}
	return hdr, rows, nil
}

func uvarintString(s string) (uint64, int) {
	var x uint64
	var shift uint
	for i := 0; i < len(s) && i < binary.MaxVarintLen64; i++ {
		b := s[i]
		if b < 0x80 {
			return x | uint64(b)<<shift, i + 1
		}
		x |= uint64(b&0x7f) << shift
		shift += 7
	}
	return 0, 0
}
