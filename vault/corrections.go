package vault

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"sort"
	"sync"

	"github.com/memvault/memvault/vault/codec"
	"github.com/memvault/memvault/vault/fault"
)

// Corrections (retract, supersede, commitment.close) decide which rows
// still hold, so every load of the ledger needs them; they are kept per
// segment, found by a byte search of canonical lines, and cached by the
// segment's stamp.

// correctionNeedles find correction events in canonical lines, which have
// no space after the colon.
var correctionNeedles = sync.OnceValue(func() [][]byte {
	var out [][]byte
	for k := range CorrectionKinds {
		out = append(out, []byte(`"kind":"`+k+`"`))
	}
	for k, c := range legacyKinds {
		if CorrectionKinds[c] {
			out = append(out, []byte(`"kind":"`+k+`"`))
		}
	}
	return out
})

// correctionCache is the derived list of the correction events of each
// segment, in .state/, keyed by the segment's stamp: where each one's line
// is, so that a filtered load reads only the corrections of the rows it
// returns, and which sessions and links the segment names, so that it can
// skip the segments that hold none of them.
// At 100k events it has an entry for each of some 1,600 segments, read
// on a prompt's recall, so it is in the derived codec (derived.go), whose
// strings decode as slices of the file: as JSON it was most of a recall.
// It is not a Derived view: what it keeps is per segment, rescanned when
// that segment's stamp changes, not folded from appended events.
const (
	CorrectionFile    = "corrections"
	correctionVersion = 2
)

type SegCorrections struct {
	Stamp SegStamp
	Lines []int      // line numbers of correction events
	Offs  [][2]int64 // where each of those lines starts and ends
	// Sessions and Linked are the sessions the segment's events name and
	// the ids they link to: a load of one session's rows, or of the rows
	// linked to one node, skips the segments that have neither.
	Sessions []string
	Linked   []string
}

// Correction is what recall needs of a correction event: which row it
// corrects and how.
type Correction struct {
	ID, Kind, Link string
	Line           int // the event's line number in its segment
}

func (v *Vault) loadCorrectionCache() map[string]SegCorrections {
	cache := map[string]SegCorrections{}
	d, ok := codec.ReadFile(v.Root, CorrectionFile, correctionVersion)
	if !ok {
		return cache
	}
	for n := d.Count(); n > 0 && !d.Failed(); n-- {
		var c SegCorrections
		c.Stamp = decodeStamp(d)
		if k := d.Count(); k > 0 {
			c.Lines = make([]int, k)
			for i := range c.Lines {
				c.Lines[i] = d.Uvarint()
			}
		}
		if k := d.Count(); k > 0 {
			c.Offs = make([][2]int64, k)
			for i := range c.Offs {
				c.Offs[i] = [2]int64{d.Int64(), d.Int64()}
			}
		}
		c.Sessions = d.Strs()
		c.Linked = d.Strs()
		cache[c.Stamp.Path] = c
	}
	if !d.Done() {
		return map[string]SegCorrections{}
	}
	return cache
}

func (v *Vault) saveCorrectionCache(cache map[string]SegCorrections) {
	paths := make([]string, 0, len(cache))
	for p := range cache {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	codec.WriteFile(v.Root, CorrectionFile, correctionVersion, func(e *codec.Encoder) {
		e.Int(len(paths))
		for _, p := range paths {
			c := cache[p]
			encodeStamp(e, c.Stamp)
			e.Int(len(c.Lines))
			for _, l := range c.Lines {
				e.Int(l)
			}
			e.Int(len(c.Offs))
			for _, o := range c.Offs {
				e.Int64(o[0])
				e.Int64(o[1])
			}
			e.Strs(c.Sessions)
			e.Strs(c.Linked)
		}
	})
}

// segmentCorrections returns the corrections of segment s from the cache,
// reading the segment only when its stamp changed; changed reports that.
// The stamp is taken before the read: a line appended in between is in the
// data but not the stamp, so the next reader looks again.
func (v *Vault) segmentCorrections(cache map[string]SegCorrections, s Segment) (c SegCorrections, data []byte, changed bool, err error) {
	stamp, err := stampOf(v.Root, s)
	if err != nil {
		return c, nil, false, err
	}
	c, ok := cache[s.String()]
	if ok && c.Stamp == stamp {
		return c, nil, false, nil
	}
	data, err = v.Files().ReadFile(filepath.Join(v.Root, filepath.FromSlash(s.String())))
	if err != nil {
		return c, nil, false, fault.IO("read "+s.String(), err)
	}
	if end := bytes.LastIndexByte(data, '\n'); end >= 0 {
		data = data[:end+1]
	} else {
		data = nil
	}
	lines, offs, _ := CorrectionsIn(data)
	c = SegCorrections{Stamp: stamp, Lines: lines, Offs: offs,
		Sessions: StringsAfter(data, `"session":`), Linked: LinksIn(data)}
	cache[s.String()] = c
	return c, data, true, nil
}

// CorrectionsIn finds the correction events of a segment's complete lines:
// their line numbers, where each line starts and ends, and what each says.
func CorrectionsIn(data []byte) (lines []int, offs [][2]int64, rows []Correction) {
	lines = correctionLines(data)
	for n, start, i := 1, 0, 0; start < len(data) && i < len(lines); n++ {
		end := start + bytes.IndexByte(data[start:], '\n')
		if n == lines[i] {
			i++
			offs = append(offs, [2]int64{int64(start), int64(end)})
			var ev struct {
				ID    string   `json:"id"`
				Kind  string   `json:"kind"`
				Links []string `json:"links"`
			}
			if json.Unmarshal(data[start:end], &ev) == nil && ev.ID != "" {
				r := Correction{ID: ev.ID, Kind: ev.Kind, Line: n}
				if len(ev.Links) > 0 {
					r.Link = ev.Links[0]
				}
				rows = append(rows, r)
			}
		}
		start = end + 1
	}
	return lines, offs, rows
}

// StringsAfter returns, once each and sorted, the JSON strings that follow
// key in data (canonical lines: no space after the colon).
func StringsAfter(data []byte, key string) []string {
	seen := map[string]bool{}
	for _, at := range findAll(data, []byte(key)) {
		if s, ok := jsonStringAt(data, at+len(key)); ok {
			seen[s] = true
		}
	}
	return SortedKeys(seen)
}

// LinksIn returns, once each and sorted, the ids the events of data link
// to.
func LinksIn(data []byte) []string {
	seen := map[string]bool{}
	key := []byte(`"links":[`)
	for _, at := range findAll(data, key) {
		for i := at + len(key); i < len(data) && data[i] == '"'; {
			s, ok := jsonStringAt(data, i)
			if !ok {
				break
			}
			seen[s] = true
			// past the string and a comma
			j := i + 1
			for j < len(data) && data[j] != '"' {
				if data[j] == '\\' {
					j++
				}
				j++
			}
			i = j + 1
			if i < len(data) && data[i] == ',' {
				i++
			}
		}
	}
	return SortedKeys(seen)
}

// jsonStringAt decodes the JSON string that starts at data[i].
func jsonStringAt(data []byte, i int) (string, bool) {
	if i >= len(data) || data[i] != '"' {
		return "", false
	}
	for j := i + 1; j < len(data) && data[j] != '\n'; j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			var s string
			if json.Unmarshal(data[i:j+1], &s) != nil {
				return "", false
			}
			return s, true
		}
	}
	return "", false
}

