package heads

import (
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/codec"
)

// The heads' derived state: the ledger folded into rows, corrections
// applied. Rendering a head needs it, and folding 100k events from JSON
// takes far longer than a render may cost, so it is a vault.Derived view
// (vault/derived.go), .state/heads-state.bin. New events are folded on top as
// rows; a correction builds the id index first, so it can mark the rows it
// corrects, as the full fold does.

// StateView is the cache of the folded rows every head renders from.
var StateView = &vault.Derived[*vault.State]{
	Name:    "heads-state",
	Version: 4, // 4: agent, session, kind and thread in a table (issue 22)
	Rebuild: func(v *vault.Vault, segs []vault.Segment, _ []vault.SegStamp) (*vault.State, string, bool, error) {
		return v.FoldAll(segs)
	},
	Fold:   foldRow,
	Encode: encodeRows,
	Decode: decodeRows,
}

// FoldedState returns the ledger folded into rows, through the cache, and
// the tip it was folded up to. The State it returns has no id index unless
// corrections had to be applied; callers only walk its rows.
func FoldedState(v *vault.Vault) (*vault.State, string, error) {
	st, key, err := StateView.Load(v)
	return st, key.Tip, err
}

// foldRow adds one appended event to decoded rows. The id index is built
// only when a correction needs it: most reads fold a few plain rows.
func foldRow(st *vault.State, ev *vault.Event) (*vault.State, bool) {
	if st.ByID == nil && !vault.CorrectionKinds[vault.CanonicalKind(ev.Kind)] {
		st.Rows = append(st.Rows, &vault.Row{Event: ev})
		return st, true
	}
	if st.ByID == nil {
		st.ByID = make(map[string]*vault.Row, len(st.Rows)+1)
		for _, r := range st.Rows {
			st.ByID[r.ID] = r
		}
	}
	st.Add(&vault.Row{Event: ev})
	return st, true
}

// encodeRows writes the rows. Agent, session, kind and thread repeat from
// row to row (a vault has a few agents and kinds, some hundreds of threads
// and sessions for 100k rows), so they are written once, in a table at the
// head, and each row names them by their place in it: a quarter less
// file, and the decoder makes one string per distinct value. The rest is
// as the ledger has it.
func encodeRows(e *codec.Encoder, st *vault.State) {
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
func decodeRows(d *codec.Decoder) (*vault.State, bool) {
	table := d.Strs()
	n := d.Count()
	events := make([]vault.Event, n)
	rowSlab := make([]vault.Row, n)
	rows := make([]*vault.Row, n)
	ref := func() string {
		i := d.Uvarint()
		if i >= len(table) {
			d.Fail()
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
		if d.Failed() {
			return nil, false
		}
		r.Event = ev
		rows[i] = r
	}
	return &vault.State{Rows: rows}, true
}
