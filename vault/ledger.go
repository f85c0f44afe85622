package vault

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// DefaultSegmentBytes is the size past which a ledger segment is closed and
// the next event opens a new one. Every commit stores the whole current
// segment as a new git blob, so small segments keep history compact.
const DefaultSegmentBytes = 64 << 10

// Segment names one ledger file: ledger/<yyyy>/<mm>/<dd>[-<n>].jsonl.
// Segments are ordered by date, then by n; the chain runs through them in
// that order.
type Segment struct {
	Y, M, D, N int
}

func (s Segment) String() string {
	name := fmt.Sprintf("%02d", s.D)
	if s.N > 0 {
		name += "-" + strconv.Itoa(s.N)
	}
	return fmt.Sprintf("ledger/%04d/%02d/%s.jsonl", s.Y, s.M, name)
}

func (s Segment) Rel() RelPath { return RelPath{s.String()} }

func (s Segment) Less(o Segment) bool {
	if s.Y != o.Y {
		return s.Y < o.Y
	}
	if s.M != o.M {
		return s.M < o.M
	}
	if s.D != o.D {
		return s.D < o.D
	}
	return s.N < o.N
}

func (s Segment) sameDay(o Segment) bool { return s.Y == o.Y && s.M == o.M && s.D == o.D }

func segmentFor(t time.Time) Segment {
	t = t.UTC()
	return Segment{Y: t.Year(), M: int(t.Month()), D: t.Day()}
}

// ParseSegmentName parses "<dd>[-<n>].jsonl" inside year and month folders.
func ParseSegmentName(y, m int, name string) (Segment, bool) {
	base, ok := strings.CutSuffix(name, ".jsonl")
	if !ok {
		return Segment{}, false
	}
	dd, nn, hasN := strings.Cut(base, "-")
	d, err := strconv.Atoi(dd)
	if err != nil || len(dd) != 2 || d < 1 || d > 31 {
		return Segment{}, false
	}
	n := 0
	if hasN {
		n, err = strconv.Atoi(nn)
		if err != nil || n < 1 || strconv.Itoa(n) != nn {
			return Segment{}, false
		}
	}
	return Segment{Y: y, M: m, D: d, N: n}, true
}

// ListSegments returns every ledger segment in chain order, and the names of
// files under ledger/ that are not segments (verify reports them).
func ListSegments(root string) (segs []Segment, strays []string, err error) {
	ledgerDir := filepath.Join(root, "ledger")
	years, err := fileio.At(root).ReadDir(ledgerDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fault.IO("read ledger", err)
	}
	for _, ye := range years {
		y, yerr := strconv.Atoi(ye.Name())
		if !ye.IsDir() || yerr != nil || len(ye.Name()) != 4 {
			strays = append(strays, "ledger/"+ye.Name())
			continue
		}
		months, err := fileio.At(root).ReadDir(filepath.Join(ledgerDir, ye.Name()))
		if err != nil {
			return nil, nil, fault.IO("read ledger", err)
		}
		for _, me := range months {
			m, merr := strconv.Atoi(me.Name())
			if !me.IsDir() || merr != nil || len(me.Name()) != 2 || m < 1 || m > 12 {
				strays = append(strays, "ledger/"+ye.Name()+"/"+me.Name())
				continue
			}
			files, err := fileio.At(root).ReadDir(filepath.Join(ledgerDir, ye.Name(), me.Name()))
			if err != nil {
				return nil, nil, fault.IO("read ledger", err)
			}
			for _, fe := range files {
				if strings.HasPrefix(fe.Name(), ".") {
					continue // an atomic-write temp file or an editor's swap file
				}
				s, ok := ParseSegmentName(y, m, fe.Name())
				if !ok || fe.IsDir() {
					strays = append(strays, "ledger/"+ye.Name()+"/"+me.Name()+"/"+fe.Name())
					continue
				}
				segs = append(segs, s)
			}
		}
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].Less(segs[j]) })
	return segs, strays, nil
}

