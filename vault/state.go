package vault

import (
	"bytes"
	"cmp"
	"encoding/json"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// Kinds a person or an agent records with `memvault remember`. The ledger
// accepts other kinds from memvault itself (node.created, head.rendered, …);
// the full list is in docs/API.md.
var RememberKinds = []string{"fact", "decision", "learning", "constraint", "blocker", "next", "claim", "reflection"}

// Kinds that correct an earlier event named in links[0]: withdraw it
// (retract), replace it (supersede, decision.superseded), or close it
// (commitment.close, done, learning.invalidated, learning.archived). A
// `done` without a link is an accomplishment that closes nothing.
var CorrectionKinds = map[string]bool{
	"retract":             true,
	"supersede":           true,
	"commitment.close":    true,
	KindDone:              true,
	KindDecisionSuperseed: true,
	KindLearningInvalid:   true,
	KindLearningArchived:  true,
}

// CloserKinds are the corrections that close their target: it stays in
// the ledger as history and no longer holds. The status each gives its
// target is what recall and `ledger --json` report.
var CloserKinds = map[string]string{
	"commitment.close":   StatusClosed,
	KindDone:             StatusClosed,
	KindLearningInvalid:  StatusInvalidated,
	KindLearningArchived: StatusArchived,
}

// legacyKinds are the kinds the first CONTINUITY.md protocol wrote beside
// the vault's own; a row of one counts as the kind it maps to, so an older
// vault folds into the same one set of rows.
var legacyKinds = map[string]string{
	"decision.recorded": "decision",
	"learning.recorded": "learning",
	"continuity.next":   "next",
	"continuity.done":   KindDone,
}

// Row is an event together with what later events did to it.
type Row struct {
	*Event
	File         string `json:"file,omitempty"`
	Line         int    `json:"line,omitempty"`
	RetractedBy  string `json:"retracted_by,omitempty"`
	SupersededBy string `json:"superseded_by,omitempty"`
	ClosedBy     string `json:"closed_by,omitempty"`
	// Status is State.Status of the row, for output; set by the caller
	// that prints it (`memvault ledger --json`), not by the fold.
	Status string `json:"status,omitempty"`
}

// Current reports whether the row is still the version of record: not
// retracted, not replaced. A closed row is current (it happened) but no
// longer holds; see Holds.
func (r *Row) Current() bool { return r.RetractedBy == "" && r.SupersededBy == "" }

// Holds reports whether the row is part of what holds now: current and not
// closed (a done next action, a closed commitment, an invalidated or
// archived learning). Every view of "now" (the heads, CONTINUITY.md,
// `ledger --current`, recall and what hooks inject) selects rows by it.
func (r *Row) Holds() bool { return r.Current() && r.ClosedBy == "" }

// EffectiveKind is the kind a row counts as. A supersede row takes the place
// of the row it replaced, so it counts as that row's kind; a legacy
// protocol kind counts as the vault kind it maps to.
func (r *Row) EffectiveKind() string {
	if r.Kind == "supersede" {
		var d struct {
			Replaces string `json:"replaces_kind"`
		}
		if json.Unmarshal(r.Data, &d) == nil && d.Replaces != "" {
			return CanonicalKind(d.Replaces)
		}
	}
	return CanonicalKind(r.Kind)
}

// CanonicalKind maps a legacy protocol kind to the vault kind it stands for.
func CanonicalKind(k string) string {
	if c, ok := legacyKinds[k]; ok {
		return c
	}
	return k
}

// Status says where the row stands: active, retracted, superseded, or the
// status its closing event gives it (closed, invalidated, archived).
func (st *State) Status(r *Row) string {
	switch {
	case r.RetractedBy != "":
		return StatusRetracted
	case r.SupersededBy != "":
		return StatusSuperseded
	case r.ClosedBy != "":
		if c := st.lookup(r.ClosedBy); c != nil {
			if s, ok := CloserKinds[CanonicalKind(c.Kind)]; ok {
				return s
			}
		}
		return StatusClosed
	}
	return StatusActive
}

// lookup is Get for a State that may have been decoded without its id
// index (the heads' cache): the index is built on first use.
func (st *State) lookup(id string) *Row {
	if st.ByID == nil {
		st.ByID = make(map[string]*Row, len(st.Rows))
		for _, r := range st.Rows {
			st.ByID[r.ID] = r
		}
	}
	return st.ByID[id]
}

// State is the ledger folded into rows: the structured memory as it stands.
// It is rebuilt from the ledger alone, so it needs no storage of its own.
type State struct {
	Rows []*Row
	ByID map[string]*Row
}

// LoadState reads every segment and folds the events. Torn last lines and
// unreadable lines are skipped; Verify is the place that reports them, and
// the place that checks hashes: readers trust what writers checked.
func (v *Vault) LoadState() (*State, error) {
	return v.LoadStateWith(nil)
}

// LoadStateWith folds the events whose line contains one of needles (nil keeps
// every line). The corrections of the rows kept, and the corrections of
// those corrections, are added too, so that the rows kept are marked
// retracted, superseded or closed exactly as in the full state. Searching
// a whole segment for a few byte strings costs a fraction of decoding every
// line, which is what makes looking up one node's or one session's rows
// cheap on a large ledger.
func (v *Vault) LoadStateWith(needles [][]byte) (*State, error) {
	return v.LoadStateOf(needles, nil)
}

// LoadStateOf is loadState that, when keep is not nil, searches only the
// segments keep accepts. The corrections come from the derived list of
// every correction (correctionRows), so only the few that touch the rows
// found are read from the ledger, wherever they are.
func (v *Vault) LoadStateOf(needles [][]byte, keep func(SegCorrections) bool) (*State, error) {
	if needles == nil {
		return v.loadAll()
	}
	segs, _, err := ListSegments(v.Root)
	if err != nil {
		return nil, err
	}
	found, corr, err := v.rowsWith(segs, needles, keep)
	if err != nil {
		return nil, err
	}
	found, err = v.withCorrections(segs, corr, found)
	if err != nil {
		return nil, err
	}
	st := &State{ByID: make(map[string]*Row, len(found))}
	for _, r := range found {
		st.Add(r)
	}
	return st, nil
}

// rowsWith returns, in ledger order (by segment, then line), the rows of
// the segments keep accepts (all when keep is nil) whose line contains one
// of needles, and every segment's derived list of corrections.
func (v *Vault) rowsWith(segs []Segment, needles [][]byte, keep func(SegCorrections) bool) ([]*Row, []SegCorrections, error) {
	cache := v.loadCorrectionCache()
	cacheChanged := false
	var found []*Row
	corr := make([]SegCorrections, len(segs))
	for i, s := range segs {
		file := s.String()
		c, data, changed, err := v.segmentCorrections(cache, s)
		if err != nil {
			return nil, nil, err
		}
		cacheChanged = cacheChanged || changed
		corr[i] = c
		if keep != nil && !keep(c) {
			continue
		}
		if data == nil {
			if data, err = ReadComplete(v.Root, file); err != nil {
				return nil, nil, err
			}
		}
		found = append(found, linesWith(data, file, needles)...)
	}
	if cacheChanged {
		v.saveCorrectionCache(cache)
	}
	return found, corr, nil
}

// linesWith returns the rows of the complete lines of data, the segment
// file, that contain one of needles.
func linesWith(data []byte, file string, needles [][]byte) []*Row {
	wanted := map[int]bool{} // line starts
	for _, nd := range needles {
		for _, at := range findAll(data, nd) {
			wanted[bytes.LastIndexByte(data[:at], '\n')+1] = true
		}
	}
	if len(wanted) == 0 {
		return nil
	}
	var found []*Row
	for n, start := 1, 0; start < len(data); n++ {
		i := bytes.IndexByte(data[start:], '\n')
		raw := data[start : start+i]
		lineStart := start
		start += i + 1
		if wanted[lineStart] {
			if r := rowOf(raw, file, n); r != nil {
				found = append(found, r)
			}
		}
	}
	return found
}

// withCorrections adds to found the corrections of its rows, then theirs,
// until none is new, read from the ledger where the derived list of every
// correction (correctionRowsOf) says they are; the result stays in ledger
// order.
func (v *Vault) withCorrections(segs []Segment, corr []SegCorrections, found []*Row) ([]*Row, error) {
	segOf := make(map[string]int, len(segs))
	stamps := make([]SegStamp, len(segs))
	for i, s := range segs {
		segOf[s.String()] = i
		stamps[i] = corr[i].Stamp
	}
	all, err := v.correctionRowsOf(segs, stamps)
	if err != nil {
		return nil, err
	}
	have := make(map[string]bool, len(found))
	for _, r := range found {
		have[r.ID] = true
	}
	more := map[string][]int{} // segment → line numbers to read
	for grew := true; grew; {
		grew = false
		for _, sr := range all {
			for _, c := range sr.Rows {
				if c.Link != "" && have[c.Link] && !have[c.ID] {
					have[c.ID] = true
					more[sr.Stamp.Path] = append(more[sr.Stamp.Path], c.Line)
					grew = true
				}
			}
		}
	}
	for file, ns := range more {
		i, ok := segOf[file]
		if !ok {
			continue // a segment that appeared after the listing
		}
		rows, err := v.readLines(file, corr[i], ns)
		if err != nil {
			return nil, err
		}
		found = append(found, rows...)
	}
	if len(more) > 0 {
		slices.SortFunc(found, func(a, b *Row) int {
			return cmp.Or(cmp.Compare(segOf[a.File], segOf[b.File]), cmp.Compare(a.Line, b.Line))
		})
	}
	return found, nil
}

// loadAll folds every event of the ledger.
func (v *Vault) loadAll() (*State, error) {
	segs, _, err := ListSegments(v.Root)
	if err != nil {
		return nil, err
	}
	st := &State{ByID: make(map[string]*Row)}
	for _, s := range segs {
		file := s.String()
		data, err := ReadComplete(v.Root, file)
		if err != nil {
			return nil, err
		}
		for n, start := 1, 0; start < len(data); n++ {
			i := bytes.IndexByte(data[start:], '\n')
			if r := rowOf(data[start:start+i], file, n); r != nil {
				st.Add(r)
			}
			start += i + 1
		}
	}
	return st, nil
}

// ReadComplete reads a segment up to its last newline: a torn last line is
// not an event yet.
func ReadComplete(root, file string) ([]byte, error) {
	data, err := fileio.At(root).ReadFile(filepath.Join(root, filepath.FromSlash(file)))
	if err != nil {
		return nil, fault.IO("read "+file, err)
	}
	end := bytes.LastIndexByte(data, '\n')
	return data[:end+1], nil
}

// rowOf decodes one ledger line; nil if it is not an event.
func rowOf(raw []byte, file string, n int) *Row {
	ev := new(Event)
	if json.Unmarshal(raw, ev) != nil || ev.ID == "" {
		return nil
	}
	return &Row{Event: ev, File: file, Line: n}
}

// readLines decodes the correction lines ns of a segment. Where the
// segment's cached corrections c know a line's offsets, only that line is
// read; otherwise (a line appended since c was taken) the segment is read.
func (v *Vault) readLines(file string, c SegCorrections, ns []int) ([]*Row, error) {
	f, err := v.Files().Open(filepath.Join(v.Root, filepath.FromSlash(file)))
	if err != nil {
		return nil, fault.IO("read "+file, err)
	}
	defer f.Close()
	var out []*Row
	var rest []int
	for _, n := range ns {
		k, ok := slices.BinarySearch(c.Lines, n)
		if !ok || len(c.Offs) != len(c.Lines) {
			rest = append(rest, n)
			continue
		}
		off := c.Offs[k]
		raw := make([]byte, off[1]-off[0])
		if _, err := f.ReadAt(raw, off[0]); err != nil {
			return nil, fault.IO("read "+file, err)
		}
		if r := rowOf(raw, file, n); r != nil {
			out = append(out, r)
		}
	}
	if len(rest) == 0 {
		return out, nil
	}
	data, err := ReadComplete(v.Root, file)
	if err != nil {
		return nil, err
	}
	for n, start := 1, 0; start < len(data); n++ {
		i := bytes.IndexByte(data[start:], '\n')
		if slices.Contains(rest, n) {
			if r := rowOf(data[start:start+i], file, n); r != nil {
				out = append(out, r)
			}
		}
		start += i + 1
	}
	return out, nil
}

// findAll returns the offsets of every occurrence of needle in data.
func findAll(data, needle []byte) []int {
	var out []int
	for off := 0; ; {
		i := bytes.Index(data[off:], needle)
		if i < 0 {
			return out
		}
		out = append(out, off+i)
		off += i + len(needle)
	}
}

// Add folds one event in. Corrections apply to their target; a retracted
// correction is undone, so retracting a close reopens the commitment.
func (st *State) Add(r *Row) {
	if _, dup := st.ByID[r.ID]; dup {
		return
	}
	st.Rows = append(st.Rows, r)
	st.ByID[r.ID] = r
	kind := CanonicalKind(r.Kind)
	if !CorrectionKinds[kind] || len(r.Links) == 0 {
		return
	}
	target := st.ByID[r.Links[0]]
	if target == nil {
		return
	}
	switch {
	case kind == "retract":
		target.RetractedBy = r.ID
		// Retracting a correction undoes it: a retracted close reopens.
		if len(target.Links) > 0 {
			if t2 := st.ByID[target.Links[0]]; t2 != nil {
				if t2.SupersededBy == target.ID {
					t2.SupersededBy = ""
				}
				if t2.ClosedBy == target.ID {
					t2.ClosedBy = ""
				}
			}
		}
	case kind == "supersede" || kind == KindDecisionSuperseed:
		target.SupersededBy = r.ID
	case CloserKinds[kind] != "":
		target.ClosedBy = r.ID
	}
}

// Get returns the row with id, or nil.
func (st *State) Get(id string) *Row { return st.ByID[id] }

// Filter selects rows for `memvault ledger`.
type Filter struct {
	Kind    string
	Thread  string
	Session string
	Agent   string
	Since   time.Time
	Current bool // only rows that hold now (Row.Holds), and no corrections or accomplishments
}

// Match reports whether r passes f.
func (f Filter) Match(r *Row) bool {
	if f.Kind != "" && r.Kind != f.Kind && r.EffectiveKind() != CanonicalKind(f.Kind) {
		return false
	}
	if f.Thread != "" && r.Thread != f.Thread {
		return false
	}
	if f.Session != "" && r.Session != f.Session {
		return false
	}
	if f.Agent != "" && r.Agent != f.Agent {
		return false
	}
	if !f.Since.IsZero() && r.Time().Before(f.Since) {
		return false
	}
	if f.Current && (!r.Holds() || CorrectionKinds[r.EffectiveKind()]) {
		return false
	}
	return true
}

// Select returns the rows matching f in ledger order.
func (st *State) Select(f Filter) []*Row {
	var out []*Row
	for _, r := range st.Rows {
		if f.Match(r) {
			out = append(out, r)
		}
	}
	return out
}

// OpenCommitments returns the commitments that are current and not closed.
func (st *State) OpenCommitments() []*Row {
	var out []*Row
	for _, r := range st.Rows {
		if r.EffectiveKind() == "commitment.open" && r.Holds() {
			out = append(out, r)
		}
	}
	return out
}

// Threads returns the thread keys that appear in the ledger, in order of
// first appearance.
func (st *State) Threads() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range st.Rows {
		if r.Thread != "" && !seen[r.Thread] {
			seen[r.Thread] = true
			out = append(out, r.Thread)
		}
	}
	return out
}

