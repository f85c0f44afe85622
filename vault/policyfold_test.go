package vault

import (
	"fmt"
	"testing"
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
	fold := PolicyView.Fold
	t.Cleanup(func() { PolicyView.Fold = fold })
	folded := 0
	PolicyView.Fold = func(p *Policy, ev *Event) (*Policy, bool) {
		folded++
		return fold(p, ev)
	}
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
	if folded > PolicyView.Every || PolicyView.Every > 64 {
		t.Errorf("a write folded %d events on top of the policy's file (Every %d): the file is rewritten too seldom", folded, PolicyView.Every)
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