// allCorrections is every correction of the ledger, per segment with the
// segment's stamp: what a recall needs on every prompt. It is small (no line
// numbers, sessions or links), so reading it costs well under a
// millisecond, and after a write only the changed segments are scanned.
type allCorrections struct {
	Segs []segRows
}

type segRows struct {
	Stamp SegStamp
	Rows  []Correction
}

// allCorrectionsFile is in the derived codec too; bump its version when
// the encoding changes.
const (
	AllCorrectionsFile    = "corrections-all"
	allCorrectionsVersion = 2
)

func loadAllCorrections(root string) map[string]segRows {
	old := map[string]segRows{}
	d, ok := codec.ReadFile(root, AllCorrectionsFile, allCorrectionsVersion)
	if !ok {
		return old
	}
	for n := d.Count(); n > 0 && !d.Failed(); n-- {
		sr := segRows{Stamp: decodeStamp(d)}
		if k := d.Count(); k > 0 {
			sr.Rows = make([]Correction, k)
			for i := range sr.Rows {
				sr.Rows[i] = Correction{ID: d.Str(), Kind: d.Str(), Link: d.Str(), Line: d.Uvarint()}
			}
		}
		old[sr.Stamp.Path] = sr
	}
	if !d.Done() {
		return map[string]segRows{}
	}
	return old
}

func saveAllCorrections(root string, all allCorrections) {
	codec.WriteFile(root, AllCorrectionsFile, allCorrectionsVersion, func(e *codec.Encoder) {
		e.Int(len(all.Segs))
		for _, sr := range all.Segs {
			encodeStamp(e, sr.Stamp)
			e.Int(len(sr.Rows))
			for _, c := range sr.Rows {
				e.Str(c.ID)
				e.Str(c.Kind)
				e.Str(c.Link)
				e.Int(c.Line)
			}
		}
	})
}

// CorrectionRows returns every correction event of the ledger, by
// segment, reading only the segments whose stamp changed since
// the file was saved.
func (v *Vault) CorrectionRows() ([]segRows, error) {
	segs, _, err := ListSegments(v.Root)
	if err != nil {
		return nil, err
	}
	return v.correctionRowsOf(segs, nil)
}

// correctionRowsOf is correctionRows for the segments segs, whose stamps
// the caller may have taken already (nil: take them here).
func (v *Vault) correctionRowsOf(segs []Segment, stamps []SegStamp) ([]segRows, error) {
	old := loadAllCorrections(v.Root)
	var all allCorrections
	changed := len(old) != len(segs)
	for i, s := range segs {
		// The stamp before the read: a line appended in between is read but
		// not in the stamp, so the next reader scans the segment again.
		var stamp SegStamp
		if stamps != nil {
			stamp = stamps[i]
		} else {
			var err error
			if stamp, err = stampOf(v.Root, s); err != nil {
				return nil, err
			}
		}
		sr, ok := old[stamp.Path]
		if !ok || sr.Stamp != stamp {
			data, err := ReadComplete(v.Root, s.String())
			if err != nil {
				return nil, err
			}
			_, _, rows := CorrectionsIn(data)
			sr = segRows{Stamp: stamp, Rows: rows}
			changed = true
		}
		all.Segs = append(all.Segs, sr)
	}
	if changed {
		saveAllCorrections(v.Root, all)
	}
	return all.Segs, nil
}

// correctionLines returns the line numbers of the correction events in a
// segment's complete lines.
func correctionLines(data []byte) []int {
	starts := map[int]bool{}
	for _, nd := range correctionNeedles() {
		for _, at := range findAll(data, nd) {
			starts[bytes.LastIndexByte(data[:at], '\n')+1] = true
		}
	}
	lines := []int{}
	for n, start := 1, 0; start < len(data); n++ {
		if starts[start] {
			lines = append(lines, n)
		}
		start += bytes.IndexByte(data[start:], '\n') + 1
	}
	return lines
}

// SortedKeys returns the members of a set in order.
func SortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
