package vault

import (
	"fmt"
	"os"
	"testing"

	"github.com/memvault/memvault/vault/codec"
)

func TestSegmentSessionsAndLinks(t *testing.T) {
	data := []byte(`{"id":"e_1","links":["n_a","e_\"q"],"session":"s-1"}` + "\n" +
		`{"id":"e_2","links":[],"session":"s\\2"}` + "\n" + `{"id":"e_3","links":["n_a"]}` + "\n")
	if got := fmt.Sprint(StringsAfter(data, `"session":`)); got != `[s-1 s\2]` {
		t.Errorf("sessions %s", got)
	}
	if got := fmt.Sprint(LinksIn(data)); got != `[e_"q n_a]` {
		t.Errorf("links %s", got)
	}
}

// A filtered load marks each row it returns exactly as the full fold does,
// though it reads only the corrections of those rows (and theirs), and
// they sit in other segments than their targets.
func TestFilteredLoadMarksLikeFull(t *testing.T) {
	t.Parallel()
	v := newVault(t)
	v.Config.Ledger.SegmentBytes = 1024
	update := func(fn func(tx *Tx) error) {
		t.Helper()
		if _, err := v.Update(TxOptions{}, fn); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	for i := range 12 {
		ids = append(ids, remember(t, v, fmt.Sprintf("fact number %d, padded to fill segments quickly", i)).ID)
	}
	var open *Event
	update(func(tx *Tx) error {
		var err error
		open, err = queueRow(tx, "commitment.open", "ship the release notes")
		return err
	})
	var sup, cl *Event
	update(func(tx *Tx) error { _, err := queueCorrection(tx, "retract", ids[1], "wrong"); return err })
	update(func(tx *Tx) error {
		var err error
		sup, err = queueCorrection(tx, "supersede", ids[2], "fact number 2, corrected")
		return err
	})
	update(func(tx *Tx) error {
		_, err := queueCorrection(tx, "retract", sup.ID, "the first version was right")
		return err
	})
	update(func(tx *Tx) error {
		var err error
		cl, err = queueCorrection(tx, "commitment.close", open.ID, "done")
		return err
	})
	update(func(tx *Tx) error { _, err := queueCorrection(tx, "retract", cl.ID, "not done after all"); return err })
	update(func(tx *Tx) error {
		_, err := queueCorrection(tx, "supersede", ids[5], "fact number 5, corrected")
		return err
	})
	for i := range 6 {
		remember(t, v, fmt.Sprintf("later fact %d, padded to fill segments quickly", i))
	}
	if segs, _, _ := ListSegments(v.Root); len(segs) < 3 {
		t.Fatalf("want the corrections spread over segments, got %v", segs)
	}

	full, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	marks := func(r *Row) string { return r.RetractedBy + "/" + r.SupersededBy + "/" + r.ClosedBy }
	order := map[string]int{}
	for i, r := range full.Rows {
		order[r.ID] = i
	}
	for _, want := range full.Rows {
		for round := range 2 { // with the caches cold, then warm
			st, err := v.LoadStateWith([][]byte{[]byte(`"id":"` + want.ID + `"`)})
			if err != nil {
				t.Fatal(err)
			}
			got := st.Get(want.ID)
			if got == nil {
				t.Fatalf("round %d: filtered load lost %s", round, want.ID)
			}
			if marks(got) != marks(want) || got.File != want.File || got.Line != want.Line {
				t.Errorf("round %d: %s (%s) is %s at %s:%d, want %s at %s:%d", round, want.ID, want.Kind,
					marks(got), got.File, got.Line, marks(want), want.File, want.Line)
			}
			for i := 1; i < len(st.Rows); i++ {
				if a, b := st.Rows[i-1], st.Rows[i]; order[a.ID] > order[b.ID] {
					t.Fatalf("rows out of ledger order: %s:%d before %s:%d", a.File, a.Line, b.File, b.Line)
				}
			}
		}
		os.Remove(codec.FilePath(v.Root, AllCorrectionsFile))
	}
	if r := full.Get(ids[2]); !r.Current() {
		t.Fatalf("a retracted supersede should leave its target current: %+v", r)
	}
	if r := full.Get(open.ID); r.ClosedBy != "" {
		t.Fatalf("a retracted close should reopen: %+v", r)
	}
}