// ledgerLine is one line of a segment as read from disk.
type ledgerLine struct {
	Seg    Segment
	Line   int    // 1-based
	Raw    []byte // without the newline
	Event  *Event // nil if the line does not parse
	HashOK bool
	Err    error // parse problem, if any
}

// readSegment returns the complete lines of one segment. An unterminated last
// line is what a crash mid-append leaves; it is returned separately as torn
// and never treated as an event.
func readSegment(root string, s Segment) (lines []ledgerLine, torn []byte, err error) {
	data, err := fileio.At(root).ReadFile(filepath.Join(root, filepath.FromSlash(s.String())))
	if err != nil {
		return nil, nil, fault.IO("read "+s.String(), err)
	}
	return splitSegment(s, data)
}

func splitSegment(s Segment, data []byte) (lines []ledgerLine, torn []byte, err error) {
	return splitSegmentWith(s, data, ParseLine)
}

// splitSegmentWith is splitSegment with the lines parsed by parse.
func splitSegmentWith(s Segment, data []byte, parse func([]byte) (*Event, bool, error)) (lines []ledgerLine, torn []byte, err error) {
	n := 0
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			torn = data
			break
		}
		n++
		raw := data[:i]
		data = data[i+1:]
		ll := ledgerLine{Seg: s, Line: n, Raw: raw}
		if len(bytes.TrimSpace(raw)) == 0 {
			ll.Err = fmt.Errorf("empty line")
		} else {
			ll.Event, ll.HashOK, ll.Err = parse(raw)
		}
		lines = append(lines, ll)
	}
	return lines, torn, nil
}

// tailState is what an appender needs to know about the end of the ledger.
type tailState struct {
	seg      Segment // the last segment; zero when the ledger is empty
	exists   bool
	size     int64  // bytes of complete lines in seg
	torn     []byte // an unterminated tail after size, if any
	tip      string // hash of the last complete event
	tipEvent *Event
	// tips are the open tips (verify.go, chainChecker) when the writers'
	// check knows them: more than one after a merge, which the next
	// event-writing transaction joins.
	tips []string
}

// readTail finds the last segment and its last complete event, reading only
// the end of the file.
func readTail(root string, segs []Segment) (tailState, error) {
	for i := len(segs) - 1; i >= 0; i-- {
		s := segs[i]
		size, body, err := fileio.At(root).ReadEnd(filepath.Join(root, filepath.FromSlash(s.String())))
		if err != nil {
			return tailState{}, err
		}
		st := tailState{seg: s, exists: true, size: size}
		if k := bytes.LastIndexByte(body, '\n'); k < len(body)-1 {
			st.torn = append([]byte(nil), body[k+1:]...)
			st.size -= int64(len(st.torn))
			body = body[:k+1]
		}
		body = bytes.TrimSuffix(body, []byte("\n"))
		if len(body) == 0 && st.size == 0 {
			if i == len(segs)-1 {
				// an empty last segment: append to it, but the tip is earlier
				prev, err := readTail(root, segs[:i])
				if err != nil {
					return tailState{}, err
				}
				st.tip, st.tipEvent = prev.tip, prev.tipEvent
				return st, nil
			}
			continue
		}
		last := body[bytes.LastIndexByte(body, '\n')+1:]
		ev, _, perr := ParseLine(last)
		if perr != nil || ev == nil {
			return st, &Error{Class: ErrCorrupt, Msg: fmt.Sprintf("%s: last line: %v", s, perr)}
		}
		st.tip, st.tipEvent = ev.Hash, ev
		return st, nil
	}
	return tailState{}, nil
}

// Joining lines of history. A merge of two clones' ledgers leaves one open
// tip per clone (verify.go, chainChecker); the next transaction that
// appends events first appends a ledger.merged event naming them all
// (Tx.seal), made from the tips alone so that clones joining the same tips
// write the same line.

