package vault

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault/codec"
)

// A content write loads the policy from .state/ and folds the events
// appended since the file was written; each of them is decoded from its
// JSON line, so the file must be rewritten often enough that a write does
// not decode the last thousand events again (docs/PERFORMANCE.md,
// "Writes"). After 100 writes, the 101st folds at most Every events, and
// the policy it loads is still the one the whole ledger folds to.
func TestPolicyLoadFoldsFewEvents(t *testing.T) {
	v := newVault(t)
	if _, err := v.Update(TxOptions{}, func(tx *Tx) error {
		_, err := tx.SetPolicy(map[string][]string{"reflection": {"cli"}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		remember(t, v, fmt.Sprintf("row %d", i))
	}
	folded := countPolicyFolds(t)
	var got *Policy
	_, err := v.Update(TxOptions{}, func(tx *Tx) error {
		p, err := tx.Policy()
		got = p
		if err != nil {
			return err
		}
		_, err = queueRow(tx, "fact", "the 101st")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if *folded > PolicyView.Every || PolicyView.Every > 64 {
		t.Errorf("a write folded %d events on top of the policy's file (Every %d): the file is rewritten too seldom", *folded, PolicyView.Every)
	}
	want, err := v.policyFromLedgerNow(t)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Rules) != fmt.Sprint(want.Rules) {
		t.Errorf("policy through the file %v, from the ledger %v", got.Rules, want.Rules)
	}
}

// policyFromLedgerNow folds the policy from the whole ledger, no file.
func (v *Vault) policyFromLedgerNow(t *testing.T) (*Policy, error) {
	t.Helper()
	segs, stamps, err := v.SegmentStamps()
	if err != nil {
		return nil, err
	}
	p, _, _, err := v.policyFromLedger(segs, stamps)
	return p, err
}

// A view is rewritten once the lines folded on top of its file are worth
// more than a write (derived.go, worthSaving), not only after Every events:
// a hook process loads each view afresh, so a view left 30 long rows behind
// would parse those rows again in every hook until the 64th. After 30 rows
// of 400 bytes (12 KB of ledger, far more than the small policy file), one
// load folds them and saves; the next folds none, and still agrees with the
// ledger.
func TestViewSavedWhenFoldedBytesOutweighIt(t *testing.T) {
	v := newVault(t)
	remember(t, v, "the first row")
	if _, err := v.LoadPolicy(); err != nil { // the view's file, at the start
		t.Fatal(err)
	}
	if _, ok := codec.ReadFile(v.Root, PolicyView.Name, PolicyView.Version); !ok {
		t.Fatal("no policy file after a load")
	}
	// Rows written outside the engine's own policy loads: append them with
	// the policy's file put back as it was, so only the loads below fold.
	saved, err := os.ReadFile(PolicyView.Path(v.Root))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		remember(t, v, fmt.Sprintf("row %d: %s", i, strings.Repeat("billing ledger shard ", 18)))
	}
	if err := os.WriteFile(PolicyView.Path(v.Root), saved, 0o644); err != nil {
		t.Fatal(err)
	}
	folded := countPolicyFolds(t)
	if _, err := v.LoadPolicy(); err != nil {
		t.Fatal(err)
	}
	if *folded < 30 {
		t.Fatalf("the first load folded %d events, want the 30 rows at least", *folded)
	}
	*folded = 0
	got, err := v.LoadPolicy()
	if err != nil {
		t.Fatal(err)
	}
	if *folded != 0 {
		t.Errorf("the second load folded %d events again: the first did not save a view 12 KB behind", *folded)
	}
	want, err := v.policyFromLedgerNow(t)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Rules) != fmt.Sprint(want.Rules) {
		t.Errorf("policy through the file %v, from the ledger %v", got.Rules, want.Rules)
	}
}

// countPolicyFolds counts the events folded onto the policy from here to
// the end of the test.
func countPolicyFolds(t *testing.T) *int {
	fold := PolicyView.Fold
	t.Cleanup(func() { PolicyView.Fold = fold })
	folded := new(int)
	PolicyView.Fold = func(p *Policy, ev *Event) (*Policy, bool) {
		*folded++
		return fold(p, ev)
	}
	return folded
}
