package ops

import (
	"errors"
	"fmt"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/gitrepo"
	"github.com/memvault/memvault/vault/heads"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/testvault"
)

// TestTimelinePaging: pages of a filtered timeline cover the matching
// rows once each, newest first; before and at start where they say; an
// unknown or malformed id is an error of its class.
func TestTimelinePaging(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	var ids []string
	for i := range 7 {
		ids = append(ids, testvault.Remember(t, v, fmt.Sprintf("fact %d", i)).ID)
	}
	st, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Timeline(st, TimelineQuery{Filter: vault.Filter{Kind: "fact"}, Limit: 3})
	if err != nil || len(p.Rows) != 3 || p.Rows[0].ID != ids[6] || p.Next != ids[4] || p.Rows[0].Status != vault.StatusActive {
		t.Fatalf("page 1: %v %q %v", p.Rows, p.Next, err)
	}
	p, _ = Timeline(st, TimelineQuery{Filter: vault.Filter{Kind: "fact"}, Limit: 3, Before: p.Next})
	if len(p.Rows) != 3 || p.Rows[0].ID != ids[3] || p.Next != ids[1] {
		t.Fatalf("page 2: %v %q", p.Rows, p.Next)
	}
	p, _ = Timeline(st, TimelineQuery{Filter: vault.Filter{Kind: "fact"}, Limit: 3, Before: p.Next})
	if len(p.Rows) != 1 || p.Rows[0].ID != ids[0] || p.Next != "" {
		t.Fatalf("page 3: %v %q", p.Rows, p.Next)
	}
	// Exactly a full last page has no next page.
	p, _ = Timeline(st, TimelineQuery{Filter: vault.Filter{Kind: "fact"}, Limit: 7})
	if len(p.Rows) != 7 || p.Next != "" {
		t.Errorf("one full page: %d %q", len(p.Rows), p.Next)
	}
	p, _ = Timeline(st, TimelineQuery{Limit: 2, At: ids[2][:12]})
	if len(p.Rows) != 2 || p.Rows[0].ID != ids[2] {
		t.Errorf("at: %v", p.Rows)
	}
	if _, err := Timeline(st, TimelineQuery{Before: "e_01zzzzzzzzzzzzzzzzzzzzzzzz"}); !errors.Is(err, vault.ErrNotFound) {
		t.Errorf("unknown before: %v", err)
	}
	if _, err := Timeline(st, TimelineQuery{At: "<b>"}); !errors.Is(err, vault.ErrInvalid) && !errors.Is(err, vault.ErrNotFound) {
		t.Errorf("malformed at: %v", err)
	}
}

// TestHeadHistory: a file's history is the commits that changed it, newest
// first, each with the blob it left; commits that left it alone are not in
// it; max and scan bound it and say it is not complete.
func TestHeadHistory(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	testvault.Remember(t, v, "one")
	testvault.Remember(t, v, "two")
	var all []string
	_ = v.Log(func(ci gitrepo.CommitInfo) bool { all = append(all, ci.Hash); return true })
	// The ledger segment changed in every commit since the first remember.
	st, _ := v.LoadState()
	seg := st.Rows[0].File
	h, complete, err := HeadHistory(v, seg, 0, 0)
	if err != nil || !complete || len(h) != 2 || h[0].Hash != all[0] || h[1].Hash != all[1] {
		t.Fatalf("history of %s: %+v %v %v (commits %v)", seg, h, complete, err, all)
	}
	if h[0].Blob == h[1].Blob || h[0].Blob == "" {
		t.Errorf("blobs: %+v", h)
	}
	data, err := FileAt(v, h[1].Hash, seg)
	if err != nil || len(data) == 0 {
		t.Errorf("the segment at the first remember: %v", err)
	}
	if _, err := FileAt(v, h[1].Hash, "nothing.md"); !errors.Is(err, vault.ErrNotFound) {
		t.Errorf("a file not there: %v", err)
	}
	if _, err := FileAt(v, "0000000", seg); !errors.Is(err, vault.ErrNotFound) {
		t.Errorf("no such commit: %v", err)
	}
	if h, complete, _ := HeadHistory(v, seg, 1, 0); len(h) != 1 || complete {
		t.Errorf("max 1: %+v %v", h, complete)
	}
	if h, complete, _ := HeadHistory(v, seg, 0, 1); len(h) != 0 || complete {
		t.Errorf("scan 1: %+v %v", h, complete)
	}
	if h, _, _ := HeadHistory(v, "nothing.md", 0, 0); len(h) != 0 {
		t.Errorf("a file never committed: %+v", h)
	}
}

// TestTimelineOfMatchesTheFold: on a ledger of many segments, every page
// read from the newest segments (TimelineOf) is the page of the full
// fold, statuses included: a retraction and a close in the newest
// segment of rows in the oldest, filters that match rarely, and paging
// from an id in the oldest segment.
func TestTimelineOfMatchesTheFold(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	v.Config.Ledger.SegmentBytes = 1500
	var ids []string
	for i := range 120 {
		in := memory.Input{Text: fmt.Sprintf("fact %d", i)}
		if i%40 == 0 {
			in.Thread = "project:rare"
		}
		var ev *vault.Event
		_, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
			var err error
			if i == 1 {
				ev, err = memory.OpenCommitment(tx, in)
			} else {
				ev, err = memory.Remember(tx, in)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ev.ID)
	}
	_, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		if _, err := memory.Retract(tx, ids[0], "wrong"); err != nil {
			return err
		}
		_, err := memory.CloseCommitment(tx, ids[1], "done")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	segs, _, _ := vault.ListSegments(v.Root)
	if len(segs) < 20 {
		t.Fatalf("only %d segments", len(segs))
	}
	st, _, err := heads.FoldedState(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []TimelineQuery{
		{Limit: 10},
		{Limit: 10, Before: ids[100]},
		{Limit: 10, Before: ids[5]},
		{Limit: 10, At: ids[1]},
		{Limit: 200},
		{Limit: 2, Filter: vault.Filter{Thread: "project:rare"}},
		{Limit: 3, Filter: vault.Filter{Kind: "commitment.open"}},
		{Limit: 5, Filter: vault.Filter{Kind: "retract"}},
	} {
		want, werr := Timeline(st, q)
		got, gerr := TimelineOf(v, q)
		if (werr == nil) != (gerr == nil) || len(got.Rows) != len(want.Rows) || got.Next != want.Next {
			t.Fatalf("%+v: %d rows next %q %v; the fold: %d rows next %q %v", q, len(got.Rows), got.Next, gerr, len(want.Rows), want.Next, werr)
		}
		for i := range got.Rows {
			if got.Rows[i].ID != want.Rows[i].ID || got.Rows[i].Status != want.Rows[i].Status {
				t.Errorf("%+v: row %d is %s %s, the fold's %s %s", q, i, got.Rows[i].ID, got.Rows[i].Status, want.Rows[i].ID, want.Rows[i].Status)
			}
		}
	}
	if _, err := TimelineOf(v, TimelineQuery{Before: "e_01zzzzzzzzzzzzzzzzzzzzzzzz"}); !errors.Is(err, vault.ErrNotFound) {
		t.Errorf("unknown before: %v", err)
	}
}