// Join joins the ledger's open tips, left by a merge of two clones' ledgers,
// with a ledger.merged event in a commit of its own; it does nothing when
// there is one tip. Any transaction that appends events joins them first
// anyway; sync calls Join so that what it pushes has one tip.
func (v *Vault) Join() (*Result, error) {
	return v.Update(TxOptions{Command: "join"}, func(tx *Tx) error {
		tx.join = true
		tx.Subject("ledger: join the lines of history a merge brought together")
		return nil
	})
}

// joinEvent is the event that joins tips. It is made from the tips alone,
// so two clones that join the same lines of history write the same line:
// its id derives from the sorted tips, its time is the latest tip's, and
// it names the vault's own agent.
func (v *Vault) joinEvent(tips []string) (*Event, error) {
	latest, err := v.latestOf(tips)
	if err != nil {
		return nil, err
	}
	return NewJoin(v.Config.Agent, tips, latest), nil
}

// NewJoin returns, unsealed, the event agent writes to join tips whose
// latest event was at latest; its Prev is the first tip in sorted order.
// A transaction reads latest off the segments; a repair, whose segments
// are being rewritten, passes the time it found in memory, and gets the
// same line any clone joining those tips writes.
func NewJoin(agent string, tips []string, latest time.Time) *Event {
	sorted := slices.Clone(tips)
	slices.Sort(sorted)
	latest = latest.UTC().Truncate(time.Millisecond)
	sum := sha256.Sum256([]byte(strings.Join(sorted, "\n")))
	data, _ := json.Marshal(map[string]any{"tips": sorted})
	return &Event{
		ID:     derivedID("e_", latest, sum[:]),
		TS:     FormatTS(latest),
		Agent:  agent,
		Kind:   KindJoin,
		Text:   fmt.Sprintf("joined %d lines of history after a merge", len(sorted)),
		Data:   data,
		Source: "merge",
		Prev:   sorted[0],
	}
}

// latestOf returns the latest timestamp among the events with the given
// hashes, reading segments from the last backwards until it found them all
// (open tips are near the end).
func (v *Vault) latestOf(hashes []string) (time.Time, error) {
	segs, _, err := ListSegments(v.Root)
	if err != nil {
		return time.Time{}, err
	}
	want := make(map[string]bool, len(hashes))
	for _, h := range hashes {
		want[h] = true
	}
	var latest time.Time
	for i := len(segs) - 1; i >= 0 && len(want) > 0; i-- {
		lines, _, err := readSegment(v.Root, segs[i])
		if err != nil {
			return time.Time{}, err
		}
		for _, ll := range lines {
			if ll.Event == nil || !want[ll.Event.Hash] {
				continue
			}
			delete(want, ll.Event.Hash)
			if t := ll.Event.Time(); t.After(latest) {
				latest = t
			}
		}
	}
	if len(want) > 0 {
		return time.Time{}, fault.New(ErrCorrupt, "ledger: an open tip is not in the ledger")
	}
	return latest, nil
}

// repairTorn finishes or cuts off a torn last line (STORAGE.md, "Torn
// lines").
func (tx *Tx) repairTorn(tail *tailState) error {
	v := tx.v
	if len(tail.torn) > 0 {
		p := v.Abs(tail.seg.Rel())
		if ev, ok, err := ParseLine(tail.torn); err == nil && ok && ev.Prev == tail.tip && len(tail.tips) < 2 {
			// The crash came after the whole event was written but before its
			// newline: the event is sound, so finish the line.
			if err := v.Files().Append(p, []byte("\n")); err != nil {
				return err
			}
			tail.size += int64(len(tail.torn)) + 1
			tail.tip, tail.tips = ev.Hash, nil
		} else {
			// Keep the fragment for forensics, then cut it off.
			name := fmt.Sprintf("torn-%s.txt", tx.now.UTC().Format("20060102T150405.000"))
			_ = v.Files().WriteAtomic(filepath.Join(v.Root, ".logs", name),
				append([]byte(tail.seg.String()+"\n"), tail.torn...))
			if err := v.Files().Truncate(p, tail.size); err != nil {
				return fault.IO("repair "+tail.seg.String(), err)
			}
		}
		tail.torn = nil
	}
	return nil
}
