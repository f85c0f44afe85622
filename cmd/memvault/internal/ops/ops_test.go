package ops

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/testvault"
)

func TestParseSince(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2026-11-20T08:00:00Z": time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC),
		"2026-11-20":           time.Date(2026, 11, 20, 0, 0, 0, 0, time.Local),
		"7d":                   now.AddDate(0, 0, -7),
		"0d":                   now,
		"12h":                  now.Add(-12 * time.Hour),
	} {
		got, err := ParseSince(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseSince(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-7d", "-1h", "yesterday", "7 d", "2026-13-01"} {
		if _, err := ParseSince(in, now); !errors.Is(err, vault.ErrInvalid) {
			t.Errorf("ParseSince(%q): %v, want an invalid-input error", in, err)
		}
	}
}

func TestLedgerSelects(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	var ids []string
	for _, text := range []string{"one", "two", "three", "four"} {
		ids = append(ids, testvault.Remember(t, v, text).ID)
	}
	_, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		_, err := memory.Retract(tx, ids[1], "wrong")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	rows, matched, err := Ledger(st, LedgerQuery{Filter: vault.Filter{Kind: "fact"}, Limit: 2})
	if err != nil || matched != 4 || len(rows) != 2 || rows[0].Text != "three" || rows[1].Text != "four" {
		t.Fatalf("the newest 2 facts: %v %d %v", rows, matched, err)
	}
	rows, _, err = Ledger(st, LedgerQuery{IDs: []string{ids[1][:20]}})
	if err != nil || len(rows) != 1 || rows[0].ID != ids[1] || rows[0].Status != vault.StatusRetracted {
		t.Fatalf("by id prefix: %v %v", rows, err)
	}
	rows, matched, err = Ledger(st, LedgerQuery{Filter: vault.Filter{Thread: "project:none"}})
	if err != nil || rows == nil || len(rows) != 0 || matched != 0 {
		t.Errorf("nothing matches: %#v %d %v; want an empty, non-nil list", rows, matched, err)
	}
	if _, _, err := Ledger(st, LedgerQuery{IDs: []string{"e_01zzzzzzzz"}}); !errors.Is(err, vault.ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
}

// TestLedgerUntil: --until keeps the events written before it, with
// --since a half-open window; an until not after the since is refused.
func TestLedgerUntil(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	for _, text := range []string{"jan", "feb", "mar"} {
		testvault.Remember(t, v, text)
	}
	st, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	stamp := map[string]string{"jan": "2025-01-10T00:00:00Z", "feb": "2025-02-10T00:00:00Z", "mar": "2025-03-10T00:00:00Z"}
	for _, r := range st.Rows {
		if ts, ok := stamp[r.Text]; ok {
			r.TS = ts
		}
	}
	day := func(s string) time.Time { t, _ := time.Parse("2006-01-02", s); return t }
	texts := func(q LedgerQuery) string {
		q.Filter.Kind = "fact"
		rows, _, err := Ledger(st, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rows {
			out = append(out, r.Text)
		}
		return strings.Join(out, ",")
	}
	if got := texts(LedgerQuery{Until: day("2025-02-10")}); got != "jan" {
		t.Errorf("until feb 10 (feb's own instant excluded): %q", got)
	}
	if got := texts(LedgerQuery{Until: day("2025-03-01"), Filter: vault.Filter{Since: day("2025-02-01")}}); got != "feb" {
		t.Errorf("[feb 1, mar 1): %q", got)
	}
	if got := texts(LedgerQuery{Until: day("2025-03-11")}); got != "jan,feb,mar" {
		t.Errorf("until mar 11: %q", got)
	}
	_, _, err = Ledger(st, LedgerQuery{Until: day("2025-02-01"), Filter: vault.Filter{Since: day("2025-02-01")}})
	if !errors.Is(err, vault.ErrInvalid) {
		t.Errorf("an empty window: %v; want ErrInvalid", err)
	}
}