// KindCounts counts rows by stored kind.
func (st *State) KindCounts() map[string]int {
	m := map[string]int{}
	for _, r := range st.Rows {
		m[r.Kind]++
	}
	return m
}

// FoldAll folds every segment without checking hashes: verification is
// verify's job, and the writer's chain check guards writes. Decoding the
// JSON lines is what a rebuild costs, so it is spread over the CPUs; the
// fold itself runs in ledger order.
func (v *Vault) FoldAll(segs []Segment) (st *State, tip string, torn bool, err error) {
	var lines [][]byte
	for _, s := range segs {
		data, err := v.Files().ReadFile(filepath.Join(v.Root, filepath.FromSlash(s.String())))
		if err != nil {
			return nil, "", false, fault.IO("read "+s.String(), err)
		}
		torn = len(data) > 0 && data[len(data)-1] != '\n'
		for len(data) > 0 {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				break // an unterminated last line is not an event yet
			}
			lines = append(lines, data[:i])
			data = data[i+1:]
		}
	}
	evs := make([]*Event, len(lines))
	workers := min(runtime.GOMAXPROCS(0), 8, len(lines)/1024+1)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				ev := new(Event)
				if len(bytes.TrimSpace(lines[i])) == 0 || json.Unmarshal(lines[i], ev) != nil || ev.ID == "" {
					continue
				}
				evs[i] = ev
			}
		}(len(lines)*w/workers, len(lines)*(w+1)/workers)
	}
	wg.Wait()
	st = &State{ByID: make(map[string]*Row, len(evs)), Rows: make([]*Row, 0, len(evs))}
	rows := make([]Row, len(evs))
	for i, ev := range evs {
		if ev == nil {
			continue
		}
		tip = ev.Hash
		ev.Prev, ev.Hash = "", ""
		rows[i].Event = ev
		st.Add(&rows[i])
	}
	return st, tip, torn, nil
}

// FoldLines folds the complete lines of data into st and returns the new
// tip. An unterminated last line is not an event yet.
func FoldLines(st *State, data []byte, tip string) string {
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
		st.Add(&Row{Event: ev})
	}
	return tip
}
