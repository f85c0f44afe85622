package vault

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/memvault/memvault/vault/fault"
)

// The heads' derived state: the ledger folded into rows, corrections
// applied. Rendering a head needs it, and folding 100k events from JSON
// takes far longer than a render may cost, so it is a Derived view
// (derived.go), .state/heads-state.bin. New events are folded on top as
// rows; a correction builds the id index first, so it can mark the rows it
// corrects, as the full fold does.

var HeadStateView = &Derived[*State]{
	Name:    "heads-state",
	Version: 4, // 4: agent, session, kind and thread in a table (issue 22)
	Rebuild: func(v *Vault, segs []Segment, _ []SegStamp) (*State, string, bool, error) { return v.FoldAll(segs) },
	Fold:    foldRow,
	Encode:  encodeRows,
	Decode:  decodeRows,
}

// FoldedState returns the ledger folded into rows, through the cache, and
// the tip it was folded up to. The State it returns has no id index unless
// corrections had to be applied; callers only walk its rows.
func (v *Vault) FoldedState() (*State, string, error) {
	st, key, err := HeadStateView.Load(v)
	return st, key.Tip, err
}

// foldRow adds one appended event to decoded rows. The id index is built
// only when a correction needs it: most reads fold a few plain rows.
func foldRow(st *State, ev *Event) (*State, bool) {
	if st.ByID == nil && !CorrectionKinds[CanonicalKind(ev.Kind)] {
		st.Rows = append(st.Rows, &Row{Event: ev})
		return st, true
	}
	if st.ByID == nil {
		st.ByID = make(map[string]*Row, len(st.Rows)+1)
		for _, r := range st.Rows {
			st.ByID[r.ID] = r
		}
	}
	st.Add(&Row{Event: ev})
	return st, true
}

// encodeRows writes the rows. Agent, session, kind and thread repeat from
// row to row (a vault has a few agents and kinds, some hundreds of threads
// and sessions for 100k rows), so they are written once, in a table at the
// head, and each row names them by their place in it: a quarter less
// file, and the decoder makes one string per distinct value. The rest is
// as the ledger has it.
func encodeRows(e *Encoder, st *State) {
	at := map[string]int{}
	var table []string
	for _, r := range st.Rows {
		for _, s := range [...]string{r.Agent, r.Session, r.Kind, r.Thread} {
			if _, ok := at[s]; !ok {
				at[s] = len(table)
				table = append(table, s)
			}
		}
	}
	e.Strs(table)
	e.Int(len(st.Rows))
	for _, r := range st.Rows {
		e.Str(r.ID)
		e.Str(r.TS)
		for _, s := range [...]string{r.Agent, r.Session, r.Kind, r.Thread} {
			e.Int(at[s])
		}
		for _, s := range [...]string{r.Text, r.RetractedBy, r.SupersededBy, r.ClosedBy} {
			e.Str(s)
		}
		e.Bytes(r.Data)
		e.Strs(r.Links)
	}
}

// decodeRows decodes the rows with one allocation per slab: every string
// is a slice of the file, or of the table's.
func decodeRows(d *Decoder) (*State, bool) {
	table := d.Strs()
	n := d.Count()
	events := make([]Event, n)
	rowSlab := make([]Row, n)
	rows := make([]*Row, n)
	ref := func() string {
		i := d.Uvarint()
		if i >= len(table) {
			d.bad = true
			return ""
		}
		return table[i]
	}
	for i := range events {
		ev := &events[i]
		r := &rowSlab[i]
		ev.ID, ev.TS = d.Str(), d.Str()
		ev.Agent, ev.Session, ev.Kind, ev.Thread = ref(), ref(), ref(), ref()
		ev.Text = d.Str()
		r.RetractedBy, r.SupersededBy, r.ClosedBy = d.Str(), d.Str(), d.Str()
		ev.Data = d.Bytes()
		ev.Links = d.Strs()
		if d.bad {
			return nil, false
		}
		r.Event = ev
		rows[i] = r
	}
	return &State{Rows: rows}, true
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
